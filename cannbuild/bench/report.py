"""results.json (schema in docs/bench.md) and report.md."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .routes import CAPI, LABELS, SDPA, TORCH_NPU, UNFUSED
from .sweep import BASELINE, NOT_RUN, TIMED, SweepResult

SCHEMA = "cannbuild-bench/1"
MEMORY_NOTE = (
    "Peak memory is what the checked call needed beyond its inputs, each as its device "
    "reports it: C API, the drop in free device memory (aclrtGetMemInfo) from inputs resident "
    "to after the call (outputs, softmax statistics, workspace; on a shared NPU other "
    "processes' allocations count too); torch_npu, the peak of torch_npu's caching allocator "
    "(torch.npu.max_memory_allocated) over what was allocated before the call; torch on the "
    "CPU, how far the process's resident set grew (VmHWM after it minus VmRSS before it), a "
    "lower bound (freed pages are returned first, but pages still reused are not counted). — : not measured."
)


def results_json(
    result: SweepResult,
    meta: Mapping[str, Any],
    variants: Sequence[Mapping[str, Any]],
    charts: Sequence[Mapping[str, Any]],
    charts_missing: Optional[str],
) -> Dict[str, Any]:
    shapes = {m.shape.name: m.shape for m in result.measurements}
    return {
        "schema": SCHEMA,
        **meta,
        "variants": list(variants),
        "shapes": [s.to_json() for s in sorted(shapes.values(), key=lambda s: (s.S, s.name))],
        "results": [m.to_json(result.sdpa_ms(m.shape)) for m in result.measurements],
        "not_run": [{"shape": s.shape.to_json(), "reason": s.reason} for s in result.skipped],
        "charts": list(charts),
        "charts_missing": charts_missing,
        "sweep_s": round(result.duration_s, 3),
        "host": result.host_json(),
    }


_CONDITIONS = (
    "torch on {torch_threads} threads of {cores} cores; the routes timed in {rounds} rounds "
    "each, in turn; load average up to {load_max}"
)


def not_timed_lines(data: Mapping[str, Any]) -> List[str]:
    """One line per implementation and reason for what was not timed: a route that could
    not run (a torch_npu that aborts at import) is said once with the shapes it spans, not
    once per shape."""
    groups: Dict[Tuple[str, str, str, str], List[str]] = {}
    for r in data["results"]:
        if r["status"] != TIMED:
            key = (r["status"], r["variant"], r["impl"], r["reason"])
            groups.setdefault(key, []).append(r["shape"])
    total = len(data["shapes"])
    lines: List[str] = []
    for (status, variant, impl, reason), shapes in groups.items():
        if len(shapes) == total and total > 1:
            spans = f"every shape ({total})"
        elif len(shapes) > 3:
            spans = f"{len(shapes)} shapes ({', '.join(shapes[:3])}, ...)"
        else:
            spans = ", ".join(shapes)
        word = "not run" if status == NOT_RUN else "not timed"
        lines.append(f"{word}: {variant} {impl} on {spans}: {reason}")
    return lines


def flashattention_timed(results: Sequence[Mapping[str, object]]) -> bool:
    """Whether the baseline's FlashAttention (C API or torch_npu) was timed on any shape."""
    return any(
        r["variant"] == BASELINE and r["impl"] in (CAPI, TORCH_NPU) and r["status"] == TIMED
        for r in results
    )


def _fmt(value: Optional[float], digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}g}"


def report_md(data: Mapping[str, Any]) -> str:
    lines: List[str] = [
        "# cannbuild bench",
        "",
        f"Run `{data['run_id']}` on {data['target']} ({data['machine']['cpu_count']} CPUs); "
        f"CANN {data['versions'].get('cann')}, torch {data['versions'].get('torch')}, "
        f"torch_npu {data['versions'].get('torch_npu') or 'not installed'}.",
        f"Package {data['package']['library']} (sha256 {data['package']['sha256'][:16]}…), "
        + ", ".join(f"{r} {c[:12]}" for r, c in sorted(data["commits"].items())),
        "",
        _CONDITIONS.format(**data["host"])
        + (
            f" (**loaded**: above the cores for {', '.join(data['host']['loaded_shapes'])}: "
            "those timings are slower and wider than the host can do)."
            if data["host"]["loaded"]
            else "."
        ),
        "",
        "Every implementation ran each shape once and was judged against a float64 reference "
        f"({data['rule']}) before it was timed; a result that failed is listed, not timed. "
        "Times are medians of the repetitions (C API: between two ACL events on the stream; "
        "torch on the CPU: wall time per call), IQR is the spread; TFLOP/s counts "
        "4·B·N·S²·D per forward (half with a causal mask).",
        "",
        "| shape | implementation | median ms | IQR ms | TFLOP/s | vs SDPA | peak MiB | check |",
        "|---|---|---|---|---|---|---|---|",
    ]
    order = {CAPI: 0, TORCH_NPU: 1, SDPA: 2, UNFUSED: 3}
    rows = sorted(
        data["results"],
        key=lambda r: (r["shape"], r["variant"] != BASELINE, r["variant"], order[r["impl"]]),
    )
    for r in rows:
        t = r["timing"] or {}
        impl = LABELS[r["impl"]] if r["variant"] == BASELINE else f"variant {r['variant']}"
        check = r["check"]["status"] if r["check"] else r["status"]
        peak = r["peak_memory_bytes"]
        mib = None if peak is None else peak / 2**20
        if r["status"] != TIMED:
            check = f"{check}: {r['reason']}"
        lines.append(
            f"| {r['shape']} | {impl} | {_fmt(t.get('median_ms'), 4)} | {_fmt(t.get('iqr_ms'), 2)} "
            f"| {_fmt(t.get('tflops'))} | {_fmt(r['speedup_vs_sdpa'])} | {_fmt(mib)} | {check} |"
        )
    if data["variants"]:
        lines += [
            "",
            "## Build variants",
            "",
            "| variant | how | build | validation |",
            "|---|---|---|---|",
        ]
        for v in data["variants"]:
            lines.append(f"| {v['name']} | {v['how']} | {v['build']} | {v['validation']} |")
    if data["not_run"]:
        lines += ["", "## Not run", ""]
        lines += [f"- {n['shape']['name']}: {n['reason']}" for n in data["not_run"]]
    lines += ["", "## Charts", ""]
    if data["charts_missing"]:
        lines.append(f"No charts: {data['charts_missing']}.")
    for chart in data["charts"]:
        lines.append(f"![{chart['kind']} {chart['group']}]({chart['file']})")
    lines += ["", MEMORY_NOTE, ""]
    return "\n".join(lines)
