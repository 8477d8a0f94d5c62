"""The cases of the sibling repositories' numeric checks (issue 27), their inputs and
their references: ops-math's aclnnExpSegsum, ops-nn's aclnnSwiGlu, ops-cv's
aclnnUpsampleBilinear2d.

Each case's output is judged against a float64 reference by FlashAttention's rule
(cases.RULE: twice the error of the same computation done by torch in the case's dtype,
plus twice the dtype's rounding noise, plus 1e-5 for fp32), so the same-dtype torch
computation is made here too.  The formulas are the operators' own docs': segsum
math/segsum/docs/aclnnExpSegsum.md steps 1-8, SwiGlu activation/swi_glu/docs/aclnnSwiGlu.md
:16-20, UpsampleBilinear2d image/upsample_bilinear2d/docs/aclnnUpsampleBilinear2d.md
:28-80 with the op_api's GetBilinearScales (an unchanged size steps by 1,
aclnn_upsample_bilinear_2d.cpp:208-226).  torch is imported through
cases.reference_torch(), never at module import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Dict, Tuple

from msgspec import Struct

from .cases import SEED, reference_torch, torch_dtype

if TYPE_CHECKING:
    from torch import Tensor


class OpCase(Struct, frozen=True, kw_only=True):
    """One call of a sibling operator: the input's dtype and shape, and the operator's
    parameters (those of other operators keep their defaults)."""

    name: str
    dtype: str  # fp32 | fp16 | bf16
    shape: Tuple[int, ...]
    # the inputs' distribution: "decay" = -0.2 * U(0, 1), Mamba-2's log decays (segsum's use);
    # "normal" = N(0, 1) * `spread`
    dist: str = "normal"
    spread: float = 1.0
    dim: int = -1  # SwiGlu: the axis split in halves
    size: Tuple[int, ...] = ()  # UpsampleBilinear2d: outputSize (H, W)
    align_corners: bool = False
    scales: Tuple[float, float] = (0.0, 0.0)  # scalesH, scalesW


# Several shapes per operator, fp32, fp16 and bf16 each (the dtypes of the A2/A3 kernels:
# segsum_def.cpp:21,26; swi_glu_def.cpp:25,30; upsample_bilinear2d_def.cpp:26,36).
# fmt: off
SEGSUM_CASES: Tuple[OpCase, ...] = (
    OpCase(name="segsum_fp32_3d_n16", dtype="fp32", shape=(2, 3, 16), spread=0.3),
    OpCase(name="segsum_fp32_4d_n64_decay", dtype="fp32", shape=(1, 2, 4, 64), dist="decay"),
    OpCase(name="segsum_fp16_4d_n64_decay", dtype="fp16", shape=(2, 2, 2, 64), dist="decay"),
    OpCase(name="segsum_fp16_3d_n33", dtype="fp16", shape=(3, 2, 33), spread=0.3),
    OpCase(name="segsum_bf16_4d_n128_decay", dtype="bf16", shape=(1, 1, 2, 128), dist="decay"),
    OpCase(name="segsum_fp32_4d_n1", dtype="fp32", shape=(2, 1, 3, 1)),
)
SWIGLU_CASES: Tuple[OpCase, ...] = (
    OpCase(name="swiglu_fp32_2d_last", dtype="fp32", shape=(4, 256)),
    OpCase(name="swiglu_fp32_3d_dim0", dtype="fp32", shape=(6, 5, 7), dim=0),
    OpCase(name="swiglu_fp16_3d_last", dtype="fp16", shape=(2, 3, 128), spread=2.0),
    OpCase(name="swiglu_fp16_4d_dim1", dtype="fp16", shape=(2, 10, 3, 9), dim=1),
    OpCase(name="swiglu_bf16_2d_last", dtype="bf16", shape=(8, 512), spread=2.0),
    OpCase(name="swiglu_bf16_1d", dtype="bf16", shape=(66,)),
)
UPSAMPLE_CASES: Tuple[OpCase, ...] = (
    OpCase(name="upsample_fp32_align_4x2_to_8x4", dtype="fp32", shape=(1, 1, 4, 2), size=(8, 4),
           align_corners=True, scales=(2.0, 2.0)),
    OpCase(name="upsample_fp32_halfpixel_scales", dtype="fp32", shape=(2, 3, 5, 7), size=(10, 21),
           scales=(2.0, 3.0)),
    OpCase(name="upsample_fp32_down_size_only", dtype="fp32", shape=(1, 2, 17, 13), size=(6, 5)),
    OpCase(name="upsample_fp16_halfpixel", dtype="fp16", shape=(1, 4, 9, 8), size=(18, 16),
           scales=(2.0, 2.0)),
    OpCase(name="upsample_fp16_align_odd", dtype="fp16", shape=(2, 2, 7, 5), size=(15, 11),
           align_corners=True),
    OpCase(name="upsample_bf16_halfpixel_1x1", dtype="bf16", shape=(1, 3, 6, 6), size=(1, 1)),
)
# fmt: on


def out_shape(op: str, case: OpCase) -> Tuple[int, ...]:
    """The output's shape, as each operator's docs give it."""
    if op == "segsum":  # one dim more: the last one again
        return (*case.shape, case.shape[-1])
    if op == "swi_glu":  # halved along dim
        axis = case.dim % len(case.shape)
        return tuple(d // 2 if i == axis else d for i, d in enumerate(case.shape))
    return (case.shape[0], case.shape[1], *case.size)  # NCHW, (H, W) = outputSize


def make_input(case: OpCase) -> Tensor:
    """The case's input in its dtype, seeded by its name (the same on every run)."""
    torch = reference_torch()
    gen = torch.Generator().manual_seed(SEED + sum(map(ord, case.name)))
    if case.dist == "decay":
        x = -0.2 * torch.rand(case.shape, generator=gen, dtype=torch.float64)
    else:
        x = case.spread * torch.randn(case.shape, generator=gen, dtype=torch.float64)
    return x.to(torch_dtype(torch, case.dtype))


