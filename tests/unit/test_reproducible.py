"""What makes a .run differ between two builds, read from one package."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from cannbuild.build.reproducible import what_varies
from cannbuild.resources import data_dir

MAKESELF = data_dir("templates") / "sandbox" / "makeself" / "makeself.sh"
EPOCH = 1766808000


def pack(tmp_path: Path, name: str, content: Path, epoch: bool) -> Path:
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    if epoch:
        env["SOURCE_DATE_EPOCH"] = str(EPOCH)
    out = tmp_path / name
    subprocess.run(
        ["bash", str(MAKESELF), "--quiet", str(content), str(out), "test package", "./install.sh"],
        check=True, env=env, capture_output=True,
    )  # fmt: skip
    return out


def test_a_package_made_with_source_date_epoch_has_nothing_that_varies(tmp_path):
    content = tmp_path / "payload"
    (content / "lib").mkdir(parents=True)
    (content / "lib" / "libx.so").write_bytes(b"\x7fELF code")
    (content / "install.sh").write_text("exit 0\n")
    a = pack(tmp_path, "a.run", content, epoch=True)
    os.utime(content / "lib" / "libx.so", (EPOCH + 999, EPOCH + 999))  # built later
    b = pack(tmp_path, "b.run", content, epoch=True)
    assert a.read_bytes() == b.read_bytes()
    assert what_varies(a, tmp_path / "workspace", EPOCH) == []
    info = subprocess.run(["sh", str(a), "--info"], capture_output=True, text=True, check=True)
    assert "Date of packaging: Sat Dec 27 04:00:00 UTC 2025" in info.stdout


def test_what_varies_names_the_date_the_build_times_and_an_embedded_workspace(tmp_path):
    workspace = tmp_path / "ws"
    content = tmp_path / "payload"
    (content / "lib").mkdir(parents=True)
    (content / "lib" / "libx.so").write_bytes(b"RUNPATH " + str(workspace).encode() + b"/lib64")
    # read a chunk (1 MiB) at a time: a path across two chunks is found too
    straddling = b"\0" * (1024 * 1024 - 7) + str(workspace).encode() + b"/include"
    (content / "lib" / "libbig.so").write_bytes(straddling)
    (content / "install.sh").write_text("exit 0\n")
    package = pack(tmp_path, "p.run", content, epoch=False)  # as the real makeself 2.5.0 packs
    varies = {v["file"]: v["why"] for v in what_varies(package, workspace, EPOCH)}
    assert "embeds the packaging date" in varies["(makeself header)"]
    assert "carries the time of the tar" in varies["(gzip header)"]
    assert f"embeds the workspace path {workspace}" in varies["lib/libx.so"]
    assert f"embeds the workspace path {workspace}" in varies["lib/libbig.so"]
    assert any("later than SOURCE_DATE_EPOCH" in why for why in varies.values())


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_package_is_read_once_per_sha256_and_the_memo_keeps_only_current_ones(tmp_path):
    from cannbuild.build.reproducible import artifact_records

    workspace, memo = tmp_path / "ws", tmp_path / "artifacts.json"
    content = tmp_path / "payload"
    (content / "lib").mkdir(parents=True)
    (content / "lib" / "libx.so").write_bytes(b"RUNPATH " + str(workspace).encode())
    (content / "install.sh").write_text("exit 0\n")
    package = pack(tmp_path, "p.run", content, epoch=True)
    entry = ("build", str(package), _sha256(package), EPOCH)
    first = artifact_records([entry], workspace, memo)
    assert first[0]["reproducible"] is False and "lib/libx.so" in first[0]["varies"][0]["file"]
    # the memo answers for the same sha256: the file is not read again (reading this
    # one would say it is not a makeself archive)
    package.write_bytes(b"not read")
    assert artifact_records([entry], workspace, memo) == first
    # a rebuilt package (another sha256) is read again, and the old entry is dropped
    (content / "lib" / "libx.so").write_bytes(b"clean")
    rebuilt = pack(tmp_path, "p.run", content, epoch=True)
    again = artifact_records([("build", str(rebuilt), _sha256(rebuilt), EPOCH)], workspace, memo)
    assert again[0]["reproducible"] is True
    assert len(json.loads(memo.read_text())) == 1


def test_a_checkouts_commit_time_is_remembered_by_commit(tmp_path):
    from cannbuild.build.reproducible import commit_time

    repo, memo = tmp_path / "repo", tmp_path / "commits.json"
    env = {
        **os.environ,
        "GIT_COMMITTER_DATE": f"{EPOCH} +0000",
        "GIT_AUTHOR_DATE": f"{EPOCH} +0000",
    }
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    subprocess.run(
        [*git, "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "x"], check=True, env=env
    )
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--detach", head], check=True)
    assert commit_time(repo, memo) == EPOCH
    assert json.loads(memo.read_text()) == {head: str(EPOCH)}
    # what the memo says for that commit is what is used
    memo.write_text(json.dumps({head: "12345"}))
    assert commit_time(repo, memo) == 12345
    assert commit_time(repo) == EPOCH  # without a memo: git
