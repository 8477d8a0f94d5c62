"""The bench charts a user reads: the spread, what was timed, what the letters mean, the 1.0
line; checked through matplotlib's own objects (titles, lines, shaded areas), not pixels."""

from __future__ import annotations

import msgspec
import pytest

from cannbuild.bench import charts
from cannbuild.bench.routes import CAPI, LABELS, SDPA
from cannbuild.bench.shapes import bench_shape
from cannbuild.bench.sweep import BASELINE, TIMED, Measurement, SweepResult
from cannbuild.bench.timing import Timing

# matplotlib (and numpy under it: 0.55 s) is imported by the tests, not at collection: every
# xdist worker collects this module, one runs it.
pytestmark = pytest.mark.xdist_group("matplotlib")


@pytest.fixture(autouse=True)
def _matplotlib():
    pytest.importorskip("matplotlib", reason="the charts need matplotlib (cannbuild[bench])")


def _result() -> SweepResult:
    """C API and SDPA on a GQA curve (8 query heads, 2 KV heads) at two lengths; the C API's
    times spread 1.0-3.0 ms around a 2.0 ms median, SDPA's are 4.0 ms flat."""
    out = SweepResult()
    for S in (128, 256):
        shape = bench_shape("fp32", "BNSD", 1, 8, 2, S, 64, False)
        for impl, times in ((CAPI, (1.0, 1.5, 2.0, 2.5, 3.0)), (SDPA, (4.0, 4.0, 4.0))):
            out.measurements.append(
                Measurement(
                    variant=BASELINE,
                    impl=impl,
                    shape=shape,
                    status=TIMED,
                    timing=Timing(times_ms=times),
                )
            )
    return out


def _figure(kind: str, value: str, emulated: bool):
    group, lines = next(iter(charts.series(_result(), value).items()))
    title = charts.chart_title(kind, group, emulated)
    return charts.figure(title, kind, lines, kind == "speedup")


def test_the_error_bars_are_the_interquartile_range_of_the_timings():
    group = charts.series(_result(), "speedup")["fp32 BNSD B1 N8/2 D64"]
    (point, _) = sorted(group[LABELS[CAPI]])
    # SDPA 4.0 ms against the C API's median 2.0 ms, quartiles 1.5 and 2.5 ms
    assert (point.value, point.low, point.high) == pytest.approx((2.0, 4.0 / 2.5, 4.0 / 1.5))
    fig = _figure("speedup", "speedup", emulated=False)
    from matplotlib.collections import LineCollection

    (bars,) = [c for c in fig.axes[0].collections if isinstance(c, LineCollection)]
    spans = sorted((min(seg[:, 1]), max(seg[:, 1])) for seg in bars.get_segments())
    assert spans[0] == pytest.approx((4.0 / 2.5, 4.0 / 1.5))


def test_lines_of_equal_values_stay_apart_with_their_own_markers():
    # the C API at exactly SDPA's speed: its points must not hide under SDPA's
    out = _result()
    out.measurements = [
        msgspec.structs.replace(m, timing=Timing(times_ms=(4.0, 4.0, 4.0)))
        for m in out.measurements
    ]
    _group, lines = next(iter(charts.series(out, "tflops").items()))
    ax = charts.figure("t", "TFLOP/s", lines, False).axes[0]
    drawn = [bars.lines[0] for bars in ax.containers]  # each errorbar's data line
    assert len(drawn) == 2 and drawn[0].get_marker() != drawn[1].get_marker()
    assert list(drawn[0].get_xdata()) != list(drawn[1].get_xdata())


def test_a_group_of_one_shape_is_a_bar_per_implementation_with_its_error_bar():
    out = _result()
    out.measurements = [m for m in out.measurements if m.shape.S == 128]
    _group, lines = next(iter(charts.series(out, "tflops").items()))
    ax = charts.figure("t", "TFLOP/s", lines, False).axes[0]
    heights = sorted(round(b.get_height(), 6) for b in ax.patches)
    assert heights == sorted(round(p[0].value, 6) for p in lines.values()) and len(heights) == 2
    names = [t.get_text() for t in ax.get_xticklabels()]
    assert names == ["FlashAttention\n(C API)", "torch SDPA"]
    assert "interquartile range" in ax.get_xlabel()


def test_a_speedup_chart_draws_the_1_0_line_and_a_throughput_chart_does_not():
    speedup = _figure("speedup", "speedup", emulated=False).axes[0]
    flat = [line for line in speedup.lines if set(line.get_ydata()) == {1.0}]
    assert len(flat) == 1 and "SDPA" in flat[0].get_label()
    throughput = _figure("throughput", "tflops", emulated=False).axes[0]
    assert not [line for line in throughput.lines if set(line.get_ydata()) == {1.0}]


def test_titles_spell_out_the_heads_and_mark_the_sandbox_as_cpu_emulation():
    emulated = _figure("throughput", "tflops", emulated=True).axes[0].get_title()
    assert emulated.startswith("CPU emulation (sandbox, not an NPU): throughput: ")
    assert "N=8 query heads / 2 KV heads" in emulated and "D=64 head dim" in emulated
    on_npu = _figure("throughput", "tflops", emulated=False).axes[0].get_title()
    assert "CPU emulation" not in on_npu and "N=8 query heads / 2 KV heads" in on_npu
    assert charts.explain_group("fp16 BSH B2 N4 D128 causal") == (
        "B=2 batch, N=4 heads, D=128 head dim"
    )


def test_write_charts_names_its_files_and_marks_them_as_emulated(tmp_path):
    made = charts.write_charts(_result(), tmp_path, has_variants=False, emulated=True)
    assert sorted(c["kind"] for c in made) == ["speedup", "throughput"]  # no memory measured
    for chart in made:
        assert (tmp_path / chart["file"]).read_bytes()[:4] == b"\x89PNG"
