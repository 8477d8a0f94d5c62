"""What cannbuild may delete: only folders it created, and paths it derived and checked
to stay inside them.

Every folder cannbuild writes into as a whole (a workspace, a sandbox, a container
context) carries a marker file it writes when it creates the folder.  A folder is only
ever emptied, replaced or pruned when it carries the marker of its kind; a folder
without one that holds any file is refused (exit 2), so pointing cannbuild at a project
folder never costs a file.  A folder made by a cannbuild that predates markers is
adopted only on evidence no one else leaves: it holds nothing but the names cannbuild
uses, and one file of cannbuild's own format (a step stamp, the workspace lock's holder
record, the tool memo, a sandbox's sandbox.json, a Dockerfile cannbuild rendered).
Names alone are not enough: a project may well have its own `src/` or `logs/`.  Folders
with no file in them (cache volumes mounted at `ccache/`, say) hold nothing to lose.

Every path derived from user input (a recipe's output patterns, a vendor name, a
bundle member, a lock value) goes through `safefs.check_below()` before anything is touched.
"""

from __future__ import annotations

import json
import os
import tempfile
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional, Sequence, Set

from . import __version__, safefs
from .bounded import OWNER_MARK, head, read_json, read_state
from .errors import StorageError, UsageError, write_error
from .lazy import lazy_module
from .workspace import FOLDERS, LATEST_LINKS, Workspace, write_atomic

if TYPE_CHECKING:
    from .host import toolchain
else:  # only for a folder without the marker
    toolchain = lazy_module("cannbuild.host.toolchain")

MARKER = ".cannbuild-owned"

# The names cannbuild uses in each kind of folder (a pre-marker folder holds no others).
KNOWN_ENTRIES = {
    "workspace": {
        *(name for name in FOLDERS if "/" not in name),
        "cannbuild.lock",
        ".lock",
        ".lock.info",
    },
    "sandbox": {"sysroot", "mirror", ".build", "create.log", "sandbox.json", ".creating", ".lock"},
    "container-context": {
        "Dockerfile",
        ".dockerignore",
        ".hadolint.yaml",
        "cannbuild.lock",
        "cannbuild-src",
        "cannbuild-wheel",
        "cannbuild-bundle.tar",
        "platform",
        "wheels",
        "artifacts",
        "workspace",
    },
    # `bench --out`, `profile --out`: what they write (charts are named by their group)
    "bench-output": {"results.json", "report.md", "*.png"},
    "profile-output": {"timeline.png"},
}


def _known(name: str, kind: str) -> bool:
    """Whether `name` is one cannbuild uses in a `kind` folder (a name or a pattern)."""
    return any(name == known or fnmatchcase(name, known) for known in KNOWN_ENTRIES.get(kind, ()))


def marker_kind(folder: Path) -> Optional[str]:
    data = read_state(folder / MARKER, OWNER_MARK)
    return data.get("kind") if isinstance(data, dict) else None


def owned(folder: Path, kind: str) -> bool:
    return marker_kind(folder) == kind


