"""The sweep: for each shape (cheapest first, within the time budget) the inputs and the
float64 reference once, then every implementation checked and, if it passed, timed.

Timing routes in the same conditions: torch runs on a thread count set for the whole run
(`threads`, the cores this process may use), the routes that passed are timed in ROUNDS
rounds of a share of their calls each, in a rotating order (a spell of load falls on every
route, not on whichever was being timed), and the load average is read before each shape: a
host loaded past its cores is said once and recorded."""

from __future__ import annotations

import os
import time
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from msgspec import Struct, field

from ..validate.casefiles import write_inputs
from ..validate.cases import CaseResult, reference, reference_torch
from . import routes
from .memory import proc_kib
from .npu_route import NpuWorker, npu_check, npu_time
from .routes import CAPI, SDPA, TORCH_NPU, UNFUSED, Program, RouteError
from .shapes import BenchShape
from .timing import WARMUP, Timing, repetitions, time_host_calls

BASELINE = "baseline"
TIMED, EXCLUDED, ERROR, NOT_RUN = "timed", "excluded", "error", "not run"


class Measurement(Struct, frozen=True, kw_only=True):
    """One implementation (of one build variant) on one shape."""

    variant: str
    impl: str
    shape: BenchShape
    status: str  # timed | excluded (failed the check) | error (a call failed) | not run
    check: Optional[CaseResult] = None
    timing: Optional[Timing] = None
    reason: str = ""
    peak_memory_bytes: Optional[int] = None  # of the checked call, beyond its inputs

    def to_json(self, sdpa_ms: Optional[float]) -> Dict[str, object]:
        out: Dict[str, object] = {
            "variant": self.variant,
            "impl": self.impl,
            "shape": self.shape.name,
            "status": self.status,
            "reason": self.reason,
            "check": None,
            "timing": None,
            "speedup_vs_sdpa": None,
            "peak_memory_bytes": self.peak_memory_bytes,
        }
        if self.check is not None:
            said = ("status", "max_abs_err", "bound", "message")
            out["check"] = {key: getattr(self.check, key) for key in said}
        if self.timing is not None:
            out["timing"] = self.timing.to_json(self.shape.flops)
            if sdpa_ms:
                out["speedup_vs_sdpa"] = float(f"{sdpa_ms / self.timing.median_ms:.6g}")
        return out


class Skipped(Struct, frozen=True, kw_only=True):
    shape: BenchShape
    reason: str


class SweepResult(Struct, kw_only=True):
    measurements: List[Measurement] = field(default_factory=list)
    skipped: List[Skipped] = field(default_factory=list)
    duration_s: float = 0.0
    threads: int = 0  # torch.set_num_threads for the run
    loads: Dict[str, float] = field(default_factory=dict)  # shape -> 1-min load average before it

    def host_json(self) -> Dict[str, object]:
        """results.json `host`: the conditions the timings were taken in."""
        cores = thread_count()
        worst = max(self.loads.values(), default=0.0)
        return {
            "cores": cores,
            "torch_threads": self.threads,
            "rounds": ROUNDS,
            "load_max": round(worst, 2),
            "loaded": worst > cores,
            "loaded_shapes": sorted(k for k, v in self.loads.items() if v > cores),
        }

    def sdpa_ms(self, shape: BenchShape) -> Optional[float]:
        for m in self.measurements:
            if m.shape == shape and m.impl == SDPA and m.timing is not None:
                return m.timing.median_ms
        return None


class SweepSettings(Struct, frozen=True, kw_only=True):
    budget_s: float
    target_s: float  # timing per implementation and shape, roughly
    with_torch: bool = True
    threads: int = 0  # torch's thread count; 0: the cores this process may use


# Rounds each route is timed in, a share of its calls in each, the order rotated per round.
ROUNDS = 3


def reference_bytes(shape: BenchShape) -> int:
    """The float64 reference holds the S x S scores of every head, twice."""
    return 2 * 8 * shape.B * shape.N1 * shape.S * shape.S


class _Route(Struct, kw_only=True):
    """A route that passed its check, with the calls left to time and the times so far."""

    variant: str
    impl: str
    check: CaseResult
    peak: Optional[int]
    timed: Callable[[int], Timing]
    reps: int
    times: List[float] = field(default_factory=list)
    error: str = ""


def _check(
    variant: str,
    impl: str,
    check: Callable[[], Tuple[CaseResult, Optional[float], Optional[int]]],
    timed: Callable[[int], Timing],
    *,
    shape: BenchShape,
    target_s: float,
) -> Union[Measurement, _Route]:
    """One judged call: a Measurement when the route is not timed, else the route to time."""
    try:
        result, single_ms, peak = check()
    except RouteError as exc:
        return Measurement(variant=variant, impl=impl, shape=shape, status=ERROR, reason=str(exc))
    if result.status != "PASS":
        return Measurement(
            variant=variant,
            impl=impl,
            shape=shape,
            status=EXCLUDED,
            check=result,
            reason=f"not timed: {result.message}",
        )
    reps = repetitions(single_ms, target_s)
    return _Route(variant=variant, impl=impl, check=result, peak=peak, timed=timed, reps=reps)


