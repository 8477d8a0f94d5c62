"""Every child process cannbuild starts goes through here.

Each child runs in a process group of its own, so a timeout, Ctrl-C, SIGTERM or
SIGHUP stops the child and everything it started (a `sleep` under a hung
`set_env.sh`, the compilers under `build.sh`), and waits for them: nothing is left
running when cannbuild returns.  Commands are logged at debug level (`--debug`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import subprocess
import time
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from msgspec import Struct

from .bounded import PROC_FILE, read_text
from .errors import UsageError

log = logging.getLogger("cannbuild.proc")

KILL_GRACE_S = 5.0
Output = Union[int, IO[Any], None]


def kill_group(proc: subprocess.Popen, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the child's whole group, SIGKILL what is left after `grace_s`, and wait
    until no member of the group may run."""
    # start_new_session makes the child a group leader: its pid is the group id.
    pgid = proc.pid
    alive = group_check(pgid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        # SIGTERM first: build.sh, CMake and make may clean up their temporary files.
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.05)
        if proc.poll() is not None:
            if not alive():
                return
            # the leader is gone and wait() returns at once: no spinning on killpg
            time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    proc.wait()
    end = time.monotonic() + grace_s
    while alive() and time.monotonic() < end:  # the kernel reaps them shortly
        time.sleep(0.02)


def group_check(pgid: int, every_s: float = 0.25) -> Callable[[], bool]:
    """A question to ask again and again: may a member of the group still run?  Signal 0
    answers whether one exists; but a zombie may not run, and in a container whose PID 1
    reaps no orphan (docker run without --init) a killed git's helpers stayed zombies, so
    every timeout and Ctrl-C waited out both grace periods (10 s).  /proc tells them apart:
    read at most every `every_s` (a scan reads every process's stat)."""
    scan_at = time.monotonic() + 0.05

    def alive() -> bool:
        nonlocal scan_at
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        if time.monotonic() < scan_at:
            return True
        scan_at = time.monotonic() + every_s
        try:
            return bool(group_members(pgid))
        except OSError:  # no /proc: what signal 0 said
            return True

    return alive


