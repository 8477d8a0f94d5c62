"""FlashAttention validation cases, their inputs, the float64 reference and the verdict.

Rule (Dao-AILab/flash-attention tests): the kernel's max abs error against a
float64 reference must be at most twice the max abs error of a same-dtype
PyTorch attention against that reference, plus the dtype's rounding noise
(2 * max|ref + 0.3 - 0.3 - ref| in the kernel dtype, as flash-attention's
Hopper tests use) and, for fp32, an absolute floor of 1e-5.  softmaxMax and
softmaxSum are checked against the reference with rtol 1e-3, atol 1e-4.
Masked scores are filled with -40000 after scaling, as ops-transformer's
golden model does.  A VarLen (TND) case is judged by the same rule against a
reference computed sequence by sequence.  attentionOut is also measured by opbase's own
standard (precision.py: MERE/MARE), shown beside the rule; the rule decides.  torch is
imported here only: doctor never pays for it.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from msgspec import Struct

from ..bounded import SOURCE_FILE, read_bytes
from ..errors import UsageError
from ..host import compat
from ..host.pystack import read_python_stack
from ..states import Verdict
from .precision import Judged, measure_tensors
from .precision import judge as judge_precision

if TYPE_CHECKING:
    import torch
    from torch import Tensor

# Optional, imported where its absence is handled: torch (reference_torch(), with
# torch_npu's auto-loading off while it imports).

# the operator these cases judge, as --ops and the recipes' `ops` name it (bench, profile and
# diagnose ask the recipe for the repo that ships it: Session.repo_for_op)
FA_OP = "flash_attention_score"
RULE = (
    "max|out - ref64| <= 2 * max|out_torch_same_dtype - ref64| + 2 * max|ref64 + 0.3 - 0.3 - ref64| "
    "(rounded in the kernel dtype) + 1e-5 for fp32; softmaxMax/Sum within 1e-3 relative + 1e-4"
)
MASKED = -40000.0
FP32_FLOOR = 1e-5
STAT_RTOL = 1e-3
STAT_ATOL = 1e-4
# Each case's generator is seeded with SEED + the sum of its name's characters: different inputs
# per case, the same ones on every run and route.
SEED = 0
AUTOLOAD = "TORCH_DEVICE_BACKEND_AUTOLOAD"


# preTokens / nextTokens that set no band limit (ops-transformer's FA examples pass it)
OPEN_TOKENS = 2147483647


class Case(Struct, frozen=True, kw_only=True):
    """One validation case.  TND is the VarLen form (aclnnFlashAttentionVarLenScore*):
    B sequences of `seq_q` query rows and `seq_kv` keys each, packed one after another on
    the T axis (S is the query's T); each attends only within its own sequence."""

    name: str
    dtype: str  # fp32 | fp16 | bf16
    layout: str  # BNSD | BSH | SBH | BSND | TND
    B: int
    N1: int
    N2: int
    S: int
    D: int
    causal: bool
    seq_q: Tuple[int, ...] = ()  # TND: each sequence's query rows
    seq_kv: Tuple[int, ...] = ()  # TND: each sequence's keys

    def __post_init__(self) -> None:
        # A programming error, not a user's: cases are written in code.
        if self.varlen and not (
            len(self.seq_q) == len(self.seq_kv) == self.B and sum(self.seq_q) == self.S
        ):
            raise ValueError(f"{self.name}: TND needs B sequences in seq_q/seq_kv and S = T")
        if self.varlen and self.causal:
            raise ValueError(f"{self.name}: a causal VarLen case has no mask form here")

    @property
    def scale(self) -> float:
        return 1.0 / math.sqrt(self.D)

    @property
    def next_tokens(self) -> int:
        """nextTokens with sparseMode 0, preTokens open: mask and band must agree there
        (aclnnFlashAttentionScoreV2.md 约束说明: "配置为0、4时，须保证attenMaskOptional与
        preTokens、nextTokens的范围一致"), so 0 for the causal (lower-triangle) mask."""
        return 0 if self.causal else OPEN_TOKENS

    @property
    def varlen(self) -> bool:
        return self.layout == "TND"

    @property
    def cu_seq_q(self) -> Tuple[int, ...]:
        """actual_seq_qlen as the VarLen APIs take it: each sequence's cumulative end
        ([2, 2, 0, 2, 2] -> [2, 4, 4, 6, 8], ops-transformer
        docs/aclnnFlashAttentionVarLenScore.md)."""
        return tuple(itertools.accumulate(self.seq_q))

    @property
    def cu_seq_kv(self) -> Tuple[int, ...]:
        return tuple(itertools.accumulate(self.seq_kv))

    def shape(self, tensor: str) -> Tuple[int, ...]:
        """The shape of q, k, v or out (the same layout as q)."""
        heads = self.N1 if tensor in ("q", "out") else self.N2
        if self.varlen:
            return (sum(self.seq_q if tensor in ("q", "out") else self.seq_kv), heads, self.D)
        return layout_shape(self.layout, self.B, heads, self.S, self.D)

    @property
    def stat_shape(self) -> Tuple[int, ...]:
        """softmaxMax / softmaxSum as the C API route writes them: [B, N1, S, 8], and TND
        [T, N1, 8] (softmaxOutLayout "same_as_input")."""
        if self.varlen:
            return (self.S, self.N1, 8)
        return (self.B, self.N1, self.S, 8)


# S = 1 is a decode-sized query; 513 is one past 512, a length no tile divides (the FA tiling pads
# S, reference cann-build-systems.md §3.5).
# Every dtype in BNSD and BSH; S = 1, 128, 513, 2048; D = 64, 128; GQA (N1 = 2 N2); masked and not.
# fmt: off
CASES: Tuple[Case, ...] = (
    Case(name="fp16_bnsd_s1_d64_gqa", dtype="fp16", layout="BNSD", B=1, N1=4, N2=2, S=1, D=64, causal=False),
    Case(name="fp16_bsh_s128_d128_causal", dtype="fp16", layout="BSH", B=2, N1=2, N2=2, S=128, D=128, causal=True),
    Case(name="fp16_bnsd_s513_d64_causal", dtype="fp16", layout="BNSD", B=1, N1=4, N2=4, S=513, D=64, causal=True),
    Case(name="fp16_bsh_s2048_d128", dtype="fp16", layout="BSH", B=1, N1=2, N2=2, S=2048, D=128, causal=False),
    Case(name="bf16_bnsd_s128_d64_gqa_causal", dtype="bf16", layout="BNSD", B=1, N1=4, N2=2, S=128, D=64, causal=True),
    Case(name="bf16_bsh_s513_d128_gqa", dtype="bf16", layout="BSH", B=1, N1=2, N2=1, S=513, D=128, causal=False),
    Case(name="bf16_bsh_s2048_d64_causal", dtype="bf16", layout="BSH", B=1, N1=2, N2=2, S=2048, D=64, causal=True),
    Case(name="bf16_bnsd_s1_d128_causal", dtype="bf16", layout="BNSD", B=1, N1=2, N2=2, S=1, D=128, causal=True),
    Case(name="fp32_bnsd_s2048_d128_gqa", dtype="fp32", layout="BNSD", B=1, N1=2, N2=1, S=2048, D=128, causal=False),
    Case(name="fp32_bsh_s1_d128_causal", dtype="fp32", layout="BSH", B=1, N1=2, N2=2, S=1, D=128, causal=True),
    Case(name="fp32_bnsd_s513_d64_gqa_causal", dtype="fp32", layout="BNSD", B=1, N1=4, N2=2, S=513, D=64, causal=True),
    Case(name="fp32_bsh_s128_d64_gqa", dtype="fp32", layout="BSH", B=1, N1=2, N2=1, S=128, D=64, causal=False),
    # VarLen: two sequences of different query and key lengths (T1 = 513, T2 = 377), GQA
    Case(name="fp16_tnd_varlen_2seq_d64_gqa", dtype="fp16", layout="TND", B=2, N1=4, N2=2, S=513, D=64,
         causal=False, seq_q=(129, 384), seq_kv=(300, 77)),
)
# fmt: on


class CaseResult(Judged, kw_only=True):
    case: Case
    mean_abs_err: Optional[float] = None
    softmax_max_err: Optional[float] = None
    softmax_sum_err: Optional[float] = None

    def to_json(self) -> Dict[str, object]:
        c = self.case
        varlen = {"seq_q": list(c.seq_q), "seq_kv": list(c.seq_kv)} if c.varlen else {}
        shape = {k: getattr(c, k) for k in ("name", "dtype", "layout", "B", "N1", "N2", "S", "D")}
        return {
            **shape,
            **varlen,
            "causal_mask": c.causal,
            "mean_abs_err": self.mean_abs_err,
            "softmax_max_err": self.softmax_max_err,
            "softmax_sum_err": self.softmax_sum_err,
            **super().to_json(),
        }


def reference_torch() -> ModuleType:
    """torch for the CPU reference, without the device backends it would auto-load.

    Once torch_npu is installed, a plain `import torch` loads it too, and that fails
    (RuntimeError) wherever the CANN libraries are not on the loader path; the reference
    never needs it.  The torch_npu route runs in its own process (torchnpu.py).  Once torch
    is imported (validation's thread ahead of it, ahead.py) it is taken as it is: the
    environment is the process's, not the thread's, to change."""
    loaded = sys.modules.get("torch")
    if loaded is not None and not getattr(loaded.__spec__, "_initializing", False):
        return loaded
    saved = os.environ.get(AUTOLOAD)
    os.environ[AUTOLOAD] = "0"  # read once, while `import torch` runs
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns when numpy is absent; we do not need it
            import torch
    finally:
        if saved is None:
            del os.environ[AUTOLOAD]
        else:
            os.environ[AUTOLOAD] = saved
    return torch


def torch_dtype(torch: ModuleType, name: str) -> torch.dtype:
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


def layout_shape(layout: str, B: int, N: int, S: int, D: int) -> Tuple[int, ...]:
    return {
        "BNSD": (B, N, S, D),
        "BSND": (B, S, N, D),
        "BSH": (B, S, N * D),
        "SBH": (S, B, N * D),
    }[layout]


def to_bnsd(x: Tensor, layout: str, B: int, N: int, S: int, D: int) -> Tensor:
    if layout == "BNSD":
        return x
    if layout == "TND":  # all sequences as one batch of T rows: (1, N, T, D)
        return x.permute(1, 0, 2).unsqueeze(0)
    if layout == "BSND":
        return x.permute(0, 2, 1, 3)
    if layout == "BSH":
        return x.reshape(B, S, N, D).permute(0, 2, 1, 3)
    return x.reshape(S, B, N, D).permute(1, 2, 0, 3)


def make_inputs(case: Case) -> Dict[str, Tensor]:
    """Seeded random q/k/v in the case's layout and dtype, and the causal mask."""
    torch = reference_torch()
    gen = torch.Generator().manual_seed(SEED + sum(map(ord, case.name)))
    dt = torch_dtype(torch, case.dtype)
    tensors = {
        name: torch.randn(case.shape(name), generator=gen).to(dt)
        # Drawn in this order from one generator: changing the order changes every input.
        for name in ("q", "k", "v")  # in this order
    }
    if case.causal:  # never a VarLen case (Case refuses one)
        # 1 above the diagonal = masked, as _attention below applies it; a uint8 [S, S] matrix, the
        # attenMask form FA's example passes (reference cann-build-systems.md §3.4).
        tensors["mask"] = torch.triu(torch.ones(case.S, case.S, dtype=torch.uint8), diagonal=1)
    return tensors


def _attention(
    q: Tensor, k: Tensor, v: Tensor, scale: float, mask: Optional[Tensor], group: int
) -> Tuple[Tensor, Tensor]:
    # GQA: key/value head j serves query heads j*group ... (j+1)*group - 1.
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = _matmul(q * scale, k.transpose(-1, -2))
    if mask is not None:
        scores = scores.masked_fill(mask.bool(), MASKED)
    probs = scores.softmax(dim=-1)
    return _matmul(probs, v), scores


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    """a @ b as torch computes it in a's dtype on the CPU: fp16 and bf16 products summed in
    float32, the result rounded to the dtype.  Done in float32 outright, it is the same up to
    the order of the sums (the same-dtype errors of every case agree to 4 digits) and ten times
    faster than torch's half-precision CPU gemm on a 2048-row case."""
    if a.dtype.is_floating_point and a.dtype.itemsize == 2:  # fp16, bf16
        return (a.float() @ b.float()).to(a.dtype)
    return a @ b


class Reference(Struct, frozen=True, kw_only=True):
    """What a case's outputs are judged against; the same for every route."""

    out: Tensor  # float64 attentionOut, (b, n, s, d); TND (1, n, t, d)
    softmax_max: Tensor  # float64 (b, n, s)
    softmax_sum: Tensor
    same_dtype_err: float  # max|same-dtype torch attention - out|
    noise: float  # 2 * ... rounding noise of the kernel dtype, see RULE


def _segments(case: Case, tensors: Dict[str, Tensor]) -> List[Tuple[Tensor, Tensor, Tensor]]:
    """(q, k, v) in (b, n, s, d) per attention problem: the case's batch, or each VarLen
    sequence's own rows of the T axis as a batch of one."""
    if not case.varlen:
        q, k, v = (
            to_bnsd(tensors[name], case.layout, case.B, n, case.S, case.D)
            for name, n in (("q", case.N1), ("k", case.N2), ("v", case.N2))
        )
        return [(q, k, v)]
    bounds = zip((0, *case.cu_seq_q), case.cu_seq_q, (0, *case.cu_seq_kv), case.cu_seq_kv)
    return [
        (
            to_bnsd(tensors["q"][q0:q1], "TND", 1, case.N1, q1 - q0, case.D),
            to_bnsd(tensors["k"][k0:k1], "TND", 1, case.N2, k1 - k0, case.D),
            to_bnsd(tensors["v"][k0:k1], "TND", 1, case.N2, k1 - k0, case.D),
        )
        for q0, q1, k0, k1 in bounds
    ]


def _float64(
    case: Case, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor]
) -> Tuple[Tensor, Tensor, Tensor]:
    """attentionOut, softmaxMax and softmaxSum of one attention problem (`q`'s rows) in
    float64: what reference() keeps and agrees() works out again for a few rows."""
    out, scores = _attention(
        q.double(), k.double(), v.double(), case.scale, mask, case.N1 // case.N2
    )
    want_max = scores.max(dim=-1).values
    # softmaxSum is the row sum of exp(score - row max): the stabilised softmax denominator.
    return out, want_max, (scores - want_max.unsqueeze(-1)).exp().sum(dim=-1)


