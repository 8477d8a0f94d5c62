"""The real torch_npu on the sandbox: it imports against the emulated toolkit, and the
validation route reaches the installed package (and fails without it)."""

import csv
import subprocess
import sys

import pytest
from conftest import base_env
from reference import reference_torch

from cannbuild.host.pystack import plain_import_problem, read_python_stack
from cannbuild.host.toolchain import capture_env
from cannbuild.validate import cases, torchnpu

reference_torch()
STACK = read_python_stack()
pytestmark = pytest.mark.skipif(
    STACK.torch_npu is None, reason="torch-npu is not installed (no wheel for this platform?)"
)

PROBE = """
import torch, torch_npu
torch.npu.set_device(0)
x = torch.randn(64, 33)
y = x.to("npu:0")
start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
start.record(); z = (y.cpu() * 2).to("npu:0"); end.record(); end.synchronize()
free, total = torch.npu.mem_get_info()
from torch_npu.utils.collect_env import get_cann_version  # reads the toolkit's install record
print(torch.npu.device_count(), torch.equal(y.cpu(), x), torch.equal(z.cpu(), x * 2),
      start.elapsed_time(end) >= 0, 0 < free <= total, torch.npu.get_device_name(0),
      get_cann_version())
"""


def toolkit_env(sandbox, base):
    return capture_env(sandbox / "sysroot/usr/local/Ascend/cann/set_env.sh", base).env


@pytest.mark.parametrize("key", ["A2-8.5.0", "A3-9.0.0"])
def test_torch_npu_imports_on_the_sandbox_and_sees_its_npus(sandboxes, key):
    env = toolkit_env(sandboxes[key], base_env())
    assert plain_import_problem(STACK, env) is None  # doctor's prediction ...
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr  # ... and what really happens
    count, *checks, name, cann = proc.stdout.split()
    assert count == ("8" if key.startswith("A2") else "16") and checks == ["True"] * 4
    assert name == ("Ascend910B3" if key.startswith("A2") else "Ascend910_9392")
    assert cann == key.split("-", 1)[1]


def test_without_the_toolkit_env_import_torch_fails_as_doctor_says(sandboxes):
    env = base_env(LD_LIBRARY_PATH="")
    assert "libascendcl.so is not on LD_LIBRARY_PATH" in (plain_import_problem(STACK, env) or "")
    proc = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True)
    assert proc.returncode != 0


def package_env(installed):
    vendor = installed.ws / "opp/vendors/custom_transformer"
    env = capture_env(vendor / "bin/set_env.bash", toolkit_env(installed.sandbox, installed.env()))
    return vendor / "op_api/lib/libcust_opapi.so", dict(env.env)


def test_the_route_reaches_the_package_and_fails_to_find_the_op_without_it(installed, tmp_path):
    library, env = package_env(installed)
    selected = cases.select(["fp16_bsh_s128_d128_causal", "fp32_bnsd_s513_d64_gqa_causal"])
    ok = torchnpu.run(selected, library, env, tmp_path / "with")
    assert ok.status == "PASS", ok.message
    assert ok.details["loaded_op_libraries"][0] == str(library.resolve())
    assert [r.status for r in ok.results] == ["PASS", "PASS"]
    assert env.pop("ASCEND_CUSTOM_OPP_PATH")  # the vendor is what set_env.bash adds
    lost = torchnpu.run(selected, library, env, tmp_path / "without")
    assert lost.status == "FAIL"
    assert "aclnnFlashAttentionScore" in lost.message and "not in libopapi.so" in lost.message
    assert str(library.resolve()) not in lost.details["loaded_op_libraries"]


