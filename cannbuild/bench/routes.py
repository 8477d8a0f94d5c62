"""The implementations a shape is timed through: the package's C API (fa_check, timed
with the runtime's events), torch's scaled_dot_product_attention and the unfused
MatMul -> Softmax -> MatMul chain.  Each first runs once and is judged; only a PASS is
timed."""

from __future__ import annotations

import re
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Callable, Dict, Mapping, Optional, Tuple

import msgspec
from msgspec import Struct

from ..validate import capi
from ..validate.capi import CaseRun
from ..validate.casefiles import judge_files, manifest_line
from ..validate.cases import CaseResult, Reference, judge, to_bnsd
from .memory import rss_growth
from .shapes import BenchShape
from .timing import WARMUP, Timing

if TYPE_CHECKING:
    from torch import Tensor

CAPI, TORCH_NPU, SDPA, UNFUSED = "capi", "torch_npu", "sdpa", "unfused"
LABELS = {
    CAPI: "aclnnFlashAttentionScoreV2 (C API)",
    TORCH_NPU: "torch_npu.npu_fusion_attention",
    SDPA: "torch scaled_dot_product_attention",
    UNFUSED: "torch MatMul->Softmax->MatMul",
}
_TIMES = re.compile(r"^TIMES (\S+)((?: [-+0-9.eE]+)*)\s*$")
_MEM = re.compile(r"^MEM (\S+) (\d+)\s*$")


class RouteError(Exception):
    """The implementation could not run the shape (an API error, a crash): not timed."""


class Program(Struct, frozen=True, kw_only=True):
    """fa_check compiled against one installed package (the baseline or a variant)."""

    binary: Path
    env: Mapping[str, str]
    command: str


def compile_program(vendor: Path, env: Mapping[str, str], workdir: Path) -> Program:
    compiled = capi.compile_check(vendor, env, workdir)
    if not compiled.ok or compiled.binary is None:
        raise RouteError(f"fa_check does not compile against {vendor}: {compiled.first_error}")
    return Program(binary=compiled.binary, env=capi.library_env(env), command=compiled.command)


def _run(program: Program, shape: BenchShape, data: Path, extra: str) -> Tuple[CaseRun, str]:
    manifest = data / f"{shape.name}.manifest"
    manifest.write_text(manifest_line(shape, data) + extra + "\n")
    runs, output, _code = capi.run_cases(program.binary, manifest, program.env, [shape.name])
    run = runs[shape.name]
    if not run.ok:
        raise RouteError(f"ACL/aclnn error: {run.error}")
    return run, output


def capi_check(
    program: Program,
    shape: BenchShape,
    tensors: Dict[str, Tensor],
    expected: Reference,
    data: Path,
) -> Tuple[CaseResult, Optional[float], Optional[int]]:
    """One call through aclnnFlashAttentionScoreV2, judged with softmax statistics, and the
    device memory it held beyond its inputs (aclrtGetMemInfo)."""
    run, output = _run(program, shape, data, " memory=1")
    peak = None
    for line in output.splitlines():
        m = _MEM.match(line.strip())
        if m and m.group(1) == shape.name:
            peak = int(m.group(2))
    result = judge_files(shape, tensors, data, run.kernel_ms, expected)
    return result, run.kernel_ms, peak


def capi_time(program: Program, shape: BenchShape, data: Path, reps: int) -> Timing:
    """`reps` calls, each between two events recorded on the stream."""
    _, output = _run(program, shape, data, f" warmup={WARMUP} reps={reps}")
    for line in output.splitlines():
        m = _TIMES.match(line.strip())
        if m and m.group(1) == shape.name:
            times = tuple(float(t) for t in m.group(2).split())
            if len(times) == reps:
                return Timing(times_ms=times)
    raise RouteError(f"fa_check printed no event timings for {shape.name}")


# ---- torch on the CPU (the sandbox) ----


def _bnsd(
    shape: BenchShape, tensors: Dict[str, Tensor]
) -> Tuple[Tensor, Tensor, Tensor, Optional[Tensor]]:
    q, k, v = (
        to_bnsd(tensors[name], shape.layout, shape.B, n, shape.S, shape.D)
        for name, n in (("q", shape.N1), ("k", shape.N2), ("v", shape.N2))
    )
    mask = tensors["mask"].bool() if shape.causal else None
    return q, k, v, mask


def sdpa_call(
    torch: ModuleType, shape: BenchShape, tensors: Dict[str, Tensor]
) -> Callable[[], Tensor]:
    q, k, v, _ = _bnsd(shape, tensors)
    scale = shape.scale
    gqa = shape.N1 != shape.N2
    attention = torch.nn.functional.scaled_dot_product_attention

    def call() -> Tensor:
        return attention(q, k, v, is_causal=shape.causal, scale=scale, enable_gqa=gqa)

    return call


def unfused_call(
    torch: ModuleType, shape: BenchShape, tensors: Dict[str, Tensor]
) -> Callable[[], Tensor]:
    """What a model does without a fused kernel: the S x S scores exist in memory."""
    q, k, v, mask = _bnsd(shape, tensors)
    scale = shape.scale
    group = shape.N1 // shape.N2

    def call() -> Tensor:
        kk = k.repeat_interleave(group, dim=1) if group > 1 else k
        vv = v.repeat_interleave(group, dim=1) if group > 1 else v
        scores = torch.matmul(q, kk.transpose(-1, -2)) * scale
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1), vv)

    return call


def torch_check(
    call: Callable[[], Tensor], shape: BenchShape, tensors: Dict[str, Tensor], expected: Reference
) -> Tuple[CaseResult, float, Optional[int]]:
    """One call, judged on attentionOut (torch returns no softmax statistics), and how far
    the process's resident set grew during it."""
    start = time.perf_counter()
    out, peak = rss_growth(call)
    ms = (time.perf_counter() - start) * 1000.0
    case = msgspec.structs.replace(shape, layout="BNSD")
    return judge(case, tensors, out, None, None, ms, expected), ms, peak
