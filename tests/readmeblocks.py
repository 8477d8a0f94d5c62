"""The README's runnable blocks, found by the marker comment above each.

A block is the fenced code right under `<!-- readme-block: NAME ... -->` (blank lines
between are allowed, nothing else), so rewording the prose around it does not move what
the tests run, and a block that loses its marker or its fence is an error, never an empty
script that passes.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

_MARKER = re.compile(r"^<!-- readme-block: (?P<name>[\w-]+)\b.*-->\s*$")
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")


class ReadmeBlockError(LookupError):
    """A marked block is missing, unfenced or unclosed."""


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


def marked_block(name: str, text: Optional[str] = None) -> str:
    """The body of the fenced block under the marker `name`, without its fences."""
    lines = (readme_text() if text is None else text).splitlines()
    at = [i for i, line in enumerate(lines) if _marker_name(line) == name]
    if len(at) != 1:
        raise ReadmeBlockError(
            f"README.md has {len(at)} `<!-- readme-block: {name} -->` markers, expected one"
        )
    i = at[0] + 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i == len(lines) or not _FENCE.match(lines[i].strip()):
        raise ReadmeBlockError(f"the readme-block marker {name!r} is not followed by a ``` block")
    indent = len(lines[i]) - len(lines[i].lstrip())  # a block in a list item is indented
    body: List[str] = []
    for line in lines[i + 1 :]:
        if line.strip() == "```":
            if not any(b.strip() for b in body):
                raise ReadmeBlockError(f"the readme-block {name!r} is empty")
            return "\n".join(body) + "\n"
        body.append(line[indent:] if line[:indent].strip() == "" else line)
    raise ReadmeBlockError(f"the readme-block {name!r} has no closing ```")


def fenced_blocks(text: Optional[str] = None) -> List[Optional[str]]:
    """The marker name of every fenced block of the README, in order (None: unmarked)."""
    lines = (readme_text() if text is None else text).splitlines()
    names: List[Optional[str]] = []
    inside, last = False, None
    for line in lines:
        if inside:
            inside = line.strip() != "```"
            continue
        if _FENCE.match(line.strip()):
            names.append(last)
            inside, last = True, None
        elif line.strip():
            last = _marker_name(line)
    return names


def first_block(text: Optional[str] = None) -> str:
    """The body of the first fenced block a reader meets (whatever its marker)."""
    lines = (readme_text() if text is None else text).splitlines()
    starts = [i for i, line in enumerate(lines) if _FENCE.match(line)]
    if not starts:
        raise ReadmeBlockError("README.md has no ``` block")
    body: List[str] = []
    for line in lines[starts[0] + 1 :]:
        if line.strip() == "```":
            return "\n".join(body) + "\n"
        body.append(line)
    raise ReadmeBlockError("the first ``` block of README.md is not closed")


def torch_line(block: str) -> str:
    """The one line of a block that installs torch (the README says what to do without it)."""
    found = [line for line in block.splitlines() if _installs_torch(line)]
    if len(found) != 1:
        raise ReadmeBlockError(f"expected one line installing torch, found {len(found)}")
    return found[0]


def pip_args(line: str) -> List[str]:
    """The arguments after `pip install` on a README line, its comment dropped."""
    words = shlex.split(line, comments=True)
    if words[:2] != ["pip", "install"]:
        raise ReadmeBlockError(f"not a `pip install` line: {line!r}")
    return words[2:]


def _installs_torch(line: str) -> bool:
    words = shlex.split(line, comments=True)
    return words[:2] == ["pip", "install"] and any(w.startswith("torch==") for w in words)


def _marker_name(line: str) -> Optional[str]:
    match = _MARKER.match(line.strip())
    return match.group("name") if match else None
