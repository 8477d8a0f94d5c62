"""The CLI as a user runs it, in a process of its own, without the caller's CANNBUILD_*
settings (unit tests use it for what only a whole process shows: exit codes, help)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def cannbuild(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CANNBUILD_")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "cannbuild", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )
