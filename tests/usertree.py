"""A user's folder, and its state byte for byte: what a hostile-input test compares
before and after cannbuild ran near it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Dict, Iterable


def tree_digest(root: Path) -> Dict[str, str]:
    """Every entry under `root` without following a link or opening a FIFO or device:
    a regular file by its bytes (a sparse file past 64 MiB by size and mtime: reading
    gigabytes of zeros proves nothing more), a link by its target, the rest by type.
    A dict, so a failing comparison shows which entry changed."""
    out: Dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            path = Path(folder) / name
            st = path.lstat()
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "link " + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            elif not path.is_file():
                out[rel] = f"special {st.st_mode:o}"
            elif st.st_size > 64 << 20:
                out[rel] = f"big {st.st_size} {st.st_mtime_ns}"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def users_folder(root: Path, files: Iterable[str]) -> Path:
    """`root` holding a user's files at the relative paths `files` (`mine: <path>` each)."""
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"mine: {rel}\n")
    return root
