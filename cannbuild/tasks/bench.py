"""The bench task: the built FlashAttention against torch's attention, over shapes and
build variants, with results.json, report.md and charts."""

from __future__ import annotations

import collections
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

from .. import ui
from ..errors import DryRun, NothingTimed, UsageError
from ..lazy import lazy_module
from ..ownership import check_replaceable
from ._flags import SESSION_FLAGS, FlagValue, cli_task
from ._frame import Frame, bring_up_to_date, would_bring_up_to_date

if TYPE_CHECKING:
    from ..bench import report as bench_report
    from ..bench import run as bench_run
    from ..bench import shapes as sh
    from ..bench import sweep
    from ..bench import variants as bench_variants
    from ..build import runner
else:  # only the task that runs loads its core (`cannbuild --help` loads every task module)
    sh = lazy_module("cannbuild.bench.shapes")
    bench_report = lazy_module("cannbuild.bench.report")
    bench_run = lazy_module("cannbuild.bench.run")
    sweep = lazy_module("cannbuild.bench.sweep")
    bench_variants = lazy_module("cannbuild.bench.variants")
    runner = lazy_module("cannbuild.build.runner")

DEFAULT_BUDGET_S = 60.0
TARGET_S = 0.25


def _budget(text: Optional[str]) -> float:
    if text in (None, ""):
        return DEFAULT_BUDGET_S
    try:
        value = float(str(text))
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value <= 0:  # nan and inf would be written to results.json
        raise UsageError(f"--budget {text!r} is not a number of seconds.", "Use e.g. --budget 60.")
    return value


@cli_task(
    *SESSION_FLAGS,
    "shapes",
    "dtype",
    "layout",
    "causal",
    "budget",
    "variants",
    "build_variant",
    "out",
    "json",
    "dry_run",
    positional=[("new", "with --compare: the newer results.json")],
    optional=("new",),
    extra=[
        (
            "compare",
            None,
            "OLD.json: compare two bench result files (--compare OLD.json NEW.json): each "
            "timing's medians and change, a verdict line; nothing is run",
        )
    ],
)
def bench(
    frame: Frame,
    new: Optional[str] = None,
    shapes: Optional[str] = None,
    dtype: Optional[str] = None,
    layout: Optional[str] = None,
    causal: bool = False,
    budget: Optional[str] = None,
    variants: Optional[str] = None,
    build_variant: Optional[List[str]] = None,
    out: Optional[str] = None,
    json: bool = False,
    compare: Optional[str] = None,
    **flags: FlagValue,
) -> None:
    """Time the installed FlashAttention (C API, torch_npu) against torch's
    scaled_dot_product_attention and the unfused chain, each judged against float64 first.

    Brings the workspace up to date first (as `cannbuild install`), saying so. Writes
    <workspace>/bench/<run>/results.json, report.md and PNG charts (matplotlib:
    pip install 'cannbuild[bench]'). --variants / --build-variant build patched copies of
    ops-transformer (own build tree, prefix and stamps) and time each against the baseline."""
    if compare or new:
        _compare(compare, new, json)
        return
    # --out follows the ownership rule: refused before any build or sweep, claimed at the write
    target = check_replaceable(Path(out), "bench-output", "--out") if out else None
    dims = sh.parse_shapes(shapes) if shapes is not None else sh.default_dims()
    layouts = sh.parse_layouts(layout) if layout else ("BNSD",)
    seconds = _budget(budget)
    given = sh.parse_dtypes(dtype) if dtype else None
    specs = bench_variants.parse_variants(variants, build_variant or [], Path.cwd())
    session = frame.session(builds=True)
    bench_run.check_torch()  # before a build it would not use
    if frame.dry_run:
        raise DryRun(
            f"would time FlashAttention on {len(sh.sweep(dims, ('fp32',), layouts, causal))} "
            f"shapes per dtype for up to {seconds:g} s; {would_bring_up_to_date(session)}"
        )
    bring_up_to_date(session, frame.command, json)
    dtypes = given or (("fp32",) if session.sandbox else ("fp16",))
    request = bench_run.BenchRequest(
        shapes=tuple(sh.sweep(dims, dtypes, layouts, causal)),
        settings=sweep.SweepSettings(budget_s=seconds, target_s=TARGET_S),
        out=target,
        run_id=runner.new_run_id(),
    )
    built = bench_variants.build_variants(session, specs, os.environ, ui.note) if specs else []
    outcome = bench_run.run_bench(session, request, built, ui.note)
    data = outcome.results
    if json:
        ui.print_json(data)
    else:
        timed = [r for r in data["results"] if r["status"] == "timed"]
        for line in bench_report.not_timed_lines(data):
            ui.note(line)
        # the shapes left out, by reason (the budget, a layout the operator lacks): each
        # shape's in report.md
        reasons = collections.Counter(n["reason"] for n in data["not_run"])
        left = "; ".join(f"{count}: {reason}" for reason, count in list(reasons.items())[:2])
        left += "; ... (each shape's reason: report.md)" if len(reasons) > 2 else ""
        print(
            f"bench: {len(data['shapes'])} shapes, {len(timed)} timings in {data['sweep_s']:.0f} s; "
            f"{len(data['not_run'])} shapes left out" + (f" ({left})" if left else "")
        )
        if data["charts_missing"]:
            print(f"no charts: {data['charts_missing']}")
        for chart in data["charts"]:
            print(f"chart ({chart['kind']}, {chart['group']}): {outcome.out / chart['file']}")
        print(f"results: {outcome.out / 'results.json'}")
        print(f"report: {outcome.out / 'report.md'}")
    if not bench_report.flashattention_timed(data["results"]):
        why = [line for line in bench_report.not_timed_lines(data) if " baseline capi " in line]
        raise NothingTimed(
            f"bench: FlashAttention was timed on no shape ({why[0] if why else 'no shape ran'}); "
            f"results in {outcome.out / 'results.json'}.",
            "Every call failed before it could be timed: a package built for another SoC does "
            "so (cannbuild doctor names this host's; rebuild with --soc), then rerun "
            "cannbuild validate.",
        )


def _compare(old: Optional[str], new: Optional[str], as_json: bool) -> None:
    if not old or not new:
        raise UsageError(
            "bench: a results file is only taken with --compare OLD.json NEW.json "
            f"(got {'--compare ' + old if old else new}).",
            "Example: cannbuild bench --compare old/results.json new/results.json",
        )
    from .. import ui_compare
    from ..bench import compare as bench_compare

    data = bench_compare.compare_results(
        bench_compare.load_results(Path(old), "--compare"),
        bench_compare.load_results(Path(new), "NEW"),
    )
    if as_json:
        ui.print_json(data)
    else:
        ui_compare.print_bench_compare(data, old, new)


TASKS = (bench,)
