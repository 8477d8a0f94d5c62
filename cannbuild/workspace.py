"""The workspace layout, and atomic writes: the one door for durable files.

<workspace>/
  src/<repo>            checkouts at pinned commits (+ third_party/ seeded)
  cache/git/<repo>.git  bare mirrors of upstream (what offline builds fetch from)
  cache/downloads/      third-party archives by sha256
  stage/ overlay/       opbase installed to a staging prefix, and the toolkit overlay
  opp/                  the installed custom operator packages (vendors/<vendor>_<suffix>, one per
                        repo) and set_env.bash, which puts them on ASCEND_CUSTOM_OPP_PATH in order
  stamps/<step>.json    input hash of each finished step
  logs/<run>/<step>.log logs/latest -> <run>
  reports/<run>/        report.json, report.md; reports/latest -> <run>
  tmp/                  TMPDIR for every step (self-extracting .run files unpack here)
  target.json           the host and SoC the workspace builds for, remembered (target.py)
  .lock, .cannbuild-owned  the run lock (locks.py) and the ownership marker (ownership.py)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import List, Mapping, Sequence, Tuple

import msgspec
from msgspec import Struct

from .bounded import proc_value

# The folders runs write files into, by the fixed names cannbuild gives them: the top of
# the workspace and the caches' folders (a run's own logs/<run> and reports/<run> are
# made new).  Each must be a real folder or absent when a run takes the workspace
# (ownership.check_layout): a link there would have a run write where it leads.
FOLDERS = (
    "src",
    "cache",
    "stage",
    "overlay",
    "opp",
    "stamps",
    "logs",
    "reports",
    "tmp",
    "validate",
    "sandbox",
    "toolkit-backup",
    "ccache",
    "bench",
    "profile",
    "variants",
    "cache/git",
    "cache/downloads",
    "cache/downloads/.incoming",
    "cache/renders",
    "cache/jinja",
    "cache/third-party",
    "cache/derived",
)
# The links cannbuild itself makes (point_link): `latest`, naming a run folder beside it.
LATEST_LINKS = ("logs/latest", "reports/latest", "bench/latest")


class _Below:
    """A path below the workspace's root (`Workspace.src` is `<root>/src`)."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts

    def __get__(self, ws: Workspace, owner: object = None) -> Path:
        return ws.root.joinpath(*self.parts)


class Workspace(Struct, frozen=True, kw_only=True):
    root: Path

    src = _Below("src")
    git_cache = _Below("cache", "git")
    jinja_cache = _Below("cache", "jinja")  # compiled templates (Jinja's bytecode cache)
    tool_memo = _Below("cache", "tools.json")  # build tools' versions by binary identity
    # what each locked commit's cmake/third_party/*.cmake say (immutable per commit)
    third_party_memo = _Below("cache", "third-party")
    # what each locked commit needs of the toolkit (build/derived.py; immutable per commit,
    # operators and opbase pin)
    derived_memo = _Below("cache", "derived")
    commit_memo = _Below("cache", "commit-times.json")  # committer time of each commit
    # what varies in each built package, by sha256 (reproducible.py): reading a package
    # means decompressing it, gigabytes for a built-in ops-transformer
    artifact_memo = _Below("cache", "artifacts.json")
    downloads = _Below("cache", "downloads")
    stage = _Below("stage")
    overlay = _Below("overlay")
    opp = _Below("opp")
    stamps = _Below("stamps")
    logs = _Below("logs")
    reports = _Below("reports")
    tmp = _Below("tmp")
    validate = _Below("validate")
    # the remembered target (target.py): what later tasks take where no flag says
    target = _Below("target.json")

    def checkout(self, repo: str) -> Path:
        return self.src / repo

    def render_memo(self, kind: str) -> Path:
        """Rendered step commands ("steps") or validation commands ("validate"), with the
        template files they came from (render.Templates)."""
        return self.root / "cache" / "renders" / f"{kind}.json"


def _umask() -> int:
    """The process umask, read without changing it (os.umask would race other threads)."""
    # `Umask: 0022` in /proc/self/status (Linux 4.7 and later), an octal number; without
    # /proc the usual default, which gives 0644 files.
    return int(proc_value("self/status", "Umask") or "022", 8)


def write_atomic(path: Path, data: bytes, durable: bool = True) -> None:
    """Write to a temp file in the same folder, fsync, rename: never half-written.

    The file gets the mode a plain open() would give (mkstemp's is 0600), so reports
    and locks stay readable by the team that shares the workspace.  `durable=False`
    skips the fsync, for a file that must never be read half-written but need not
    outlive a power cut (the lock's holder record, removed when the lock is released):
    each fsync costs a no-op run 3-10 ms of waiting on the disk."""
    write_together([(path, data)], durable)


def write_together(files: Sequence[Tuple[Path, bytes]], durable: bool = True) -> None:
    """Each file written as write_atomic does, all of them staged before any is renamed
    in: a full disk or a failed write leaves every one as it was (a rename needs no
    room), so files that name each other (a workflow and the wheel it checks by sha256)
    never disagree."""
    staged: List[Tuple[str, Path]] = []
    path = Path()
    try:
        for path, data in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            # In the target's own folder: os.replace is atomic only within one file system.
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent))
            staged.append((tmp, path))
            os.fchmod(fd, 0o666 & ~_umask())
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                if durable:
                    os.fsync(fh.fileno())
        # rename(2) swaps a name in one step: a reader sees the old file or the new, never half
        while staged:
            tmp, path = staged[0]
            os.replace(tmp, path)
            staged.pop(0)
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(path)  # a write() on a full disk names no file: the message must
        raise
    finally:
        for tmp, _ in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def write_json_atomic(path: Path, data: object, durable: bool = True) -> None:
    """`data` as JSON that bounded.read_json reads back (msgspec: a NaN is written null),
    keys sorted; what JSON has no type for (a Path) by its text."""
    text = msgspec.json.encode(data, enc_hook=str, order="sorted")
    write_atomic(path, msgspec.json.format(text, indent=2) + b"\n", durable)


def remember(path: Path, data: Mapping[str, str]) -> None:
    """Write a memo; one that cannot be written (full disk, read-only) only costs time."""
    with contextlib.suppress(OSError):
        write_json_atomic(path, dict(data))


def point_link(link: Path, target: str) -> None:
    """Atomically (re)point a symlink such as logs/latest."""
    link.parent.mkdir(parents=True, exist_ok=True)
    # A new link beside the old, renamed over it: `logs/latest` is never missing for a moment.
    tmp = link.with_name(f".{link.name}.{os.getpid()}")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(target)
    os.replace(tmp, link)
