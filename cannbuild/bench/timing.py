"""Timings: how many repetitions, and the summary a result reports (median, IQR, TFLOP/s)."""

from __future__ import annotations

import statistics
import time
from typing import Callable, Dict, List, Optional, Sequence

from msgspec import Struct

# One untimed call first: the first call pays for kernel loading and allocation.
WARMUP = 1
# At least three calls, so one unlucky call cannot be the median; at most 25, which bounds what one
# fast shape costs.
MIN_REPS = 3
MAX_REPS = 25


def repetitions(single_ms: Optional[float], target_s: float) -> int:
    """Enough calls for a stable median within about `target_s` of timing."""
    if not single_ms or single_ms <= 0:
        return MIN_REPS
    return max(MIN_REPS, min(MAX_REPS, int(target_s * 1000.0 / single_ms)))


def quartiles(values: Sequence[float]) -> tuple:
    ordered = sorted(values)
    if len(ordered) < 2:
        return ordered[0], ordered[0], ordered[0]
    # `inclusive`: quartiles interpolated between the samples themselves, which suits a handful of
    # repetitions.
    q1, q2, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return q1, q2, q3


class Timing(Struct, frozen=True, kw_only=True):
    times_ms: tuple

    @property
    def median_ms(self) -> float:
        return float(statistics.median(self.times_ms))

    @property
    def iqr_ms(self) -> float:
        q1, _, q3 = quartiles(self.times_ms)
        return float(q3 - q1)

    def tflops(self, flops: float) -> float:
        return flops / (self.median_ms * 1e-3) / 1e12

    def to_json(self, flops: float) -> Dict[str, object]:
        q1, _, q3 = quartiles(self.times_ms)
        return {
            "reps": len(self.times_ms),
            "times_ms": [round(t, 4) for t in self.times_ms],
            "median_ms": round(self.median_ms, 4),
            "q1_ms": round(q1, 4),
            "q3_ms": round(q3, 4),
            "iqr_ms": round(self.iqr_ms, 4),
            "tflops": round(self.tflops(flops), 6),
        }


def time_host_calls(fn: Callable[[], object], warmup: int, reps: int) -> Timing:
    """Wall time of each call of a synchronous (CPU) function."""
    for _ in range(warmup):
        fn()
    times: List[float] = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000.0)
    return Timing(times_ms=tuple(times))
