"""A link put into a workspace is refused when a run takes the workspace, before it
writes anything (exit 2 naming the link); `bundle OUT` replaces only a bundle cannbuild
made, never a user's file or what a link at OUT points at.

Real trees with real links: the workspace as a run leaves it (its folders, a run's logs
and report, the `latest` links cannbuild makes), a user's folder hashed byte for byte
before and after."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Callable, Dict

import pytest

from cannbuild.errors import UsageError
from cannbuild.locks import WorkspaceLock
from cannbuild.ownership import claim
from cannbuild.sources.lock import Lock, LockedRepo, write_lock
from cannbuild.workspace import FOLDERS, Workspace, point_link, write_atomic

from clirun import ROUTES, run_route
from usertree import tree_digest, users_folder

RUN = "20260101-000000-4242"
MINE = ("last-build.json", "tools.json", "CMakeCache.txt", "deep/notes.txt")


def made_workspace(root: Path) -> Workspace:
    """A workspace as a run leaves it: its folders, a run's log and report, and the
    `latest` links cannbuild points at that run."""
    ws = Workspace(root)
    claim(root, "workspace", "--workspace")
    for name in FOLDERS:
        (root / name).mkdir(parents=True, exist_ok=True)
    for folder in (ws.logs, ws.reports):
        (folder / RUN).mkdir()
        write_atomic(folder / RUN / "x.txt", b"run\n")
        point_link(folder / "latest", RUN)
    write_atomic(ws.reports / "last-build.json", b"{}\n")
    return ws


@pytest.fixture
def world(tmp_path: Path):
    ws = made_workspace(tmp_path / "ws")
    mine = users_folder(tmp_path / "mine", MINE)
    return ws, mine


def put_link(ws: Workspace, name: str, target: Path) -> Path:
    """`<ws>/<name>` replaced by a symlink to `target`."""
    at = ws.root / name
    if at.is_dir() and not at.is_symlink():
        shutil.rmtree(at)
    elif os.path.lexists(at):
        at.unlink()
    at.symlink_to(target)
    return at


def take(ws: Workspace) -> None:
    with WorkspaceLock(ws, "cannbuild test"):
        pass


def test_the_workspace_as_cannbuild_leaves_it_is_taken(world):
    """Its own `latest` links (to a run folder beside them) are the links it keeps."""
    ws, _mine = world
    take(ws)
    take(ws)
    assert os.readlink(ws.logs / "latest") == RUN and os.readlink(ws.reports / "latest") == RUN


@pytest.mark.parametrize("name", FOLDERS)
def test_a_link_at_a_folder_runs_write_into_is_refused_naming_it(world, name):
    ws, mine = world
    link = put_link(ws, name, mine)
    before, ws_before = tree_digest(mine), tree_digest(ws.root)
    with pytest.raises(UsageError) as refused:
        take(ws)
    assert str(link) in refused.value.message and "symlink" in refused.value.message
    assert tree_digest(mine) == before
    assert tree_digest(ws.root) == ws_before  # nothing written, not even the lock's record


@pytest.mark.parametrize("name", ["cache", "stamps", "cache/downloads", "reports"])
def test_a_file_at_a_folder_runs_write_into_is_refused_naming_it(world, name):
    ws, _mine = world
    shutil.rmtree(ws.root / name)
    (ws.root / name).write_text("mine\n")
    with pytest.raises(UsageError, match=f"{ws.root / name} is a file"):
        take(ws)
    assert (ws.root / name).read_text() == "mine\n"


LATEST: Dict[str, Callable[[Path, Path], None]] = {
    "a link to a user's folder": lambda at, mine: at.symlink_to(mine),
    "a link out of its folder": lambda at, mine: at.symlink_to("../../mine"),
    "a folder": lambda at, mine: at.mkdir(),
}


@pytest.mark.parametrize("folder", ["logs", "reports"])
@pytest.mark.parametrize("case", sorted(LATEST))
def test_a_latest_that_is_not_cannbuilds_link_to_a_run_is_refused(world, folder, case):
    ws, mine = world
    at = ws.root / folder / "latest"
    at.unlink()
    LATEST[case](at, mine)
    before = tree_digest(mine)
    with pytest.raises(UsageError, match=str(at)):
        take(ws)
    assert tree_digest(mine) == before


# --- through both routes: `clean` takes the workspace like every task that writes ------


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", ["reports", "cache", "stamps", "cache/git", "logs/latest"])
def test_a_linked_workspace_folder_is_exit_2_naming_it_on_both_routes(world, name, route):
    ws, mine = world
    link = put_link(ws, name, mine)
    before = tree_digest(mine)
    proc = run_route(route, "clean", "-w", str(ws.root), cwd=mine.parent, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out
    assert str(link) in proc.stderr, proc.stderr
    assert tree_digest(mine) == before


# --- bundle OUT ---------------------------------------------------------------------------


def git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def bundling(tmp_path_factory) -> Path:
    """A project folder with a lock of one repo whose git cache is in the workspace, and
    `made.tar`, a bundle `cannbuild bundle` wrote from it."""
    root = tmp_path_factory.mktemp("bundling")
    repo = root / "opbase-work"
    repo.mkdir()
    git("init", "--quiet", cwd=repo)
    (repo / "build.sh").write_text("echo build\n")
    git("add", "build.sh", cwd=repo)
    git("commit", "--quiet", "-m", "one", cwd=repo)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    ws = Workspace(root / "ws")
    ws.git_cache.mkdir(parents=True)
    git("clone", "--quiet", "--bare", str(repo), str(ws.git_cache / "opbase.git"), cwd=root)
    project = root / "project"
    project.mkdir()
    lock = Lock(
        recipe="cann-8.5",
        recipe_digest="abc",
        toolkit_version="8.5.0",
        soc="ascend910_93",
        arch="x86_64",
        repos=(LockedRepo("opbase", str(repo), "tag v8.5.0", commit),),
        third_party=(),
        source_date_epoch=1700000000,
    )
    write_lock(project / "cannbuild.lock", lock)
    proc = bundle_to(project, "cannbuild", project / "made.tar")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return project


def bundle_to(project: Path, route: str, out: Path) -> subprocess.CompletedProcess:
    ws = project.parent / "ws"
    lock = project / "cannbuild.lock"
    return run_route(
        route, "bundle", "-w", str(ws), "--lock-file", str(lock), str(out), cwd=project, timeout=60
    )


def _users_tar(out: Path, project: Path) -> None:
    """A user's own tar of a project, its lock first: not a bundle cannbuild made."""
    with tarfile.open(out, "w") as tar:
        tar.add(project / "cannbuild.lock", arcname="cannbuild.lock")