def _entries(folder: Path) -> Sequence[str]:
    """What `folder` holds, leaving out a marker half-written by an interrupted claim."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [n for n in names if n != MARKER and not n.startswith(f".{MARKER}.")]


def _json_keys(path: Path) -> Set[str]:
    """The keys of the JSON object a file cannbuild may have written holds (none: nothing
    it can read): the evidence of who made a folder, never an error of the run that asks."""
    try:
        data = read_json(path, OWNER_MARK)
    except UsageError:
        return set()
    return set(data) if isinstance(data, dict) else set()


def _holds_no_file(folder: Path) -> bool:
    """Only (empty) folders below `folder`, no file and no symlink: fresh mount points,
    say; nothing to lose."""
    for top, dirs, names in os.walk(folder):
        if names or any(os.path.islink(os.path.join(top, d)) for d in dirs):
            return False
    return True


def _made_by_cannbuild(folder: Path, kind: str) -> bool:
    """Whether `folder` holds a file only cannbuild writes, in cannbuild's format."""
    if kind == "workspace":
        if {"pid", "command", "started"} <= _json_keys(folder / ".lock.info"):
            return True
        ws = Workspace(root=folder)
        if toolchain.is_tool_memo(ws.tool_memo):
            return True
        # `sandbox create` with no --dir makes .cannbuild/sandbox, marked, in a .cannbuild
        # it does not mark: the workspace a later `setup --sandbox` takes
        if owned(folder / "sandbox", "sandbox"):
            return True
        try:
            stamps = sorted(ws.stamps.glob("*.json"))
        except OSError:
            return False
        return any({"step", "run_id", "input_hash"} <= _json_keys(s) for s in stamps)
    if kind == "sandbox":
        return {"schema", "variant", "cann"} <= _json_keys(folder / "sandbox.json")
    if kind == "bench-output":
        return {"schema", "run_id", "results", "sweep_s"} <= _json_keys(folder / "results.json")
    if kind == "container-context":
        try:
            return b"# Rendered by cannbuild " in head(folder / "Dockerfile", OWNER_MARK, 512)
        except UsageError:
            return False
    return False


def check_replaceable(folder: Path, kind: str, what: str) -> Path:
    """`folder` may be written, emptied or replaced by cannbuild as a `kind`: it does not
    exist, is empty, carries the `kind` marker, or is a pre-marker folder cannbuild made
    (see the module's docstring).  Anything else is refused (exit 2) before a byte is
    touched."""
    folder = Path(os.path.abspath(folder))
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise UsageError(
            f"{what} {folder} is not a folder cannbuild can use (it is a file or a symlink).",
            "Pass a new or empty folder.",
        )
    current = marker_kind(folder)
    if current == kind:
        return _layout_checked(folder, kind, what)
    if current is not None:
        raise UsageError(
            f"{what} {folder} is a cannbuild {current}, not a {kind}.",
            f"Pass another folder for the {kind}.",
        )
    entries = _entries(folder) if folder.exists() else []
    foreign = [n for n in entries if not _known(n, kind)]
    if (
        entries
        and not foreign
        and not _holds_no_file(folder)
        and not _made_by_cannbuild(folder, kind)
    ):
        raise UsageError(
            f"{what} {folder} is not empty and has no {MARKER} marker: its names "
            f"({_shown(entries)}) are ones cannbuild uses, but nothing "
            f"there shows cannbuild made it, so nothing there is touched.",
            f"Pass a new or empty folder as {what}; if an older cannbuild made this "
            f"{kind}, remove it yourself first.",
        )
    if foreign:
        raise UsageError(
            f"{what} {folder} already holds files cannbuild did not create ({_shown(foreign)}); cannbuild "
            f"only writes into a {kind} folder it made, so nothing there is touched.",
            f"Pass a new or empty folder as {what}.",
        )
    return _layout_checked(folder, kind, what)


def _layout_checked(folder: Path, kind: str, what: str) -> Path:
    if kind == "workspace" and folder.is_dir():
        check_layout(folder, what)
    return folder


def check_layout(root: Path, what: str = "--workspace") -> None:
    """Refuse (exit 2, naming it) a link or a file at a folder of the workspace that runs
    write files into (workspace.FOLDERS), when a run takes the workspace and before it
    writes anything: one check here, not one per file written.  Deeper paths go through
    safefs as they are written or removed.  Only the `latest` links cannbuild makes,
    naming a run folder beside them, are links it keeps."""
    for name in FOLDERS:
        safefs.check_below(root, root / name, what, folder=True)
    for name in LATEST_LINKS:
        link = root / name
        try:
            target = os.readlink(link)
        except FileNotFoundError:
            continue
        except OSError:  # there, and not a link (EINVAL): a folder or a file of someone's
            target = None
        if target is None or "/" in target or target in (".", ".."):
            raise UsageError(
                f"{what}: {link} is not the link to a run folder beside it that cannbuild "
                f"makes ({'not a link' if target is None else f'a link to {target}'}); "
                "nothing there was touched.",
                f"Remove it (rm {link}) and rerun; cannbuild makes it again.",
            )


