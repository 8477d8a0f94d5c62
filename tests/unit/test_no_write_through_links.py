"""One writer that never follows a link, a dangling one included (issue 41 item 3): `ci
--out`, `container --out` and the workspace's `.lock` at a symlink are exit 2 naming
the link, and nothing appears where the link points."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import pytest

from cannbuild.errors import UsageError
from cannbuild.ownership import claim
from cannbuild.safefs import open_lock
from cannbuild.sources.lock import write_lock

from clirun import run_route
from lockdata import sample_lock
from usertree import tree_digest

# Each: set up tmp (a link at the path the command writes, pointing at `where`), return
# (args, cwd, the link).
Writer = Callable[[Path, Path], Tuple[List[str], Path, Path]]


def _ci(tmp: Path, where: Path) -> Tuple[List[str], Path, Path]:
    repo = tmp / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "ci.yml").symlink_to(where)
    return ["ci", "--provider", "github", "--out", "ci.yml"], repo, repo / "ci.yml"


def _container(tmp: Path, where: Path) -> Tuple[List[str], Path, Path]:
    write_lock(tmp / "cannbuild.lock", sample_lock("8.5.0"))
    (tmp / "ctx").symlink_to(where)
    args = ["container", "--variant", "A3", "--lock-file", "cannbuild.lock", "--out", "ctx"]
    return args, tmp, tmp / "ctx"


def _workspace_lock(tmp: Path, where: Path) -> Tuple[List[str], Path, Path]:
    claim(tmp / "ws", "workspace", "--workspace")
    (tmp / "ws" / ".lock").symlink_to(where)
    return ["clean", "-w", "ws"], tmp, tmp / "ws" / ".lock"


WRITERS: Dict[str, Writer] = {
    "ci --out": _ci,
    "container --out": _container,
    ".lock": _workspace_lock,
}


@pytest.mark.parametrize("dangling", [True, False], ids=["dangling", "to-a-file"])
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_link_where_cannbuild_writes_is_refused_and_not_followed(
    tmp_path: Path, writer: str, dangling: bool
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = elsewhere / "target"
    if not dangling:
        where.write_text("mine\n")
    args, cwd, link = WRITERS[writer](tmp_path, where)
    before = tree_digest(elsewhere)
    proc = run_route("cannbuild", *args, cwd=cwd, timeout=120)
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2, said
    assert "Traceback" not in said
    assert str(link) in said and "link" in said, said
    assert tree_digest(elsewhere) == before  # nothing made or changed where it points
    assert link.is_symlink() and os.readlink(link) == str(where)


def test_the_lock_opener_refuses_a_dangling_link_and_a_fifo_without_waiting(tmp_path: Path) -> None:
    (tmp_path / ".lock").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="is a symlink"):
        open_lock(tmp_path / ".lock", "the sandbox lock")
    assert not (tmp_path / "nowhere").exists()
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UsageError, match="not a regular file"):
        open_lock(tmp_path / "fifo", "the sandbox lock")
    fd = open_lock(tmp_path / "new.lock", "the sandbox lock")  # made when missing
    os.close(fd)
    assert (tmp_path / "new.lock").is_file()