OUTS: Dict[str, Callable[[Path, Path], Path]] = {
    "a user's file": lambda out, p: users_folder(out.parent, [out.name]) / out.name,
    "an empty file": lambda out, p: out.write_bytes(b"") and out or out,
    "a user's tar holding a cannbuild.lock": lambda out, p: _users_tar(out, p) or out,
    "a folder": lambda out, p: users_folder(out, ["a.txt"]),
    "a link to a user's file": lambda out, p: (
        users_folder(out.parent, ["mine.yml"]) and out.symlink_to("mine.yml") or out
    ),
    "a link to a cannbuild bundle": lambda out, p: (
        shutil.copy(p / "made.tar", out.parent / "old.tar") and out.symlink_to("old.tar") or out
    ),
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("case", sorted(OUTS))
def test_bundle_out_at_what_cannbuild_did_not_make_is_refused(bundling, tmp_path, case, route):
    out = tmp_path / "user" / "notes.txt"
    out.parent.mkdir()
    OUTS[case](out, bundling)
    before = tree_digest(out.parent)
    proc = bundle_to(bundling, route, out)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "Traceback" not in text
    assert str(out) in proc.stderr and "left as it is" in proc.stderr, proc.stderr
    assert tree_digest(out.parent) == before


@pytest.mark.parametrize("route", ROUTES)
def test_bundle_out_at_a_bundle_cannbuild_made_is_replaced(bundling, tmp_path, route):
    out = tmp_path / "cann.tar"
    shutil.copy(bundling / "made.tar", out)
    inode = out.stat().st_ino
    proc = bundle_to(bundling, route, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.stat().st_ino != inode  # a new file renamed into place
    with tarfile.open(out) as tar:
        assert "manifest.json" in tar.getnames()