def reference(case: Case, tensors: Dict[str, Tensor]) -> Reference:
    """The float64 reference and the same-dtype torch error for one case (the costly part);
    a VarLen case's sequences one by one, joined on the sequence axis."""
    torch = reference_torch()
    dt = torch_dtype(torch, case.dtype)
    group = case.N1 // case.N2
    mask = tensors.get("mask")
    refs: List[Tensor] = []
    sames: List[Tensor] = []
    maxes: List[Tensor] = []
    sums: List[Tensor] = []
    for q, k, v in _segments(case, tensors):
        ref, want_max, want_sum = _float64(case, q, k, v, mask)
        same, _ = _attention(q, k, v, case.scale, mask, group)
        refs.append(ref)
        sames.append(same)
        maxes.append(want_max)
        sums.append(want_sum)
    # on the sequence axis: a VarLen case's sequences become the T rows of one batch
    ref, same = torch.cat(refs, dim=2), torch.cat(sames, dim=2)
    want_max, want_sum = torch.cat(maxes, dim=2), torch.cat(sums, dim=2)
    return Reference(
        out=ref,
        softmax_max=want_max,
        softmax_sum=want_sum,
        same_dtype_err=(same.double() - ref).abs().max().item(),
        # `+ 0.3 - 0.3` in the kernel dtype leaves only its rounding: the noise floor of the dtype
        # at these magnitudes (flash-attention's Hopper tests).
        noise=((ref.to(dt) + 0.3 - 0.3).double() - ref).abs().max().item(),
    )


