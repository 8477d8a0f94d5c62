"""PNG charts with matplotlib's headless Agg backend (the optional `cannbuild[bench]`)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..workspace import write_atomic
from .routes import CAPI, LABELS, SDPA
from .sweep import BASELINE, SweepResult

# Optional, imported where its absence is handled: matplotlib (why_no_matplotlib(); _pyplot()
# chooses the Agg backend before importing matplotlib.pyplot).
KINDS = (
    ("throughput", "tflops", "TFLOP/s"),
    ("speedup", "speedup", "speedup vs SDPA (x)"),
    ("memory", "memory", "peak memory beyond the inputs (MiB)"),
)
INSTALL_HINT = "pip install 'cannbuild[bench]' (matplotlib), then rerun cannbuild bench"


def why_no_matplotlib() -> Optional[str]:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"matplotlib is not installed: {INSTALL_HINT}"
    return None


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _label(variant: str, impl: str) -> str:
    return LABELS[impl] if variant == BASELINE else f"variant {variant} (C API)"


def series(
    result: SweepResult, value: str, capi_only: bool = False
) -> Dict[str, Dict[str, List[Tuple[int, float]]]]:
    """{group (dtype/layout/B/N/D): {line label: [(S, value)]}} of the timed results;
    value is tflops, speedup or memory (MiB)."""
    groups: Dict[str, Dict[str, List[Tuple[int, float]]]] = {}
    for m in result.measurements:
        if m.timing is None or (capi_only and m.impl != CAPI):
            continue
        if value == "tflops":
            y = m.timing.tflops(m.shape.flops)
        elif value == "memory":
            if m.peak_memory_bytes is None:
                continue
            y = m.peak_memory_bytes / 2**20
        else:
            sdpa = result.sdpa_ms(m.shape)
            if not sdpa or m.impl == SDPA:
                continue
            y = sdpa / m.timing.median_ms
        line = groups.setdefault(m.shape.series, {}).setdefault(_label(m.variant, m.impl), [])
        line.append((m.shape.S, y))
    return groups


def _plot(path: Path, title: str, ylabel: str, lines: Dict[str, List[Tuple[int, float]]]) -> None:
    """Log-2 S; memory on a log scale too (it grows with S or S² by implementation)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=90)
    for label, points in sorted(lines.items()):
        points = sorted(points)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_xscale("log", base=2)
    if "memory" in ylabel and all(p[1] > 0 for points in lines.values() for p in points):
        ax.set_yscale("log")
    ax.set_xlabel("sequence length S")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()  # written atomically: a link at the chart's name is replaced, not followed
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    write_atomic(path, buf.getvalue())


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-").replace("--", "-")


def write_charts(result: SweepResult, out: Path, has_variants: bool) -> List[Dict[str, Any]]:
    """Throughput, speedup vs SDPA and peak memory vs S per group; each variant against the baseline.
    Returns [{file, kind, group, series}] for results.json."""
    made: List[Dict[str, Any]] = []
    for kind, value, ylabel in KINDS:
        for group, lines in sorted(series(result, value).items()):
            name = f"{kind}-{_slug(group)}.png"
            _plot(out / name, f"{kind}: {group}", ylabel, lines)
            made.append({"file": name, "kind": kind, "group": group, "series": sorted(lines)})
    if has_variants:
        for group, lines in sorted(series(result, "tflops", capi_only=True).items()):
            name = f"variants-{_slug(group)}.png"
            _plot(out / name, f"build variants vs baseline: {group}", "TFLOP/s", lines)
            made.append({"file": name, "kind": "variants", "group": group, "series": sorted(lines)})
    return made