def manifest_line(op: str, case: OpCase, directory: Path) -> str:
    """What the check program reads for one case (kernels/op_checks/<op>_check.cpp)."""
    base = directory / case.name
    words = [
        f"name={case.name}",
        f"dtype={case.dtype}",
        f"shape={','.join(map(str, case.shape))}",
        f"in={base}.in",
        f"out={base}.out",
    ]
    if op == "swi_glu":
        words.append(f"dim={case.dim}")
    if op == "upsample_bilinear2d":
        words += [
            f"size={','.join(map(str, case.size))}",
            f"align={int(case.align_corners)}",
            f"scales={case.scales[0]!r},{case.scales[1]!r}",
        ]
    return " ".join(words)


# --- the computations, in any dtype: float64 for the reference, the case's for torch's --------


def segsum(x: Tensor) -> Tensor:
    """docs/aclnnExpSegsum.md steps 1-8, as written: broadcast x to (..., N, N) along the
    last axis, zero the upper triangle with its diagonal, cumsum down the rows, -inf above
    the diagonal, exp (in x's dtype throughout)."""
    torch = reference_torch()
    n = x.shape[-1]
    grid = x.unsqueeze(-1).expand(*x.shape, n)
    keep_below = torch.tril(torch.ones(n, n, dtype=torch.bool), diagonal=-1)
    summed = grid.masked_fill(~keep_below, 0).cumsum(dim=-2)
    upper = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return summed.masked_fill(upper, float("-inf")).exp()


def swi_glu(x: Tensor, dim: int) -> Tensor:
    """Swish(A) * B, A and B the halves of x along dim (silu(A) = A * sigmoid(A))."""
    torch = reference_torch()
    a, b = x.chunk(2, dim=dim)
    return torch.nn.functional.silu(a) * b


def axis_scale(size_in: int, size_out: int, scale: float, align_corners: bool) -> float:
    """GetBilinearScales (aclnn_upsample_bilinear_2d.cpp:208-226)."""
    if size_out == size_in:
        return 1.0
    if align_corners:
        return (size_in - 1) / (size_out - 1) if size_out > 1 else 0.0
    return 1.0 / scale if scale > 0 else size_in / size_out


def _taps(size_in: int, size_out: int, scale: float, align: bool) -> Tuple[Tensor, ...]:
    """For each output row (or column): the two source indices and their weights."""
    torch = reference_torch()
    step = axis_scale(size_in, size_out, scale, align)
    o = torch.arange(size_out, dtype=torch.float64)
    src = o * step if align else ((o + 0.5) * step - 0.5).clamp(min=0.0)
    i0 = src.floor().long().clamp(max=size_in - 1)
    i1 = (i0 + 1).clamp(max=size_in - 1)
    l1 = src - i0.double()
    return i0, i1, 1.0 - l1, l1


def upsample_bilinear2d(x: Tensor, case: OpCase) -> Tensor:
    """docs/aclnnUpsampleBilinear2d.md :45-80 in float64: each output point from its four
    source neighbours (x0 = int(x'), x1 = x0 + 1 kept inside the image), weighted by
    distance."""
    h, w = x.shape[2], x.shape[3]
    oh, ow = case.size
    r0, r1, a0, a1 = _taps(h, oh, case.scales[0], case.align_corners)
    c0, c1, b0, b1 = _taps(w, ow, case.scales[1], case.align_corners)
    x = x.double()
    top = x[:, :, r0, :] * a0[:, None] + x[:, :, r1, :] * a1[:, None]
    return top[:, :, :, c0] * b0 + top[:, :, :, c1] * b1


def upsample_same_dtype(x: Tensor, case: OpCase) -> Tensor:
    """torch's own bilinear upsample in x's dtype (aten::upsample_bilinear2d takes the same
    outputSize, alignCorners, scalesH and scalesW as the aclnn API)."""
    torch = reference_torch()
    h, w = case.scales
    return torch.ops.aten.upsample_bilinear2d(
        x, list(case.size), case.align_corners, h if h > 0 else None, w if w > 0 else None
    )


def reference(op: str, case: OpCase, x: Tensor) -> Tuple[Tensor, Tensor]:
    """(float64 reference, the same computation by torch in the case's dtype)."""
    if op == "segsum":
        return segsum(x.double()), segsum(x)
    if op == "swi_glu":
        return swi_glu(x.double(), case.dim), swi_glu(x, case.dim)
    return upsample_bilinear2d(x, case), upsample_same_dtype(x, case)


CASES: Dict[str, Tuple[OpCase, ...]] = {
    "segsum": SEGSUM_CASES,
    "swi_glu": SWIGLU_CASES,
    "upsample_bilinear2d": UPSAMPLE_CASES,
}
