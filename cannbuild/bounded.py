"""The one door for reading a file: what a user points at and cannbuild's own state alike.

Only regular files are read, opened non-blocking (a FIFO cannot hang it) and checked on
the open descriptor (a link to /dev/zero is refused unopened); each `Kind` below has a
bound, nothing is read past it.  Text is UTF-8; JSON is decoded by msgspec (the schema
type is passed in: `read_json(path, KIND, type=...)`), nested no deeper than the
recursion limit.  A problem is one paragraph naming the file (UsageError, exit 2), but
for cannbuild's own `state` (a stamp, a memo, a record), which `read_state` reads as
absent with a warning (`StateIgnored`, said by the task layer).  A folder walk is bounded
in depth, folders and names, and never follows a linked folder.
tests/unit/test_every_reader.py finds every read that bypasses this module and feeds
every Kind a FIFO, a link to /dev/zero, a 300 MB file, deep JSON and invalid UTF-8.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import sys
import warnings
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterator, List, Optional, Tuple

import msgspec
from msgspec import Struct

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


class Kind(Struct, frozen=True):
    """A kind of file: its name in messages, its bound (None: the reader streams), what to
    do about a bad one, and whether it is cannbuild's own `state`, which a run remakes."""

    what: str
    max_bytes: Optional[int]
    hint: str = ""
    state: bool = False

    def named(self, what: str = "", hint: str = "") -> Kind:
        """The same kind, called `what` and with another `hint`, where given."""
        return msgspec.structs.replace(self, what=what or self.what, hint=hint or self.hint)


_OURS = "Read as absent: cannbuild wrote it and writes it again when it needs it."
_VENDOR = (
    "Read as absent: its vendor ships nothing cannbuild sees (`cannbuild install` remakes it)."
)
_TRACE = "Profile fewer steps (torch_npu's schedule: fewer active steps)"

# What a user points at (a bad one is exit 2).  Hand-written files are KBs; a lock pins a
# few repos; a patch is a tiling change; a trace or database is paged or streamed (the
# bound is the time: 40 s per GiB); a profiler CSV is kept whole until it is sorted (a
# 200 MB kernel_details.csv peaks at 184 MB RSS, bench/bench_bounded_reads.py).
CONFIG = Kind("config file", 4 * MiB)  # invoke.yaml, --config
RECIPE = Kind("recipe", 4 * MiB, "A recipe is a page of TOML: is this the right file?")
STEP_TEMPLATE = Kind("step template", 4 * MiB, "A step template is a command of a few lines.")
VARIANTS = Kind("--variants", 4 * MiB)
MANIFEST = Kind("manifest", 4 * MiB, "Pass the cann.xml of a release (hicann/manifest).")
BUILD_SH = Kind("build.sh", 4 * MiB)
LOCK = Kind("lock file", 16 * MiB, "Restore it, or delete it and run `cannbuild lock`.")
BENCH_RESULTS = Kind("bench results file", 16 * MiB, "Pass a results.json cannbuild bench wrote.")
PATCH = Kind("patch", 64 * MiB)
RENDERED_FILE = Kind("--out", None)  # only its first line is read: a header of ours?
TARGET = Kind(
    "remembered target", 64 * KiB, "Remove it: the next setup, build or install records it again."
)
PROFILE_CSV = Kind("profiler table", 1 * GiB, f"{_TRACE}, or split the table.")
PROFILE_CSV_LINE_CHARS = 1 * MiB  # one line held at most: a row is hundreds of bytes
PROFILE_CSV_ROW_CHARS = 8 * MiB  # one row, quoted cells spanning lines included
PROFILE_TRACE = Kind("profiler trace", 8 * GiB, f"{_TRACE}: a trace is read at 40 s per GiB.")
PROFILE_DB = Kind("profiler database", 8 * GiB)
PROFILE_DB_CELL_CHARS = 1 * MiB  # one STRING_IDS value: a name, a type, the shapes of an op
OPERATOR_FILE = Kind("operator file", 32 * MiB)  # its docs, its tiling sources
BUNDLE = Kind("--bundle", None)  # a tar of tens of members, streamed
BUNDLE_MEMBERS = 1000
BUNDLE_MANIFEST = Kind("bundle manifest", 1 * MiB)
HOST_FILE = Kind("host file", 1 * MiB)  # version.info, sysfs, torch's version.py
BINARY = Kind("binary", None)  # an ELF library or tool, a package: streamed
SOURCE_FILE = Kind("source file", None)  # a checkout's cmake and headers, up to a bound each
ARCHIVE = Kind("archive", None)  # a download or a package, hashed or unpacked as a stream
DATA_FILE = Kind("cannbuild data file", 64 * MiB)  # its own templates and emulator sources
PROC_FILE = Kind("kernel file", 16 * MiB)  # /proc/self/status, /proc/meminfo, maps

