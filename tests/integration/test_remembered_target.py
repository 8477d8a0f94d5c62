"""A workspace remembers its target (issue 30): after `setup --sandbox`, doctor, plan,
validate and status need no flags; a flag that differs says so and wins for the run;
`--cann-path=<a sandbox's toolkit>` is that sandbox, here through `invoke` in the checkout
(the same program, test_routes.py: one real run of that route end to end).  On the
session's installed workspace (no build of its own)."""

from __future__ import annotations

import json
import subprocess

from conftest import base_env

from clirun import argv_for

CASE = "fp32_bsh_s128_d64_gqa"


def bare(route: str, cwd, *args: str) -> subprocess.CompletedProcess:
    """`args` through `route` with no sandbox flag and no CANNBUILD_* variable: only
    what the workspace remembers says which host it is."""
    return subprocess.run(
        argv_for(route, args), cwd=cwd, env=base_env(), capture_output=True, text=True, timeout=600
    )


def test_after_setup_sandbox_doctor_plan_validate_and_status_need_no_flags(installed):
    setup = installed("setup", "--cases", CASE)
    assert setup.returncode == 0, setup.stderr
    target = json.loads((installed.ws / "target.json").read_text())
    assert (target["sandbox"], target["sandbox_variant"], target["sandbox_cann"]) == (
        True,
        "A2",
        "8.5.0",
    )
    assert target["sandbox_dir"] == str(installed.sandbox)  # the shared one, not <ws>/sandbox
    for args in (("doctor",), ("plan", "--json"), ("validate", "--cases", CASE), ("status",)):
        proc = bare("cannbuild", installed.cwd, *args)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        assert "differs" not in proc.stderr and "Traceback" not in proc.stderr
    plan = json.loads(bare("cannbuild", installed.cwd, "plan", "--json").stdout)
    assert {s["status"] for s in plan["steps"]} == {"up to date"}
    status = bare("cannbuild", installed.cwd, "status").stdout
    assert "target: the sandbox (A2, CANN 8.5.0)" in status
    assert "validation: PASS" in status and "stale" not in status
    assert not (installed.ws / "sandbox").exists()  # no second sandbox was made


def test_a_differing_soc_flag_says_what_it_changes_and_wins_for_the_run(installed):
    before = (installed.ws / "target.json").read_text()
    proc = bare("cannbuild", installed.cwd, "plan", "--json", "--soc", "ascend910_93")
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stderr.split())
    assert "--soc ascend910_93 differs from this workspace's ascend910b (set by cannbuild" in said
    assert "this run uses ascend910_93" in said
    steps = {s["name"]: s for s in json.loads(proc.stdout)["steps"]}
    assert steps["ops-transformer-build"]["reason"] == "soc changed: ascend910b -> ascend910_93"
    assert (installed.ws / "target.json").read_text() == before  # plan only reads


def test_invoke_with_a_sandbox_toolkit_as_cann_path_runs_on_that_sandbox(installed, tmp_path):
    toolkit = installed.sandbox / "sysroot/usr/local/Ascend/cann"
    proc = bare("invoke", tmp_path, "build", "--dry-run", f"--cann-path={toolkit}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = " ".join(proc.stderr.split())
    assert f"is the toolkit of the sandbox at {installed.sandbox} (A2, CANN 8.5.0)" in said
    assert "dry run" in said and not (tmp_path / ".cannbuild" / "target.json").exists()


def test_a_one_off_soc_says_it_is_remembered_and_a_verdict_on_the_old_package_is_stale(cli):
    """The README's own `build --soc A3` on the A2 sandbox moved the target without a word,
    and a bare validate then said PASS of the A2 package (issue 42)."""
    assert cli("install", "--ops", "flash_attention_score").returncode == 0
    built = bare("cannbuild", cli.cwd, "build", "--soc", "A3")
    assert built.returncode == 0, built.stderr
    said = " ".join(built.stderr.split())
    assert "remembered: this workspace now targets the sandbox" in said, said
    assert "--soc=ascend910_93" in said and "(it targeted the sandbox" in said
    judged = bare("cannbuild", cli.cwd, "validate", "--cases", CASE)
    first = " ".join(judged.stdout.split("(target")[0].split())  # the verdict line, unfolded
    assert first.startswith("validation: PASS of a STALE package (") or first.startswith(
        "validation: FAIL of a STALE package ("
    ), judged.stdout
    assert "built for ascend910b; this workspace now targets ascend910_93" in first
    again = bare("cannbuild", cli.cwd, "build")  # the same target: nothing more to say
    assert "remembered:" not in again.stderr, again.stderr
