"""`cannbuild profile --run --sandbox`: the real torch_npu on the emulated runtime, which
writes the profiler's own file formats from its own timings, read back by `profile`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Tuple

import pytest
from reference import reference_torch

from cannbuild.host.pystack import read_python_stack
from cannbuild.profile.jsonarray import iter_array
from cannbuild.profile.summary import summarise

reference_torch()
pytestmark = pytest.mark.skipif(
    read_python_stack().torch_npu is None,
    reason="torch-npu is not installed (no wheel for this platform?): profile --run needs it",
)
LEVEL1_HEADER = (
    "Device_id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),"
    "Duration(us),Wait Time(us),Block Num,Mix Block Num,HF32 Eligible,Input Shapes,"
    "Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID"
)
LEVEL0_HEADER = (
    "Device_id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Num,"
    "Mix Block Num,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,"
    "Output Formats"
)
SHAPE = ("--seq-len", "128", "--head-dim", "64", "--heads", "4", "--iterations", "2")


def run_profile(installed, folder: Path, *extra: str) -> Tuple[dict, str]:
    """The --json data and stderr (where the run, the notes and the timeline go)."""
    proc = installed("profile", "--run", str(folder), *SHAPE, *extra, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout), proc.stderr


def output_of(folder: Path) -> Path:
    (out,) = folder.glob("*_ascend_pt")
    return out


def test_profile_run_on_the_sandbox_finds_the_fused_op_and_the_unfused_chain(installed, tmp_path):
    data, stderr = run_profile(installed, tmp_path / "prof")
    att = data["attention"]
    assert (att["fused"]["type"], att["fused"]["count"]) == ("FlashAttentionScore", 2)
    chains = att["unfused_chains"]
    assert chains["count"] == 2 and chains["total_us"] > 0
    types = {op["type"]: op for op in data["ops"]}
    assert types["FlashAttentionScore"]["count"] == 2 and types["BatchMatMulV2"]["count"] == 4
    out = output_of(tmp_path / "prof")
    run = re.search(r"^run: profiler output (\S+);.*differ by at most (\S+)$", stderr, re.M)
    assert run and Path(run.group(1)) == out, stderr
    assert float(run.group(2)) < 1e-2  # the two compute the same
    # the table view shows the chain groups and what fusing them would save
    summary = summarise(out)
    (group,) = summary.analysis.chains
    assert group.ops == ("BatchMatMulV2", "Mul", "SoftmaxV2", "BatchMatMulV2")
    assert group.input_shapes == "1,4,128,64;1,4,64,128"
    assert summary.opportunity()["estimated_saving_us"] is not None
    # the files are in the real format, written by the emulated runtime
    raw = (out / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").read_bytes()
    assert raw.startswith(LEVEL1_HEADER.encode() + b"\r\n")
    assert b"\t," in raw and b',"""1,4,128,64;1,4,128,64;1,4,128,64;' in raw
    trace = list(iter_array(out / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"))
    device = [e for e in trace if e.get("ph") == "X" and "Task Type" in e.get("args", {})]
    assert len(device) == 10 and all(isinstance(e["ts"], str) for e in device)
    assert (out / "ASCEND_PROFILER_OUTPUT" / "analyse.done").exists()
    picture = tmp_path / "prof" / "timeline.png"
    assert f"timeline: {picture}" in stderr.splitlines()
    assert picture.read_bytes()[:4] == b"\x89PNG"


def test_at_level0_the_chain_is_still_found_from_kernel_names(installed, tmp_path):
    data, _ = run_profile(installed, tmp_path / "prof0", "--level", "0")
    out = output_of(tmp_path / "prof0") / "ASCEND_PROFILER_OUTPUT"
    lines = (out / "kernel_details.csv").read_bytes().split(b"\r\n")
    assert lines[0] == LEVEL0_HEADER.encode()
    assert b",N/A,N/A," in lines[1]  # no Type, no Accelerator Core at Level0
    assert data["attention"]["unfused_chains"]["count"] == 2
    assert data["attention"]["fused"]["count"] == 2
    notes = next(f["notes"] for f in data["files"] if f["kind"] == "kernel_details")
    assert "Type is N/A (Level0): op types taken from the kernel names" in notes
    # Level0 prunes the CANN track to its labels: a pid without a process_name
    trace = list(iter_array(out / "trace_view.json"))
    names = {e["pid"] for e in trace if e.get("name") == "process_name"}
    labelled = {e["pid"] for e in trace if e.get("name") == "process_labels"}
    assert labelled - names


def test_profile_run_on_a_fresh_workspace_builds_it_first_and_says_so(cli_for, tmp_path):
    cli = cli_for("A2-8.5.0", tmp_path / "empty")
    steps = "opbase-build, opbase-install, ops-transformer-build, ops-transformer-install"
    dry = cli("profile", "--run", str(tmp_path / "prof"), "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert f"would be brought up to date first (would run {steps})" in dry.stderr
    assert cli.stamp("ops-transformer-build") is None and not (tmp_path / "prof").exists()
    proc = cli("profile", "--run", str(tmp_path / "prof"), *SHAPE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"workspace brought up to date first: ran {steps} ("), proc.stdout
    assert output_of(tmp_path / "prof").is_dir()


def test_a_dry_run_says_what_it_would_profile_and_writes_nothing(installed, tmp_path):
    proc = installed("profile", "--run", str(tmp_path / "prof"), "--head-dim", "64", "--dry-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "dry run: would profile" in proc.stderr and "D=64" in proc.stderr
    assert "; the workspace is up to date; nothing was changed." in proc.stderr
    assert not (tmp_path / "prof").exists()
