"""One exit-code contract on both routes: the `cannbuild` script and `invoke TASK` in a
checkout read the same command line into the same exit code and the same one-paragraph
`cannbuild: ...` error, never a traceback (README: exit codes, Guarantees).

Each hostile command line runs through both routes in a process of its own, in a folder
standing for the user's project, which must be byte for byte the same afterwards."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Sequence

import pytest

from cannbuild.errors import UsageError
from cannbuild.options import resolve_options
from cannbuild.sources.lock import write_lock
from cannbuild.tasks import GROUPS

from clirun import CHECKOUT, ROUTE_PARAMS, clean_env, run_route
from lockdata import sample_lock

PROFILE = CHECKOUT / "tests" / "fixtures" / "profiler" / "torch_npu_2.13_level0"
LONG_NAME = "n" * 300  # over NAME_MAX (255 bytes)
LONG_PATH = "/tmp/" + "/".join(["p" * 200] * 30)  # about 6000 bytes, over PATH_MAX (4095)
# /sys refuses a new file or folder even to root (EACCES/EPERM), as a read-only mount
# would; the tests run as root, to whom a chmod 0555 folder is still writable.
READ_ONLY = "/sys/cannbuild-exit-contract"


def tree(root: Path) -> Dict[str, str]:
    """Every path under `root` with what it is: a file's sha256, a link's target."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def one_paragraph(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cannbuild: "), proc.stderr