def group_members(pgid: int) -> List[int]:
    """The pids of the group's members that may still run (zombies left out); OSError
    where /proc cannot be listed."""
    found: List[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            # state, ppid, pgrp follow the command's name, which may hold ") "
            state, _, pgrp = (
                read_text(Path("/proc", name, "stat"), PROC_FILE).rsplit(")", 1)[1].split()[:3]
            )
        except (OSError, UsageError, ValueError):
            continue  # gone since listed
        if pgrp == str(pgid) and state not in ("Z", "X"):
            found.append(int(name))
    return found


def pid_alive(pid: int) -> bool:
    """Whether a process of that number exists (whoever's: EPERM means it does); a
    number too large for kill() never was one."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return pid > 0
    return True


def popen(
    argv: Sequence[str],
    *,
    cwd: Optional[Union[str, os.PathLike]] = None,
    env: Optional[Mapping[str, str]] = None,
    # No stdin by default: a child that asks a question (install_deps.sh's `read -p`) gets
    # end-of-file at once instead of waiting forever.
    stdin: Output = subprocess.DEVNULL,
    stdout: Output = subprocess.PIPE,
    stderr: Output = subprocess.PIPE,
) -> subprocess.Popen:
    log.debug("run: %s%s", " ".join(argv), f"  (in {cwd})" if cwd else "")
    return subprocess.Popen(
        list(argv),
        cwd=str(cwd) if cwd is not None else None,
        env=dict(env) if env is not None else None,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        # A session and group of its own: the terminal's Ctrl-C reaches cannbuild, which then stops
        # the whole group itself, in order.
        start_new_session=True,
    )


def run(
    argv: Sequence[str],
    *,
    timeout: Optional[float] = None,
    cwd: Optional[Union[str, os.PathLike]] = None,
    env: Optional[Mapping[str, str]] = None,
    merge_stderr: bool = False,
    capture: bool = True,
    interactive: bool = False,
) -> subprocess.CompletedProcess:
    """Run to completion and return its output (bytes).  On a timeout the whole group is
    killed and `subprocess.TimeoutExpired` raised; an interrupt kills it too.
    `capture=False` streams the child's output to ours; `interactive` also gives it our
    stdin (a `docker run -it` the user types into)."""
    proc = popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=None if interactive else subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture else None,
        stderr=(subprocess.STDOUT if merge_stderr else subprocess.PIPE) if capture else None,
    )
    try:
        out, err = _collect(proc, timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc, grace_s=0.5)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=1.0)  # a grandchild that left the group may hold a pipe
        raise
    except BaseException:  # Ctrl-C, SIGTERM, SIGHUP: the child's group goes with us
        kill_group(proc, grace_s=0.5)
        raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def _collect(
    proc: subprocess.Popen, timeout: Optional[float]
) -> Tuple[Optional[bytes], Optional[bytes]]:
    """The child's stdout and stderr, read until it has exited and its pipes hold nothing
    more, not until their end-of-file: a process it left running (a `sleep &` at the end
    of a sourced set_env.sh) keeps them open, and is stopped with its group, not waited
    for.  Past `timeout` the child is hung: TimeoutExpired."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pipes = [pipe for pipe in (proc.stdout, proc.stderr) if pipe is not None]
    got: Dict[int, List[bytes]] = {pipe.fileno(): [] for pipe in pipes}
    with selectors.DefaultSelector() as selector:
        for pipe in pipes:
            selector.register(pipe, selectors.EVENT_READ)
        while selector.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(proc.args, timeout or 0)
            ended = proc.poll() is not None  # before the select: its last bytes are in the pipe
            events = selector.select(0 if ended else min(0.05, left or 0.05))
            if ended and not events:
                kill_group(proc, grace_s=0.5)  # what holds the pipes is what it left running
                break
            for key, _ in events:
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    got[key.fd].append(chunk)
                else:
                    selector.unregister(key.fileobj)
    left = None if deadline is None else max(deadline - time.monotonic(), 0)
    proc.wait(timeout=left)  # the pipes closed: the child is ending (or closed them, and runs)
    out, err = (b"".join(got[p.fileno()]) if p else None for p in (proc.stdout, proc.stderr))
    for pipe in pipes:
        pipe.close()
    return out, err


class Bounds(Struct, frozen=True, kw_only=True):
    """When a long, chatty child is stopped: after `idle_s` without a byte of output
    (hung), past `max_lines` lines or `max_bytes` bytes of output (runaway), or after
    `wall_s` in all (a last resort, far above a slow but working run)."""

    idle_s: float
    max_lines: int
    max_bytes: int
    wall_s: float


# which bound stopped a child, as a verdict names it
IDLE, WORK, WALL = "inactivity", "total work", "wall-clock cap"


class BoundedRun(Struct, frozen=True, kw_only=True):
    code: Optional[int]  # None: stopped by a bound
    stdout: List[str]
    stderr: List[str]
    stopped: str = ""  # IDLE, WORK or WALL; "" when the child exited by itself
    why: str = ""  # the bound in words ("no output for 300 s")
    seconds: float = 0.0


def run_bounded(
    argv: Sequence[str],
    bounds: Bounds,
    *,
    cwd: Optional[Union[str, os.PathLike]] = None,
    env: Optional[Mapping[str, str]] = None,
    on_line: Callable[[str], None] = lambda line: None,
    clock: Callable[[], float] = time.monotonic,
) -> BoundedRun:
    """Run to completion under `bounds`, reading stdout and stderr line by line as they
    come (`on_line` hears each stdout line); a bound reached stops the whole group and
    says which.  An interrupt stops the group too."""
    proc = popen(argv, cwd=cwd, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    lines: Dict[int, List[str]] = {out_fd: [], err_fd: []}
    partial = {fd: b"" for fd in lines}
    count = size = 0
    start = last = clock()
    stopped = why = ""
    selector = selectors.DefaultSelector()
    for pipe in (proc.stdout, proc.stderr):
        selector.register(pipe, selectors.EVENT_READ)
    try:
        while selector.get_map() and not stopped:
            now = clock()
            if now - start >= bounds.wall_s:
                stopped, why = WALL, f"still running after {bounds.wall_s:g} s"
            elif now - last >= bounds.idle_s:
                stopped, why = IDLE, f"no output for {bounds.idle_s:g} s"
            if stopped:
                break
            events = selector.select(timeout=min(1.0, bounds.idle_s))
            if not events and proc.poll() is not None:
                break  # exited; a grandchild holding the pipe open is not waited for
            for key, _ in events:
                fd = key.fd
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fileobj)
                    chunk = b"\n" if partial[fd] else b""
                last = clock()
                size += len(chunk)
                *complete, partial[fd] = (partial[fd] + chunk).split(b"\n")
                for raw in complete:
                    line = raw.decode("utf-8", "replace")
                    lines[fd].append(line)
                    if fd == out_fd:
                        on_line(line)
                count += len(complete)
                if count > bounds.max_lines or size + len(partial[fd]) > bounds.max_bytes:
                    stopped = WORK
                    why = (
                        f"printed more than {bounds.max_lines:,} lines or "
                        f"{bounds.max_bytes >> 20} MiB"
                    )
        for fd, rest in partial.items():  # a last line without its newline, whose pipe a
            if rest:  # grandchild holds open (or a stopped run's): kept, as at end-of-file
                lines[fd].append(rest.decode("utf-8", "replace"))
                if fd == out_fd:
                    on_line(lines[fd][-1])
        if not stopped:
            # both pipes closed: the child is ending (or closed them and runs on, up to the cap)
            try:
                code: Optional[int] = proc.wait(timeout=max(bounds.wall_s - (clock() - start), 0))
            except subprocess.TimeoutExpired:
                stopped, why = WALL, f"still running after {bounds.wall_s:g} s"
        if stopped:
            kill_group(proc, grace_s=0.5)
            code = None
    except BaseException:  # Ctrl-C, SIGTERM, SIGHUP: the child's group goes with us
        kill_group(proc, grace_s=0.5)
        raise
    finally:
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
    return BoundedRun(
        code=code,
        stdout=lines[out_fd],
        stderr=lines[err_fd],
        stopped=stopped,
        why=why,
        seconds=clock() - start,
    )