def reference_once(memo: Dict[str, object], case: Case, tensors: Dict[str, Tensor]) -> Reference:
    """One case's reference, computed once per run (ValidationInputs.memo): every route judges
    the same seeded inputs against it.  Kept per machine too (refcache.py); the memo's
    `fa-reference-kept:` entries say which came from there."""
    from . import refcache

    key = f"fa-reference:{case.name}"
    found = memo.get(key)
    if not isinstance(found, Reference):
        torch = reference_torch()
        fields, reused = refcache.kept(
            torch,
            _kept_key(case, torch.__version__),
            lambda: _as_tensors(torch, reference(case, tensors)),
            lambda kept: agrees(case, tensors, _as_reference(kept)),
        )
        found = memo[key] = _as_reference(fields)
        if reused:
            memo[f"fa-reference-kept:{case.name}"] = True
    return found


def _kept_key(case: Case, torch_version: str) -> Optional[str]:
    """Everything that makes a case's reference: the case, this module's code, torch (None
    where the code cannot be read, as from a zip: nothing is kept then)."""
    found = hashlib.sha256(f"{case!r}\0{torch_version}\0".encode())
    try:
        found.update(read_bytes(Path(__file__), SOURCE_FILE))
    except (OSError, UsageError):
        return None
    return found.hexdigest()[:32]


