"""PNG charts with matplotlib's headless Agg backend (the optional `cannbuild[bench]`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, NamedTuple, Sequence

from ..profile.chart import pyplot, save_figure
from .routes import CAPI, LABELS, SDPA, TORCH_NPU, UNFUSED
from .sweep import BASELINE, SweepResult
from .timing import quartiles

# matplotlib is optional: profile/chart.py says whether it is there (missing()) and imports
# pyplot with the Agg backend (pyplot()).
KINDS = (
    ("throughput", "tflops", "TFLOP/s"),
    ("speedup", "speedup", "speedup vs SDPA (x)"),
    ("memory", "memory", "peak memory beyond the inputs (MiB)"),
)


class Point(NamedTuple):
    """One marker: S, the median's value, and the value at the timing's quartiles (the
    spread drawn around the line; equal to the value where there is none, e.g. memory)."""

    S: int
    value: float
    low: float
    high: float


def series(
    result: SweepResult, value: str, capi_only: bool = False
) -> Dict[str, Dict[str, List[Point]]]:
    """{group (dtype/layout/B/N/D): {line label: [Point]}} of the timed results;
    value is tflops, speedup or memory (MiB)."""
    groups: Dict[str, Dict[str, List[Point]]] = {}
    for m in result.measurements:
        if m.timing is None or (capi_only and m.impl != CAPI):
            continue
        q1, _, q3 = quartiles(m.timing.times_ms)
        if value == "tflops":
            flops = m.shape.flops / 1e9  # TFLOP/s = flops / (ms * 1e-3) / 1e12
            y, low, high = m.timing.tflops(m.shape.flops), flops / q3, flops / q1
        elif value == "memory":
            if m.peak_memory_bytes is None:
                continue
            y = low = high = m.peak_memory_bytes / 2**20
        else:
            sdpa = result.sdpa_ms(m.shape)
            if not sdpa or m.impl == SDPA:
                continue
            y, low, high = sdpa / m.timing.median_ms, sdpa / q3, sdpa / q1
        label = LABELS[m.impl] if m.variant == BASELINE else f"variant {m.variant} (C API)"
        line = groups.setdefault(m.shape.series, {}).setdefault(label, [])
        line.append(Point(m.shape.S, y, low, high))
    return groups


_DIMS = re.compile(r"\bB(\d+) N(\d+)(?:/(\d+))? D(\d+)\b")


def explain_group(group: str) -> str:
    """What a group's letters mean, for a title: `B1 N8/2 D64` is batch 1, 8 query heads
    sharing 2 KV heads (GQA), head dim 64."""
    found = _DIMS.search(group)
    if found is None:
        return ""
    b, n1, n2, d = found.groups()
    heads = f"N={n1} query heads / {n2} KV heads" if n2 else f"N={n1} heads"
    return f"B={b} batch, {heads}, D={d} head dim"


def chart_title(what: str, group: str, emulated: bool) -> str:
    """Two lines: what and the group, then its letters spelled out; a sandbox chart says
    it timed the CPU emulation, not an NPU."""
    head = f"{what}: {group}"
    if emulated:
        head = f"CPU emulation (sandbox, not an NPU): {head}"
    explained = explain_group(group)
    return f"{head}\n{explained}" if explained else head


MARKERS = "osD^v<>p"
# a bar's name under it, in two short lines
BAR_NAMES = {
    LABELS[CAPI]: "FlashAttention\n(C API)",
    LABELS[TORCH_NPU]: "FlashAttention\n(torch_npu)",
    LABELS[SDPA]: "torch SDPA",
    LABELS[UNFUSED]: "torch unfused\nMatMul>Softmax>MatMul",
}


def figure(title: str, ylabel: str, lines: Mapping[str, Sequence[Point]], speedup: bool) -> Any:
    """Each implementation's median with its interquartile range as error bars: over S
    (log 2) a line per implementation, each with its own marker and a little apart from the
    others so that equal values do not hide one another; a group of one S is a bar per
    implementation.  Memory on a log scale (it grows with S or S² by implementation); a
    speedup chart's dashed 1.0 line is SDPA's own speed."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.4), dpi=90)
    labels = sorted(lines)
    sizes = {p.S for points in lines.values() for p in points}
    spread = any(p.low != p.high for points in lines.values() for p in points)
    if len(sizes) == 1:  # a bar per implementation, its IQR the error bar, its value on it
        points = [lines[label][0] for label in labels]
        spans = [[p.value - p.low for p in points], [p.high - p.value for p in points]]
        bars = ax.bar(
            range(len(labels)),
            [p.value for p in points],
            color=[f"C{i}" for i in range(len(labels))],
            yerr=spans if spread else None,
            capsize=6,
        )
        ax.bar_label(bars, fmt="%.3g", fontsize=7, padding=2)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels([BAR_NAMES.get(x, x.replace(" ", "\n", 1)) for x in labels], fontsize=7)
        ax.set_xlabel(
            f"S = {sizes.pop()}"
            + (" (error bars: interquartile range of the timings)" if spread else "")
        )
    else:
        for i, label in enumerate(labels):
            ordered = sorted(lines[label])
            # a few percent apart on the log-2 axis: coinciding points stay visible
            nudge = 2 ** (0.04 * (i - (len(labels) - 1) / 2))
            ax.errorbar(
                [p.S * nudge for p in ordered],
                [p.value for p in ordered],
                yerr=[[p.value - p.low for p in ordered], [p.high - p.value for p in ordered]],
                marker=MARKERS[i % len(MARKERS)],
                capsize=3,
                label=label,
            )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length S (error bars: interquartile range of the timings)")
    if speedup:
        ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8, label="1.0: as fast as SDPA")
    if "memory" in ylabel and all(p.value > 0 for points in lines.values() for p in points):
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # a bar chart names its bars on the axis
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _save(fig: Any, path: Path) -> None:
    save_figure(fig, path, metadata={"Software": None})


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-").replace("--", "-")


def write_charts(
    result: SweepResult, out: Path, has_variants: bool, emulated: bool = False
) -> List[Dict[str, Any]]:
    """Throughput, speedup vs SDPA and peak memory vs S per group; each variant against the
    baseline; `emulated`: timed on the sandbox's CPU emulation (the titles say so).
    Returns [{file, kind, group, series}] for results.json."""
    made: List[Dict[str, Any]] = []
    for kind, value, ylabel in KINDS:
        for group, lines in sorted(series(result, value).items()):
            name = f"{kind}-{_slug(group)}.png"
            title = chart_title(kind, group, emulated)
            _save(figure(title, ylabel, lines, kind == "speedup"), out / name)
            made.append({"file": name, "kind": kind, "group": group, "series": sorted(lines)})
    if has_variants:
        for group, lines in sorted(series(result, "tflops", capi_only=True).items()):
            name = f"variants-{_slug(group)}.png"
            title = chart_title("build variants vs baseline", group, emulated)
            _save(figure(title, "TFLOP/s", lines, False), out / name)
            made.append({"file": name, "kind": "variants", "group": group, "series": sorted(lines)})
    return made
