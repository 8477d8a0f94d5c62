"""The workspace layout, atomic writes, and the lock that keeps two builds apart.

<workspace>/
  src/<repo>            checkouts at pinned commits (+ third_party/ seeded)
  cache/git/<repo>.git  bare mirrors of upstream (what offline builds fetch from)
  cache/downloads/      third-party archives by sha256
  stage/ overlay/       opbase installed to a staging prefix, and the toolkit overlay
  opp/                  the installed custom operator package (vendors/<vendor>_transformer)
  stamps/<step>.json    input hash of each finished step
  logs/<run>/<step>.log logs/latest -> <run>
  reports/<run>/        report.json, report.md; reports/latest -> <run>
  tmp/                  TMPDIR for every step (self-extracting .run files unpack here)
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from .errors import WorkspaceBusy


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def src(self) -> Path:
        return self.root / "src"

    def checkout(self, repo: str) -> Path:
        return self.src / repo

    @property
    def git_cache(self) -> Path:
        return self.root / "cache" / "git"

    @property
    def downloads(self) -> Path:
        return self.root / "cache" / "downloads"

    @property
    def stage(self) -> Path:
        return self.root / "stage"

    @property
    def overlay(self) -> Path:
        return self.root / "overlay"

    @property
    def opp(self) -> Path:
        return self.root / "opp"

    @property
    def stamps(self) -> Path:
        return self.root / "stamps"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def validate(self) -> Path:
        return self.root / "validate"


def _umask() -> int:
    """The process umask, read without changing it (os.umask would race other threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file in the same folder, fsync, rename: never half-written.

    The file gets the mode a plain open() would give (mkstemp's is 0600), so reports
    and locks stay readable by the team that shares the workspace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent))
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path, (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode())


def read_json(path: Path) -> Optional[Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def point_link(link: Path, target: str) -> None:
    """Atomically (re)point a symlink such as logs/latest."""
    link.parent.mkdir(parents=True, exist_ok=True)
    tmp = link.with_name(f".{link.name}.{os.getpid()}")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(target)
    os.replace(tmp, link)


class WorkspaceLock:
    """An exclusive flock on <workspace>/.lock; the kernel drops it if we die.

    A second build either refuses at once, naming the holder, or (wait=True)
    waits for it.
    """

    def __init__(
        self,
        ws: Workspace,
        command: str,
        wait: bool = False,
        on_wait: Optional[Callable[[str], None]] = None,
    ) -> None:
        self.path = ws.root / ".lock"
        self.info = ws.root / ".lock.info"
        self.command = command
        self.wait = wait
        self.on_wait = on_wait
        self._fd: Optional[int] = None

    def holder(self) -> Dict[str, Any]:
        return read_json(self.info) or {}

    def __enter__(self) -> WorkspaceLock:
        from .ownership import claim

        claim(self.path.parent, "workspace", "--workspace")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
            holder = self.holder()
            who = f"pid {holder.get('pid', '?')} ({holder.get('command', 'another cannbuild')}, since {holder.get('started', '?')})"
            if not self.wait:
                os.close(fd)
                raise WorkspaceBusy(
                    f"the workspace {self.path.parent} is in use by {who}.",
                    "Wait for it to finish, pass --wait to queue behind it, or use another --workspace.",
                ) from None
            if self.on_wait:
                self.on_wait(who)
            fcntl.flock(fd, fcntl.LOCK_EX)
        self._fd = fd
        write_json_atomic(
            self.info,
            {
                "pid": os.getpid(),
                "command": self.command,
                "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            },
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            with contextlib.suppress(FileNotFoundError):
                self.info.unlink()
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
