"""Issue: honest verdicts and output a user can act on, on the sandbox.

PASS only when the numerical check ran; every run writes its report (a failed build
too) and `validate` names the build it judges; --dry-run changes nothing; the plan at
80 columns shows every command whole; the closing lines say what was made."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

from reference import reference_torch

from usertree import tree_digest

reference_torch()

NO_TORCH = str(Path(__file__).resolve().parents[1] / "no_torch")
CASE = "fp32_bsh_s128_d64_gqa"


def test_without_torch_validation_is_skipped_never_pass(installed):
    env = installed.env(
        PYTHONPATH=os.pathsep.join(filter(None, (NO_TORCH, os.environ.get("PYTHONPATH"))))
    )
    proc = installed("validate", "--cases", CASE, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "validation: SKIPPED" in proc.stdout and "validation: PASS" not in proc.stdout
    assert "pip install torch" in proc.stdout
    report = installed.report()
    assert report["validation"]["status"] == "SKIPPED"
    assert "torch" in report["validation"]["reason"]
    strict = installed("validate", "--cases", CASE, "--require-device", env=env)
    assert strict.returncode == 5, strict.stdout + strict.stderr
    assert "--require-device" in strict.stderr and "Traceback" not in strict.stderr
    # the environment variable counts the same as the flag
    by_env = installed("validate", "--cases", CASE, env={**env, "CANNBUILD_REQUIRE_DEVICE": "1"})
    assert by_env.returncode == 5


def test_a_failed_build_is_the_latest_report_and_validate_names_the_older_build(cli):
    assert cli("install").returncode == 0
    good = cli.report()
    failing = cli(
        "install",
        "--force",
        "ops-transformer-build",
        env=cli.env(CANNBUILD_SANDBOX_FAULT="build-fail:ops-transformer"),
    )
    assert failing.returncode == 4
    report = cli.report()
    assert report["run_id"] != good["run_id"]
    assert report["build"]["status"] == "failed"
    assert report["build"]["failed_step"] == "ops-transformer-build"
    assert report["build"]["log"] and report["build"]["tail"]
    markdown = (cli.ws / "reports" / "latest" / "report.md").read_text()
    assert "**Build: FAILED** at step ops-transformer-build" in markdown
    proc = cli("validate", "--cases", CASE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "later build attempt" in proc.stdout and "FAILED" in proc.stdout
    judged = cli.report()["built_from"]
    assert judged["step"] == "ops-transformer-install"
    assert judged["newer_failed_attempt"]["failed_step"] == "ops-transformer-build"
    assert set(judged["commits"]) == {"opbase", "ops-transformer"}


def test_dry_run_changes_no_file(cli):
    fresh = cli("setup", "--dry-run")
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert "bash build.sh" in fresh.stdout and "nothing was changed" in fresh.stderr
    assert not cli.ws.exists()
    assert cli("install").returncode == 0
    before = tree_digest(cli.ws)
    for args in (
        ["build", "--force", "ops-transformer-build", "--dry-run"],
        ["setup", "--dry-run"],
        ["validate", "--dry-run"],
        ["fetch", "--dry-run"],
        ["lock", "--dry-run"],
        ["diagnose", "--dry-run"],
        ["bench", "--dry-run"],
    ):
        proc = cli(*args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert "dry run" in proc.stderr
    clean = cli("clean", "--dry-run", sandbox=False)
    assert clean.returncode == 0 and "would remove" in clean.stderr
    assert tree_digest(cli.ws) == before
    # a validation refused is no build attempt: status still names the last build
    (cli.cwd / "notes.txt").write_text("not a package\n")
    assert cli("validate", "--package", str(cli.cwd / "notes.txt")).returncode == 2
    status = cli("status").stdout
    assert "last build attempt: ok (cannbuild install" in status, status


def run_in_terminal(argv, cwd, env, columns=80):
    """Run `argv` with its stdout on a pseudo-terminal `columns` wide; returns the text."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=slave, stderr=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_the_plan_at_80_columns_shows_every_command_whole(installed):
    plan = json.loads(installed("plan", "--json").stdout)
    env = {k: v for k, v in installed.env().items() if k not in ("COLUMNS", "LINES")}
    argv = [sys.executable, "-m", "cannbuild", "plan", "--sandbox", "--variant", "A2"]
    shown = run_in_terminal([*argv, "--cann", "8.5.0"], installed.cwd, env)
    for step in plan["steps"]:
        assert step["command"] in shown, step["command"]
        assert str(step["cwd"]) in shown
    assert "…" not in shown


