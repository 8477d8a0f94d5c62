"""Credentials never reach a log, plan, lock or report."""

from __future__ import annotations

import hashlib
import re
from typing import Any, Dict, Mapping

# userinfo runs to the last @ of the authority: a password may hold an @ itself
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/\s'\"]*)@")
# a name that ends in one of these words: GITHUB_TOKEN, PRIVATE-TOKEN, db_password, X-Api-Key,
# SIGNING_KEY (in text: NAME=value, NAME: value)
_SECRET_NAMES = (
    r"[A-Za-z0-9_.-]*(?:token|password|passwd|pwd|secret|api[_-]?key|access[_-]?key|[_-]key)"
)
# a variable or key NAME whose value is a secret, whatever the value looks like:
# *PASSWORD*, *PASSWD*, *PASSPHRASE*, *TOKEN*, *SECRET*, *CREDENTIAL*, *_KEY, *APIKEY
_SECRET_NAME = re.compile(
    r"(?i)passw(?:or)?d|passphrase|token|secret|credential|(?:^|[_.-])key$|apikey$"
)
MASK = "***"
_TOKENS = (
    # Authorization: Bearer x / PRIVATE-TOKEN: x / X-Api-Key: x (HTTP headers in curl lines, logs)
    re.compile(r"(?i)\b(authorization:\s*(?:bearer|basic|token)\s+)[^\s'\"]+"),
    re.compile(rf"(?i)\b({_SECRET_NAMES}:\s*)(?!\*\*\*)[^\s'\",}}]+"),
    # NAME=value in a query string, a shell line or an env dump: ?token=, export GITHUB_TOKEN=
    re.compile(rf"(?i)\b({_SECRET_NAMES}=)(?!\*\*\*)[^\s&'\";]+"),
    # well-known token shapes wherever they stand
    re.compile(r"\b(ghp|gho|ghu|ghs|ghr|github_pat|glpat|gldt)[-_][A-Za-z0-9_-]{10,}"),
)


def redact(text: str) -> str:
    """`https://user:pass@host/x` -> `https://***@host/x`; secrets named token, password,
    secret, key (as NAME=value, NAME: value or a header) and known token shapes -> `***`."""
    # each pattern only where the character it cannot match without is there: most
    # strings in a report hold none of them, and every string is redacted
    if "@" in text:
        text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}***@", text)
    if ":" in text or "=" in text:
        for pattern in _TOKENS[:3]:
            text = pattern.sub(lambda m: f"{m.group(1)}***", text)
    if "gh" in text or "gl" in text or "github_pat" in text:
        text = _TOKENS[3].sub("***", text)
    return text


def secret_name(name: str) -> bool:
    """Whether a variable or key called `name` holds a secret (DB_PASSWORD, MY_API_TOKEN,
    AWS_SECRET_ACCESS_KEY, SIGNING_KEY): its value is never shown, whatever it looks like."""
    return bool(_SECRET_NAME.search(name))


def _masked(name: Any, value: Any) -> bool:
    return (
        isinstance(name, str)
        and secret_name(name)
        and ((isinstance(value, str) and value != "") or type(value) is int)
    )


def redact_env(env: Mapping[str, str]) -> Dict[str, str]:
    """An environment as cannbuild shows it (step log, plan, report): a secret's value by
    its name is `***`, credentials in other values are redacted.  The process that runs
    the step gets the real values."""
    return {k: MASK if _masked(k, v) else redact(v) for k, v in env.items()}


def fingerprint(name: str, text: str) -> str:
    """`text` as a stamp keeps it: itself when it holds no secret; else redacted, with a
    hash of the real text, so a changed secret still changes the step's input hash
    (and the step rebuilds) while the secret itself is stored nowhere."""
    shown = MASK if _masked(name, text) else redact(text)
    if shown == text:
        return text
    digest = hashlib.sha256(f"cannbuild-secret\0{name}\0{text}".encode()).hexdigest()
    return f"{shown} (sha256:{digest})"


def fingerprint_env(env: Mapping[str, str]) -> Dict[str, str]:
    """A step's own env entries as its stamp and input hash take them (see fingerprint)."""
    return {k: fingerprint(k, v) for k, v in env.items()}


def redact_data(value: Any) -> Any:
    """Redact every string inside nested dicts/lists (for JSON reports and locks), and the
    value of every key whose name says it is a secret ({"DB_PASSWORD": "x"} -> "***")."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: MASK if _masked(k, v) else redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value