def through(route: str, args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_route(route, *args, cwd=cwd, timeout=60)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The user's folder the command runs in: a lock (container, ci and bundle read one)
    and a file of their own."""
    folder = tmp_path / "project"
    folder.mkdir()
    write_lock(folder / "cannbuild.lock", sample_lock("8.5.0"))
    (folder / "notes.txt").write_text("mine\n")
    return folder


def refused(route: str, args: Sequence[str], cwd: Path, code: int) -> None:
    before = tree(cwd)
    proc = through(route, args, cwd)
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    one_paragraph(proc)
    assert tree(cwd) == before


# --- usage errors: one grammar ---------------------------------------------------------


@pytest.mark.parametrize("route", ROUTE_PARAMS)
@pytest.mark.parametrize(
    "args",
    [
        ["biuld"],  # unknown task
        ["plan", "--jbos", "8"],  # unknown flag
        ["plan", "-j"],  # a flag missing its value
        ["plan", "--workspace"],
        ["plan", "-j", "x"],  # a value of the wrong type
        ["--dry", "build"],  # invoke's own --dry would have been ignored: a build would run
        ["doctor", "--", "extra"],
        ["--config", "/nonexistent/ci.yaml", "status"],  # --config missing file
    ],
    ids=lambda a: " ".join(a),
)
def test_a_usage_error_is_exit_2_in_one_paragraph_on_both_routes(route, args, project):
    refused(route, args, project, 2)


@pytest.mark.parametrize("route", ROUTE_PARAMS)
@pytest.mark.parametrize(
    "config, named",
    [
        ("cannbuild:\n  jobs: [8\n", "project/invoke.yaml cannot be read"),
        ("cannbuild: 5\n", "key cannbuild is a int"),
        ("cannbuild:\n  sokc: A2\n", "cannbuild.sokc is not a cannbuild option"),
    ],
)
def test_a_malformed_invoke_yaml_beside_tasks_py_is_exit_2_on_both_routes(
    route, config, named, tmp_path
):
    """invoke reads the invoke.yaml next to tasks.py; the script, the one in its cwd.  A
    copy of tasks.py (the checkout is shared) with the bad file beside it."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(CHECKOUT / "tasks.py", project / "tasks.py")
    (project / "invoke.yaml").write_text(config)
    before = tree(project)
    args = ["doctor", "--sysroot", str(tmp_path / "empty")]
    head = ["-m", "cannbuild"] if route == "cannbuild" else ["-m", "invoke"]  # finds ./tasks.py
    proc = subprocess.run(
        [sys.executable, *head, *args],
        cwd=project,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    one_paragraph(proc)
    assert named in proc.stderr
    assert tree(project) == before


@pytest.mark.parametrize("route", ROUTE_PARAMS)
@pytest.mark.parametrize("task", sorted(GROUPS))
def test_every_tasks_help_works_on_both_routes(route, task, tmp_path):
    proc = through(route, [task, "--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Usage: cannbuild {task}")
    assert proc.stdout == through("cannbuild", ["help", task], tmp_path).stdout
    assert list(tmp_path.iterdir()) == []  # help ran nothing


def test_invoke_still_lists_the_collection_in_its_own_formats(tmp_path):
    """`invoke --list --list-format json` is invoke's: it lists `namespace()`."""
    import json

    proc = through("invoke", ["--list", "--list-format", "json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert {t["name"] for t in json.loads(proc.stdout)["tasks"]} == set(GROUPS)


# --- a reader that left: 141 -----------------------------------------------------------


def closed_pipe_run(route: str, args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess:
    from clirun import argv_for

    # stdout block-buffered, as in a user's shell: rich's console then meets the closed
    # pipe first, on its own flush (PYTHONUNBUFFERED, set by some CI, makes an earlier
    # plain write meet it)
    env = {k: v for k, v in clean_env(COLUMNS="100").items() if k != "PYTHONUNBUFFERED"}
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head` that has already gone: every write meets a closed pipe
    try:
        return subprocess.run(
            argv_for(route, args),
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            timeout=60,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("route", ROUTE_PARAMS)
@pytest.mark.parametrize(
    "args",
    [
        ["build", "--help"],
        ["--list"],
        ["doctor"],  # plain writes
        ["profile", str(PROFILE)],  # rich's console, which would exit 1 on its own
    ],
    ids=lambda a: a[0],
)
def test_a_reader_that_left_is_exit_141_on_both_routes(route, args, tmp_path):
    proc = closed_pipe_run(route, args, tmp_path)
    assert proc.stderr == b"", proc.stderr.decode()  # no traceback, nothing at all
    assert proc.returncode == 141


# --- a folder that cannot be written: 11 -----------------------------------------------


@pytest.mark.parametrize("route", ROUTE_PARAMS)
@pytest.mark.parametrize(
    "args",
    [
        ["setup", "--sandbox", "--workspace", READ_ONLY],
        ["build", "--sandbox", "-w", READ_ONLY],
        ["sandbox", "create", "--dir", READ_ONLY],
        ["bundle", READ_ONLY + "/cann.tar"],
        ["bundle", "/sys/cann.tar"],
        ["container", "--variant", "A3", "--out", READ_ONLY],
        ["ci", "--out", READ_ONLY + "/ci.yml"],
        ["lock", "--cann", "8.5.0", "--soc", "A3", "--lock-file", "/sys/cannbuild.lock"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_folder_that_cannot_be_written_is_exit_11_on_both_routes(route, args, project):
    refused(route, args, project, 11)


# --- path values the kernel would refuse: 2, naming the flag ---------------------------


@pytest.mark.parametrize("route", ROUTE_PARAMS)
@pytest.mark.parametrize(
    "args, named",
    [
        (["plan", "-w", "/tmp/" + LONG_NAME], "--workspace"),
        (["status", "-w", LONG_PATH], "--workspace"),
        (["status", "--lock-file", LONG_PATH], "--lock-file"),
        (["container", "--variant", "A3", "--out", "/tmp/" + LONG_NAME], "--out"),
        (["bundle", LONG_PATH], "OUT"),
        (["profile", "/tmp/" + LONG_NAME], "PATH"),
        (["profile", str(PROFILE), "--out", LONG_PATH], "--out"),
        (["bench", "--out", "/tmp/" + LONG_NAME], "--out"),
        (["sandbox", "create", "--dir", LONG_PATH], "--dir"),
        (["doctor", "--sysroot", LONG_PATH], "--sysroot"),
        (["validate", "--package", "/tmp/" + LONG_NAME], "--package"),
        (["diagnose", "--profile", LONG_PATH], "--profile"),
    ],
    ids=lambda a: a[0] if isinstance(a, list) else a,
)
def test_a_path_the_kernel_would_refuse_is_exit_2_naming_the_flag(route, args, named, project):
    before = tree(project)
    proc = through(route, args, project)
    assert proc.returncode == 2, proc.stderr
    one_paragraph(proc)
    assert proc.stderr.startswith(f"cannbuild: {named} ")
    assert tree(project) == before


@pytest.mark.parametrize("route", ROUTE_PARAMS)
@pytest.mark.parametrize(
    "args",
    [
        ["profile", str(PROFILE), "--out", "{file}"],  # a file where the folder goes
        ["profile", str(PROFILE), "--out", "{file}/sub"],  # a folder under a file
        ["bench", "--out", "{file}"],
        ["container", "--variant", "A3", "--out", "{file}/sub"],
    ],
    ids=lambda a: " ".join(a[:1] + a[-1:]),
)
def test_an_output_path_through_a_file_is_exit_2(route, args, project):
    mine = project / "notes.txt"
    refused(route, [a.format(file=mine) for a in args], project, 2)


def test_a_path_from_the_config_is_checked_like_the_flag():
    with pytest.raises(UsageError, match="invoke config cannbuild.workspace holds a NUL"):
        resolve_options({}, {}, {"workspace": "ws\0x"})
    with pytest.raises(UsageError, match="CANNBUILD_LOCK_FILE is a path of"):
        resolve_options({}, {"CANNBUILD_LOCK_FILE": LONG_PATH}, {})


# --- bench values: finite budgets, sizes as written ------------------------------------


@pytest.mark.parametrize("route", ROUTE_PARAMS)
@pytest.mark.parametrize(
    "args",
    [
        ["--budget", "nan"],
        ["--budget", "inf"],
        ["--budget", "-1"],
        ["--shapes", "B0N8S128D64"],  # not B=1
        ["--shapes", "N8/0S128D64"],  # not N2=8
        ["--shapes", ""],  # not the default sweep
        ["--shapes", ","],
    ],
    ids=lambda a: " ".join(a) or "empty",
)
def test_a_bench_value_that_means_nothing_is_exit_2(route, args, project):
    refused(route, ["bench", *args], project, 2)
