"""Credentials never reach a log, plan, lock or report."""

from __future__ import annotations

import re
from typing import Any

# userinfo runs to the last @ of the authority: a password may hold an @ itself
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/\s'\"]*)@")
# a name that ends in one of these words: GITHUB_TOKEN, PRIVATE-TOKEN, db_password, X-Api-Key
_SECRET_NAMES = r"[A-Za-z0-9_.-]*(?:token|password|passwd|pwd|secret|api[_-]?key|access[_-]?key)"
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


def redact_data(value: Any) -> Any:
    """Redact every string inside nested dicts/lists (for JSON reports and locks)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value
