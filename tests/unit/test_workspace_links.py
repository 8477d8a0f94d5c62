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

from clirun import cannbuild
from usertree import tree_digest, users_folder

RUN = "20260101-000000-4242"
MINE = ("last-build.json", "tools.json", "CMakeCache.txt", "deep/notes.txt")


def made_workspace(root: Path) -> Workspace:
    """A workspace as a run leaves it: its folders, a run's log and report, and the
    `latest` links cannbuild points at that run."""
    ws = Workspace(root=root)
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


# --- through the CLI: `clean` takes the workspace like every task that writes ------


@pytest.mark.parametrize("name", ["reports", "cache", "stamps", "cache/git", "logs/latest"])
def test_a_linked_workspace_folder_is_exit_2_naming_it(world, name):
    ws, mine = world
    link = put_link(ws, name, mine)
    before = tree_digest(mine)
    proc = cannbuild("clean", "-w", str(ws.root), cwd=mine.parent, timeout=60)
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
    ws = Workspace(root=root / "ws")
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
        repos=(LockedRepo(name="opbase", url=str(repo), ref="tag v8.5.0", commit=commit),),
        third_party=(),
        source_date_epoch=1700000000,
    )
    write_lock(project / "cannbuild.lock", lock)
    proc = bundle_to(project, project / "made.tar")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return project


def bundle_to(project: Path, out: Path) -> subprocess.CompletedProcess:
    ws = project.parent / "ws"
    lock = project / "cannbuild.lock"
    return cannbuild(
        "bundle", "-w", str(ws), "--lock-file", str(lock), str(out), cwd=project, timeout=60
    )


def _users_file(out: Path, project: Path) -> None:
    users_folder(out.parent, [out.name])


def _empty_file(out: Path, project: Path) -> None:
    out.write_bytes(b"")


def _users_tar(out: Path, project: Path) -> None:
    """A user's own tar of a project, its lock first: not a bundle cannbuild made."""
    with tarfile.open(out, "w") as tar:
        tar.add(project / "cannbuild.lock", arcname="cannbuild.lock")


def _folder(out: Path, project: Path) -> None:
    users_folder(out, ["a.txt"])


def _link_to_users_file(out: Path, project: Path) -> None:
    users_folder(out.parent, ["mine.yml"])
    out.symlink_to("mine.yml")


def _link_to_a_bundle(out: Path, project: Path) -> None:
    shutil.copy(project / "made.tar", out.parent / "old.tar")
    out.symlink_to("old.tar")


OUTS: Dict[str, Callable[[Path, Path], None]] = {
    "a user's file": _users_file,
    "an empty file": _empty_file,
    "a user's tar holding a cannbuild.lock": _users_tar,
    "a folder": _folder,
    "a link to a user's file": _link_to_users_file,
    "a link to a cannbuild bundle": _link_to_a_bundle,
}


@pytest.mark.parametrize("case", sorted(OUTS))
def test_bundle_out_at_what_cannbuild_did_not_make_is_refused(bundling, tmp_path, case):
    out = tmp_path / "user" / "notes.txt"
    out.parent.mkdir()
    OUTS[case](out, bundling)
    before = tree_digest(out.parent)
    proc = bundle_to(bundling, out)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "Traceback" not in text
    assert str(out) in proc.stderr and "left as it is" in proc.stderr, proc.stderr
    assert tree_digest(out.parent) == before


def test_bundle_out_at_a_bundle_cannbuild_made_is_replaced(bundling, tmp_path):
    out = tmp_path / "cann.tar"
    shutil.copy(bundling / "made.tar", out)
    inode = out.stat().st_ino
    proc = bundle_to(bundling, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.stat().st_ino != inode  # a new file renamed into place
    with tarfile.open(out) as tar:
        assert "manifest.json" in tar.getnames()


# --- a build step's scratch folders (build.sh's clean: build/, build_out/, output/) ------

SCRATCH = ("build", "build_out", "output")
# what opbase's build.sh does in build/ (a CMake configure): it deletes and writes there
BUILD_SH = "mkdir -p build output && rm -f build/CMakeCache.txt && echo new > build/CMakeCache.txt"


@pytest.mark.parametrize("name", ["build", "build_out", "output"])
def test_a_link_at_a_build_steps_scratch_folder_is_refused_before_it_runs(world, name):
    from cannbuild.build.actions import ActionContext
    from cannbuild.build.plan import PlannedStep
    from cannbuild.build.runner import NoProgress, RunLogs, run_step
    from cannbuild.recipes.model import StepSpec

    ws, mine = world
    checkout = ws.checkout("opbase")
    checkout.mkdir()
    link = put_link(ws, f"src/opbase/{name}", mine)
    step = PlannedStep(
        spec=StepSpec(
            name="opbase-build", command="steps/opbase-build.j2", repo="opbase", scratch=SCRATCH
        ),
        command=BUILD_SH,
        argv=("sh", "-c", BUILD_SH),
        cwd=checkout,
        env=dict(os.environ),
        env_delta={},
        inputs={},
    )
    actions = ActionContext(
        toolkit_home=ws.root / "toolkit",
        overlay=ws.overlay,
        stage=ws.stage,
        opp=ws.opp,
        vendor_dirs={"lib": ws.opp / "vendors" / "custom_lib"},
    )
    before = tree_digest(mine)
    with pytest.raises(UsageError) as refused:
        run_step(step, ws, RunLogs(ws=ws, run_id=RUN), actions, NoProgress(), [])
    assert str(link) in refused.value.message and "symlink" in refused.value.message
    assert tree_digest(mine) == before


def test_the_shipped_build_steps_declare_what_build_sh_removes():
    from cannbuild.recipes import load_recipe
    from cannbuild.resources import data_dir

    for path in sorted(data_dir("recipes").glob("*.toml")):
        recipe = load_recipe(path)
        for step in recipe.steps:
            if step.repo and step.produces:
                assert set(SCRATCH) <= set(step.scratch), (path.name, step.name)


@pytest.mark.parametrize("value", ["../elsewhere", "/tmp/build", ""])
def test_a_scratch_folder_outside_the_checkout_is_refused(tmp_path, value):
    from cannbuild.recipes import load_recipe
    from cannbuild.resources import data_dir

    shipped = (data_dir("recipes") / "8.5.toml").read_text()
    recipe = tmp_path / "mine.toml"
    recipe.write_text(shipped.replace('scratch = ["build"', f'scratch = ["{value}", "build"', 1))
    with pytest.raises(UsageError, match=f"scratch '{value}' is not a path inside the checkout"):
        load_recipe(recipe)
