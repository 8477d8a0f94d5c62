"""The user's dtype and shapes against what the operator accepts, and the cause of each
unfused chain in a profile."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from msgspec.structs import replace

from ..host.check import FAIL, PASS, SKIP, WARN, Check
from ..profile.affinity import tensors
from ..profile.hostops import MATH_SDPA
from ..profile.shape import AttentionShape
from ..profile.summary import summarise
from .facts import LAYOUTS, Limit, OperatorFacts
from .profile_rows import fa_shape_checks, host_fallback_checks

if TYPE_CHECKING:
    from ..profile.analysis import Analysis
    from ..profile.summary import ProfileSummary


SEPARATE_OPS = "no operator limit applies"
CALL_FUSED = (
    "Call torch_npu.npu_fusion_attention (or the model's flash-attention option) instead of "
    "matmul/softmax/matmul."
)


# the row each attention field is judged in
FIELD_ROWS = {
    "dtype": "dtype",
    "D": "shape.head_dim",
    "N1": "shape.heads",
    "S": "shape.seq_len",
    "B": "shape.batch",
}


def profile_shape(
    shape: AttentionShape, summary: Optional[ProfileSummary]
) -> Tuple[AttentionShape, Dict[str, str]]:
    """The user's attention with what no flag gave read from the profile: the heaviest
    unfused chain group's dtype and its Q·Kᵀ query (B, N, S, D), else the heaviest
    FlashAttention shape class's; and per field filled, where it was read."""
    if summary is None:
        return shape, {}
    a = summary.analysis
    found: Dict[str, Optional[object]] = {}
    where = ""
    group = next((g for g in a.chains if g.dtype or g.dims()), None)
    if group is not None:
        dims = group.dims()
        query = tensors(group.input_shapes)[0] if group.input_shapes else []
        found = {"dtype": group.dtype, "S": dims[0] if dims else None}
        found["D"] = dims[2] if dims else None
        if len(query) == 4:  # (B, N, S, D)
            found.update(B=query[0], N1=query[1])
        where = f"the profile's unfused chains, {group.count} with inputs {group.input_shapes}"
    else:
        fa = next((c for c in a.fused_shapes if c.input_shapes), None)
        if fa is not None:
            fa_dims = fa.dims()
            found = {"dtype": fa.dtype}
            if fa_dims is not None:
                found.update(D=fa_dims.D, S=fa_dims.S, N1=fa_dims.N)
            where = f"the profile's {fa.op_type} calls, {fa.count} with inputs {fa.input_shapes}"
    filled = {k: v for k, v in found.items() if v is not None and getattr(shape, k) is None}
    if not filled:
        return shape, {}
    return replace(shape, **filled), {k: f"read from {where}" for k in filled}


def attention_checks(
    shape: AttentionShape, summary: Optional[ProfileSummary], facts: OperatorFacts, soc: str
) -> List[Check]:
    """The dtype and shape rows, of the flags given and else of the profile's shapes (a
    row whose value the profile gave says where it was read)."""
    shape, sources = profile_shape(shape, summary)
    rows = {FIELD_ROWS[k]: v for k, v in sources.items()}
    return [
        replace(c, detail=f"{c.detail} ({rows[c.id]})") if c.id in rows else c
        for c in (dtype_check(shape.dtype, facts, soc), *shape_checks(shape, facts))
    ]


def dtype_check(dtype: Optional[str], facts: OperatorFacts, soc: str) -> Check:
    row = partial(Check, id="dtype")
    if dtype is None:
        return row(
            status=SKIP,
            detail=f"not checked: the operator takes {', '.join(facts.dtypes)} on {soc}",
            hint="Pass --dtype with your attention's input dtype (fp16, bf16, fp32).",
        )
    # facts.dtypes come from the installed package's op_impl config when there is one
    # (`aic-<soc>-ops-info.json`, the query input's dtype list), so this is what the package on
    # this host accepts, not what the docs promise.
    if dtype in facts.dtypes:
        return row(
            status=PASS,
            detail=f"{dtype} is supported on {soc} (from {facts.dtype_source})",
        )
    # FlashAttentionScore takes FLOAT16, BFLOAT16 and FLOAT32 on A2/A3 (reference
    # cann-build-systems.md §3.5): a cast to half precision is the usual way in.
    casts = [d for d in ("bf16", "fp16") if d in facts.dtypes]
    return row(
        status=FAIL,
        detail=f"{dtype} is not among the dtypes FlashAttentionScore takes on {soc}: "
        f"{', '.join(facts.dtypes)} (from {facts.dtype_source})",
        hint=f"Cast query/key/value to {' or '.join(casts) or facts.dtypes[0]} before attention "
        "(e.g. torch autocast), or install a package whose operator supports it.",
    )


