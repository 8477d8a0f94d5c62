"""The sandbox's third-party archive is the same bytes wherever cannbuild is installed."""

import hashlib
import io
import os
import tarfile
from pathlib import Path

from cannbuild.sandbox.third_party import tar_gz, tree_entries


def deterministic_tar_gz(src: Path, top: str) -> bytes:
    return tar_gz(tree_entries(src, top))


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


def test_a_stored_gzip_reads_back_with_the_standard_library():
    import gzip

    from cannbuild.sandbox.third_party import gzip_stored

    data = os.urandom(200_000)  # more than one stored block
    assert gzip.decompress(gzip_stored(data)) == data
    assert gzip.decompress(gzip_stored(b"")) == b""


def test_the_mirror_serves_real_shaped_archives_with_fixed_bytes():
    import zipfile

    from cannbuild.sandbox.third_party import standin_archives

    first, again = standin_archives(), standin_archives()
    assert {k: a.sha256 for k, a in first.items()} == {k: a.sha256 for k, a in again.items()}
    for key, archive in first.items():
        if archive.file.endswith(".zip"):
            names = zipfile.ZipFile(io.BytesIO(archive.data)).namelist()
            # several top-level entries: ExternalProject unpacks it as it is
            assert (
                "include/nlohmann/json.hpp" in names and "single_include/nlohmann/json.hpp" in names
            )
            continue
        with tarfile.open(fileobj=io.BytesIO(archive.data)) as tar:
            tops = {m.name.split("/")[0] for m in tar.getmembers()}
        assert tops == {archive.file[: -len(".tar.gz")]}, key  # one top folder, named as upstream


def test_each_stand_in_declares_the_hashes_of_the_archives_the_mirror_serves(tmp_path):
    """cannbuild reads the stand-ins' cmake/third_party/*.cmake (up to 9.0) and the stand-in
    cann/cmake's third_party/*.cmake (9.1) as it reads the real ones."""
    from cannbuild.sandbox.releases import standins
    from cannbuild.sandbox.repos import _render_commit
    from cannbuild.sandbox.sharedrepos import cann_cmake_files
    from cannbuild.sandbox.third_party import standin_archives
    from cannbuild.sources.archives import discover

    archives = standin_archives()
    served = {a.url: a for a in archives.values()}
    extra = {
        "opbase_tag_id": "0" * 40,
        "optensor_tag_id": "1" * 40,
        "optensor_api": "2",
        "cann_cmake_tag": "master-026",
        "cann_cmake_sha256": "2" * 64,
    }
    sources = []
    data = standins()
    for i, commit in enumerate(data.history("opbase") + data.history("ops-transformer")):
        work = tmp_path / str(i)
        work.mkdir()
        _render_commit(work, commit, extra)
        folder = work / "cmake" / "third_party"
        sources.append({p.name: p.read_text() for p in folder.glob("*.cmake")})
    contexts = {key: a.context() for key, a in archives.items()}
    for state in data.history("cmake"):
        files = cann_cmake_files(state.state, contexts)
        sources.append({k: v for k, v in files.items() if k.startswith("third_party/")})
    seen = set()
    hashed = set()
    for files in sources:
        declared = discover(files)
        for item in declared:
            if "googletest" in item.url:
                continue  # test-only: the mirror does not serve it
            archive = served[item.url]
            assert item.md5 in (None, archive.md5) and item.sha256 in (None, archive.sha256)
            seen.add(item.url)
            hashed |= {(archive.key, algo) for algo in ("md5", "sha256") if getattr(item, algo)}
    assert seen == set(served)
    # the hash kinds the real modules declare (makeself: SHA256 in FetchContent, MD5 in opbase's
    # ExternalProject; json and eigen 3.4.0: MD5; cann/cmake's json 3.11.3 tarball: SHA256)
    assert hashed == {
        ("makeself", "sha256"),
        ("makeself", "md5"),
        ("json", "md5"),
        ("eigen34", "md5"),
        ("json_obs", "sha256"),
    }
