"""A command run on a real pseudo-terminal of a given size, and what a reader sees of it:
the screen rows it fills (a live line redrawn with `\\r` is one row; a line longer than the
terminal is as many rows as it wraps to)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_on_terminal(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    cols: int = 120,
    timeout: float = 1800,
    ctrl_c_when: Optional[Callable[[], bool]] = None,
) -> Tuple[int, str]:
    """Run `argv` with stdin, stdout and stderr on one pty of `cols` columns; its exit code
    and everything it wrote.  `ctrl_c_when`: once it says so, SIGINT to the process group,
    as the terminal's Ctrl-C sends it."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    proc = subprocess.Popen(
        list(argv),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=cwd,
        env={**env, "COLUMNS": str(cols), "TERM": "xterm"},
        start_new_session=True,
    )
    os.close(slave)
    chunks: List[bytes] = []
    deadline = time.monotonic() + timeout
    while True:
        if ctrl_c_when is not None and ctrl_c_when():
            os.killpg(proc.pid, signal.SIGINT)
            ctrl_c_when = None
        if not select.select([master], [], [], 0.2)[0]:
            if time.monotonic() > deadline:
                proc.kill()
                break
            continue
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not data:
            break
        chunks.append(data)
        if time.monotonic() > deadline:
            proc.kill()
            break
    os.close(master)
    code = proc.wait(timeout=60)
    return code, b"".join(chunks).decode("utf-8", "replace")


def screen_rows(output: str, cols: int = 120) -> List[str]:
    """The rows `output` leaves on a terminal of `cols` columns, as a terminal draws them:
    text wraps at the width, `\\r` goes back to the row's start, `ESC[nA` moves up, `ESC[2K`
    and `ESC[K` erase (how a live line is redrawn and erased); other sequences draw nothing."""
    rows: List[List[str]] = [[]]
    row = col = 0
    for token in re.findall(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|[\s\S]", output):
        if token == "\n":
            row, col = row + 1, 0
        elif token == "\r":
            col = 0
        elif token.startswith("\x1b[") and token[-1] == "A":
            row = max(row - int(token[2:-1] or 1), 0)
        elif token in ("\x1b[2K", "\x1b[K", "\x1b[0K"):
            rows[row][col if token != "\x1b[2K" else 0 :] = []
        elif not token.startswith("\x1b"):
            if col == cols:
                row, col = row + 1, 0
            while len(rows) <= row:
                rows.append([])
            line = rows[row]
            line.extend(" " * (col - len(line)))
            line[col : col + 1] = [token]
            col += 1
        while len(rows) <= row:
            rows.append([])
    shown = ["".join(r).rstrip() for r in rows]
    while shown and not shown[-1]:
        shown.pop()
    return shown
