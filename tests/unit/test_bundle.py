"""Reading offline bundles: verified whole before any cache is touched."""

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from cannbuild.errors import UsageError
from cannbuild.sources.bundle import seed_from_bundle
from cannbuild.sources.checkout import cache_path
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


HEX = "ab" * 32


def test_a_corrupt_member_is_refused_before_anything_is_written(tmp_path):
    ws = Workspace(root=tmp_path / "ws")
    archive = b"archive bytes"
    files = {f"downloads/{HEX}/a.tar.gz": archive, "cannbuild.lock": b"version = 1\n"}
    manifest = {name: sha(data) for name, data in files.items()}
    manifest[f"downloads/{HEX}/a.tar.gz"] = sha(b"something else")
    bundle = make_tar(tmp_path / "b.tar", files, manifest)
    with pytest.raises(UsageError, match=f"downloads/{HEX}/a.tar.gz is corrupt"):
        seed_from_bundle(ws, bundle)
    assert not ws.downloads.exists()


def test_a_git_member_git_cannot_read_is_one_paragraph_and_leaves_no_empty_cache(tmp_path):
    """Its sha256 matches a manifest rewritten with it (a bundle edited by hand, or a git
    bundle cut in half before the manifest was made): git's refusal, named."""
    ws = Workspace(root=tmp_path / "ws")
    files = {
        "git/ops-transformer.bundle": b"junk, no git bundle",
        "cannbuild.lock": b"version = 1\n",
    }
    bundle = make_tar(tmp_path / "b.tar", files, {n: sha(d) for n, d in files.items()})
    with pytest.raises(UsageError, match="its member git/ops-transformer.bundle is no git bundle"):
        seed_from_bundle(ws, bundle)
    assert not cache_path(ws, "ops-transformer").exists()


@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_a_bundle_cut_short_is_one_paragraph_and_seeds_nothing(tmp_path, keep):
    """A copy that stopped part way: tarfile finds the end while reading the members."""
    ws = Workspace(root=tmp_path / "ws")
    archive = bytes(range(256)) * 400  # 100 KiB: the cut lands inside it or its header
    files = {f"downloads/{HEX}/a.tar.gz": archive, "cannbuild.lock": b"version = 1\n"}
    whole = make_tar(tmp_path / "b.tar", files, {n: sha(d) for n, d in files.items()})
    cut = tmp_path / "cut.tar"
    data = whole.read_bytes()
    cut.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(UsageError, match="cut short or damaged|is missing|is corrupt"):
        seed_from_bundle(ws, cut)
    assert not ws.downloads.exists()


@pytest.mark.parametrize(
    "name",
    ["downloads/../../../escaped", "downloads//{outside}", "/{outside}", "git/../x.bundle"],
)
def test_a_member_naming_a_path_outside_the_workspace_is_refused(tmp_path, name):
    ws = Workspace(root=tmp_path / "ws")
    outside = tmp_path / "theirs.txt"
    outside.write_text("keep")
    name = name.format(outside=str(outside).lstrip("/"))
    files = {name: b"overwritten", "cannbuild.lock": b"version = 1\n"}
    bundle = make_tar(tmp_path / "b.tar", files, {n: sha(d) for n, d in files.items()})
    with pytest.raises(UsageError, match="is not one a bundle holds"):
        seed_from_bundle(ws, bundle)
    assert outside.read_text() == "keep"
    assert not (tmp_path / "escaped").exists()


@pytest.mark.parametrize("manifest", [b"not json {", b"[1, 2]", b'{"cannbuild.lock": 5}'])
def test_a_manifest_that_is_not_a_name_to_digest_map_is_one_paragraph(tmp_path, manifest):
    bundle = tmp_path / "b.tar"
    with tarfile.open(bundle, "w") as tar:
        for name, data in (("manifest.json", manifest), ("cannbuild.lock", b"")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(UsageError, match="manifest.json"):
        seed_from_bundle(Workspace(root=tmp_path / "ws"), bundle)


def test_a_large_member_is_streamed_with_bounded_memory(tmp_path):
    """A large archive must not be read into memory (a 256 MiB one was, twice: 1.26 GB RSS).
    128 MiB is more than the bound on the reader's peak RSS below, and half the disk writes."""
    import subprocess
    import sys

    size = 128 << 20
    digest = hashlib.sha256()
    for _ in range(128):
        digest.update(bytes(1 << 20))
    bundle = tmp_path / "b.tar"
    member = tarfile.TarInfo(f"downloads/{HEX}/big.bin")
    member.size = size
    with open(bundle, "wb") as raw, tarfile.open(fileobj=raw, mode="w") as tar:
        # the member's header, then its zeros as a hole: read as any tar is, and not written
        # to disk (only the reader's staged copy is)
        raw.write(member.tobuf())
        tar.offset = raw.seek(size, io.SEEK_CUR)
        lock = b"not a lock"
        text = json.dumps(
            {f"downloads/{HEX}/big.bin": digest.hexdigest(), "cannbuild.lock": sha(lock)}
        )
        for name, data in (("cannbuild.lock", lock), ("manifest.json", text.encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from cannbuild.sources.bundle import seed_from_bundle\n"
        "from cannbuild.errors import UsageError\n"
        "from cannbuild.workspace import Workspace\n"
        "try:\n"
        f"    seed_from_bundle(Workspace(root=Path({str(tmp_path / 'ws')!r})), Path({str(bundle)!r}))\n"
        "except UsageError:\n"
        "    pass  # the lock is not one; the archive was streamed and verified before that\n"
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert int(out.stdout.strip().splitlines()[-1]) < 120_000, (
        out.stdout
    )  # peak RSS in KiB (VmHWM: this process only), under the 128 MiB member (read whole: 155 MB)


def test_a_manifest_without_the_lock_is_not_a_bundle(tmp_path):
    files = {f"downloads/{HEX}/a.tar.gz": b"a"}
    bundle = make_tar(
        tmp_path / "b.tar", {**files, "cannbuild.lock": b""}, {n: sha(d) for n, d in files.items()}
    )
    with pytest.raises(
        UsageError, match="no manifest.json or cannbuild.lock|lists no cannbuild.lock"
    ):
        seed_from_bundle(Workspace(root=tmp_path / "ws"), bundle)
