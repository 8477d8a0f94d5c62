"""Safe by construction: cannbuild never deletes or overwrites what it did not make, stops
every process of a build on SIGTERM/SIGHUP, shares one sandbox between concurrent runs,
and ends every bad input with one paragraph and its documented exit code."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import processes_under
from fulldisk import fill, tmpfs
from reference import reference_torch

from usertree import tree_digest

reference_torch()


def someones_files(root: Path) -> Path:
    """A folder holding a user's files at the very names cannbuild uses."""
    for rel in (
        "src/opbase/main.c",
        "stage/notes.txt",
        "overlay/x",
        "opp/vendors/custom_transformer/keep.txt",
        "mirror/m.txt",
        "sysroot/s.txt",
        ".build/b.txt",
        "create.log",
        ".git/HEAD",
        "Dockerfile",
        "README.md",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"mine: {rel}\n")
    return root


def no_traceback(proc, code):
    """Exit `code`, no traceback, and the error is one paragraph: the last line."""
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert (
        lines[-1].startswith("cannbuild: ")
        and sum(ln.startswith("cannbuild: ") for ln in lines) == 1
    )


def test_a_workspace_holding_someone_elses_files_is_left_untouched(cli, tmp_path):
    theirs = someones_files(tmp_path / "project")
    before = tree_digest(theirs)
    proc = cli("setup", "--workspace", str(theirs))
    no_traceback(proc, 2)
    assert "already holds files cannbuild did not create" in proc.stderr
    assert tree_digest(theirs) == before


def test_a_folder_holding_only_cannbuilds_names_is_not_taken_for_a_workspace(cli, tmp_path):
    """(clean at such a folder: tests/unit/test_cli.py)"""
    theirs = tmp_path / "project"
    for rel in ("logs/notes.txt", "src/mine/main.c"):
        (theirs / rel).parent.mkdir(parents=True, exist_ok=True)
        (theirs / rel).write_text(f"mine: {rel}\n")
    before = tree_digest(theirs)
    proc = cli("setup", "--workspace", str(theirs))
    no_traceback(proc, 2)
    assert "nothing there shows cannbuild made it" in proc.stderr
    assert tree_digest(theirs) == before


def test_a_sandbox_folder_holding_someone_elses_files_is_left_untouched(cli, tmp_path):
    theirs = someones_files(tmp_path / "mine")
    before = tree_digest(theirs)
    proc = cli("sandbox", "create", "--dir", str(theirs), sandbox=False)
    no_traceback(proc, 2)
    assert tree_digest(theirs) == before


