"""A draft recipe as a file: a header of comments (where each value was read, and what
the draft could not decide), then the tables, in the shape recipes/*.toml are written
(a regex as a literal string, short lists on one line); the tests read it back."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import List, Sequence

from ..decoded import JSONObject, JSONValue
from ..errors import UsageError, write_error
from ..workspace import write_atomic
from .draft import Draft

WIDTH = 96
_BARE = re.compile(r"[A-Za-z0-9_-]+")
# TOML basic strings escape the control characters but tab; json.dumps leaves DEL as it is
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _key(key: str) -> str:
    return key if _BARE.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _string(text: str) -> str:
    # 'set\(OPBASE_TAG_ID\s+([0-9a-f]{40})\)' reads as the recipe writes it
    if "\\" in text and "'" not in text and not _CONTROL.search(text):
        return f"'{text}'"
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: JSONValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        items = [_value(v) for v in value]
        inline = "[" + ", ".join(items) + "]"
        if len(inline) <= WIDTH - 20:
            return inline
        return "[\n" + "".join(f"    {item},\n" for item in items) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _is_tables(value: JSONValue) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _emit(path: Sequence[str], table: JSONObject, out: List[str], many: bool = False) -> None:
    scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict) and not _is_tables(v)]
    dotted = ".".join(_key(p) for p in path)
    if path and (scalars or many or not table):
        out += ["", f"[[{dotted}]]" if many else f"[{dotted}]"]
    out += [f"{_key(k)} = {_value(v)}" for k, v in scalars]
    for key, value in table.items():
        if isinstance(value, dict):
            _emit([*path, key], value, out)
        elif _is_tables(value):
            for item in value:
                _emit([*path, key], item, out, many=True)


def dumps(data: JSONObject) -> str:
    out: List[str] = []
    _emit([], data, out)
    return "\n".join(out).lstrip("\n") + "\n"


def _comment(text: str, lead: str = "# ", more: str = "#   ") -> List[str]:
    lines = textwrap.wrap(
        text, WIDTH - len(lead), break_long_words=False, break_on_hyphens=False
    ) or [""]
    return [lead + lines[0]] + [more + line for line in lines[1:]]


def draft_text(draft: Draft) -> str:
    refs = ", ".join(f"{c.repo} {c.kind} {c.value}" for c in draft.refs)
    lines = _comment(
        f"DRAFT of the CANN {draft.train} recipe, written by `cannbuild recipe draft --ref "
        f"{draft.ref}` from {draft.base.name} and the repositories at {refs}.  Review it, "
        "settle every item under 'Could not decide', run `cannbuild recipe check` on it, "
        "then `cannbuild lock`."
    )
    lines += ["#", "# Read from the repositories:"]
    for item in draft.read:
        lines += _comment(item, "# - ", "#   ")
    lines += ["#", "# Could not decide (settle each, then delete this list):"]
    for item in draft.undecided:
        lines += _comment(item, "# - ", "#   ")
    return "\n".join(lines) + "\n\n" + dumps(draft.data)


def write_draft(draft: Draft, out: Path) -> str:
    """Write the draft to `out` (never over an existing file); its text."""
    if out.exists():
        raise UsageError(
            f"{out} exists: a draft is never written over a recipe.",
            "Pass --out with a new file name, or move that file away first.",
        )
    text = draft_text(draft)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, text.encode("utf-8"))
    except OSError as exc:
        raise write_error(exc, "--out", out) from None
    return text
