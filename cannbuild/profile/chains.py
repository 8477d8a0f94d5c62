"""The unfused-attention chain matcher: one small state machine per stream.

A chain is what an attention written as separate ops leaves on a device stream: two
batched MatMuls whose operands connect through a Softmax,

    MatMul (Q·Kᵀ) -> [scale, mask, views]* -> Softmax -> [dropout, views]* -> MatMul (P·V)

as transformers' eager attention (Llama, Qwen2, Mistral: `eager_attention_forward`) runs
it on torch_npu: `matmul(q, repeat_kv(k).transpose(2, 3)) * scaling`, `+ causal_mask[:, :,
:, :kv_len]` (the slice made contiguous by a StridedSliceD or ViewCopy kernel), `softmax(...,
dtype=torch.float32).to(q.dtype)` (a Cast each side), `dropout` in training
(DropOutGenMaskV3 + DropOutDoMaskV3), `matmul(probs, repeat_kv(v))`; RoPE and repeat_kv run
before the first MatMul.  Where the profile records shapes the chain is checked by them:
the Softmax's input is the first MatMul's output (the scores: same last two dims, same
size), the second MatMul's first input is the Softmax's output, and an op of no known family
sits between only when its output is the scores (or a mask that broadcasts to them) before
the Softmax, or the second MatMul's other operand (V) after it.  Without shapes (Level0, a
trace) only the families of ops.py may sit between.  Backward kernels (SoftmaxGrad) and a
second Softmax break a candidate, and so does an in-between op past MAX_BETWEEN.  A MatMul
before any Softmax starts a new candidate (Q·Kᵀ is the last MatMul before the Softmax).
"""

from __future__ import annotations

import math
from typing import Dict, Generic, List, Optional, Protocol, Sequence, Tuple, TypeVar

from msgspec import Struct

from .affinity import tensors
from .ops import role

# How many in-between kernels a chain may hold.  transformers' eager attention in training puts
# seven there (Muls, the mask slice, Add, Cast | Cast, DropOutGenMaskV3, DropOutDoMaskV3); a
# masked_fill mask, a division by sqrt(D) and a layout change of each operand (AsStrided,
# TransData) add up to five more.  The real unfused sample in msprof-analyze's tests holds two
# (Mul97, DropOutDoMask100) and one view (AsStrided93).
MAX_BETWEEN = 12
# Kernels in the longest chain: the two MatMuls, the Softmax and the in-between ones.
MAX_CHAIN = 3 + MAX_BETWEEN
SHAPE_CACHE = 4096  # parsed shape cells kept per matcher (a model repeats a handful)
Shape = Tuple[int, ...]


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


class Shaped(Protocol):
    """What the matcher reads of a kernel (analysis.Kernel)."""

    @property
    def op_type(self) -> str: ...

    @property
    def input_shapes(self) -> str: ...

    @property
    def output_shapes(self) -> str: ...


T = TypeVar("T", bound=Shaped)


def same_tensor(a: Optional[Shape], b: Optional[Shape]) -> bool:
    """One tensor seen twice, where both shapes are known: the same last two dims and size
    (a batched MatMul may fold B and N into one dim: `16,1024,1024` is `2,8,1024,1024`)."""
    if not a or not b:
        return True
    return a[-2:] == b[-2:] and math.prod(a) == math.prod(b)


def broadcasts_to(mask: Shape, scores: Shape) -> bool:
    """`1,1,1024,1024` (a causal mask) broadcasts to the scores `2,8,1024,1024`."""
    return len(mask) <= len(scores) and all(
        m in (1, s) for m, s in zip(reversed(mask), reversed(scores))
    )


def matmul_output(inputs: Sequence[Shape]) -> Optional[Shape]:
    """A MatMul's output from its inputs `..., S, D` and `..., D, Skv` (or K untransposed,
    `..., Skv, D`, with the transpose an attribute)."""
    if len(inputs) < 2 or len(inputs[0]) < 2 or len(inputs[1]) < 2:
        return None
    a, b = inputs[0], inputs[1]
    if a[-1] == b[-2]:
        return (*a[:-1], b[-1])
    if a[-1] == b[-1]:
        return (*a[:-1], b[-2])
    return None


class _Candidate(Generic[T]):
    __slots__ = ("between", "members", "phase", "probs", "scores", "v_operands")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.phase = 0  # 0: none, 1: after the first MatMul, 2: after the Softmax
        self.members: List[T] = []
        self.between = 0
        self.scores: Optional[Shape] = None  # the first MatMul's output, where recorded
        self.probs: Optional[Shape] = None  # the Softmax's output
        self.v_operands: List[Shape] = []  # after the Softmax: ops of no family, V's if any


class ChainMatcher(Generic[T]):
    """Feed each stream's kernels in order with `step`; it returns a finished chain's
    kernels (the objects fed) when the closing MatMul arrives."""

    def __init__(self) -> None:
        self._streams: Dict[str, _Candidate[T]] = {}
        self._shapes: Dict[str, Tuple[Shape, ...]] = {}

    def _parse(self, cell: str) -> Tuple[Shape, ...]:
        found = self._shapes.get(cell)
        if found is None:
            found = tuple(tuple(t) for t in tensors(cell))
            if len(self._shapes) < SHAPE_CACHE:
                self._shapes[cell] = found
        return found

    def _first(self, cell: str) -> Optional[Shape]:
        parsed = self._parse(cell) if cell else ()
        return parsed[0] if parsed and parsed[0] else None

    def step(self, stream: str, kernel: T) -> Optional[List[T]]:
        cand = self._streams.get(stream)
        if cand is None:
            cand = self._streams[stream] = _Candidate()
        kind = role(kernel.op_type)
        if kind == "matmul":
            if cand.phase == 2 and self._closes(cand, kernel):
                done = [*cand.members, kernel]
                cand.reset()
                return done
            cand.reset()
            cand.phase, cand.members = 1, [kernel]
            cand.scores = self._first(kernel.output_shapes) or matmul_output(
                self._parse(kernel.input_shapes) if kernel.input_shapes else ()
            )
            return None
        if cand.phase == 0:
            return None
        if kind == "softmax":
            if cand.phase == 1 and same_tensor(cand.scores, self._first(kernel.input_shapes)):
                cand.members.append(kernel)
                cand.phase = 2
                cand.probs = self._first(kernel.output_shapes) or cand.scores
            else:
                cand.reset()
            return None
        if cand.between < MAX_BETWEEN and self._admits(cand, kind, kernel):
            cand.members.append(kernel)
            cand.between += 1
        else:
            cand.reset()
        return None

    def _admits(self, cand: _Candidate[T], kind: str, kernel: T) -> bool:
        if kind == "view" or (
            kind == "dropout" and (cand.phase == 2 or "GenMask" in kernel.op_type)
        ):
            return True
        if kind == "scale":
            return cand.phase == 1
        if kind != "other":
            return False  # fused attention, a backward kernel
        out = self._first(kernel.output_shapes)
        if out is None or cand.scores is None:
            return False  # no shapes to tie it to the attention: not taken on its name alone
        if cand.phase == 1:
            return same_tensor(out, cand.scores) or broadcasts_to(out, cand.scores)
        cand.v_operands.append(out)  # judged when the second MatMul shows its V
        return True

    def _closes(self, cand: _Candidate[T], matmul: T) -> bool:
        inputs = self._parse(matmul.input_shapes) if matmul.input_shapes else ()
        if inputs and inputs[0] and not same_tensor(cand.probs, inputs[0]):
            return False
        v = inputs[1] if len(inputs) > 1 else None
        return all(v is not None and same_tensor(o, v) for o in cand.v_operands)
