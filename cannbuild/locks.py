"""The workspace lock that keeps two runs apart (a sandbox's own lock is in
sandbox/create.py)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from typing import Callable, Optional

from . import safefs
from .bounded import LOCK_HOLDER, read_state
from .decoded import JSONObject
from .errors import WorkspaceBusy
from .housekeeping import sweep
from .ownership import claim
from .workspace import Workspace, write_json_atomic


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
