"""A full disk, for real: a small tmpfs mounted over a folder (root only; the test is
skipped where mount(8) is refused), and filled."""

from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest


@contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.decode().strip()})")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(folder: Path) -> None:
    """Write a file in `folder` until its disk says it is full."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"x" * 4096):
            pass
    except OSError:
        pass  # the disk is full now
    finally:
        os.close(fd)
