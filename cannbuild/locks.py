"""The workspace lock that keeps two runs apart (a sandbox's own lock is in
sandbox/create.py)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from pathlib import Path
from typing import Callable, List, Optional

from . import safefs
from .bounded import LOCK_HOLDER, PROC_FILE, read_bytes, read_state
from .decoded import JSONObject
from .errors import UsageError, WorkspaceBusy
from .housekeeping import sweep
from .ownership import claim
from .proc import group_members
from .workspace import Workspace, write_json_atomic


def note_step(root: Path, pgid: int, cwd: Path) -> None:
    """Record the running step's process group beside the lock's holder (ours only): what
    the next run checks when this one dies without releasing it (WorkspaceLock._outlived).
    `root` is the step's workspace, or a bench variant's folder inside the one this run
    locked (<workspace>/variants/<name>): the record is the one at or above it we hold."""
    for folder in (root, *root.parents):
        info = folder / ".lock.info"
        holder = read_state(info, LOCK_HOLDER) if (folder / ".lock").exists() else None
        if isinstance(holder, dict) and holder.get("pid") == os.getpid():
            with contextlib.suppress(OSError):  # a full disk only loses the check
                write_json_atomic(
                    info, {**holder, "step_pgid": pgid, "step_cwd": str(cwd)}, durable=False
                )
            return


def step_members(pgid: int, cwd: Path) -> List[str]:
    """The command lines of the live processes of group `pgid` working in `cwd` or below
    (a reused group number elsewhere is not ours)."""
    found: List[str] = []
    with contextlib.suppress(OSError):  # no /proc: nothing to tell
        for pid in group_members(pgid):
            proc = Path("/proc", str(pid))
            with contextlib.suppress(OSError, UsageError):
                where = Path(os.readlink(proc / "cwd"))
                if where == cwd or cwd in where.parents:
                    argv = read_bytes(proc / "cmdline", PROC_FILE).split(b"\0")
                    found.append(b" ".join(argv).decode("utf-8", "replace").strip()[:200])
    return found


class WorkspaceLock:
    """An exclusive flock on <workspace>/.lock; the kernel drops it if we die.

    A second build either refuses at once, naming the holder, or (wait=True)
    waits for it.  Whoever takes it first sweeps the leftovers of dead runs.
    """

    def __init__(
        self,
        ws: Workspace,
        command: str,
        wait: bool = False,
        on_wait: Optional[Callable[[str], None]] = None,
        sweep: bool = True,
    ) -> None:
        """`sweep=False`: the caller removes the leftovers itself (`clean` counts them)."""
        self.path = ws.root / ".lock"
        self.info = ws.root / ".lock.info"
        self.command = command
        self.wait = wait
        self.on_wait = on_wait
        self.sweep = sweep
        self._fd: Optional[int] = None

    def holder(self) -> JSONObject:
        holder = read_state(self.info, LOCK_HOLDER)
        return holder if isinstance(holder, dict) else {}

    def __enter__(self) -> WorkspaceLock:
        claim(self.path.parent, "workspace", "--workspace")
        fd = safefs.open_lock(self.path, "the workspace lock")
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
        try:
            self._outlived(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        try:
            write_json_atomic(
                self.info,
                {
                    "pid": os.getpid(),
                    "command": self.command,
                    "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                },
                durable=False,  # removed at release; a power cut releases the lock anyway
            )
        except OSError as exc:
            # the record only names the holder to a second run: on a full disk `clean`,
            # which the disk-full hints send the user to, must still run
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                self.__exit__()
                raise
        try:
            if self.sweep:
                self._sweep()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _outlived(self, fd: int) -> None:
        """A run killed with -9 leaves its build step running (a session of its own) after
        the kernel dropped the lock: building or cleaning over it would run two builds in
        one checkout.  Refuse (exit 7) while that step's processes live, or wait them out."""
        holder = self.holder()
        pgid, cwd = holder.get("step_pgid"), holder.get("step_cwd")
        if not isinstance(pgid, int) or not isinstance(cwd, str):
            return
        while True:
            left = step_members(pgid, Path(cwd))
            if not left:
                return
            if not self.wait:
                fcntl.flock(fd, fcntl.LOCK_UN)
                raise WorkspaceBusy(
                    f"the workspace {self.path.parent} is in use by a build step that outlived "
                    f"its run: pid {holder.get('pid', '?')} ({holder.get('command', 'cannbuild')}, "
                    f"since {holder.get('started', '?')}) died, but its step's processes "
                    f"(process group {pgid}: {left[0]}) still run in {cwd}.",
                    f"Wait for them to end (--wait queues behind them), or stop them with "
                    f"`kill -- -{pgid}`; then run the same command again.",
                )
            if self.on_wait:
                self.on_wait(f"the processes of a killed run's step (process group {pgid})")
                self.on_wait = None
            time.sleep(0.5)

    def _sweep(self) -> None:
        """The first thing a run holding the lock does: remove what runs that died
        (kill -9) left half-made, which no run is writing now."""
        with contextlib.suppress(OSError):  # a file we may not remove stays, as before
            sweep(self.path.parent)

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            with contextlib.suppress(FileNotFoundError):
                self.info.unlink()
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
