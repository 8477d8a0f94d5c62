"""Reading offline bundles: verified whole before any cache is touched."""

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from cannbuild.bundle import seed_from_bundle
from cannbuild.errors import UsageError
from cannbuild.workspace import Workspace


def make_tar(path: Path, files: dict, manifest: dict) -> Path:
    files = {**files, "manifest.json": json.dumps(manifest).encode()}
    with tarfile.open(path, "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_corrupt_member_is_refused_before_anything_is_written(tmp_path):
    ws = Workspace(tmp_path / "ws")
    archive = b"archive bytes"
    files = {"downloads/abc/a.tar.gz": archive, "cannbuild.lock": b"version = 1\n"}
    manifest = {name: sha(data) for name, data in files.items()}
    manifest["downloads/abc/a.tar.gz"] = sha(b"something else")
    bundle = make_tar(tmp_path / "b.tar", files, manifest)
    with pytest.raises(UsageError, match="downloads/abc/a.tar.gz is missing or corrupt"):
        seed_from_bundle(ws, bundle)
    assert not ws.downloads.exists()


def test_a_member_naming_a_path_outside_the_workspace_is_refused(tmp_path):
    ws = Workspace(tmp_path / "ws")
    data = b"x"
    files = {"downloads/../../../escaped": data, "cannbuild.lock": b"version = 1\n"}
    bundle = make_tar(tmp_path / "b.tar", files, {n: sha(d) for n, d in files.items()})
    with pytest.raises(UsageError, match="is missing or corrupt"):
        seed_from_bundle(ws, bundle)
    assert not (tmp_path / "escaped").exists()


def test_a_manifest_without_the_lock_is_not_a_bundle(tmp_path):
    files = {"downloads/abc/a.tar.gz": b"a"}
    bundle = make_tar(
        tmp_path / "b.tar", {**files, "cannbuild.lock": b""}, {n: sha(d) for n, d in files.items()}
    )
    with pytest.raises(UsageError, match="lists no cannbuild.lock"):
        seed_from_bundle(Workspace(tmp_path / "ws"), bundle)
