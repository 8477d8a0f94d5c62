"""FlashAttention calls grouped by shape class, and the head dim and sequence length each
class's shapes say (issue 28 item 3): the profile itself tells D and S, no flag needed.

What the cells hold (profiler-formats.md §3): FlashAttentionScore has 12 input slots
(query, key, value, then optional ones left as empty segments) and 4 outputs, the first
softmax_max of shape (B, N, S, 8); FlashAttentionScoreGrad takes softmax_max after
query, key, value, dy and the optional pse_shift, drop_mask, padding_mask, atten_mask
(whose empty slots a profile may or may not keep): the first later input ending in 8.  The query is (B, N, S, D) or (B, S, N, D) in 4 dims (D last either
way), (B, S, H) or (S, B, H) in 3 (D = H / N), or (T, N, D) for the VarLen (TND) form.
msprof-analyze 26.2.0 reads them the same way (msprof_analyze/advisor/analyzer/
computation/ai_core_performance/ai_core_performance_checker.py `_check_fa_inner_axis`:
S from the first output's third dim, D from the query's fourth, or H over the first
output's second; VarLen: the query's third).
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

from msgspec import Struct
from msgspec.structs import replace

from .ops import query_dtype, strip_quotes

# Shape classes kept per analysis: a model has a handful (layers share shapes); past this many
# the calls are still counted, under one class of unknown shape.
MAX_CLASSES = 1000
# softmax_max / softmax_sum keep 8 values per row (the last dim of (B, N, S, 8)).
STATS_LAST = 8
GRAD_FIRST_OPTIONAL = 4  # FlashAttentionScoreGrad: query, key, value, dy come first


class FaDims(Struct, frozen=True, kw_only=True):
    layout: str  # "4-dim (BNSD/BSND)", "3-dim (BSH/SBH)", "TND"
    D: int
    S: Optional[int] = None  # None where no tensor tells it (TND: T is all tokens)
    N: Optional[int] = None


class ShapeClass(Struct, frozen=True, kw_only=True):
    """Fused attention calls of one type with the same input and output shapes."""

    op_type: str
    input_shapes: str
    output_shapes: str
    input_dtypes: str
    count: int
    total_us: float

    @property
    def dtype(self) -> Optional[str]:
        return query_dtype(self.input_dtypes)

    def key(self) -> Tuple[str, str, str]:
        return (self.op_type, self.input_shapes, self.output_shapes)

    def merged(self, other: ShapeClass) -> ShapeClass:
        return replace(
            self, count=self.count + other.count, total_us=self.total_us + other.total_us
        )

    def dims(self) -> Optional[FaDims]:
        return fa_dims(self.op_type, self.input_shapes, self.output_shapes)

    def problem(self) -> Optional[Tuple[int, int, int]]:
        """(query size, S, D): the attention these calls computed, as an unfused chain's
        `ChainGroup.problem` says it (None where S or D is not recorded)."""
        dims = self.dims()
        query = tensors(self.input_shapes)[0] if dims and dims.S else []
        return (math.prod(query), dims.S, dims.D) if query and dims and dims.S else None

    def to_json(self) -> Dict[str, object]:
        data: Dict[str, object] = {
            "type": self.op_type,
            "count": self.count,
            "total_us": round(self.total_us, 3),
            "input_shapes": self.input_shapes,
            "output_shapes": self.output_shapes,
            "dtype": self.dtype,
        }
        dims = self.dims()
        if dims is not None:
            data.update({"layout": dims.layout, "D": dims.D, "S": dims.S, "N": dims.N})
        return data


def tensors(cell: str) -> List[List[int]]:
    """`4096,2,512;4096,2,512;;;` -> [[4096, 2, 512], [4096, 2, 512], [], [], []]; a
    segment that is not whole numbers is empty."""
    out: List[List[int]] = []
    for part in strip_quotes(cell).split(";"):
        try:
            out.append([int(x) for x in part.split(",")] if part.strip() else [])
        except ValueError:
            out.append([])
    return out


def fa_dims(op_type: str, input_shapes: str, output_shapes: str) -> Optional[FaDims]:
    """D (and S, N where a tensor tells them) of one FlashAttention call, None when the
    cells hold no query shape (Level0, a trace)."""
    inputs = tensors(input_shapes)
    q = inputs[0] if inputs else []
    if len(q) not in (3, 4) or min(q) <= 0:
        return None
    if op_type.endswith("Grad"):
        later = inputs[GRAD_FIRST_OPTIONAL:]
        stats = next((t for t in later if len(t) in (3, 4) and t[-1] == STATS_LAST), [])
    else:
        outputs = tensors(output_shapes)
        stats = outputs[0] if outputs else []
        if stats and stats[-1] != STATS_LAST:
            # FusedInferAttentionScore puts attention_out first and softmax_lse (B, N, S, 1) after
            stats = next((t for t in outputs[1:] if len(t) == 4 and t[-1] == 1), [])
    if stats and stats[-1] not in (STATS_LAST, 1):
        stats = []
    if len(q) == 4:
        s = stats[2] if len(stats) == 4 else None
        return FaDims(layout="4-dim (BNSD/BSND)", D=q[3], S=s, N=stats[1] if s else None)
    # 3 dims: TND when softmax_max is (T, N, 8); else BSH/SBH, D = H / N.
    if len(stats) == 3:
        return FaDims(layout="TND", D=q[2], N=stats[1])
    if len(stats) == 4 and stats[1] > 0 and q[2] % stats[1] == 0:
        return FaDims(layout="3-dim (BSH/SBH)", D=q[2] // stats[1], S=stats[2], N=stats[1])
    return None


class ShapeTally:
    """Fused calls counted per shape class, at most MAX_CLASSES classes."""

    def __init__(self) -> None:
        self._classes: Dict[Tuple[str, str, str], List[object]] = {}

    def add(self, op_type: str, inputs: str, outputs: str, dtypes: str, dur_us: float) -> None:
        key = (op_type, inputs, outputs)
        found = self._classes.get(key)
        if found is None:
            if len(self._classes) >= MAX_CLASSES:
                key = (op_type, "", "")
                found = self._classes.get(key)
            if found is None:
                found = self._classes[key] = [dtypes if key[1] else "", 0, 0.0]
        found[1] += 1  # type: ignore[operator]
        found[2] += dur_us  # type: ignore[operator]

    def result(self) -> Tuple[ShapeClass, ...]:
        return sort_classes(
            ShapeClass(
                op_type=k[0],
                input_shapes=k[1],
                output_shapes=k[2],
                input_dtypes=str(v[0]),
                count=int(v[1]),  # type: ignore[call-overload]
                total_us=float(v[2]),  # type: ignore[arg-type]
            )
            for k, v in self._classes.items()
        )


def sort_classes(classes: object) -> Tuple[ShapeClass, ...]:
    return tuple(sorted(classes, key=lambda c: (-c.total_us, c.op_type)))  # type: ignore[call-overload]
