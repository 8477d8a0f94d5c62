"""What cannbuild takes as its own: a marked folder, an empty one, or a pre-marker folder
it provably made; never a folder that merely uses the same names."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from cannbuild.build.stamps import write_stamp
from cannbuild.decoded import to_plain
from cannbuild.errors import UsageError
from cannbuild.host.toolchain import probe_tools, remember_tools
from cannbuild.locks import WorkspaceLock
from cannbuild.ownership import MARKER, claim, owned, remove_inside
from cannbuild.sandbox.spec import SandboxInfo
from cannbuild.workspace import Workspace


def files(root: Path) -> dict:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def premarker(root: Path) -> Path:
    """A workspace an older cannbuild made: a finished run's lock file and stamp, no marker."""
    ws = Workspace(root=root)
    root.mkdir()
    with WorkspaceLock(ws, "setup"):
        pass
    write_stamp(
        ws,
        "fetch-opbase",
        run_id="20260101-000000-1",
        input_hash="0" * 64,
        inputs={},
        artifacts=[],
        requires=[],
        duration_s=1.0,
        log=root / "logs" / "fetch.log",
    )
    (root / "logs").mkdir(exist_ok=True)
    (root / MARKER).unlink()
    return root


@pytest.mark.parametrize(
    "theirs",
    [
        {"logs/notes.txt": "my notes"},
        {"src/mine/main.c": "int main(void) { return 0; }"},
        {"cache/pip/x.whl": "wheel", "stage/README": "mine"},
        {"stamps/collection.json": '{"stamp": "Penny Black"}'},
        {"stamps/deploy.json": '{"step": "deploy", "status": "done"}'},
        {".lock.info": '{"pid": 1}'},
    ],
    ids=[
        "logs",
        "src",
        "cache+stage",
        "foreign-stamp",
        "foreign-step-stamp",
        "foreign-lock-record",
    ],
)
def test_a_folder_using_cannbuilds_names_without_its_evidence_is_refused(tmp_path, theirs):
    folder = tmp_path / "project"
    for rel, text in theirs.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    before = files(folder)
    with pytest.raises(UsageError, match="nothing there shows cannbuild made it"):
        claim(folder, "workspace", "--workspace")
    with pytest.raises(UsageError, match="no .cannbuild-owned marker"):
        remove_inside(folder, [folder / "logs"], "workspace")
    assert files(folder) == before
    assert not (folder / MARKER).exists()


def test_a_workspace_an_older_cannbuild_made_is_adopted(tmp_path):
    root = premarker(tmp_path / "ws")
    assert not owned(root, "workspace")
    claim(root, "workspace", "--workspace")
    assert owned(root, "workspace")


def test_the_lock_record_of_an_interrupted_older_run_is_evidence_enough(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    lock = WorkspaceLock(Workspace(root=root), "setup")
    lock.__enter__()  # killed before it released the lock: .lock.info stays
    assert lock._fd is not None
    os.close(lock._fd)
    (root / MARKER).unlink()
    (root / "logs").mkdir()
    claim(root, "workspace", "--workspace")
    assert owned(root, "workspace")


def test_a_workspace_holding_only_a_sandbox_cannbuild_made_is_taken(tmp_path):
    """`sandbox create` with no --dir leaves .cannbuild/sandbox, marked, in an unmarked
    .cannbuild: the workspace `setup --sandbox` takes next."""
    record = '{"schema": 1, "variant": "A2", "cann": "8.5.0"}'
    root = tmp_path / "made" / ".cannbuild"
    (claim(root / "sandbox", "sandbox", "--dir") / "sandbox.json").write_text(record)
    claim(root, "workspace", "--workspace")
    assert owned(root, "workspace")
    other = tmp_path / "theirs" / ".cannbuild"  # the same files without the sandbox's marker
    (other / "sandbox").mkdir(parents=True)
    (other / "sandbox" / "sandbox.json").write_text(record)
    with pytest.raises(UsageError, match="nothing there shows cannbuild made it"):
        claim(other, "workspace", "--workspace")


def test_a_file_beside_cannbuilds_names_is_refused_even_with_evidence(tmp_path):
    root = premarker(tmp_path / "ws")
    (root / "thesis.tex").write_text("mine")
    with pytest.raises(UsageError, match=r"did not create \(thesis.tex\)"):
        claim(root, "workspace", "--workspace")
    assert not (root / MARKER).exists()


def test_a_sandbox_is_adopted_by_its_own_record_only(tmp_path):
    folder = tmp_path / "sb"
    (folder / "mirror").mkdir(parents=True)
    (folder / "mirror" / "m.txt").write_text("mine")
    with pytest.raises(UsageError, match="nothing there shows cannbuild made it"):
        claim(folder, "sandbox", "--dir")
    info = SandboxInfo(
        dir=folder,
        variant="A2",
        cann="8.5.0",
        key="k",
        sysroot=folder / "sysroot",
        toolkit=folder / "sysroot/usr/local/Ascend/cann-8.5.0",
        set_env=folder / "sysroot/usr/local/Ascend/cann-8.5.0/set_env.sh",
        mirror=folder / "mirror",
        upstream="https://gitcode.com/cann/",
        soc="ascend910b",
        chip="910B3",
    )
    (folder / "sandbox.json").write_text(json.dumps(to_plain(info)))
    claim(folder, "sandbox", "--dir")
    assert owned(folder, "sandbox")


def test_a_marked_or_empty_folder_is_claimed_and_another_kind_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    claim(empty, "workspace", "--workspace")
    assert owned(empty, "workspace")
    with pytest.raises(UsageError, match="is a cannbuild workspace, not a sandbox"):
        claim(empty, "sandbox", "--dir")


def test_fresh_cache_mounts_are_nothing_to_lose_and_are_taken(tmp_path):
    root = tmp_path / "ws"
    (root / "ccache").mkdir(parents=True)
    (root / "cache" / "git").mkdir(parents=True)
    claim(root, "workspace", "--workspace")
    assert owned(root, "workspace")


def test_a_symlinked_src_is_not_an_empty_folder(tmp_path):
    code = tmp_path / "code"
    code.mkdir()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "src").symlink_to(code)
    with pytest.raises(UsageError, match="nothing there shows cannbuild made it"):
        claim(root, "workspace", "--workspace")
    assert not (root / MARKER).exists()


def test_a_cache_restored_from_an_older_run_is_taken_by_its_tool_memo(tmp_path):
    """A CI cache restore brings back `cache/` (with cannbuild's tool memo) but no marker."""
    old = tmp_path / "old"
    memo = Workspace(root=old).tool_memo
    remember_tools(memo, probe_tools(dict(os.environ)), {})  # as a run did
    assert memo.is_file()
    restored = tmp_path / "ws"
    shutil.copytree(old / "cache", restored / "cache")
    claim(restored, "workspace", "--workspace")
    assert owned(restored, "workspace")
    (tmp_path / "mine" / "cache").mkdir(parents=True)
    (tmp_path / "mine" / "cache" / "tools.json").write_text('{"hammer": "yes"}')
    with pytest.raises(UsageError, match="nothing there shows cannbuild made it"):
        claim(tmp_path / "mine", "workspace", "--workspace")