def _as_tensors(torch: ModuleType, ref: Reference) -> Dict[str, Tensor]:
    fields = {"out": ref.out, "softmax_max": ref.softmax_max, "softmax_sum": ref.softmax_sum}
    errors = {"same_dtype_err": ref.same_dtype_err, "noise": ref.noise}
    return {**fields, **{k: torch.tensor(v, dtype=torch.float64) for k, v in errors.items()}}


def _as_reference(fields: Dict[str, Tensor]) -> Reference:
    return Reference(
        out=fields["out"],
        softmax_max=fields["softmax_max"],
        softmax_sum=fields["softmax_sum"],
        same_dtype_err=float(fields["same_dtype_err"]),
        noise=float(fields["noise"]),
    )


def agrees(case: Case, tensors: Dict[str, Tensor], ref: Reference) -> bool:
    """The first and last query rows of each attention problem, worked out again in float64
    from `tensors`, match `ref` (out, softmaxMax, softmaxSum): a kept reference is for these
    inputs.  Two rows of each problem: milliseconds, where the whole is a second."""
    torch = reference_torch()
    mask = tensors.get("mask")
    problems = _segments(case, tensors)
    rows_in_all = sum(q.shape[2] for q, _, _ in problems)
    if any(t.shape[2] != rows_in_all for t in (ref.out, ref.softmax_max, ref.softmax_sum)):
        return False
    start = 0
    for q, k, v in problems:
        rows = sorted({0, q.shape[2] - 1})
        part = None if mask is None else mask[rows, :]
        out, want_max, want_sum = _float64(case, q[:, :, rows], k, v, part)
        at = [start + r for r in rows]
        for got, kept in (
            (out, ref.out[:, :, at]),
            (want_max, ref.softmax_max[:, :, at]),
            (want_sum, ref.softmax_sum[:, :, at]),
        ):
            if got.shape != kept.shape or not torch.allclose(got, kept, rtol=1e-9, atol=1e-12):
                return False
        start += q.shape[2]
    return True


