"""The verdict logic on synthetic kernel outputs: it must be able to say FAIL."""

import math
import os
import subprocess
import sys

import pytest
from reference import reference_torch

from cannbuild.host.pystack import read_python_stack
from cannbuild.validate import cases, example

CASE = cases.Case(
    name="fp16_bsh_t", dtype="fp16", layout="BSH", B=1, N1=4, N2=2, S=33, D=64, causal=True
)
pytestmark = pytest.mark.xdist_group("torch")  # one xdist worker imports torch for these


@pytest.fixture(scope="module")
def torch():
    """torch (or the test skipped, saying why), imported by the tests that compute with it
    rather than when the suite is collected: seconds, in every xdist worker."""
    return reference_torch()


def reference_outputs(torch, case, scale=None, nan=False):
    tensors = cases.make_inputs(case)
    q, k, v = (
        cases.to_bnsd(tensors[n].float(), case.layout, case.B, h, case.S, case.D)
        for n, h in (("q", case.N1), ("k", case.N2), ("v", case.N2))
    )
    group = case.N1 // case.N2
    s = (q @ k.repeat_interleave(group, 1).transpose(-1, -2)) * (scale or case.scale)
    if "mask" in tensors:
        s = s.masked_fill(tensors["mask"].bool(), cases.MASKED)
    mx = s.max(-1).values
    sm = (s - mx.unsqueeze(-1)).exp().sum(-1)
    out = (s.softmax(-1) @ v.repeat_interleave(group, 1)).to(torch.float16)
    if case.layout == "BSH":
        out = out.permute(0, 2, 1, 3).reshape(case.B, case.S, case.N1 * case.D)
    if nan:
        out = out.clone()
        out.view(-1)[7] = float("nan")
    stats = lambda t: t.unsqueeze(-1).expand(*t.shape, 8).contiguous()  # noqa: E731
    return tensors, out, stats(mx), stats(sm)


def test_a_correct_kernel_passes_within_the_rule(torch):
    tensors, out, mx, sm = reference_outputs(torch, CASE)
    result = cases.judge(CASE, tensors, out, mx, sm, 1.0)
    assert result.status == "PASS", result.message
    assert result.max_abs_err <= result.bound


def test_a_wrong_softmax_scale_fails_with_figures(torch):
    tensors, out, mx, sm = reference_outputs(torch, CASE, scale=CASE.scale * CASE.scale)
    result = cases.judge(CASE, tensors, out, mx, sm, 1.0)
    assert result.status == "FAIL"
    assert "exceeds the bound" in result.message
    assert result.mismatches and {"index", "got", "want"} <= set(result.mismatches[0])


def test_one_wrong_element_fails(torch):
    """The bound holds for every element, not on average: a kernel wrong in one place."""
    tensors, out, mx, sm = reference_outputs(torch, CASE)
    out = out.clone()
    out.view(-1)[123] += 0.5
    result = cases.judge(CASE, tensors, out, mx, sm, 1.0)
    assert result.status == "FAIL"
    assert "exceeds the bound" in result.message


def test_an_fp32_output_rounded_to_bf16_fails_and_the_exact_one_passes(torch):
    """Each dtype has its own bound: fp32 output that lost precision to bf16 rounding fails."""
    case = next(c for c in cases.CASES if c.name == "fp32_bsh_s128_d64_gqa")
    tensors = cases.make_inputs(case)
    expected = cases.reference(case, tensors)

    def bsh(t):
        return t.permute(0, 2, 1, 3).reshape(case.B, case.S, case.N1 * case.D)

    exact = cases.judge(case, tensors, bsh(expected.out.float()), None, None, 1.0, expected)
    assert exact.status == "PASS", exact.message
    rounded = bsh(expected.out.to(torch.bfloat16).float())
    result = cases.judge(case, tensors, rounded, None, None, 1.0, expected)
    assert result.status == "FAIL"
    assert "exceeds the bound" in result.message


def test_a_single_nan_fails_and_is_located(torch):
    tensors, out, mx, sm = reference_outputs(torch, CASE, nan=True)
    result = cases.judge(CASE, tensors, out, mx, sm, 1.0)
    assert result.status == "FAIL" and "NaN/Inf" in result.message


def test_softmax_stats_are_checked_lane_by_lane(torch):
    tensors, out, mx, sm = reference_outputs(torch, CASE)
    sm = sm.clone()
    sm[0, 1, 2, 5] += 1.0
    result = cases.judge(CASE, tensors, out, mx, sm, 1.0)
    assert result.status == "FAIL" and "lanes" in result.message


def test_the_case_list_covers_what_the_issue_asks():
    covered = {(c.dtype, c.layout) for c in cases.CASES}
    assert {(d, lay) for d in ("fp16", "bf16", "fp32") for lay in ("BNSD", "BSH")} <= covered
    assert {c.S for c in cases.CASES} >= {1, 128, 513, 2048}
    assert {c.D for c in cases.CASES} >= {64, 128}
    assert any(c.N1 == 2 * c.N2 for c in cases.CASES)
    assert {c.causal for c in cases.CASES} == {True, False}


MAX = 128 / math.sqrt(128)


def example_lines(out=1.0, mx=MAX, sm=256.0, count_out=32768):
    values = [out] * count_out + [mx] * 2048 + [sm] * 2048
    return [f"[2026-01-01 00:00:00] mean result[{i}] is: {v:f}" for i, v in enumerate(values)]


def judged(lines):
    """The verdict on test_aclnn_flash_attention_score.cpp's output, as the run judges it."""
    return example.judge_example("test_aclnn_flash_attention_score.cpp", lines, True, 0, None)


def test_the_repo_example_output_is_judged():
    assert judged(example_lines()).status == "PASS"
    assert "softmaxMax[0] is 1.0" in judged(example_lines(mx=1.0)).message
    assert "printed 36863 result values" in judged(example_lines(count_out=32767)).message
    assert "attentionOut[0] is nan" in judged(example_lines(out=float("nan"))).message


@pytest.mark.skipif(
    read_python_stack().torch_npu is None,
    reason="torch-npu is not installed here (no wheel for this platform?)",
)
@pytest.mark.integration  # two processes that import torch: seconds, with the full suite
def test_the_reference_imports_torch_without_loading_torch_npu():
    """Where torch_npu is installed and no CANN library is on the loader path, a plain
    `import torch` fails; the reference must not, and must leave the env as it found it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "TORCH_DEVICE"))}
    env["LD_LIBRARY_PATH"] = ""
    plain = subprocess.run(
        [sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True
    )
    assert plain.returncode != 0 and "TORCH_DEVICE_BACKEND_AUTOLOAD" in plain.stderr
    probe = (
        "import os, sys; from cannbuild.validate import cases; "
        "assert cases.why_no_torch() is None; t = cases.reference_torch(); "
        "print('torch_npu' in sys.modules, os.environ.get('TORCH_DEVICE_BACKEND_AUTOLOAD'))"
    )
    proc = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "None"]
