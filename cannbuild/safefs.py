"""Never remove, replace or write through a link below a folder cannbuild owns.

A workspace is cannbuild's, but what is inside it can be changed behind its back: a
user (or a script) who replaces `<ws>/opp` with a symlink to a folder of their own
would have `install` empty that folder.  So every remove, replace and folder creation
below an owned root goes through here: the path is walked from the root one component
at a time with `O_NOFOLLOW` and `dir_fd` (never by name from the top), and a component
that is a symlink, not a folder, or a `..` is refused with exit 2 naming it, before
anything is touched.  The action itself then works on the folder descriptor the walk
ended at, so a link swapped in after the check is not followed either.

A symlink *at* the path being removed is removed itself, never followed; a folder is
removed with `shutil.rmtree`, which on Linux walks by descriptor and unlinks the links
it meets inside (`shutil.rmtree.avoids_symlink_attacks`).  The root itself is what the
user named (the workspace, a sandbox): it must be a real folder, not a link.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Iterator, List, Optional, Tuple, Union

from .errors import UsageError

PathLike = Union[str, "os.PathLike[str]"]

# O_DIRECTORY fails on anything but a folder, O_NOFOLLOW on a symlink at the last component: open()
# itself does the check, with no window between check and use.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FIX = (
    "cannbuild never writes or removes through a link in a folder it owns, so nothing "
    "there was touched."
)


def _refuse(what: str, message: str, hint: str) -> UsageError:
    return UsageError(f"{what}: {message}", hint)


def _relative(root: Path, path: Path, what: str) -> List[str]:
    """The components of `path` below `root`, checked by name only: no `..`, and
    `path` is `root` or below it."""
    raw = Path(path) if Path(path).is_absolute() else Path(os.getcwd()) / path
    if ".." in raw.parts:
        raise _refuse(
            what,
            f"{path} has a '..' component, which could lead outside {root}.",
            "cannbuild only writes and removes inside the folders it owns; fix the value.",
        )
    full = Path(os.path.abspath(raw))
    if full != root and root not in full.parents:
        raise _refuse(
            what,
            f"{full} is outside {root}.",
            "cannbuild only writes and removes inside the folders it owns; fix the value.",
        )
    return list(full.relative_to(root).parts)


def _link_refusal(what: str, at: Path, dir_fd: Optional[int], name: str) -> UsageError:
    try:
        target = os.readlink(name, dir_fd=dir_fd)
    except OSError:
        target = "?"
    return _refuse(
        what,
        f"{at} is a symlink (to {target}), not a folder cannbuild made. {_FIX}",
        f"Remove the link (rm {at}) and rerun; cannbuild makes the folder itself.",
    )


def _not_folder(what: str, at: Path) -> UsageError:
    return _refuse(
        what,
        f"{at} is a file, not a folder cannbuild made. {_FIX}",
        f"Move {at} away and rerun; cannbuild makes the folder itself.",
    )


def _open_root(root: Path, what: str) -> Optional[int]:
    try:
        return os.open(root, _DIR_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and root.is_symlink():
            raise _link_refusal(what, root, None, str(root)) from None
        if exc.errno == errno.ENOTDIR:
            raise _not_folder(what, root) from None
        raise


def _open_child(fd: int, name: str, at: Path, what: str) -> Optional[int]:
    """The folder `name` in `fd`, opened without following a link; None: it is missing."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        # ELOOP: O_NOFOLLOW met a symlink; ENOTDIR: a file.  lstat below tells which, for the
        # message.
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
    try:
        mode = os.lstat(name, dir_fd=fd).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        raise _link_refusal(what, at, fd, name)
    raise _not_folder(what, at)


@contextlib.contextmanager
def _walk(
    root: PathLike, path: PathLike, what: str, create: bool = False
) -> Iterator[Tuple[Path, Optional[int], List[str]]]:
    """Walk from `root` to the folder that holds `path` (`path` itself when it is
    `root`): yields (path, descriptor of the deepest folder reached, the components
    not reached because they do not exist).  `create` makes the missing folders."""
    base = Path(os.path.abspath(root))
    parts = _relative(base, Path(path), what)
    first = _open_root(base, what)
    if first is None and create:  # the root is what the user named: made as named
        os.makedirs(base, exist_ok=True)
        first = _open_root(base, what)
    if first is None:  # no root yet: nothing below it to be a link
        yield base.joinpath(*parts), None, parts[:-1]
        return
    fds: List[int] = [first]
    try:
        at = base
        missing: List[str] = []
        for i, name in enumerate(parts[:-1]):
            at = at / name
            fd = _open_child(fds[-1], name, at, what)
            if fd is None and create:
                with contextlib.suppress(FileExistsError):  # made meanwhile: checked below
                    os.mkdir(name, dir_fd=fds[-1])
                fd = _open_child(fds[-1], name, at, what)
            if fd is None:
                missing = parts[i:-1]
                break
            fds.append(fd)
        yield base.joinpath(*parts), fds[-1], missing
    finally:
        for fd in fds:
            os.close(fd)