# cannbuild's own state (a bad one is read as absent, with a warning): stamps/*.json,
# reports/last-build.json, cache/ (tools.json, derived/, renders/, third-party/, ...),
# src/.<repo>.checkout.json, .cannbuild-owned, .lock.info, sandbox.json, an install's
# op_impl configs and opp/set_env.bash, what a validation or profile child wrote, logs.
STAMP = Kind("step stamp", 16 * MiB, _OURS, True)
ATTEMPT = Kind("build attempt record", 1 * MiB, _OURS, True)
MEMO = Kind("memo", 64 * MiB, _OURS, True)
CHECKOUT_RECORD = Kind("checkout record", 1 * MiB, _OURS, True)
OWNER_MARK = Kind("ownership marker", 64 * KiB, _OURS, True)
LOCK_HOLDER = Kind("lock holder record", 64 * KiB, _OURS, True)
SANDBOX_RECORD = Kind("sandbox record", 1 * MiB, _OURS, True)
INSTALLED_FILE = Kind("installed file", 32 * MiB, _VENDOR, True)
RUN_FILE = Kind("run file", 16 * MiB, _OURS, True)  # a child's job, result, reply, report
CASE_DATA = Kind("case data", 4 * GiB, _OURS, True)  # a case's tensors, for and from a check
LOG = Kind("step log", None, _OURS, True)  # read at its head and tail

WALK_DEPTH = 12
WALK_FOLDERS = 2000
WALK_NAMES = 200_000  # names listed in all folders together (a flat folder of millions)


class StateIgnored(UserWarning):
    """A file of cannbuild's own state that cannot be read, read as absent."""


def _size(n: int) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


_MODES = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
}


def _mode_kind(path: Path, mode: int) -> str:
    kind = _MODES.get(stat.S_IFMT(mode), "not a regular file")
    return f"a link to {os.path.realpath(path)}, {kind}" if os.path.islink(path) else kind


def refusal(path: Path, kind: Kind, problem: str) -> UsageError:
    """`{what} {path} {problem}.` and what to do."""
    hint = kind.hint or f"Is this the right file? No {kind.what} is that big."
    return UsageError(f"{kind.what} {path} {problem}.", hint)


class Absent(UsageError):
    """The file is not there (or a folder on its way is a file)."""