def shape_checks(shape: AttentionShape, facts: OperatorFacts) -> List[Check]:
    checks: List[Check] = []
    lim = facts.limits
    # BSH, SBH, BSND, BNSD; TND belongs to aclnnFlashAttentionVarLenScore.
    layout = partial(Check, id="shape.layout")
    if shape.layout in LAYOUTS:
        checks.append(layout(status=PASS, detail=f"{shape.layout} is one of {', '.join(LAYOUTS)}"))
    elif shape.layout is not None:
        checks.append(
            layout(
                status=FAIL,
                detail=f"{shape.layout} is not a FlashAttentionScore layout (TND is for the VarLen APIs)",
                hint=f"Use one of {', '.join(LAYOUTS)}, or aclnnFlashAttentionVarLenScore for TND.",
            )
        )
    if shape.D is not None:
        checks.append(_head_dim(shape.D, lim["D"], facts))
    if shape.N1 is not None:
        checks.append(_heads(shape.N1, shape.N2, lim["N"]))
    # The docs' ranges: B 1-2M, S 1-1M (each from the doc line that says so when a checkout has the
    # docs, else the built-in v8.5.0 copy).
    for value, axis, cid, name, flag in (
        (shape.S, "S", "shape.seq_len", "sequence length", "--seq-len"),
        (shape.B, "B", "shape.batch", "batch", "--batch"),
    ):
        if value is not None:
            checks.append(_in_range(cid, value, lim[axis], name, flag))
    if not checks:
        checks.append(
            Check(
                id="shape",
                status=SKIP,
                detail=f"not checked: the operator takes D {_span(lim['D'])}, N {_span(lim['N'])}, "
                f"S {_span(lim['S'])} (from {lim['D'].source})",
                hint="Pass --head-dim, --heads, --seq-len (and --layout, --kv-heads, --batch) of your attention.",
            )
        )
    return checks


def _span(limit: Limit) -> str:
    return f"{limit.low}..{limit.high}"


def _in_range(cid: str, value: int, limit: Limit, name: str, flag: str) -> Check:
    row = partial(Check, id=cid)
    if limit.low <= value <= limit.high:
        return row(status=PASS, detail=f"{name} {value} is within {_span(limit)} ({limit.source})")
    return row(
        status=FAIL,
        detail=f"{name} {value} is outside {_span(limit)}, the operator's limit ({limit.source})",
        hint=f"Split the work so that {flag} stays within {_span(limit)} (e.g. chunk the sequence or the batch).",
    )


