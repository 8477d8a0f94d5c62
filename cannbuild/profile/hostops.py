"""Attention that fell back to the host (issue 28 item 4): the trace's torch ops (`cpu_op`
events on the Python track, profiler-formats.md §1.6) that show attention computed
without FlashAttention on the device.

- SDPA backends that are not torch_npu's: `aten::_scaled_dot_product_efficient_attention`,
  `aten::_scaled_dot_product_flash_attention` (PyTorch's CUDA kernels' names) and the
  math fallback `aten::_scaled_dot_product_attention_math`: the dispatcher chose one
  of PyTorch's own implementations, not npu_fusion_attention.
- `aten::bmm`, `aten::softmax`, ... and `aten::scaled_dot_product_attention` itself
  that launched no device task: torch_npu draws a `torch_to_npu` flow (`ph:"s"`, cat
  `async_npu`) from the torch op that launches each kernel; a call with none inside
  its span ran on the host (its tensors on the CPU), or never reached the device.
A trace without any torch_to_npu flow (NPU activity off) cannot tell host from
device: then only the SDPA backends are reported.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from operator import attrgetter
from typing import Dict, Iterable, List, Tuple

from msgspec import Struct
from msgspec.structs import replace

from .ops import merge_by

SDPA = "aten::scaled_dot_product_attention"
MATH_SDPA = "aten::_scaled_dot_product_attention_math"
SDPA_BACKENDS = {
    "aten::_scaled_dot_product_efficient_attention": "PyTorch's memory-efficient SDPA kernel",
    "aten::_scaled_dot_product_flash_attention": "PyTorch's own flash SDPA kernel",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "PyTorch's CPU flash SDPA kernel",
    MATH_SDPA: "PyTorch's math SDPA fallback",
    "aten::_efficient_attention_forward": "PyTorch's memory-efficient attention kernel",
    "aten::_flash_attention_forward": "PyTorch's own flash attention kernel",
}
# The torch ops of an attention written by hand (timeline_fusion_ops.yaml's aten pattern
# `matmul-(add)-(mul)-(masked_fill_|add)-softmax-(dropout)-matmul`, msprof-analyze 26.2.0).
UNFUSED = frozenset(
    {"aten::bmm", "aten::baddbmm", "aten::matmul", "aten::softmax", "aten::_softmax", SDPA}
)
WATCHED = frozenset(SDPA_BACKENDS) | UNFUSED
FLOW = "torch_to_npu"
# Calls kept for the host/device test after the file is read; past it they are only counted.
MAX_CALLS = 200_000


class HostOp(Struct, frozen=True, kw_only=True):
    """One torch op name: its calls, their host time, and how many launched nothing on
    the device (None: the trace cannot tell)."""

    name: str
    count: int
    total_us: float
    host_only: int = 0
    host_only_us: float = 0.0
    judged: bool = True

    @property
    def backend(self) -> str:
        return SDPA_BACKENDS.get(self.name, "")

    @property
    def is_fallback(self) -> bool:
        """Attention computed on the host: calls that launched nothing on the device (where
        the flows tell), else any call of an SDPA backend that is not torch_npu's.  A math
        SDPA whose kernels ran on the NPU is no fallback: its kernels are the unfused chains
        (math_on_device), one cause, said there."""
        return self.host_only > 0 if self.judged else bool(self.backend)

    @property
    def math_on_device(self) -> int:
        """Calls of PyTorch's math SDPA that launched their MatMul/Softmax on the device."""
        return self.count - self.host_only if self.name == MATH_SDPA and self.judged else 0

    def merged(self, other: HostOp) -> HostOp:
        return replace(
            self,
            count=self.count + other.count,
            total_us=self.total_us + other.total_us,
            host_only=self.host_only + other.host_only,
            host_only_us=self.host_only_us + other.host_only_us,
            judged=self.judged and other.judged,
        )

    def cause(self) -> str:
        if self.backend and self.judged:
            return (
                f"SDPA ran {self.backend} ({self.name}) on the host: attention computed on the CPU"
            )
        if self.backend:
            return (
                f"SDPA ran {self.backend} ({self.name}), not torch_npu's npu_fusion_attention "
                "(FlashAttentionScore)"
            )
        if self.name == SDPA:
            return "scaled_dot_product_attention never reached the device: it ran on the host"
        return (
            f"{self.name} ran on the host (no device task launched): attention computed on the CPU"
        )

    def to_json(self) -> Dict[str, object]:
        return {
            "name": self.name,
            "count": self.count,
            "total_us": round(self.total_us, 3),
            "host_only": self.host_only if self.judged else None,
            "host_only_us": round(self.host_only_us, 3) if self.judged else None,
            "cause": self.cause(),
        }


