"""The timeline picture: the device stream around the fused op and around an unfused
chain, side by side when both exist.

matplotlib is optional (`pip install 'cannbuild[bench]'`); without it the picture is
skipped and the caller says how to get it.  The Agg backend: no display is needed.
Kept free of profile-specific types beyond `Window`/`Span`, so `bench` can reuse
`pyplot` and `save_figure`.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from ..workspace import write_atomic
from .analysis import Window
from .ops import category

# Optional, imported where its absence is handled: matplotlib (missing(); pyplot() chooses
# the Agg backend before importing matplotlib.pyplot).
INSTALL_HINT = "pip install 'cannbuild[bench]'"
COLORS: Dict[str, str] = {
    "fused": "#d62728",
    "matmul": "#1f77b4",
    "softmax": "#ff7f0e",
    "between": "#9467bd",
    "other": "#b0b0b0",
}
LABELS = {
    "fused": "fused attention",
    "matmul": "MatMul",
    "softmax": "Softmax",
    "between": "scale/mask/dropout/view",
    "other": "other kernels",
}


def missing() -> Optional[str]:
    """Why no picture can be drawn here (None when matplotlib is importable)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"matplotlib is not installed: {INSTALL_HINT}"
    return None


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path, **options: Any) -> Path:
    """PNG bytes written atomically (never a half-written picture, and a link at the
    picture's name is replaced, not followed); the figure is closed."""
    buf = io.BytesIO()
    try:
        with warnings.catch_warnings():  # a name from the profile with a glyph no font has
            warnings.filterwarnings("ignore", message="Glyph .* missing", category=UserWarning)
            fig.savefig(buf, format="png", **options)
    finally:
        pyplot().close(fig)
    write_atomic(path, buf.getvalue())
    return path


def draw_timeline(windows: Sequence[Window], path: Path) -> Path:
    """The timeline figure (`timeline_figure`) as a PNG at `path`."""
    return save_figure(timeline_figure(windows), path, dpi=120, bbox_inches="tight")


# the view around the attention: this much of the longest attention's span either side of it
MARGIN = 0.3


def timeline_figure(windows: Sequence[Window]) -> Any:
    """One panel per window (fused first), kernels as bars on a millisecond axis from the
    window's first attention kernel; the panels share one time scale, so a bar's length
    compares across them (the fused op against the chain it replaces), and open on the
    attention: the longest one's span and MARGIN of it either side, the context kernels
    cut at the edges (a window of launch gaps and long neighbours would make the chain a
    hairline)."""
    plt = pyplot()
    ordered = sorted(windows, key=lambda w: w.kind != "fused")
    fig, axes = plt.subplots(
        1,
        len(ordered),
        figsize=(7.5 * len(ordered), 3.2),
        squeeze=False,
        sharey=True,
        sharex=True,
    )
    first = min(s.start_us for w in ordered for s in w.spans)
    seen = set()
    longest = 0.0
    for ax, window in zip(axes[0], ordered):
        lift = 0
        inside = [s for s in window.spans if s.attention] or list(window.spans)
        t0 = min(s.start_us for s in inside)
        longest = max(longest, max(s.start_us + s.dur_us for s in inside) - t0)
        for span in window.spans:
            kind = category(span.op_type)
            label = LABELS[kind] if kind not in seen else None
            seen.add(kind)
            y = 0.55 if span.attention else 0.2
            ax.broken_barh(
                [((span.start_us - t0) / 1000.0, max(span.dur_us, 0.01) / 1000.0)],
                (y, 0.3),
                facecolors=COLORS[kind],
                edgecolor="black" if span.attention else "none",
                linewidth=0.6,
                label=label,
            )
            if span.attention:
                lift = (lift + 1) % 3  # narrow neighbours' labels at three heights
                ax.annotate(
                    span.op_type,
                    ((span.start_us - t0 + span.dur_us / 2) / 1000.0, y + 0.32 + 0.12 * lift),
                    ha="center",
                    va="bottom",
                    fontsize=7,
                    rotation=30,
                )
        members = [s for s in window.spans if s.attention]
        busy = sum(s.dur_us for s in members)
        if window.kind == "fused":
            title = f"fused: {members[0].op_type} ({busy / 1000.0:.3f} ms)" if members else "fused"
        else:
            title = f"unfused: {' > '.join(s.op_type for s in members)} ({busy / 1000.0:.3f} ms)"
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(
            f"ms from the attention's first kernel, {(t0 - first) / 1000.0:.3f} ms after the "
            f"first one shown ({window.stream})",
            fontsize=8,
        )
        ax.set_yticks([0.35, 0.7])
        ax.set_yticklabels(["stream", "attention"], fontsize=8)
        ax.set_ylim(0, 1.6)
        ax.grid(axis="x", alpha=0.3)
    span_ms = max(longest, 1.0) / 1000.0
    axes[0][0].set_xlim(-MARGIN * span_ms, (1 + MARGIN) * span_ms)  # shared by every panel
    handles, labels = [], []
    for ax in axes[0]:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.subplots_adjust(bottom=0.3)
    return fig