def open_regular(path: Path, kind: Kind) -> int:
    """A read-only descriptor of `path`, which must be a regular file within the kind's
    bound; anything else is a UsageError naming it (`Absent` when it is not there)."""
    try:
        mode = os.stat(path).st_mode  # follows a symlink: its target is what is read
        if not stat.S_ISREG(mode):
            raise _not_regular(path, kind, mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except (FileNotFoundError, NotADirectoryError):
        raise Absent(f"{kind.what} {path} does not exist.", kind.hint) from None
    except OSError as exc:
        raise refusal(path, kind, f"cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)  # what was opened, not what the path named a moment ago
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, kind, st.st_mode)
        if kind.max_bytes is not None and st.st_size > kind.max_bytes:
            raise _too_big(path, kind, _size(st.st_size))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _not_regular(path: Path, kind: Kind, mode: int) -> UsageError:
    return UsageError(
        f"{kind.what} {path} is {_mode_kind(path, mode)}, not a regular file; cannbuild "
        "reads only regular files (a pipe or a device could block or never end).",
        kind.hint if kind.state else "Pass a regular file instead (a symlink to one is fine).",
    )


def _too_big(path: Path, kind: Kind, size: str) -> UsageError:
    assert kind.max_bytes is not None
    return refusal(
        path,
        kind,
        f"is {size}, over the {_size(kind.max_bytes)} cannbuild reads of one {kind.what}",
    )


def open_binary(path: Path, kind: Kind) -> io.FileIO:
    """A binary stream of a regular file, for a reader that bounds what it holds."""
    return io.FileIO(open_regular(path, kind), "r")


def digest(path: Path, kind: Kind, algo: str = "sha256") -> str:
    """The file's hash (`algo` as hashlib names it: sha256, md5, sha3_256), streamed."""
    found = hashlib.new(algo.lower())
    with open_binary(path, kind) as fh:
        for block in iter(lambda: fh.read(MiB), b""):
            found.update(block)
    return found.hexdigest()


def read_bytes(path: Path, kind: Kind) -> bytes:
    """The whole file, refused past the kind's bound (also when it grows while read)."""
    with open_binary(path, kind) as fh:
        data = _read_at_most(fh, kind.max_bytes + 1 if kind.max_bytes is not None else -1)
    if kind.max_bytes is not None and len(data) > kind.max_bytes:
        raise _too_big(path, kind, f"over {_size(kind.max_bytes)}")
    return data


def _read_at_most(fh: io.FileIO, limit: int) -> bytes:
    """`limit` bytes at most (-1: to the end)."""
    parts: List[bytes] = []
    left = limit
    while left:
        block = fh.read(MiB if left < 0 else min(left, MiB))
        if not block:
            break
        parts.append(block)
        left -= len(block) if left > 0 else 0
    return b"".join(parts)


_BOM = "\ufeff"  # a UTF-8 byte-order mark, as some editors start a text file


def read_text(path: Path, kind: Kind, errors: str = "strict") -> str:
    """The whole file as UTF-8 text (`errors="replace"`: any bytes)."""
    try:
        return read_bytes(path, kind).decode("utf-8", errors)
    except UnicodeDecodeError as exc:
        raise refusal(path, kind, f"is not UTF-8 text (byte {exc.start}: {exc.reason})") from None


def decode_json(data: bytes, source: object, kind: Kind, type: object = Any) -> Any:
    """JSON bytes (a file's, a pipe's, a member's: named by `source`) as `type`; a
    document that is not JSON, not UTF-8, nested past the recursion limit or not of
    `type` is a UsageError naming it."""
    try:
        return msgspec.json.decode(data.removeprefix(_BOM.encode()), type=type)
    except msgspec.ValidationError as exc:
        problem = f"does not hold what cannbuild expects ({exc})"
    except msgspec.DecodeError as exc:
        problem = f"is not valid JSON ({exc})"
    except RecursionError:
        problem = f"is nested deeper than the {sys.getrecursionlimit()} levels cannbuild reads"
    raise refusal(Path(str(source)), kind, problem)


def read_json(path: Path, kind: Kind, type: object = Any) -> Any:
    """The file's JSON as `type` (Any: dicts, lists, strings, numbers)."""
    return decode_json(read_bytes(path, kind), path, kind, type)


def proc_value(name: str, key: str) -> Optional[str]:
    """The first word after `key:` in /proc/<name> (`self/status`, `meminfo`): what the
    kernel says of this process and machine; None where it says nothing."""
    try:
        for line in read_text(Path("/proc", name), PROC_FILE).splitlines():
            if line.startswith(key + ":"):
                return line.split()[1]
    except (UsageError, IndexError):
        pass
    return None


def read_state(path: Path, kind: Kind, type: object = Any) -> Any:
    """A file of cannbuild's own (`type=bytes`: its bytes; else its JSON as `type`);
    None when it is absent, and when it cannot be read, with a `StateIgnored` warning
    naming it: the run goes on as without it and writes it again."""
    try:
        data = read_bytes(path, kind)
        return data if type is bytes else decode_json(data, path, kind, type)
    except Absent:
        return None
    except UsageError as exc:
        warnings.warn(StateIgnored(exc.paragraph()), stacklevel=2)
        return None


def open_text(
    path: Path, kind: Kind, encoding: str = "utf-8", newline: Optional[str] = None
) -> IO[str]:
    """A text stream of a regular file, for a reader that bounds what it holds (a
    bounded readline, a chunked parser)."""
    return open(open_regular(path, kind), encoding=encoding, newline=newline)


def head(path: Path, kind: Kind, max_bytes: int) -> bytes:
    """The first `max_bytes` bytes (fewer when it is shorter) of a regular file of any
    size: enough to recognise a file's format without reading it."""
    with open_binary(path, msgspec.structs.replace(kind, max_bytes=None)) as fh:
        return _read_at_most(fh, max_bytes)


def parse_toml(text: str, path: Path, kind: Kind, problem: str = "is not valid TOML") -> JSONObject:
    """`text` (the file at `path`) as TOML; invalid TOML, or nesting deeper than the
    parser's recursion (`a = [[[[...` fits thousands of levels in a few KB), is a
    UsageError naming the file (`{what} {path} {problem}: why.`), not a traceback."""
    try:
        # an editor's byte-order mark (Notepad saves one) holds no data; tomllib refuses it
        return tomllib.loads(text.removeprefix(_BOM))
    except tomllib.TOMLDecodeError as exc:
        detail = str(exc)
    except RecursionError:
        detail = "arrays or inline tables nested too deeply to read"
    raise refusal(path, kind, f"{problem}: {detail}")


def read_toml(path: Path, kind: Kind, problem: str = "is not valid TOML") -> JSONObject:
    return parse_toml(read_text(path, kind), path, kind, problem)


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
