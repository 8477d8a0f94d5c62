"""Container engines in tests: hide them, or find one that can really build."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Optional

ENGINES = ("docker", "podman", "buildah")
TEST_BASE = "localhost/cannbuild-test-base:bookworm"


def path_without_engines(bin_dir: Path) -> str:
    """A PATH holding links to every program on this PATH except the container engines."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            link = bin_dir / entry.name
            if entry.name in ENGINES or link.exists() or not os.access(entry.path, os.X_OK):
                continue
            link.symlink_to(entry.path)
    return str(bin_dir)


def podman_with_test_base() -> Optional[str]:
    """Why the image-build test cannot run here, or None when podman and its base are ready."""
    if shutil.which("podman") is None:
        return "podman is not installed"
    try:
        ok = subprocess.run(
            ["podman", "image", "exists", TEST_BASE], capture_output=True, timeout=60
        ).returncode
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"podman does not answer ({exc})"
    if ok != 0:
        return f"the local base {TEST_BASE} is missing: make it with tests/container/make-base"
    return None
