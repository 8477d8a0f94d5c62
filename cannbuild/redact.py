"""Credentials never reach a log, plan, lock or report."""

from __future__ import annotations

import re
from typing import Any

_URL_USERINFO = re.compile(
    r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s:]+(?::[^/@\s]*)?)@"
)
_TOKENS = (
    re.compile(r"(?i)\b(authorization:\s*(?:bearer|basic|token)\s+)[^\s'\"]+"),
    re.compile(
        r"(?i)\b((?:access_?token|private_?token|api_?key|password|passwd|secret)=)[^\s&'\"]+"
    ),
    re.compile(r"\b(ghp|gho|ghu|ghs|github_pat|glpat)[-_][A-Za-z0-9_-]{10,}"),
)


def redact(text: str) -> str:
    """`https://user:pass@host/x` -> `https://***@host/x`; known token shapes -> `***`."""
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}***@", text)
    text = _TOKENS[0].sub(lambda m: f"{m.group(1)}***", text)
    text = _TOKENS[1].sub(lambda m: f"{m.group(1)}***", text)
    text = _TOKENS[2].sub("***", text)
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