def _head_dim(d: int, limit: Limit, facts: OperatorFacts) -> Check:
    # D 1-768 in the docs (<= 128 for FP8).
    row = partial(Check, id="shape.head_dim")
    if not limit.low <= d <= limit.high:
        return row(
            status=FAIL,
            detail=f"head dim {d} is outside {_span(limit)}: the operator rejects it ({limit.source})",
            hint=f"Use a head dim within {_span(limit)} (split heads wider than {limit.high}).",
        )
    # The tiling pads D up to FRACTAL_NUM (16) with AlignUp(dSize, FRACTAL_NUM): an unaligned D
    # runs, on padded work.  Only a doc line that makes alignment a rule turns this into FAIL.
    if d % facts.align:
        padded = -(-d // facts.align) * facts.align
        if facts.align_required:
            return row(
                status=FAIL,
                detail=f"head dim {d} is not a multiple of {facts.align}, which the operator's docs "
                f"require ({facts.align_source})",
                hint=f"Use a head dim that is a multiple of {facts.align} (e.g. {padded}), padding "
                "query/key/value with zeros along D if the model's own is not.",
            )
        return row(
            status=WARN,
            detail=f"head dim {d} is not a multiple of {facts.align}: the operator accepts it but pads "
            f"D to {padded} ({facts.align_source}), so {padded - d} of every {padded} columns are "
            "wasted work",
            hint=f"Prefer a head dim that is a multiple of {facts.align} (64, 128), or pad D yourself.",
        )
    return row(
        status=PASS,
        detail=f"head dim {d} is within {_span(limit)} ({limit.source}) and a multiple of {facts.align}",
    )


def _heads(n1: int, n2: Optional[int], limit: Limit) -> Check:
    row = partial(Check, id="shape.heads")
    if not limit.low <= n1 <= limit.high:
        return row(
            status=FAIL,
            detail=f"{n1} query heads is outside {_span(limit)} ({limit.source})",
            hint=f"Split the heads into groups of at most {limit.high}.",
        )
    # GQA needs whole groups of query heads per key/value head: the tiling rejects n1Size not a
    # multiple of n2Size (op_host/arch22/flash_attention_score_tiling_general.cpp).
    if n2 is not None and (n2 <= 0 or n1 % n2):
        return row(
            status=FAIL,
            detail=f"{n1} query heads is not a multiple of {n2} key/value heads: Nq/Nkv must be a whole "
            "number (GQA/MQA)",
            hint="Use key/value heads that divide the query heads, or repeat key/value heads yourself.",
        )
    ratio = f", {n1 // n2} query heads per key/value head" if n2 and n2 != n1 else ""
    return row(
        status=PASS,
        detail=f"{n1} query heads within {_span(limit)}{ratio} ({limit.source})",
    )


def profile_checks(
    path: Path,
    facts: OperatorFacts,
    soc: str,
    done: Sequence[Check],
    summary: Optional[ProfileSummary] = None,
    off_host: bool = False,
) -> List[Check]:
    """One row per chain group (five, then a count), one per FlashAttention shape class,
    one per torch op that ran attention off the device.  `off_host`: registration could
    not be checked here, so it is neither blamed nor cleared."""
    if summary is None:
        summary = summarise(path, timeline=False)
    a = summary.analysis
    extra = fa_shape_checks(a, facts) + host_fallback_checks(a)
    return _chain_checks(path, a, facts, soc, done, off_host) + extra


def _chain_checks(
    path: Path,
    a: Analysis,
    facts: OperatorFacts,
    soc: str,
    done: Sequence[Check],
    off_host: bool,
) -> List[Check]:
    fused = sum(f.count for f in a.fused)
    if not a.chains:
        return [
            Check(
                id="profile",
                status=PASS,
                detail=f"no unfused MatMul->Softmax->MatMul chain in {path}; fused attention ran {fused} times",
            )
        ]
    # where the fused op ran in the same profile, the package was found there: registration
    # (this shell's env) is not why those chains were not fused
    registration = (
        [c for c in done if c.id.startswith("registration") and c.status == FAIL]
        if not fused
        else []
    )
    # SDPA calls whose kernels ran on the NPU by PyTorch's math path: these chains are theirs
    math = sum(o.math_on_device for o in a.host_ops)
    checks = []
    # Chains are grouped by their ops, input shapes and dtypes, heaviest first; five groups show
    # the pattern, the rest are counted.
    for i, group in enumerate(a.chains[:5], 1):
        dims = group.dims()
        dtype = group.dtype
        described = " > ".join(group.ops)
        facts_seen = []
        if dtype:
            facts_seen.append(dtype)
        if dims:
            facts_seen.append(f"S={dims[0]}, D={dims[2]}")
        what = (
            f"{group.count} unfused chain(s) {described} on {group.stream}, "
            f"{group.total_us:.1f} us" + (f" ({', '.join(facts_seen)})" if facts_seen else "")
        )
        cause, fix = _cause(dtype, dims, facts, soc, registration, math, bool(group.input_shapes))
        if off_host and cause.startswith(SEPARATE_OPS):
            cause, fix = _off_host_cause(fused)
        checks.append(
            Check(id=f"profile.chain{i}", status=FAIL, detail=f"{what}: {cause}", hint=fix)
        )
    if len(a.chains) > 5:
        rest = sum(c.count for c in a.chains[5:])
        checks.append(
            Check(
                id="profile.more",
                status=FAIL,
                detail=f"{rest} more unfused chains in {len(a.chains) - 5} other groups",
                hint="See cannbuild profile --json for all of them.",
            )
        )
    return checks


def _cause(
    dtype: Optional[str],
    dims: Optional[Tuple[int, int, int]],
    facts: OperatorFacts,
    soc: str,
    registration: Sequence[Check],
    math: int = 0,
    shapes: bool = True,
) -> Tuple[str, str]:
    # Most certain cause first: an unsupported dtype or a D out of range keeps the fused op from
    # ever being picked; only then is the package's registration blamed; a Level0 profile has no
    # shapes or dtypes to judge by.
    if dtype and dtype not in facts.dtypes:
        return (
            f"cause: dtype {dtype} is not supported on {soc} ({', '.join(facts.dtypes)})",
            "Cast the attention inputs to fp16 or bf16 (e.g. torch autocast).",
        )
    if dims:
        _s, _skv, d = dims
        limit = facts.limits["D"]
        if not limit.low <= d <= limit.high:
            return (
                f"cause: head dim {d} is outside {_span(limit)} ({limit.source})",
                f"Use a head dim within {_span(limit)}.",
            )
    if math:
        return (
            f"cause: scaled_dot_product_attention took PyTorch's math path on the NPU ({math} "
            f"call(s) of {MATH_SDPA} launched these kernels), not torch_npu's "
            "npu_fusion_attention",
            "Call torch_npu.npu_fusion_attention for this attention (torch_npu sends SDPA to it "
            "only for the inputs it supports: check the dtype, the mask and the head dim).",
        )
    if registration:
        first = registration[0]
        return (f"cause: registration ({first.id}: {first.detail})", first.hint or "")
    if not shapes and dtype is None:
        return (
            "cause unknown: the profile has no shapes or dtypes (Level0)",
            "Profile at Level1 (torch_npu: experimental_config profiler_level=Level1, "
            "record_shapes=True; cannbuild profile --run --level 1) to see them.",
        )
    return (
        f"{SEPARATE_OPS} and the package is found: the model computes attention with separate ops",
        CALL_FUSED,
    )


def _off_host_cause(fused: int) -> Tuple[str, str]:
    if fused:
        # The fused op ran in the same profile: the package was found on the host that made it.
        return (
            f"{SEPARATE_OPS}, and the fused op ran in the same profile (so the package was found "
            "on the host that made it): the model computes this attention with separate ops",
            CALL_FUSED,
        )
    return (
        f"{SEPARATE_OPS}; registration is not checkable here (no CANN toolkit): either the model "
        "computes attention with separate ops, or the package was not found on the NPU host",
        CALL_FUSED + " Run cannbuild diagnose on the NPU host to check the registration.",
    )
