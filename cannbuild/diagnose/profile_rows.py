"""diagnose --profile rows beyond the unfused chains: each FlashAttention shape class the
profile ran (D and S judged without the user typing them), and each torch op that shows
attention computed off the device (profile/hostops.py)."""

from __future__ import annotations

from functools import partial
from typing import List

from ..host.check import FAIL, PASS, WARN, Check
from ..profile.affinity import ShapeClass
from ..profile.analysis import Analysis
from .facts import OperatorFacts

# msprof-analyze 26.2.0 msprof_analyze/advisor/analyzer/computation/ai_core_performance/
# ai_core_performance_checker.py (INNER_AXIS_128, `_check_fa_inner_axis`) flags a
# FlashAttentionScore(/Grad) shape whose D or S is not divisible by 128; its wording in
# advisor/rules/en/aicore_performance.yaml: "D is not divisible by 128", "S is not divisible by
# 128".
AFFINE = 128
AFFINE_SOURCE = (
    "msprof-analyze 26.2.0 advisor rule fa_affinity_desc_*_128 (ai_core_performance_checker.py)"
)
MAX_ROWS = 8  # shape classes shown one by one; the rest in one row


def fa_shape_checks(a: Analysis, facts: OperatorFacts) -> List[Check]:
    classes = [c for c in a.fused_shapes if c.input_shapes]
    checks = [_judge(i, c, facts) for i, c in enumerate(classes[:MAX_ROWS], 1)]
    if len(classes) > MAX_ROWS:
        rest = classes[MAX_ROWS:]
        checks.append(
            Check(
                id="profile.fa_shape.more",
                status=WARN,
                detail=f"{sum(c.count for c in rest)} more FlashAttention calls in {len(rest)} "
                f"other shape classes, {sum(c.total_us for c in rest):.1f} us",
                hint="See cannbuild profile --json (attention.fused.shapes) for all of them.",
            )
        )
    return checks


def _judge(i: int, c: ShapeClass, facts: OperatorFacts) -> Check:
    dims = c.dims()
    what = (
        f"{c.op_type} x{c.count}, {c.total_us:.1f} us"
        + (f", {c.dtype}" if c.dtype else "")
        + f", inputs {c.input_shapes.split(';')[0]}"
    )
    cid = f"profile.fa_shape{i}"
    row = partial(Check, id=cid)
    if dims is None:
        # the shapes are there (classes are only made of calls with shapes): a 3-dim query
        # (BSH/SBH) gives D only with the head count, which only softmax_max/lse records
        return row(
            status=WARN,
            detail=f"{what}: the query {c.input_shapes.split(';')[0]} does not tell D (H = N x D "
            "and no output of this call records N)",
            hint="Pass --heads and --head-dim of this attention to judge them.",
        )
    said = f"{dims.layout}, D={dims.D}" + (f", S={dims.S}" if dims.S else "")
    limit = facts.limits["D"]
    if not limit.low <= dims.D <= limit.high:
        return row(
            status=FAIL,
            detail=f"{what} ({said}): head dim {dims.D} is outside {limit.low}..{limit.high} "
            f"({limit.source})",
            hint=f"Use a head dim within {limit.low}..{limit.high}.",
        )
    padded = -(-dims.D // facts.align) * facts.align
    if dims.D % facts.align and facts.align_required:
        return row(
            status=FAIL,
            detail=f"{what} ({said}): head dim {dims.D} is not a multiple of {facts.align}, which "
            f"the operator's docs require ({facts.align_source})",
            hint=f"Pad D to {padded} (zeros along D in query/key/value).",
        )
    problems = []
    if dims.D % facts.align:
        problems.append(f"D {dims.D} is padded to {padded} ({facts.align_source})")
    off = [
        f"{axis} is not divisible by {AFFINE}"
        for axis, v in (("D", dims.D), ("S", dims.S))
        if v and v % AFFINE
    ]
    if off:
        problems.append(f"{' and '.join(off)} ({AFFINE_SOURCE})")
    if problems:
        return row(
            status=WARN,
            detail=f"{what} ({said}): {'; '.join(problems)}",
            hint=f"Shapes with D and S multiples of {AFFINE} run at the operator's best rate: "
            "pad the sequence (with a mask) or choose the head dim accordingly.",
        )
    # only what the shapes tell: TND's T counts every sequence's tokens, so S is not known
    known = "D and S are multiples" if dims.S else "D is a multiple"
    unknown = "" if dims.S else f"; S is not in the shapes ({dims.layout}), not judged"
    return row(
        status=PASS,
        detail=f"{what} ({said}): {known} of {AFFINE}, D within {limit.low}..{limit.high}{unknown}",
    )


def host_fallback_checks(a: Analysis) -> List[Check]:
    """One row per torch op that shows attention off the device: the cause, with time."""
    checks = []
    for i, op in enumerate((o for o in a.host_ops if o.is_fallback), 1):
        calls = op.host_only if op.judged else op.count
        us = op.host_only_us if op.judged else op.total_us
        checks.append(
            Check(
                id=f"profile.host{i}",
                status=FAIL,
                detail=f"{calls} call(s), {us:.1f} us on the host: {op.cause()}",
                hint=_host_fix(op.name, bool(op.backend)),
            )
        )
    return checks


def _host_fix(name: str, backend: bool) -> str:
    if backend:
        return (
            "Keep query/key/value on the NPU (tensor.npu()) with torch_npu imported, or call "
            "torch_npu.npu_fusion_attention directly; a backend forced with "
            "torch.backends.cuda.sdp_kernel / sdpa_kernel does not apply on Ascend."
        )
    return (
        f"Move the tensors {name} works on to the NPU (model.npu(), tensor.npu()); on the NPU, "
        "call torch_npu.npu_fusion_attention instead of matmul/softmax/matmul."
    )
