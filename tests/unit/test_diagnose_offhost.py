"""diagnose --profile on a machine without a CANN toolkit (a profile copied off the
cluster): the profile is analysed, registration is marked as not checkable here, the exit
code is the profile's verdict.  Real CLI processes, with no ASCEND_* in the environment
and an empty --sysroot, so that no toolkit is found whatever this machine has."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

from cannbuild.diagnose.offhost import ANY_SOC, off_host_checks
from cannbuild.profile.shape import AttentionShape
from cannbuild.profile.summary import summarise

from clirun import run_route

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profiler"


def no_toolkit_env(home: Path) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "CANNBUILD_"))}
    env["HOME"] = str(home)  # ~/Ascend is a default place to look: an empty home has none
    return env


def diagnose(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    root = tmp_path / "sysroot"
    root.mkdir(exist_ok=True)
    return run_route(
        "cannbuild",
        "diagnose",
        "--sysroot",
        str(root),
        "--workspace",
        str(tmp_path / "ws"),
        *args,
        cwd=tmp_path,
        env=no_toolkit_env(tmp_path / "home"),
    )


def rows(proc: subprocess.CompletedProcess) -> List[Dict[str, Any]]:
    return json.loads(proc.stdout)["checks"]


def test_without_a_toolkit_unfused_chains_fail_and_registration_is_not_checkable_here(tmp_path):
    proc = diagnose(tmp_path, "--profile", str(FIX / "torch_npu_2.5_level1"), "--json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["off_host"] is True and data["vendor"] is None and data["failed"] is True
    by_id = {r["id"]: r for r in data["checks"]}
    assert by_id["registration"]["status"] == "skip"
    assert by_id["registration"]["detail"].startswith("not checkable here: no CANN toolkit")
    chain = by_id["profile.chain1"]
    assert chain["status"] == "fail" and "(fp16, S=1024, D=72)" in chain["detail"]
    assert "registration is not checkable here" in chain["detail"]
    assert "no CANN toolkit here" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "ws").exists()  # nothing was built or written


def test_without_a_toolkit_a_profile_without_chains_exits_0(tmp_path):
    proc = diagnose(tmp_path, "--profile", str(FIX / "msprof"))
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # rows wrap where the checkout's path ends
    assert "skip registration" in text and "pass profile" in text
    assert "fused attention ran 2 times" in text


def test_without_a_toolkit_the_users_shape_is_still_judged(tmp_path):
    proc = diagnose(
        tmp_path,
        "--profile",
        str(FIX / "msprof"),
        "--head-dim",
        "1024",
        "--dtype",
        "fp16",
        "--json",
    )
    assert proc.returncode == 1, proc.stderr
    by_id = {r["id"]: r for r in rows(proc)}
    assert by_id["shape.head_dim"]["status"] == "fail"
    assert by_id["dtype"]["status"] == "pass"


def test_a_toolkit_named_with_cann_path_that_is_none_still_exits_3(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = diagnose(
        tmp_path, "--profile", str(FIX / "msprof"), "--cann-path", str(tmp_path / "empty")
    )
    assert proc.returncode == 3, proc.stderr


def test_without_a_profile_no_toolkit_is_still_exit_3(tmp_path):
    proc = diagnose(tmp_path)
    assert proc.returncode == 3 and "no CANN toolkit found" in proc.stderr


@pytest.mark.parametrize(
    "fixture, words",
    [
        # the fused op ran in the same profile: the package was found on the profiled host
        ("torch_npu_2.13_level0", "cause unknown: the profile has no shapes or dtypes"),
        ("attention_patterns/eager", "the fused op ran in the same profile"),
        ("torch_npu_2.5_level1", "or the package was not found on the NPU host"),
    ],
)
def test_off_host_the_cause_says_what_the_profile_can_tell(tmp_path, fixture, words):
    checks = off_host_checks(
        "no CANN toolkit on this machine",
        AttentionShape(),
        FIX / fixture,
        summarise(FIX / fixture, timeline=False),
        tmp_path / "no-checkout",
        None,
    )
    chain = next(c for c in checks if c.id == "profile.chain1")
    assert chain.status == "fail" and words in chain.detail
    assert ANY_SOC in next(c for c in checks if c.id == "dtype").detail


def test_off_host_a_flag_that_differs_from_the_recorded_target_says_so_once(tmp_path):
    """The target is read once off the host, in the wording of a run that builds nothing
    (it was read twice: the line came out twice, once saying "building for")."""
    from cannbuild.ownership import claim
    from cannbuild.target import Target, record

    ws = tmp_path / "ws"
    claim(ws, "workspace", "--workspace")
    recorded = Target(
        sysroot=str(tmp_path / "sysroot"),
        soc="ascend910_93",
        built_soc="ascend910_93",
        set_by="cannbuild setup",
        set_at="then",
    )
    assert record(ws, recorded)
    proc = diagnose(tmp_path, "--profile", str(FIX / "torch_npu_2.5_level1"), "--soc", "A2")
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "differs from this workspace" in line]
    assert len(lines) == 1, proc.stderr
    assert "this run uses ascend910b" in lines[0] and "building for" not in proc.stderr