def test_doctor_imports_the_real_cpu_torch_and_torch_npu_on_the_sandbox_and_passes(sandboxes):
    """The real CPU torch and torch_npu here: the child Python imports both with the sandbox
    toolkit's environment, and doctor's row passes naming them (issue 30)."""
    from cannbuild.host.judge_imports import import_checks

    env = toolkit_env(sandboxes["A2-8.5.0"], base_env())
    (row,) = import_checks(STACK, env, "with the toolkit's set_env.sh", sourced=True)
    assert row.status == "pass", row
    assert f"imports torch {STACK.torch} and torch_npu {STACK.torch_npu}" in row.detail
    # without the toolkit's libraries torch_npu cannot load, so the pair cannot clash: no
    # child (the torch_import row says why a plain import fails there)
    assert import_checks(STACK, base_env(LD_LIBRARY_PATH=""), "this shell's env") == []


VARLEN = next(c for c in cases.CASES if c.varlen)


def test_the_route_judges_the_varlen_case_through_the_package(installed, tmp_path):
    """npu_fusion_attention(..., "TND", actual_seq_qlen=, actual_seq_kvlen=) on two sequences
    of different lengths, judged per sequence, statistics included (issue 29 item 4)."""
    library, env = package_env(installed)
    ok = torchnpu.run([VARLEN], library, env, tmp_path)
    assert ok.status == "PASS", ok.message
    (result,) = ok.results
    assert result.softmax_max_err is not None and result.softmax_sum_err is not None
    assert ok.details["loaded_op_libraries"][0] == str(library.resolve())


VARLEN_PROBE = """
import csv, glob, os, sys, torch, torch_npu
torch.manual_seed(0)
q, k, v = (torch.randn(t, n, 64, dtype=torch.float16).to("npu:0") for t, n in ((30, 4), (20, 2), (20, 2)))
ends = dict(actual_seq_qlen=[12, 30], actual_seq_kvlen=[5, 20])
a = torch_npu.npu_fusion_attention(q, k, v, 4, "TND", scale=0.125, **ends)
b = torch_npu.npu_fusion_attention(q, k, v, 4, "TND", scale=0.125, softmax_layout="TND", **ends)
ntd_as_tnd = a[1].cpu().reshape(4, 30, 8).permute(1, 0, 2)
print(tuple(a[1].shape), torch.equal(a[0].cpu(), b[0].cpu()), torch.equal(ntd_as_tnd, b[1].cpu()))
"""


def test_torch_npu_maps_tnd_onto_the_packages_varlen_apis(installed, tmp_path):
    """torch_npu 2.13 calls aclnnFlashAttentionVarLenScore for TND (statistics in NTD order in
    a [T, N, 8] tensor) and VarLenScoreV4 with softmax_layout="TND" (op-plugin
    FlashAttentionKernelNpuOpApi.cpp); the package serves both, with the same numbers."""
    _, env = package_env(installed)
    env["CANNBUILD_EMU_PROFILE_DIR"] = str(tmp_path / "prof")
    proc = subprocess.run(
        [sys.executable, "-c", VARLEN_PROBE], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "(30, 4, 8) True True"
    (table,) = (tmp_path / "prof").glob("*_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv")
    with table.open() as f:
        names = [row["Name"] for row in csv.DictReader(f)]
    fa = [n.split("_", 1)[0] for n in names if "FlashAttention" in n]
    assert fa == ["aclnnFlashAttentionVarLenScore", "aclnnFlashAttentionVarLenScoreV4"]


def test_a_validation_stopped_before_its_torch_npu_route_stops_the_worker_it_started(cli):
    import signal
    import time

    from conftest import processes_under

    assert cli("install").returncode == 0
    run = cli.popen("validate", "--cases", "fp16_bsh_s2048_d128")
    # the worker starts with the C API route, importing torch_npu while that route runs
    deadline = time.monotonic() + 120
    while not [p for p in processes_under(cli.ws) if "torchnpu import worker" in p[1]]:
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()
        time.sleep(0.05)
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 143 and "Traceback" not in err, err
    # nothing it started is left running: the worker went with it
    assert [p for p in processes_under(cli.ws) if "torchnpu import worker" in p[1]] == []