def _shown(names: Sequence[str]) -> str:
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def claim(folder: Path, kind: str, what: str) -> Path:
    """Make `folder` cannbuild's (creating it), or confirm it is (see check_replaceable)."""
    folder = check_replaceable(folder, kind, what)
    if marker_kind(folder) == kind:
        return folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
        mark(folder, kind)
    except OSError as exc:  # read-only or not ours: exit 11; a path refused as spelled: 2
        raise write_error(exc, what, folder) from None
    return folder


def mark(folder: Path, kind: str) -> None:
    """Write the `kind` marker into `folder` (`claim`, or a folder built elsewhere, then
    moved)."""
    text = json.dumps({"kind": kind, "by": f"cannbuild {__version__}"}, sort_keys=True) + "\n"
    write_atomic(folder / MARKER, text.encode())


def require_owned(root: Path, kind: str) -> None:
    """Refuse (exit 2) unless `root` carries the `kind` marker: the check before removing."""
    if not owned(root, kind):
        raise UsageError(
            f"{root} is not a cannbuild {kind} (no {MARKER} marker): nothing was removed.",
            f"Point the command at a {kind} cannbuild made (one made by a cannbuild older "
            f"than the marker gets it the next time cannbuild builds into it).",
        )


def remove_inside(root: Path, paths: Iterable[Path], kind: str) -> int:
    """Remove `paths` (files or folders) under the owned folder `root`; returns bytes freed.
    Every path is checked before any is removed: a link on the way to one of them
    refuses them all (exit 2), and a link that is itself a path goes, never followed."""
    require_owned(root, kind)
    targets = [safefs.check_below(root, path, "a path to remove") for path in paths]
    base = Path(os.path.abspath(root))
    if base in targets:
        raise UsageError(f"refusing to remove the whole {kind} {root}.")
    freed = 0
    for target in targets:
        freed += safefs.disk_usage(target)
        safefs.remove(root, target, "a path to remove")
    return freed


def check_writable(path: Path, what: str, hint: str = "") -> Path:
    """Refuse up front (exit 11) a file cannbuild will write (a lock, a bundle, a
    workflow) whose folder it cannot write, and a link there (exit 2): found after an hour's build, it would lose
    the result.  The nearest folder that exists is tried with a real file, created and
    removed: permission bits say nothing to root, and /sys or a read-only mount refuse
    root too."""
    path = Path(os.path.abspath(path))
    if path.is_symlink():  # writing through it, dangling or not, would write where it points
        raise UsageError(
            f"{what} {path} is a symlink (to {os.readlink(path)}); cannbuild does not write "
            "through a link, so it is left as it is.",
            f"Pass {what} as a path that is not a link, or remove the link first.",
        )
    probe = path if path.exists() else path.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    folder = probe if probe.is_dir() else probe.parent
    if probe != path and not probe.is_dir():
        raise UsageError(
            f"{what} {path} is not a usable path: {probe} is a file, not a folder.",
            f"Pass {what} in a folder.",
        )
    if path.exists() and not os.access(path, os.W_OK):
        raise StorageError(
            f"{what} {path} cannot be written: it is read-only or not yours.",
            hint or f"Pass {what} in a folder you can write to.",
        )
    try:
        handle, name = tempfile.mkstemp(prefix=".cannbuild-probe-", dir=folder)
    except OSError as exc:
        raise StorageError(
            f"{what} {path} cannot be written: {folder} refuses a new file "
            f"({exc.strerror or exc}).",
            hint or f"Pass {what} in a folder you can write to.",
        ) from None
    os.close(handle)
    os.unlink(name)
    return path


def check_lock_writable(path: Path) -> Path:
    """check_writable for the lock a run writes: its path may be the default, set by no
    flag (a --sandbox run keeps it in the workspace), so both flags that move it are named."""
    return check_writable(
        path,
        "the lock file",
        "Pass --lock-file (and -w/--workspace: a --sandbox run keeps its lock there) in a "
        "folder you can write to.",
    )
