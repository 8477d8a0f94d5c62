"""The one door for reading a file or walking a folder a user points at.

Only regular files are read: the open is non-blocking (a FIFO cannot hang it) and
`fstat` on the open file must say regular (a symlink to a regular file is fine, to
`/dev/zero`, a FIFO, a socket or a device is not; the path is stat-ed first so a
device is never even opened).  Each kind of file has a documented bound, below, and a
file past it is one paragraph and exit 2 (`UsageError`) naming the file, the bound and
what to do; nothing is read past a bound, so memory stays bounded whatever the file
holds.  A folder walk is bounded in depth, folders and names, and never follows a
symlinked folder (it may leave the tree or loop back into it).
"""

from __future__ import annotations

import io
import os
import stat
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Iterator, List, Optional, Tuple

from .decoded import JSONObject
from .errors import UsageError
from .lazy import lazy_module

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
else:  # only a TOML file read pays for the parser
    tomllib = lazy_module("tomllib" if sys.version_info >= (3, 11) else "tomli")

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

# Hand-written TOML/YAML (a recipe, `bench --variants`, invoke.yaml, `--config`): KBs.
CONFIG_BYTES = 4 * MiB
# cannbuild.lock: a few repos and archives, a few KB.
LOCK_BYTES = 16 * MiB
# A `--build-variant` / `[[variant]]` patch: a tiling change is KBs; a patch of
# hundreds of MB is not a variant of FlashAttention.
PATCH_BYTES = 64 * MiB
# An existing file at `ci --out`: only its first line is read (the rendered header).
FIRST_LINE_BYTES = 4 * KiB
# A profiler CSV (kernel_details, op_summary, op_statistic, operator_details): every
# row is kept until the file is sorted by stream and time, so memory grows with the
# file (a 200 MB kernel_details.csv peaks at 184 MB RSS, bench/bench_bounded_reads.py;
# up to 3x the size where no cell repeats); a 1 GiB table is millions of kernels, far
# beyond what a profile of a few training steps writes.
PROFILE_CSV_BYTES = 1 * GiB
# One line of a profiler CSV: a row is hundreds of bytes; an operator_details call
# stack a few KB.  The reader never holds more than this of one line.
PROFILE_CSV_LINE_CHARS = 1 * MiB
# One row of a profiler CSV, quoted cells spanning lines included.
PROFILE_CSV_ROW_CHARS = 8 * MiB
# trace_view.json / msprof_*.json: streamed (memory is one chunk, whatever the size);
# the bound is time: about 40 s of CPU per GiB.
PROFILE_TRACE_BYTES = 8 * GiB
# ascend_pytorch_profiler_*.db / msprof_*.db: SQLite pages through it (memory is its page
# cache and one row), so the bound is time, as for a trace.
PROFILE_DB_BYTES = 8 * GiB
# The operator's docs (markdown), op_host sources scanned for the tiling's padding,
# an op_impl ops-info JSON, opp/vendors/config.ini: KBs to a few MB.
OPERATOR_FILE_BYTES = 32 * MiB
# An offline bundle (`--bundle`): a git bundle per repo, the archives, the lock and the
# manifest, tens of members; each member's header is kept while the bundle is checked.
BUNDLE_MEMBERS = 1000
# A folder walk (`profile PATH`): a torch_npu or msprof run is about ten folders deep
# at most below the folder given and about ten folders wide, so a few hundred runs fit.
WALK_DEPTH = 12
WALK_FOLDERS = 2000
WALK_NAMES = 200_000  # names listed in all folders together (a flat folder of millions)


def _size(n: int) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def not_regular(path: Path, what: str, mode: int) -> UsageError:
    kind = _kind(mode)
    if os.path.islink(path):
        kind = f"a link to {os.path.realpath(path)}, {kind}"
    return UsageError(
        f"{what} {path} is {kind}, not a regular file; cannbuild reads only regular "
        "files (a pipe or a device could block or never end).",
        "Pass a regular file instead (a symlink to one is fine).",
    )


def too_big(path: Path, what: str, size: str, bound: int, hint: str) -> UsageError:
    return UsageError(
        f"{what} {path} is {size}, over the {_size(bound)} cannbuild reads of a {what}.",
        hint,
    )


def open_regular(path: Path, what: str, max_bytes: Optional[int], hint: str = "") -> int:
    """A read-only descriptor of `path`, which must be a regular file of at most
    `max_bytes` (None: any size, for a reader that bounds itself).  OSError (no such
    file, no permission) is the caller's to word; the rest is a UsageError."""
    mode = os.stat(path).st_mode  # follows a symlink: its target is what is read
    if not stat.S_ISREG(mode):
        raise not_regular(path, what, mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | os.O_NOCTTY)
    try:
        st = os.fstat(fd)  # what was opened, not what the path named a moment ago
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, what, st.st_mode)
        if max_bytes is not None and st.st_size > max_bytes:
            raise too_big(path, what, _size(st.st_size), max_bytes, hint or _default_hint(what))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _default_hint(what: str) -> str:
    return f"Is this the right file? A {what} is far smaller."


