"""The unfused-attention chain matcher: one small state machine per stream.

A chain is what an attention written as separate ops leaves on a device stream
(msprof-analyze 26.2.0, msprof_analyze/advisor/rules/op_fusion_pass.yaml
FlashAttentionFusionPass(_V2) and timeline_fusion_ops.yaml npu_fusion_attention; the
op families are in ops.py):

    MatMul -> [scale/mask | view]* -> Softmax -> [dropout | view]* -> MatMul

Anything else on the stream (another compute op, a second Softmax, a fused attention)
breaks the candidate, and so does an in-between op past MAX_BETWEEN.  A MatMul before
any Softmax starts a new candidate (Q·Kᵀ is the last MatMul before the Softmax).
"""

from __future__ import annotations

from typing import Dict, Generic, List, Optional, Tuple, TypeVar

from msgspec import Struct

from .ops import role

# How many in-between kernels a chain may hold.  The aten patterns above have at most four
# optional ops (add, mul, masked_fill or add before the Softmax; dropout after); autocast adds a
# Cast on each side of an fp32 Softmax, and the operands of the second MatMul may need a view or
# a layout change (AsStrided, TransData) or two: 4 + 2 + 2.  The real unfused sample in
# msprof-analyze's tests holds two (Mul97, DropOutDoMask100) and one view (AsStrided93).
MAX_BETWEEN = 8
# Kernels in the longest chain: the two MatMuls, the Softmax and the in-between ones.
MAX_CHAIN = 3 + MAX_BETWEEN
T = TypeVar("T")


class ChainKernel(Struct, frozen=True, kw_only=True):
    """One kernel of a chain as the report lists it."""

    op_type: str
    name: str
    start_us: float
    dur_us: float
    input_shapes: str = ""  # "" where the profile has none (Level0, a trace)
    input_dtypes: str = ""


class Chain(Struct, frozen=True, kw_only=True):
    stream: str
    kernels: Tuple[ChainKernel, ...]

    @property
    def total_us(self) -> float:
        """Device time of the chain's kernels (gaps between them not counted)."""
        return sum(k.dur_us for k in self.kernels)

    @property
    def start_us(self) -> float:
        return self.kernels[0].start_us

    def to_json(self) -> Dict[str, object]:
        ops: List[Dict[str, object]] = []
        for k in self.kernels:
            op: Dict[str, object] = {
                "type": k.op_type,
                "name": k.name,
                "dur_us": round(k.dur_us, 3),
            }
            if k.input_shapes:
                op["input_shapes"] = k.input_shapes
            if k.input_dtypes:
                op["input_dtypes"] = k.input_dtypes
            ops.append(op)
        return {
            "stream": self.stream,
            "start_us": round(self.start_us, 3),
            "total_us": round(self.total_us, 3),
            "ops": ops,
        }


class _Candidate(Generic[T]):
    __slots__ = ("between", "members", "phase")

    def __init__(self) -> None:
        self.phase = 0  # 0: none, 1: after the first MatMul, 2: after the Softmax
        self.members: List[T] = []
        self.between = 0

    def reset(self) -> None:
        self.phase, self.members, self.between = 0, [], 0


class ChainMatcher(Generic[T]):
    """Feed each stream's kernels in order with `step`; it returns a finished chain's
    kernels (the objects fed) when the closing MatMul arrives."""

    def __init__(self) -> None:
        self._streams: Dict[str, _Candidate[T]] = {}

    def step(self, stream: str, kernel: T, op_type: str) -> Optional[List[T]]:
        cand = self._streams.get(stream)
        if cand is None:
            cand = self._streams[stream] = _Candidate()
        kind = role(op_type)
        if kind == "matmul":
            if cand.phase == 2:
                done = [*cand.members, kernel]
                cand.reset()
                return done
            cand.phase, cand.members, cand.between = 1, [kernel], 0
            return None
        if cand.phase == 0:
            return None
        if kind == "softmax" and cand.phase == 1:
            cand.members.append(kernel)
            cand.phase = 2
            return None
        allowed = (
            kind == "view"
            or (kind == "scale" and cand.phase == 1)
            or (kind == "dropout" and cand.phase == 2)
        )
        if allowed and cand.between < MAX_BETWEEN:
            cand.members.append(kernel)
            cand.between += 1
        else:
            cand.reset()
        return None