def _time_rounds(shape: BenchShape, routes: List[_Route]) -> List[Measurement]:
    """Every route's calls in ROUNDS rounds, the order rotated each round."""
    for turn in range(ROUNDS if routes else 0):
        for route in routes[turn % len(routes) :] + routes[: turn % len(routes)]:
            share = -(-route.reps // ROUNDS)
            calls = min(share, route.reps - len(route.times))
            if route.error or calls <= 0:
                continue
            try:
                route.times += route.timed(calls).times_ms
            except RouteError as exc:
                route.error = str(exc)
    return [
        Measurement(
            variant=r.variant,
            impl=r.impl,
            shape=shape,
            status=ERROR if r.error else TIMED,
            check=r.check,
            timing=None if r.error else Timing(times_ms=tuple(r.times)),
            reason=r.error,
            peak_memory_bytes=None if r.error else r.peak,
        )
        for r in routes
    ]


def _measure_shape(
    shape: BenchShape,
    programs: Sequence[Tuple[str, Program]],
    torch: ModuleType,
    data: Path,
    settings: SweepSettings,
    npu: Optional[NpuWorker],
) -> List[Measurement]:
    tensors = write_inputs(shape, data)
    expected = reference(shape, tensors)
    checked: List[Union[Measurement, _Route]] = []
    check = partial(_check, shape=shape, target_s=settings.target_s)
    for variant, program in programs:
        checked.append(
            check(
                variant,
                CAPI,
                partial(routes.capi_check, program, shape, tensors, expected, data),
                partial(routes.capi_time, program, shape, data),
            )
        )
    why_not = npu.unavailable() if npu is not None else None
    if npu is not None and why_not is not None:
        checked.append(
            Measurement(
                variant=BASELINE, impl=TORCH_NPU, shape=shape, status=NOT_RUN, reason=why_not
            )
        )
    elif npu is not None:
        checked.append(
            check(
                BASELINE,
                TORCH_NPU,
                partial(npu_check, npu, shape, tensors, expected),
                partial(npu_time, npu, shape),
            )
        )
    if settings.with_torch:
        for impl, make in ((SDPA, routes.sdpa_call), (UNFUSED, routes.unfused_call)):
            call = make(torch, shape, tensors)
            checked.append(
                check(
                    BASELINE,
                    impl,
                    partial(routes.torch_check, call, shape, tensors, expected),
                    partial(time_host_calls, call, WARMUP),
                )
            )
    timed = iter(_time_rounds(shape, [c for c in checked if isinstance(c, _Route)]))
    # in the order checked: each route's Measurement where its check left it
    return [c if isinstance(c, Measurement) else next(timed) for c in checked]


def run_sweep(
    shapes: Sequence[BenchShape],
    programs: Sequence[Tuple[str, Program]],
    data: Path,
    settings: SweepSettings,
    note: Callable[[str], None],
    npu: Optional[NpuWorker] = None,
) -> SweepResult:
    """`programs`: (variant name, fa_check built against that package), the baseline first;
    `npu`: the torch_npu route (None: not asked for, as with variants only)."""
    torch = reference_torch()
    threads = settings.threads or thread_count()
    torch.set_num_threads(threads)
    result = SweepResult(threads=threads)
    start = time.monotonic()
    seconds_per_flop: Optional[float] = (
        None  # of the last shape measured: overheads fade as S grows
    )
    available = proc_kib("meminfo", "MemAvailable")  # KiB
    data.mkdir(parents=True, exist_ok=True)
    for shape in shapes:
        elapsed = time.monotonic() - start
        if available is not None and reference_bytes(shape) > available * 1024 // 2:
            result.skipped.append(
                Skipped(
                    shape=shape,
                    reason=f"the float64 reference would need {reference_bytes(shape) / 2**30:.1f} GiB of "
                    f"{available / 2**20:.1f} GiB available",
                )
            )
            continue
        if (
            seconds_per_flop is not None
            and elapsed + seconds_per_flop * shape.flops > settings.budget_s
        ):
            result.skipped.append(
                Skipped(
                    shape=shape,
                    reason=f"over the time budget (--budget {settings.budget_s:g} s; about "
                    f"{seconds_per_flop * shape.flops:.0f} s more needed)",
                )
            )
            continue
        began = time.monotonic() - (npu.waited_s if npu is not None else 0.0)
        load = os.getloadavg()[0]
        if load > thread_count() and not any(v > thread_count() for v in result.loads.values()):
            note(
                f"the host is loaded: load average {load:.1f} over {thread_count()} cores; "
                "timings taken now are slower and spread wider (results.json host.loaded)"
            )
        result.loads[shape.name] = load
        note(f"{shape.name}: checking against float64, then timing")
        result.measurements += _measure_shape(shape, programs, torch, data, settings, npu)
        for suffix in ("q", "k", "v", "mask", "out", "smax", "ssum", "manifest"):
            (data / f"{shape.name}.{suffix}").unlink(missing_ok=True)
        ended = time.monotonic() - (npu.waited_s if npu is not None else 0.0)
        seconds_per_flop = max(ended - began, 0.0) / shape.flops
    result.duration_s = time.monotonic() - start
    return result


def thread_count() -> int:
    return len(os.sched_getaffinity(0))
