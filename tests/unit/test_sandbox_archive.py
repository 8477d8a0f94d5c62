"""The sandbox's third-party archive is the same bytes wherever cannbuild is installed."""

import hashlib
import io
import os
import tarfile
from pathlib import Path

from cannbuild.sandbox.repos import deterministic_tar_gz


def tree(root: Path, script_mode: int, mtime: int) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "makeself.sh").write_text("#!/bin/sh\necho pack\n")
    (root / "sub" / "README").write_text("notes\n")
    (root / "makeself.sh").chmod(script_mode)
    for p in (root / "makeself.sh", root / "sub" / "README", root / "sub"):
        os.utime(p, (mtime, mtime))
    return root


def test_archive_bytes_ignore_modes_and_times_of_the_copy(tmp_path):
    checkout = tree(tmp_path / "a", 0o755, 1_700_000_000)
    copied = tree(tmp_path / "b", 0o644, 1_800_000_000)  # e.g. copied without its modes
    first = deterministic_tar_gz(checkout, "makeself-x")
    assert first == deterministic_tar_gz(copied, "makeself-x")
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        modes = {m.name: m.mode for m in tar.getmembers()}
    assert modes["makeself-x/makeself.sh"] == 0o755
    assert modes["makeself-x/sub/README"] == 0o644


def test_archive_bytes_follow_the_content(tmp_path):
    base = tree(tmp_path / "a", 0o755, 0)
    before = hashlib.sha256(deterministic_tar_gz(base, "m")).hexdigest()
    (base / "sub" / "README").write_text("changed\n")
    assert hashlib.sha256(deterministic_tar_gz(base, "m")).hexdigest() != before