def test_doctor_at_80_columns_shows_every_fix_whole(installed):
    env = {k: v for k, v in installed.env().items() if k not in ("COLUMNS", "LINES")}
    env["PATH"] = "/nonexistent-tools:" + env["PATH"]
    report = json.loads(installed("doctor", "--json").stdout)
    argv = [sys.executable, "-m", "cannbuild", "doctor", "--sandbox"]
    shown = run_in_terminal(argv, installed.cwd, env)
    flat = " ".join(shown.split())
    for check in report["checks"]:
        if check["status"] != "pass":
            assert " ".join(check["hint"].split()) in flat, check["hint"]
    assert "…" not in shown


def test_install_says_what_was_made_and_how_to_use_it(cli):
    proc = cli("install")
    assert proc.returncode == 0, proc.stderr
    vendor = cli.ws / "opp" / "vendors" / "custom_transformer"
    assert f"to use it: source {vendor}/bin/set_env.bash" in proc.stderr
    assert re.search(r"package \(ops-transformer-build\): .*\.run", proc.stderr)
    assert "ops-transformer-build: done in" in proc.stderr  # each step's own line, once
    assert "steps: " not in proc.stderr  # no second list of them at the end (issue 42)
    assert f"report: {cli.ws}/reports/" in proc.stderr
    again = cli("install")
    assert "ops-transformer-build: up to date" in again.stderr


def test_verbose_streams_the_running_step(cli):
    assert cli("build").returncode == 0
    quiet = cli("build", "--force", "ops-transformer-build")
    loud = cli("build", "--force", "ops-transformer-build", "-v")
    assert "cmake config" not in quiet.stderr
    assert "cmake config" in loud.stderr


def test_under_github_actions_steps_are_groups_and_the_report_is_the_summary(cli, tmp_path):
    summary = tmp_path / "summary.md"
    env = cli.env(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary))
    assert cli("build", env=env).returncode == 0
    proc = cli(
        "build",
        "--force",
        "ops-transformer-build",
        env={**env, "CANNBUILD_SANDBOX_FAULT": "build-fail:ops-transformer"},
    )
    assert proc.returncode == 4
    assert "::group::ops-transformer-build" in proc.stderr and "::endgroup::" in proc.stderr
    assert "::error title=cannbuild step ops-transformer-build failed::" in proc.stderr
    text = summary.read_text()
    assert text.count("# cannbuild report") == 2 and "FAILED" in text


