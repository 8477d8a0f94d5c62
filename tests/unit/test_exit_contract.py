"""One exit-code contract: a command line ends in its exit code and, for an error, one
paragraph `cannbuild: ...`, never a traceback (README: exit codes, Guarantees).  Tested
once, through the `cannbuild` script; `invoke TASK` in a checkout is the same program
(test_routes.py).

Each hostile command line runs in a process of its own, in a folder standing for the
user's project, which must be byte for byte the same afterwards."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Dict, Sequence

import pytest

from cannbuild.errors import UsageError
from cannbuild.options import resolve_options
from cannbuild.sources.lock import write_lock

from clirun import CHECKOUT, cannbuild, clean_env
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


def through(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess:
    return cannbuild(*args, cwd=cwd, timeout=60)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The user's folder the command runs in: a lock (container, ci and bundle read one)
    and a file of their own."""
    folder = tmp_path / "project"
    folder.mkdir()
    write_lock(folder / "cannbuild.lock", sample_lock("8.5.0"))
    (folder / "notes.txt").write_text("mine\n")
    return folder


def refused(args: Sequence[str], cwd: Path, code: int) -> None:
    before = tree(cwd)
    proc = through(args, cwd)
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    one_paragraph(proc)
    assert tree(cwd) == before


# --- usage errors: one grammar ---------------------------------------------------------


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
        ["doctor", "--sysroot", "/nonexistent/root"],  # read as a host with nothing on it
        ["doctor", "--sysroot", "notes.txt"],
        ["status", "-w", "notes.txt"],  # not "does not exist yet"
        ["status", "-w", "/dev/null", "--json"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_usage_error_is_exit_2_in_one_paragraph(args, project):
    refused(args, project, 2)


# --- a reader that left: 141 -----------------------------------------------------------


def closed_pipe_run(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess:
    from clirun import argv_for

    # stdout block-buffered, as in a user's shell: rich's console then meets the closed
    # pipe first, on its own flush (PYTHONUNBUFFERED, set by some CI, makes an earlier
    # plain write meet it)
    env = {k: v for k, v in clean_env(COLUMNS="100").items() if k != "PYTHONUNBUFFERED"}
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head` that has already gone: every write meets a closed pipe
    try:
        return subprocess.run(
            argv_for("cannbuild", args),
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            timeout=60,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [
        ["build", "--help"],
        ["--help"],
        ["--list"],
        ["--version"],
        ["doctor"],  # plain writes
        ["profile", str(PROFILE)],  # rich's console, which would exit 1 on its own
    ],
    ids=lambda a: a[0],
)
def test_a_reader_that_left_is_exit_141(args, tmp_path):
    proc = closed_pipe_run(args, tmp_path)
    assert proc.stderr == b"", proc.stderr.decode()  # no traceback, nothing at all
    assert proc.returncode == 141


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize(
    "args",
    [["--help"], ["setup", "--help"], ["--list"], ["--version"], ["status"], ["status", "--json"]],
    ids=" ".join,
)
def test_output_to_a_full_device_is_exit_11_in_one_paragraph(args, tmp_path):
    """`cannbuild --help > /dev/full`: help and --version are printed by the program, before
    any task's frame (which says this for the tasks), and say it the same way: the output
    could not be written (a task's said 'cannot write: ...' and 'pass --workspace on a
    larger one', which moves no output)."""
    from clirun import argv_for

    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            argv_for("cannbuild", args), stdout=full, stderr=subprocess.PIPE, cwd=tmp_path,
            env=clean_env(), timeout=60,
        )  # fmt: skip
    said = proc.stderr.decode()
    assert proc.returncode == 11 and "Traceback" not in said, said
    assert said.startswith("cannbuild: cannot write") and len(said.strip().splitlines()) == 1
    assert "cannot write the output (stdout)" in said and "--workspace" not in said, said


# --- a folder that cannot be written: 11 -----------------------------------------------


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
def test_a_folder_that_cannot_be_written_is_exit_11(args, project):
    refused(args, project, 11)


# --- path values the kernel would refuse: 2, naming the flag ---------------------------


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
def test_a_path_the_kernel_would_refuse_is_exit_2_naming_the_flag(args, named, project):
    before = tree(project)
    proc = through(args, project)
    assert proc.returncode == 2, proc.stderr
    one_paragraph(proc)
    assert proc.stderr.startswith(f"cannbuild: {named} ")
    assert tree(project) == before


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
def test_an_output_path_through_a_file_is_exit_2(args, project):
    mine = project / "notes.txt"
    refused([a.format(file=mine) for a in args], project, 2)


def test_a_path_from_the_config_is_checked_like_the_flag():
    with pytest.raises(UsageError, match="invoke config cannbuild.workspace holds a NUL"):
        resolve_options({}, {}, {"workspace": "ws\0x"})
    with pytest.raises(UsageError, match="CANNBUILD_LOCK_FILE is a path of"):
        resolve_options({}, {"CANNBUILD_LOCK_FILE": LONG_PATH}, {})


# --- bench values: finite budgets, sizes as written ------------------------------------


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
        ["--dtype", "bogus"],  # before the workspace is brought up to date
        ["--dtype", "bogus", "--dry-run"],
    ],
    ids=lambda a: " ".join(a) or "empty",
)
def test_a_bench_value_that_means_nothing_is_exit_2(args, project):
    refused(["bench", *args], project, 2)