def check_below(root: PathLike, path: PathLike, what: str, folder: bool = False) -> Path:
    """`path` (absolute, normalised) once every folder from `root` down to its parent
    is a real folder inside `root`, not a link; with `folder`, `path` too when it
    exists (a folder cannbuild writes into).  Refused with exit 2 naming the link."""
    with _walk(root, path, what) as (full, fd, missing):
        if folder and fd is not None and not missing and full != Path(os.path.abspath(root)):
            child = _open_child(fd, full.name, full, what)
            if child is not None:
                os.close(child)
    return full


def make_dirs(root: PathLike, path: PathLike, what: str) -> Path:
    """Make the folder `path` below `root` and the folders above it (mkdir -p), each one
    checked or made without following a link; an existing link on the way is refused."""
    with _walk(root, path, what, create=True) as (full, fd, _missing):
        if full == Path(os.path.abspath(root)):
            return full
        assert fd is not None
        child = _open_child(fd, full.name, full, what)
        if child is None:
            with contextlib.suppress(FileExistsError):
                os.mkdir(full.name, dir_fd=fd)
            child = _open_child(fd, full.name, full, what)
        if child is None:  # removed again as it was made: say so rather than write blind
            raise FileNotFoundError(errno.ENOENT, "folder vanished as it was made", str(full))
        os.close(child)
    return full


def fresh(root: PathLike, path: PathLike, what: str) -> Path:
    """An empty folder at `path` below `root`, for a command to write into: what was
    there removed, then made, without following a link on the way.  A link at `path`
    itself is refused too (exit 2): someone put it there, and the folder is one the
    command writes into."""
    check_below(root, path, what, folder=True)
    remove(root, path, what)
    return make_dirs(root, path, what)


def remove(root: PathLike, path: PathLike, what: str, ignore_errors: bool = False) -> bool:
    """Remove `path` below `root` (a folder with all it holds, a file, or a link: the
    link itself, never what it points at); False when there was nothing.  Refused with
    exit 2 when a folder above it is a link.  `ignore_errors`: a file that cannot be
    removed (permissions) is left, as shutil.rmtree's flag does; refusals still raise."""
    with _walk(root, path, what) as (full, fd, missing):
        if full == Path(os.path.abspath(root)):
            raise _refuse(what, f"refusing to remove {full} itself.", "Name a path inside it.")
        if missing or fd is None:
            return False
        try:
            mode = os.lstat(full.name, dir_fd=fd).st_mode
        except FileNotFoundError:
            return False
        try:
            if stat.S_ISDIR(mode):
                _rmtree_at(fd, full, ignore_errors)
            else:
                os.unlink(full.name, dir_fd=fd)
        except FileNotFoundError:
            return False
        except OSError:
            if not ignore_errors:
                raise
        return True


def discard(path: Path) -> None:
    """Whatever is at `path` removed: a folder with all it holds, a file, or a link (the
    link itself); nothing there, nothing done.  Unchecked, for paths cannbuild made itself
    (`remove` checks a path against its root)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.is_symlink() or path.exists():
        path.unlink()


def _rmtree_at(parent_fd: int, full: Path, ignore_errors: bool) -> None:
    """shutil.rmtree of `full`, by the descriptor of its parent where Python has it
    (3.11 on); before that by the path the walk has just checked."""
    if sys.version_info >= (3, 11):
        shutil.rmtree(full.name, ignore_errors=ignore_errors, dir_fd=parent_fd)
    else:  # pragma: no cover
        shutil.rmtree(full, ignore_errors=ignore_errors)


def replace(root: PathLike, src: PathLike, dst: PathLike, what: str) -> Path:
    """os.replace(src, dst), both below `root`, each reached without following a link
    (a link at `dst` is replaced itself, like any file there)."""
    with (
        _walk(root, src, what) as (src_full, src_fd, src_missing),
        _walk(root, dst, what) as (dst_full, dst_fd, dst_missing),
    ):
        if src_missing or src_fd is None:
            raise FileNotFoundError(errno.ENOENT, "nothing to move", str(src_full))
        if dst_missing or dst_fd is None:
            raise FileNotFoundError(errno.ENOENT, "no folder to move into", str(dst_full))
        os.replace(src_full.name, dst_full.name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    return dst_full


def disk_usage(path: Path) -> int:
    """Bytes under `path`, links counted as themselves (never followed)."""
    try:
        st = path.lstat()
    except OSError:
        return 0
    if not stat.S_ISDIR(st.st_mode):
        return st.st_size
    total = 0
    for dirpath, _dirs, files in os.walk(path):  # os.walk does not enter linked folders
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def open_lock(path: Path, what: str) -> int:
    """A read-write descriptor of the lock file `path`, made when missing, never through a
    link (O_CREAT would make the file a dangling one names), only a regular file."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise _link_refusal(what, path, None, str(path)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO opens without waiting: refused
        os.close(fd)
        raise _refuse(what, f"{path} is not a regular file. {_FIX}", f"Remove it: rm {path}")
    os.set_blocking(fd, True)
    return fd