class HostCollector:
    """Feed watched torch ops and torch_to_npu flow starts; `result()` pairs them."""

    def __init__(self) -> None:
        self._calls: List[Tuple[str, object, float, float]] = []
        self._extra: Dict[str, List[float]] = {}  # past MAX_CALLS: name -> [count, total]
        self._flows: Dict[object, array] = {}
        self.flows = 0

    def op(self, thread: object, name: str, start_us: float, dur_us: float) -> None:
        if len(self._calls) < MAX_CALLS:
            self._calls.append((name, thread, start_us, dur_us))
        else:
            tally = self._extra.setdefault(name, [0, 0.0])
            tally[0] += 1
            tally[1] += dur_us

    def flow(self, thread: object, start_us: float) -> None:
        self.flows += 1
        found = self._flows.get(thread)
        if found is None:
            found = self._flows[thread] = array("d")
        found.append(start_us)

    def result(self) -> Tuple[HostOp, ...]:
        for values in self._flows.values():
            values[:] = array("d", sorted(values))
        judged = self.flows > 0
        ops: Dict[str, HostOp] = {}
        for name, thread, start, dur in self._outermost():
            launched = self._launched(thread, start, start + dur) if judged else True
            one = HostOp(
                name=name,
                count=1,
                total_us=dur,
                host_only=0 if launched else 1,
                host_only_us=0.0 if launched else dur,
                judged=judged,
            )
            ops[name] = ops[name].merged(one) if name in ops else one
        for name, (count, total) in self._extra.items():
            one = HostOp(name=name, count=int(count), total_us=total, judged=judged)
            ops[name] = ops[name].merged(one) if name in ops else one
        return merge_host(ops.values())

    def _outermost(self) -> List[Tuple[str, object, float, float]]:
        """One call per attention: aten::matmul holds aten::bmm, aten::softmax holds
        aten::_softmax, and SDPA holds its backend; the outer call is kept, except that
        an SDPA is named by the backend it ran."""
        self._calls.sort(key=lambda c: (str(c[1]), c[2], -c[3]))
        kept: List[Tuple[str, object, float, float]] = []
        dropped = set()
        stack: List[Tuple[int, float]] = []  # (index in kept or -1, end) of open calls
        thread: object = object()
        for call in self._calls:
            name, where, start, dur = call
            if where != thread:
                thread, stack = where, []
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack:
                outer = stack[-1][0]
                if name in SDPA_BACKENDS and outer >= 0 and kept[outer][0] == SDPA:
                    dropped.add(outer)
                    kept.append(call)
                    stack.append((len(kept) - 1, start + dur))
                else:
                    stack.append((-1, start + dur))
                continue
            kept.append(call)
            stack.append((len(kept) - 1, start + dur))
        return [c for i, c in enumerate(kept) if i not in dropped]

    def _launched(self, thread: object, start: float, end: float) -> bool:
        flows = self._flows.get(thread)
        if not flows:
            return False
        i = bisect_left(flows, start)
        return i < len(flows) and flows[i] <= end


def merge_host(*groups: Iterable[HostOp]) -> Tuple[HostOp, ...]:
    """One HostOp per torch op name, the most host time first."""
    ops = merge_by(attrgetter("name"), *groups)
    return tuple(sorted(ops, key=lambda o: (-o.total_us, o.name)))
