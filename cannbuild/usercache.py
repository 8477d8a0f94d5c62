"""What is built once per user and machine and reused by every later run (the sandbox's
emulated ACL runtime: half a minute of C++ per fresh sandbox otherwise).

Entries live in `$XDG_CACHE_HOME/cannbuild/<kind>/<key>` (else `~/.cache/cannbuild`), keyed
by the hash of everything that made them.  An entry is made in a temporary folder beside it
and renamed into place, with a manifest of its files' sha256; it is checked on every use,
and one that does not match (a half-copied or edited file) is made again.  `parsed/`
keeps the parse of each TOML file cannbuild ships, beside the sha256 of its text;
`tools.json` the build tools' versions by the identity of each binary (host/toolchain.py).  The
cache is the user's own: a root that is a link, belongs to someone else or that others may
write is not used (the caller builds in place instead), and its folders are made 0700.
Each new torch, compiler or cannbuild makes new entries and the old ones are never asked
for again, so a shelf is kept under SHELF_BYTES: when an entry is made, the least recently
used ones go first, never one used in the last GRACE_SECONDS (a run beside this one may be
copying it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import stat
import time
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Tuple

import msgspec
from msgspec import Struct

from .bounded import ARCHIVE, MEMO, Kind, digest, parse_toml, read_state
from .decoded import JSONObject
from .proc import pid_alive
from .resources import data_dir
from .safefs import discard, disk_usage
from .workspace import write_atomic

MANIFEST = "cannbuild-cache.json"
# What one shelf (kind) may hold: 16 sets of FlashAttention references (16 MB each), many
# more emulation or mirror entries (0.4 and 1.6 MB).
SHELF_BYTES = 256 * 1024 * 1024
# An entry used this recently is never removed; nor is a temporary folder this young.
GRACE_SECONDS = 600.0


def cache_root(env: Mapping[str, str]) -> Optional[Path]:
    """This user's cache folder for cannbuild, made if its parent exists; None where
    there is none that is safely the user's own."""
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
    else:
        home = env.get("HOME", "")
        if not home or not os.path.isdir(home):
            return None
        base = Path(home) / ".cache"
    root = base / "cannbuild"
    for folder in (base, root):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    return root if _own(base) and _own(root) else None


def _own(folder: Path) -> bool:
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == os.geteuid()
        and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def _intact(entry: Path) -> bool:
    try:
        listed: Optional[Dict[str, str]] = read_state(entry / MANIFEST, MEMO, Dict[str, str])
        return listed is not None and all(
            (entry / name).is_file()
            and not (entry / name).is_symlink()
            and digest(entry / name, ARCHIVE) == wanted
            for name, wanted in listed.items()
        )
    except (OSError, ValueError, AttributeError):
        return False


def cached(
    root: Path, kind: str, key: str, make: Callable[[Path], None], budget: int = SHELF_BYTES
) -> Tuple[Path, bool]:
    """The entry `kind/key` under `root`, made by `make(folder)` (which fills the empty
    folder it is given) when absent or damaged; and whether it was reused.  Making one
    prunes the shelf to `budget` bytes."""
    shelf = root / kind
    with contextlib.suppress(FileExistsError):
        shelf.mkdir(mode=0o700)
    entry = shelf / key
    if _intact(entry):
        _used(entry)
        return entry, True
    entry, reused = _make(shelf, entry, make)
    with contextlib.suppress(OSError):  # a shelf that cannot be pruned still serves
        prune(shelf, budget, keep=entry)
    return entry, reused


def _used(entry: Path) -> None:
    """An entry's time is its last use: what pruning goes by."""
    with contextlib.suppress(OSError):
        os.utime(entry)


def _make(shelf: Path, entry: Path, make: Callable[[Path], None]) -> Tuple[Path, bool]:
    key = entry.name
    tmp = shelf / f".{key}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=0o700)
    try:
        make(tmp)
        files = sorted(p for p in tmp.iterdir() if p.is_file() and not p.is_symlink())
        manifest = {p.name: digest(p, ARCHIVE) for p in files}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
        if entry.exists() or entry.is_symlink():  # damaged (or made by a run beside us)
            if _intact(entry):
                return entry, True
            discard(entry)
        try:
            os.rename(tmp, entry)
        except OSError:  # a concurrent run renamed its copy first: take it if it is whole
            if not _intact(entry):
                raise
            return entry, True
        return entry, False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def prune(shelf: Path, budget: int, keep: Path, now: Optional[float] = None) -> List[str]:
    """Remove the shelf's least recently used entries while it holds more than `budget`
    bytes, and temporary folders runs left, sparing `keep` and anything used in the last
    GRACE_SECONDS; the names removed."""
    now = time.time() if now is None else now
    entries: List[Tuple[float, int, Path]] = []
    removed: List[str] = []
    for path in shelf.iterdir():
        st = os.lstat(path)
        idle = now - st.st_mtime > GRACE_SECONDS
        if path.name.startswith("."):  # `.<key>.tmp-<pid>` of a run that died making it
            pid = path.name.rpartition(".tmp-")[2]
            if idle and pid.isdigit() and not pid_alive(int(pid)):
                discard(path)
                removed.append(path.name)
            continue
        entries.append((st.st_mtime, disk_usage(path), path))
    total = sum(size for _, size, _ in entries)
    for mtime, size, path in sorted(entries, key=lambda e: e[0]):  # least recently used first
        if total <= budget:
            break
        if path == keep or now - mtime <= GRACE_SECONDS:
            continue
        discard(path)
        removed.append(path.name)
        total -= size
    return removed


class _Parsed(Struct, frozen=True):
    sha256: str  # of the text `data` was parsed from
    data: JSONObject


def parsed_toml(text: str, path: Path, kind: Kind) -> JSONObject:
    """`text` (the file at `path`) as TOML, as bounded.parse_toml reads it.  For a file
    cannbuild ships (recipes/, recipes/facts/, recipes/sandbox/) the parse is kept in
    the user cache and reused while the file's text has the same sha256: tomllib is pure
    Python, and the 90 KB of them every run reads took a no-op 20-25 ms to parse
    (bench/bench_startup.py); the text is read and hashed each time, so an edit is seen
    whatever its time stamps say."""
    root = cache_root(os.environ) if data_dir("recipes") in path.parents else None
    if root is None:
        return parse_toml(text, path, kind)
    digest = hashlib.sha256(text.encode()).hexdigest()
    name = hashlib.sha256(str(path).encode()).hexdigest()[:16]
    memo = root / "parsed" / f"{name}-{path.name}.json"  # one per file: a new text replaces it
    kept = read_state(memo, MEMO, _Parsed)
    if kept is not None and kept.sha256 == digest:
        return kept.data
    data = parse_toml(text, path, kind)
    if _json_plain(data):  # a TOML date or an inf would come back as another value: not kept
        with contextlib.suppress(OSError):
            memo.parent.mkdir(mode=0o700, exist_ok=True)
            write_atomic(memo, msgspec.json.encode(_Parsed(digest, data)), durable=False)
    return data


def _json_plain(value: object) -> bool:
    """`value` comes back from JSON as it is: tables, arrays, text, integers, finite floats."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_json_plain(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (str, int))