def inputs_once(memo: Dict[str, object], case: Case) -> Dict[str, Tensor]:
    """One case's seeded inputs, made once per run (the same tensors on every run anyway)."""
    found = memo.get(f"fa-inputs:{case.name}")
    if not isinstance(found, dict):
        found = memo[f"fa-inputs:{case.name}"] = make_inputs(case)
    return found


def judge(
    case: Case,
    tensors: Dict[str, Tensor],
    out: Tensor,
    smax: Optional[Tensor],
    ssum: Optional[Tensor],
    kernel_ms: Optional[float],
    expected: Optional[Reference] = None,
) -> CaseResult:
    """Verdict for one case from the kernel's outputs (any device; moved to the CPU here).
    Without softmax statistics (torch's attention returns none) only attentionOut is judged."""
    torch = reference_torch()
    expected = expected or reference(case, tensors)
    out = out.cpu()
    ref = expected.out
    got = to_bnsd(out, case.layout, case.B, case.N1, case.S, case.D).double()  # TND: (1, n, t, d)
    result = CaseResult(case=case, status=Verdict.PASS, kernel_ms=kernel_ms)
    if not judge_output(result, got, ref, expected.same_dtype_err, expected.noise, "attentionOut"):
        return result
    result.mean_abs_err = (got - ref).abs().mean().item()
    stats = [] if smax is None or ssum is None else [("softmaxMax", smax), ("softmaxSum", ssum)]
    for label, stat in stats:
        want = expected.softmax_max if label == "softmaxMax" else expected.softmax_sum
        lanes = stat.cpu().double()
        if not bool(torch.isfinite(lanes).all()):
            result.status = Verdict.FAIL
            result.message = result.message or f"{label} has NaN/Inf values"
            continue
        # The 8 lanes must agree; a kernel that fills only some of them is broken.
        if bool((lanes != lanes[..., :1]).any()):
            result.status = Verdict.FAIL
            result.message = result.message or f"{label}'s 8 lanes are not all equal"
        lane_err = (lanes[..., 0] - want).abs()
        limit = STAT_RTOL * want.abs() + STAT_ATOL
        worst = lane_err.max().item()
        if label == "softmaxMax":
            result.softmax_max_err = worst
        else:
            result.softmax_sum_err = worst
        if bool((lane_err > limit).any()) and not result.message:
            first_bad: List[int] = [int(i) for i in (lane_err > limit).nonzero()[0]]
            at = tuple(first_bad)
            result.status = Verdict.FAIL
            result.message = (
                f"{label} differs from the reference by up to {worst:.3g} (first at (b, n, s) "
                f"{first_bad}: got {float(lanes[at][0]):.6g}, want {float(want[at]):.6g})"
            )
    if result.status == Verdict.PASS:
        result.message = f"max abs error {result.max_abs_err:.3g} <= bound {result.bound:.3g}"
    return result


