"""Every place in cannbuild that reads a file, found in its syntax: what must go through
the one door (cannbuild/bounded.py) and what bypasses it.

A read is a call of `.read_text()` / `.read_bytes()` on anything but the `bounded`
module, `json.load(s)`, `tomllib`/`tomli`/`yaml` loads, `msgspec.json.decode`,
`pickle`/`marshal` loads, `open()` / `io.open()` / `os.fdopen()` / `io.FileIO()` without
a write mode, `os.open()` with O_RDONLY, `tarfile.open()` of a path and
`sqlite3.connect()`.  One that is bounded some other way says why on its line or the
line above, in a comment starting `# bounded:`."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

PACKAGE = Path(__file__).resolve().parents[1] / "cannbuild"
DOOR = PACKAGE / "bounded.py"
MARK = "# bounded:"
LOADS = {
    f"{module}.{name}"
    for module in ("json", "tomllib", "tomli", "yaml", "pickle", "marshal")
    for name in ("load", "loads", "safe_load", "full_load", "unsafe_load")
} | {"msgspec.json.decode", "msgspec.msgpack.decode", "msgspec.yaml.decode", "msgspec.toml.decode"}
OPENERS = {"open", "io.open", "os.fdopen", "io.FileIO", "codecs.open"}


def _mode(call: ast.Call, position: int) -> Optional[str]:
    """The call's mode argument when it is written out (None: the default, reading)."""
    node = call.args[position] if len(call.args) > position else None
    for keyword in call.keywords:
        if keyword.arg == "mode":
            node = keyword.value
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None if node is None else "?"


def _reads(call: ast.Call) -> Optional[str]:
    """What the call reads a file with, or None."""
    name = ast.unparse(call.func)
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("read_text", "read_bytes"):
        return None if name.startswith("bounded.") else name
    if name in LOADS:
        return name
    if name in OPENERS:
        mode = _mode(call, 1)
        return name if mode is None or not set(mode) & set("wax") else None
    if name == "os.open":
        return name if call.args[1:] and "O_RDONLY" in ast.unparse(call.args[1]) else None
    if name == "tarfile.open":
        return None if any(k.arg == "fileobj" for k in call.keywords) else name
    if name == "sqlite3.connect":
        return name
    return None


def reads(
    package: Path = PACKAGE, memo: Optional[Dict[str, Any]] = None
) -> List[Tuple[Path, int, str, bool]]:
    """(file, line, what reads, whether a `# bounded:` comment says why it may) of every
    read outside the door.  With `memo`, a file's reads are kept under a digest of this
    scanner, the file's place and its text, and taken from there while none of them
    changed (parsing is most of the cost); entries no file uses any more are dropped."""
    salt = hashlib.sha256(Path(__file__).read_bytes())
    found: List[Tuple[Path, int, str, bool]] = []
    used = set()
    for path in sorted(package.rglob("*.py")):
        if path == DOOR:
            continue
        data = path.read_bytes()
        digest = salt.copy()
        digest.update(str(path.relative_to(package.parent)).encode() + b"\0" + data)
        key = digest.hexdigest()
        used.add(key)
        if memo is not None and key in memo:
            rows = memo[key]
        else:
            rows = [list(row) for row in _file_reads(path, data.decode("utf-8"))]
            if memo is not None:
                memo[key] = rows
        found += [(path, line, what, marked) for line, what, marked in rows]
    if memo is not None:
        for key in [k for k in memo if k not in used]:
            del memo[key]
    return found


def _file_reads(path: Path, source: str) -> Iterator[Tuple[int, str, bool]]:
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source, str(path))):
        what = _reads(node) if isinstance(node, ast.Call) else None
        if what is not None:
            near = lines[max(node.lineno - 2, 0) : node.lineno]
            yield node.lineno, what, any(MARK in line for line in near)


def unexplained(package: Path = PACKAGE, memo: Optional[Dict[str, Any]] = None) -> List[str]:
    return [
        f"{path.relative_to(package.parent)}:{line}: {what}"
        for path, line, what, marked in reads(package, memo)
        if not marked
    ]