def test_gawk_missing_fails_doctor_and_blocks_the_build_with_the_install_command(cli, tmp_path):
    bin_dir = tmp_path / "bin-without-gawk"
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            if name != "gawk" and not (bin_dir / name).exists():
                (bin_dir / name).symlink_to(os.path.join(folder, name))
    # c++ found elsewhere on this PATH makes another sandbox (its key holds the compiler's
    # path): one of its own, as the shared one is in use by the run
    cli.sandbox = tmp_path / "sandbox"
    env = cli.env(PATH=str(bin_dir))
    doctor = cli("doctor", "--json", env=env)
    assert doctor.returncode == 1
    rows = {c["id"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert rows["recipe.tool.gawk"]["status"] == "fail"
    assert "apt install gawk" in rows["recipe.tool.gawk"]["hint"]
    assert "tool.gawk" not in rows
    build = cli("build", env=env)
    assert build.returncode == 3 and "apt install gawk" in build.stderr
    assert not (cli.ws / "src").exists()


def test_a_workspace_keeps_the_sandbox_it_was_made_with(cli_for, tmp_path):
    cli = cli_for("A3-9.0.0")
    bare = cli("doctor", "--json", "--sandbox", sandbox=False)
    assert bare.returncode in (0, 1), bare.stderr
    assert json.loads(bare.stdout)["host"]["variant"] == "A3"
    clash = cli("doctor", "--sandbox", "--variant", "A2", sandbox=False)
    assert clash.returncode == 2
    assert "--variant A3 --cann 9.0.0" in clash.stderr and "Traceback" not in clash.stderr


def test_status_and_clean(cli):
    assert cli("setup", "--cases", CASE).returncode == 0
    status = cli("status", sandbox=False)
    assert status.returncode == 0
    for wanted in (
        "ops-transformer-install",
        "installed:",
        "validation: PASS",
        "to use it: source",
    ):
        assert wanted in status.stdout
    data = json.loads(cli("status", "--json", sandbox=False).stdout)
    assert data["lock"]["recipe"] == "cann-8.5" and data["validation"]["status"] == "PASS"
    trees = [cli.ws / "src" / repo / "build" for repo in ("opbase", "ops-transformer")]
    assert all(t.is_dir() for t in trees)
    proc = cli("clean", sandbox=False)
    assert proc.returncode == 0, proc.stderr
    assert not any(t.exists() for t in trees)
    assert (cli.ws / "cache" / "git").is_dir() and (cli.ws / "opp").is_dir()
    again = cli("install")
    assert again.returncode == 0 and ": done in" not in again.stderr  # still up to date


def test_a_no_op_setup_without_torch_reuses_the_skipped_verdict_and_installing_torch_ends_it(
    cli, tmp_path
):
    from fakewheels import venv_with_cannbuild

    bin_dir = venv_with_cannbuild(tmp_path / "venv")  # torch not installed at all
    env = cli.env(PATH=os.pathsep.join((str(bin_dir), os.environ["PATH"])))
    argv = [str(bin_dir / "python"), "-m", "cannbuild", "setup", "--cases", CASE, "--sandbox"]
    argv += ["--variant", cli.variant, "--cann", cli.cann]

    def setup() -> subprocess.CompletedProcess:
        return subprocess.run(argv, cwd=cli.cwd, env=env, capture_output=True, text=True)

    first = setup()
    assert first.returncode == 0, first.stderr
    assert "validation: SKIPPED" in first.stdout and "example:" in first.stderr
    again = setup()
    assert again.returncode == 0, again.stderr
    assert "validation: SKIPPED reused from run" in again.stderr  # the example did not run again
    assert "pip install torch" in again.stderr and "example:" not in again.stderr
    assert cli.report()["validation"]["reused_from"]
    # with torch importable (the test environment's), the key changes: worked out anew
    with_torch = cli("setup", "--cases", CASE)
    assert with_torch.returncode == 0, with_torch.stderr
    assert "reused from run" not in with_torch.stderr and "validation: PASS" in with_torch.stdout


def test_without_torch_npu_the_references_are_worked_out_beside_the_build_and_a_broken_kernel_still_fails(
    cli, tmp_path
):
    """Where torch is installed and torch_npu is not (the README's venv), torch's import and
    each case's float64 reference run on a thread while the build compiles (validate/ahead.py),
    or come from this machine's cache of them (validate/refcache.py); the validation judges
    against them, so a wrong kernel is still a FAIL."""
    from fakewheels import venv_with_cannbuild

    bin_dir = venv_with_cannbuild(tmp_path / "venv", torch=True)
    env = cli.env(PATH=os.pathsep.join((str(bin_dir), os.environ["PATH"])))
    argv = [str(bin_dir / "python"), "-m", "cannbuild", "setup", "--cases", CASE, "--sandbox"]
    argv += ["--variant", cli.variant, "--cann", cli.cann]

    def setup(**extra: str) -> subprocess.CompletedProcess:
        run_env = {**env, **extra}
        return subprocess.run(argv, cwd=cli.cwd, env=run_env, capture_output=True, text=True)

    fixed = setup()
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "validation: PASS" in fixed.stdout and "Failed to initialize NumPy" not in fixed.stderr
    capi = {c["id"]: c for c in cli.report()["validation"]["checks"]}["capi"]
    assert capi["status"] == "PASS" and capi["references_ahead"] == 1
    # the run above kept its reference: the broken kernel is judged against the kept one
    broken = setup(CANNBUILD_SANDBOX_FAULT="fa-wrong-scale")
    assert broken.returncode == 5, broken.stdout + broken.stderr
    checks = {c["id"]: c for c in cli.report()["validation"]["checks"]}
    assert checks["capi"]["status"] == "FAIL" and "exceeds the bound" in checks["capi"]["message"]
    assert checks["capi"]["references_ahead"] == 1 and checks["capi"]["references_kept"] == 1
    assert checks["torch_npu"]["status"] == "SKIPPED"  # not installed in that venv
