"""Rendering of `profile --compare`, `bench --compare` and a multi-rank profile's table
(the CLI layer: the core hands plain data over)."""

from __future__ import annotations

import sys
from typing import Any, Mapping, Optional, Sequence, TextIO

from .ui import printable

TOP = 20


def _us(value: float) -> str:
    return f"{value:.1f}"


def table(
    header: Sequence[str], rows: Sequence[Sequence[str]], stream: TextIO, numbers: bool = True
) -> None:
    """Columns as wide as their widest cell; `numbers`: all but the first right-aligned.
    Cells may be names read from a file: control characters are written as escapes."""
    rows = [[printable(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        cells = [
            c.rjust(w) if numbers and i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))
        ]
        stream.write("  " + "  ".join(cells).rstrip() + "\n")


def print_profile_compare(data: Mapping[str, Any], stream: TextIO = sys.stdout) -> None:
    stream.write(f"before: {data['before']}\nafter:  {data['after']}\n")
    ops = data["ops"]
    rows = [
        [
            o["type"],
            f"{o['before_count']} -> {o['after_count']}",
            _us(o["before_us"]),
            _us(o["after_us"]),
            f"{o['delta_us']:+.1f}",
        ]
        for o in ops[:TOP]
    ]
    table(["op type", "count", "before us", "after us", "delta us"], rows, stream)
    if len(ops) > TOP:
        stream.write(f"  ... {len(ops) - TOP} more op types (--json lists them all)\n")
    b, a = data["attention"]["before"], data["attention"]["after"]
    stream.write("attention:\n")
    for label, key in (
        ("fused calls", "fused_calls"),
        ("fused us", "fused_us"),
        ("  of it backward", "fused_backward_us"),
        ("unfused chains", "unfused_chains"),
        ("unfused us", "unfused_us"),
        ("forward attn us", "attention_us"),
        ("host fallbacks", "host_fallbacks"),
    ):
        before, after = b[key], a[key]
        if isinstance(before, float) or isinstance(after, float):
            before, after = f"{before:.1f}", f"{after:.1f}"
        stream.write(f"  {label + ':':18}{before} -> {after}\n")
    stream.write(f"verdict: {data['verdict']}\n")


def print_bench_compare(
    data: Mapping[str, Any], old: str, new: str, stream: TextIO = sys.stdout
) -> None:
    stream.write(f"old: {old}\nnew: {new}\n")

    def ms(value: Optional[float]) -> str:
        return "-" if value is None else f"{value:.3f}"

    rows = [
        [
            f"{r['variant']} {r['impl']} {r['shape']}",
            ms(r["old_median_ms"]),
            ms(r["new_median_ms"]),
            "-" if r["change"] is None else f"{r['change'] * 100:+.1f}%",
            f"{r['verdict']} ({r['old_n']} vs {r['new_n']}, {r['why']})" if "verdict" in r else "-",
        ]
        for r in data["rows"]
    ]
    table(["variant impl shape", "old ms", "new ms", "change", "verdict"], rows, stream)
    for label in ("only_old", "only_new"):
        if data[label]:
            stream.write(f"{label.replace('_', ' in ')}: {', '.join(data[label])}\n")
    stream.write(f"verdict: {data['verdict']}\n")


def print_ranks(data: Mapping[str, Any], stream: TextIO = sys.stdout) -> None:
    """One row per rank (profiler output) and the slowest named; nothing for one rank."""
    ranks = data.get("ranks")
    if not ranks:
        return
    rows = [
        [
            r["rank"],
            str(r["kernels"]),
            _us(r["device_total_us"]),
            _us(r["communication_us"]),
            _us(r["fused_us"]),
            str(r["unfused_chains"]),
            _us(r["unfused_us"]),
        ]
        for r in ranks
    ]
    total = [
        "sum",
        str(sum(r["kernels"] for r in ranks)),
        _us(sum(r["device_total_us"] for r in ranks)),
        _us(sum(r["communication_us"] for r in ranks)),
        _us(sum(r["fused_us"] for r in ranks)),
        str(sum(r["unfused_chains"] for r in ranks)),
        _us(sum(r["unfused_us"] for r in ranks)),
    ]
    stream.write("ranks:\n")
    table(
        ["rank", "kernels", "device us", "of it comm us", "fused us", "chains", "unfused us"],
        [*rows, total],
        stream,
    )
    stream.write(f"slowest: {data['slowest_rank']}\n")
