"""The torch_npu route: the same cases through `torch_npu.npu_fusion_attention`.

Runs only when torch_npu imports and an NPU is visible (never in the sandbox:
its NPUs are emulated below the ACL API, not under torch_npu).  Uses the
public schema (positional head_num and input_layout; `pre_tockens` /
`next_tockens` spelling; returns (out, softmax_max, softmax_sum, ...)).
"""

from __future__ import annotations

import importlib.util
from typing import List, Optional, Sequence

from .cases import Case, CaseResult, judge, make_inputs


def unavailable(npu_visible: bool, sandbox: bool) -> Optional[str]:
    if sandbox:
        return "the sandbox emulates the NPU below the ACL API; torch_npu needs a real device"
    if importlib.util.find_spec("torch_npu") is None:
        return "torch_npu is not installed"
    if not npu_visible:
        return "no NPU is visible on this host"
    return None


def run(
    cases: Sequence[Case], device: str = "npu:0"
) -> List[CaseResult]:  # pragma: no cover - needs an NPU
    import torch_npu

    results: List[CaseResult] = []
    for case in cases:
        tensors = make_inputs(case)
        mask = tensors.get("mask")
        out, smax, ssum = torch_npu.npu_fusion_attention(
            tensors["q"].to(device),
            tensors["k"].to(device),
            tensors["v"].to(device),
            case.N1,
            case.layout,
            atten_mask=mask.bool().to(device) if mask is not None else None,
            scale=case.scale,
            keep_prob=1.0,
        )[:3]
        results.append(judge(case, tensors, out, smax, ssum, None))
    return results
