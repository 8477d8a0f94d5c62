"""A command run on a real pseudo-terminal of a given size, and what a reader sees of it:
the screen rows it fills (a live line redrawn with `\\r` is one row; a line longer than the
terminal is as many rows as it wraps to)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import time
from typing import List, Mapping, Sequence, Tuple

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_on_terminal(
    argv: Sequence[str], env: Mapping[str, str], cwd: str, cols: int = 120, timeout: float = 1800
) -> Tuple[int, str]:
    """Run `argv` with stdin, stdout and stderr on one pty of `cols` columns; its exit code
    and everything it wrote."""
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
    """The rows `output` leaves on a terminal of `cols` columns: each line as it ends
    (after its last carriage return), wrapped at the width."""
    rows: List[str] = []
    text = output.replace("\r\n", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    for line in text.split("\n"):
        shown = _ANSI.sub("", line.split("\r")[-1])
        rows += [shown[i : i + cols] for i in range(0, max(len(shown), 1), cols)]
    return rows