def test_container_out_dot_in_a_project_is_refused(installed, tmp_path):
    project = someones_files(tmp_path / "project")
    shutil.copy(installed.lock, project / "cannbuild.lock")
    before = tree_digest(project)
    env = installed.env()
    argv = ["container", "--sandbox", "--out", ".", "--lock-file", "cannbuild.lock"]
    proc = subprocess.run(
        [sys.executable, "-m", "cannbuild", *argv],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    no_traceback(proc, 2)
    assert tree_digest(project) == before


def test_ci_never_overwrites_a_workflow_it_did_not_render(installed, tmp_path):
    target = tmp_path / "ours.yml"
    target.write_text("name: my own pipeline\n")
    proc = installed("ci", "--provider", "github", "--out", str(target), sandbox=False)
    no_traceback(proc, 2)
    assert target.read_text() == "name: my own pipeline\n"


def recipe_with(cli, **changes: str) -> Path:
    """The 8.5 recipe as a user recipe, with lines replaced."""
    from cannbuild.resources import data_dir

    text = (data_dir("recipes") / "8.5.toml").read_text()
    for old, new in changes.items():
        assert old in text
        text = text.replace(old, new)
    folder = cli.cwd / "cannbuild-recipes"
    folder.mkdir(exist_ok=True)
    (folder / "8.5.toml").write_text(text)
    return folder / "8.5.toml"


def test_a_recipe_output_pattern_outside_the_workspace_deletes_nothing(cli, tmp_path):
    outside = tmp_path / "somewhere"
    outside.mkdir()
    (outside / "precious.run").write_text("keep")
    depth = len((cli.ws / "src" / "opbase").relative_to(tmp_path).parts)
    recipe_with(
        cli,
        **{
            'produces = ["build_out/cann-opbase_*_linux-{{ arch }}.run"]': (
                f'produces = ["{"../" * depth}somewhere/*"]'
            )
        },
    )
    proc = cli("build")
    no_traceback(proc, 2)
    assert "outside" in proc.stderr
    assert (outside / "precious.run").read_text() == "keep"


def test_a_template_in_a_recipe_value_is_never_run(cli):
    evil = "{{ cycler.__init__.__globals__.os.system('touch PWNED') }}"
    recipe_with(cli, **{'tag = "v8.5.0"': f'tag = "{evil}"'})
    proc = cli("lock")
    no_traceback(proc, 2)
    assert not (cli.cwd / "PWNED").exists()
    recipe_with(
        cli,
        **{
            'library = "vendors/{{ vendor_name }}_transformer/op_api/lib/libcust_opapi.so"': (
                f'library = "{evil}"'
            )
        },
    )
    assert cli("validate").returncode == 2
    assert not (cli.cwd / "PWNED").exists()


@pytest.mark.parametrize("name", ["../../x", "a/b", "..", "x y", "-rf"])
def test_a_vendor_name_that_is_not_a_name_is_refused(cli, name):
    proc = cli("install", f"--vendor-name={name}")
    no_traceback(proc, 2)
    assert not cli.ws.exists()


def invoke_popen(cli, *args: str) -> subprocess.Popen:
    """`invoke ARGS` as the README runs it in a checkout (tasks.py at its top)."""
    checkout = Path(__file__).resolve().parents[2]
    flags = ("--sandbox", "--variant", cli.variant, "--cann", cli.cann)
    return subprocess.Popen(
        [sys.executable, "-m", "invoke", "--search-root", str(checkout), *args, *flags],
        cwd=cli.cwd,
        env=cli.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("route", ["cannbuild", "invoke"])
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_stops_every_process_of_the_build_before_the_lock_is_released(
    cli, sig, code, route
):
    assert cli("build").returncode == 0
    before = cli.stamp("ops-transformer-build")["finished"]
    cache = cli.cmake_cache()
    args = ("build", "--force", "ops-transformer-build")
    proc = cli.popen(*args) if route == "cannbuild" else invoke_popen(cli, *args)
    cli.wait_for_cmake(proc, cache)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "interrupted during ops-transformer-build" in err and "Traceback" not in err
    assert processes_under(cli.ws) == []  # gone before cannbuild returned, not just later
    assert not (cli.ws / ".lock.info").exists()
    assert cli.stamp("ops-transformer-build")["finished"] == before
    # status and the run's report say which step the signal stopped, and how
    status = cli("status").stdout
    assert "last build attempt: interrupted at ops-transformer-build (" in status, status
    assert f"stopped by {sig.name}" in status and "Interrupted:" not in status
    report = (cli.ws / "reports" / "latest" / "report.md").read_text()
    assert "no build step ran" not in report
    again = cli("build")
    assert again.returncode == 0 and "ops-transformer-build: done in" in again.stderr


def test_a_first_run_stopped_mid_build_is_resumed_by_a_bare_rerun_on_the_same_host(cli):
    """No build before: the interrupted run is the one that records the target (target.json),
    so `build` with no flags resumes on the sandbox, not on the machine's own /."""
    cache = cli.cmake_cache()
    proc = cli.popen("build")
    cli.wait_for_cmake(proc, cache)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "target:" in cli("status", sandbox=False).stdout
    again = cli("build", sandbox=False)
    assert again.returncode == 0, again.stderr
    assert "ops-transformer-build: done in" in again.stderr


def test_a_hang_up_ignored_at_start_does_not_stop_the_build(cli):
    """`nohup cannbuild build`: the terminal closing must not end the build."""
    assert cli("build").returncode == 0
    cache = cli.cmake_cache()
    proc = cli.popen(
        "build",
        "--force",
        "ops-transformer-build",
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    cli.wait_for_cmake(proc, cache)
    proc.send_signal(signal.SIGHUP)
    _out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "ops-transformer-build: done" in err and "interrupted" not in err


def test_three_concurrent_creations_of_one_sandbox_all_succeed(cli, tmp_path):
    target = tmp_path / "shared-sandbox"
    procs = [
        cli.popen_plain("sandbox", "create", "--dir", str(target), "--variant", "A2")
        for _ in range(3)
    ]
    results = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], results
    created = sum("sandbox created" in err for _out, err in results)
    assert created == 1, results
    doctor = cli("doctor", "--sysroot", str(target / "sysroot"), "--json", sandbox=False)
    assert json.loads(doctor.stdout)["host"]["npu_count"] == 8


def test_a_sandbox_in_use_is_never_replaced(cli, tmp_path):
    import fcntl

    target = tmp_path / "busy-sandbox"
    assert cli("sandbox", "create", "--dir", str(target), sandbox=False).returncode == 0
    info = json.loads((target / "sandbox.json").read_text())
    info["key"] = "0" * 64  # as if cannbuild's emulation had changed since
    (target / "sandbox.json").write_text(json.dumps(info))
    before = tree_digest(target / "sysroot")
    with open(target / ".lock") as lease:
        fcntl.flock(lease, fcntl.LOCK_SH)  # another run is using it
        proc = cli("sandbox", "create", "--dir", str(target), sandbox=False)
    no_traceback(proc, 10)
    assert "another run is using it" in proc.stderr
    assert tree_digest(target / "sysroot") == before
    assert cli("sandbox", "create", "--dir", str(target), sandbox=False).returncode == 0


def test_an_unwritable_lock_folder_is_refused_before_any_step(cli, tmp_path):
    with tmpfs(tmp_path / "ro", "ro,size=64k") as ro:
        proc = cli("install", "--lock-file", str(ro / "cannbuild.lock"))
    no_traceback(proc, 11)  # a read-only folder is exit 11, as a full disk
    assert not (cli.ws / "src").exists()  # refused up front, not after an hour's build


def test_a_full_disk_under_logs_is_one_paragraph(cli):
    assert cli("fetch").returncode == 0
    with tmpfs(cli.ws / "logs", "size=16k"):
        fill(cli.ws / "logs")
        proc = cli("build")
        status = cli("status")
    no_traceback(proc, 11)
    assert "No space left" in proc.stderr
    # the attempt says what happened: it failed on a full disk, it was not killed (issue 41)
    line = next(x for x in status.stdout.splitlines() if x.startswith("last build attempt:"))
    assert line.startswith("last build attempt: failed") and "No space left on device" in line
    assert "interrupted" not in status.stdout and "StorageError" not in line, line


def test_a_full_disk_under_opp_during_install_is_exit_11_as_the_readme_says(cli):
    assert cli("build").returncode == 0
    with tmpfs(cli.ws / "opp", "size=64k"):
        proc = cli("install")
    no_traceback(proc, 11)
    assert "its log says the disk is full" in proc.stderr, proc.stderr


def test_install_into_toolkit_says_what_it_changes_and_restore_sh_undoes_it(cli_for, tmp_path):
    from cannbuild.sandbox import SandboxSpec, create_sandbox

    own = tmp_path / "own-sandbox"
    create_sandbox(SandboxSpec(dir=own, variant="A2", cann="8.5.0"))
    toolkit = own / "sysroot/usr/local/Ascend/cann-8.5.0"
    cli = cli_for("A2-8.5.0", tmp_path / "w")
    cli.sandbox = own
    # the sandbox's own doing first: fetch lays the toolkit's host side out from its repos
    assert cli("fetch").returncode == 0
    before = tree_digest(toolkit)
    proc = cli("install", "--install-into-toolkit")
    assert proc.returncode == 0, proc.stderr
    note = next(line for line in proc.stderr.splitlines() if "--install-into-toolkit:" in line)
    assert str(toolkit) in note and "restore.sh" in note
    backup = next((cli.ws / "toolkit-backup").iterdir())
    manifest = json.loads((backup / "manifest.json").read_text())
    assert manifest["files"] and manifest["toolkit"] == str(toolkit)
    assert tree_digest(toolkit) != before
    subprocess.run(["bash", str(backup / "restore.sh")], check=True)
    assert tree_digest(toolkit) == before