def read_bytes(path: Path, what: str, max_bytes: int, hint: str = "") -> bytes:
    """The whole file, refused past `max_bytes` (also when it grows while read)."""
    fd = open_regular(path, what, max_bytes, hint)
    with io.FileIO(fd, "r") as fh:
        data = _read_at_most(fh, max_bytes + 1)
    if len(data) > max_bytes:
        raise too_big(
            path, what, f"over {_size(max_bytes)}", max_bytes, hint or _default_hint(what)
        )
    return data


def _read_at_most(fh: io.FileIO, limit: int) -> bytes:
    parts: List[bytes] = []
    left = limit
    while left > 0:
        block = fh.read(min(left, MiB))
        if not block:
            break
        parts.append(block)
        left -= len(block)
    return b"".join(parts)


def read_text(path: Path, what: str, max_bytes: int, hint: str = "", errors: str = "strict") -> str:
    """The whole file as UTF-8 text (UnicodeDecodeError is the caller's to word)."""
    return read_bytes(path, what, max_bytes, hint).decode("utf-8", errors)


def open_text(
    path: Path,
    what: str,
    max_bytes: Optional[int],
    hint: str = "",
    encoding: str = "utf-8",
    newline: Optional[str] = None,
) -> IO[str]:
    """A text stream of a regular file of at most `max_bytes`, for a reader that
    bounds what it holds (a bounded readline, a chunked parser)."""
    fd = open_regular(path, what, max_bytes, hint)
    return open(fd, encoding=encoding, newline=newline)


def head(path: Path, what: str, max_bytes: int) -> bytes:
    """The first `max_bytes` bytes (fewer when it is shorter) of a regular file of any
    size: enough to recognise a file's format without reading it."""
    fd = open_regular(path, what, None)
    with io.FileIO(fd, "r") as fh:
        return _read_at_most(fh, max_bytes)


def first_line(path: Path, what: str, max_bytes: int = FIRST_LINE_BYTES) -> str:
    """The first line (at most `max_bytes` of it) of a regular file of any size."""
    fd = open_regular(path, what, None)
    with open(fd, "rb") as fh:
        return fh.readline(max_bytes).decode("utf-8", "replace")


def parse_toml(
    text: str, path: Path, what: str, hint: str, problem: str = "is not valid TOML"
) -> JSONObject:
    """`text` (the file at `path`) as TOML; invalid TOML, or nesting deeper than the
    parser's recursion (`a = [[[[...` fits thousands of levels in a few KB), is a
    UsageError naming the file (`{what} {path} {problem}: why.`), not a traceback."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        detail = str(exc)
    except RecursionError:
        detail = "arrays or inline tables nested too deeply to read"
    raise UsageError(f"{what} {path} {problem}: {detail}.", hint)


def walk(
    root: Path,
    what: str,
    hint: str,
    max_depth: int = WALK_DEPTH,
    max_folders: int = WALK_FOLDERS,
    max_names: int = WALK_NAMES,
) -> Iterator[Tuple[Path, List[str]]]:
    """(folder, names of what is not a folder in it) for `root` and each folder below
    it, top-down, in name order.  A symlinked folder is not entered; past a bound, a
    UsageError naming the bound."""
    bounds = (max_depth, max_folders, max_names)
    stack: List[Tuple[Path, int]] = [(root, 0)]
    folders = names = 0
    while stack:
        folder, depth = stack.pop()
        folders += 1
        if folders > max_folders:
            raise _walk_error(root, what, f"more than {max_folders} folders", bounds, hint)
        if depth > max_depth:
            raise _walk_error(
                root, what, f"folders more than {max_depth} levels deep ({folder})", bounds, hint
            )
        subfolders: List[str] = []
        files: List[str] = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    names += 1
                    if names > max_names:
                        raise _walk_error(root, what, f"more than {max_names} names", bounds, hint)
                    if entry.is_dir(follow_symlinks=False):
                        subfolders.append(entry.name)
                    elif not _is_dir_link(entry):
                        files.append(entry.name)
        except OSError:
            if folder == root:
                raise
            continue  # an unreadable subfolder holds nothing we can read
        yield folder, sorted(files)
        stack.extend((folder / name, depth + 1) for name in sorted(subfolders, reverse=True))


def _is_dir_link(entry: os.DirEntry) -> bool:
    try:
        return entry.is_symlink() and entry.is_dir()
    except OSError:
        return False


def _walk_error(
    root: Path, what: str, found: str, bounds: Tuple[int, int, int], hint: str
) -> UsageError:
    depth, folders, names = bounds
    return UsageError(
        f"{what} {root} holds {found}; cannbuild walks at most {depth} levels, "
        f"{folders} folders and {names} names below the folder given.",
        hint,
    )


__all__ = [
    "BUNDLE_MEMBERS",
    "CONFIG_BYTES",
    "FIRST_LINE_BYTES",
    "LOCK_BYTES",
    "OPERATOR_FILE_BYTES",
    "PATCH_BYTES",
    "PROFILE_CSV_BYTES",
    "PROFILE_CSV_LINE_CHARS",
    "PROFILE_CSV_ROW_CHARS",
    "PROFILE_TRACE_BYTES",
    "WALK_DEPTH",
    "WALK_FOLDERS",
    "WALK_NAMES",
    "first_line",
    "head",
    "open_regular",
    "open_text",
    "parse_toml",
    "read_bytes",
    "read_text",
    "walk",
]