def judge_output(
    result: Judged, got: Tensor, ref: Tensor, same_err: float, noise: float, what: str
) -> bool:
    """The rule on one output (`got` in float64, the case's dtype `result.case.dtype`)
    against `ref`, written into `result` (a failure's message; the caller words a pass)
    with opbase's measure beside it; False when the output has NaN/Inf values (no bound
    means anything there)."""
    torch = reference_torch()
    dtype: str = result.case.dtype
    result.precision = judge_precision(dtype, measure_tensors(got, ref))
    bad = ~torch.isfinite(got) & torch.isfinite(ref)
    if bool(bad.any()):
        idx = [tuple(int(i) for i in row) for row in bad.nonzero()[:5]]
        result.status = Verdict.FAIL
        result.message = f"{what} has {int(bad.sum())} NaN/Inf values, first at {idx[0]}"
        result.mismatches = [
            {"index": list(i), "got": str(float(got[i])), "want": float(ref[i])} for i in idx
        ]
        return False
    err = (got - ref).abs()
    bound = 2.0 * same_err + 2.0 * noise + (FP32_FLOOR if dtype == "fp32" else 0.0)
    result.max_abs_err = float(err.max()) if err.numel() else 0.0
    result.ref_same_dtype_max_err = same_err
    result.bound = bound
    if result.max_abs_err > bound:
        result.status = Verdict.FAIL
        result.message = (
            f"{what} max abs error {result.max_abs_err:.3g} exceeds the bound {bound:.3g} "
            f"(same-dtype torch error {same_err:.3g})"
        )
        result.mismatches = [
            {
                "index": [int(i) for i in row],
                "got": float(got[tuple(row)]),
                "want": float(ref[tuple(row)]),
            }
            for row in (err > bound).nonzero()[:5]
        ]
    return True


def why_no_torch() -> Optional[str]:
    """None when torch imports; otherwise why not."""
    try:
        reference_torch()
    except ImportError as exc:
        return (
            f"torch is not installed ({exc.name}); the float64 reference needs it (the CPU build "
            f"is enough): {compat.cpu_torch_command(_torch_wanted())}"
        )
    except (RuntimeError, OSError) as exc:  # a broken install: say so instead of a traceback
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return (
            f"torch cannot be imported ({first}); the float64 reference needs it: reinstall it "
            f"(the CPU build is enough): {compat.cpu_torch_command(_torch_wanted())} "
            "--force-reinstall"
        )
    return None


def _torch_wanted() -> str:
    """The torch a hint names: the installed torch's (a broken install), else the one the
    installed torch_npu needs, else the tested one (read from package metadata)."""
    stack = read_python_stack()
    if stack.torch:
        return compat.torch_release(stack.torch)
    return compat.torch_to_install(stack.torch_npu)


def select(names: Sequence[str]) -> Tuple[Case, ...]:
    """The named cases (all when none are named); an unknown name is an error, not an
    empty selection that would PASS with nothing run."""
    if not names:
        return CASES
    known = {c.name for c in CASES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(
            f"--cases {unknown[0]!r} is not a validation case.",
            f"Cases: {', '.join(c.name for c in CASES)}.",
        )
    return tuple(c for c in CASES if c.name in names)
