"""The op table, fused attention and the unfused-chain finder, on kernel sequences and on
the fixtures."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import List, Sequence

import pytest

from cannbuild.profile.analysis import Analyzer, Kernel
from cannbuild.profile.ops import type_from_name
from cannbuild.profile.summary import summarise

from clirun import cannbuild as cli

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profiler"


def run(*streams: Sequence[str], interleave: bool = False) -> Analyzer:
    """Feed op types as kernels of 1 us, one stream per sequence."""
    analyzer = Analyzer()
    kernels: List[Kernel] = []
    for s, types in enumerate(streams):
        kernels += [
            Kernel(stream=f"s{s}", name=t, op_type=t, start_us=float(i * 10 + s), dur_us=1.0)
            for i, t in enumerate(types)
        ]
    if interleave:
        kernels.sort(key=lambda k: k.start_us)
    for k in kernels:
        analyzer.add(k)
    return analyzer


@pytest.mark.parametrize(
    "types, chains",
    [
        (["MatMulV2", "Mul", "SoftmaxV2", "MatMulV2"], 1),
        (["BatchMatMul", "Mul", "ScaledMaskedSoftmax", "DropOutDoMask", "BatchMatMul"], 1),
        (["BatchMatMulV3", "Cast", "TransData", "Softmax", "Cast", "BatchMatMulV3"], 1),
        (["MatMul", "Softmax", "MatMul"], 1),
        (["MatMulV2", "Relu", "SoftmaxV2", "MatMulV2"], 0),  # Relu is no attention op
        (["MatMulV2", "Mul", "MatMulV2"], 0),  # no Softmax
        (["SoftmaxV2", "MatMulV2"], 0),
        (["MatMulV2", "MatMulV2", "SoftmaxV2", "MatMulV2"], 1),  # the second MatMul starts it
        (["MatMulV2", "SoftmaxV2", "MatMulV2"] * 3, 3),
        (["MatMulV2", "SoftmaxV2", "FlashAttentionScore", "MatMulV2"], 0),
    ],
)
def test_the_chain_finder_matches_matmul_softmax_matmul_with_what_real_graphs_put_between(
    types, chains
):
    assert run(types).result().chain_count == chains


def test_chains_are_found_per_stream_when_streams_interleave():
    one = ["MatMulV2", "Mul", "SoftmaxV2", "MatMulV2"]
    other = ["Add", "Relu", "Add", "Relu"]
    result = run(one, other, interleave=True).result()
    assert result.chain_count == 1 and result.chains[0].stream == "s0"
    assert run(one[:2] + other[1:2] + one[2:]).result().chain_count == 0  # same stream: broken


def test_the_op_table_is_sorted_by_device_time_and_counts_every_kernel():
    analyzer = Analyzer()
    for i, (t, d) in enumerate([("A", 5.0), ("B", 1.0), ("A", 7.0), ("C", 20.0)]):
        analyzer.add(Kernel(stream="s", name=t, op_type=t, start_us=float(i), dur_us=d))
    result = analyzer.result()
    assert [(o.op_type, o.count, o.total_us, o.max_us) for o in result.ops] == [
        ("C", 1, 20.0, 20.0),
        ("A", 2, 12.0, 7.0),
        ("B", 1, 1.0, 1.0),
    ]
    assert result.total_us == 33.0 and result.kernels == 4


@pytest.mark.parametrize(
    "name, op_type",
    [
        ("aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "FlashAttentionScore"),
        ("aclnnFlashAttentionScore_TransposeAiCore_Transpose", "Transpose"),
        ("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3"),
        # a variant tag after the type (msprof-analyze's sample) is no type
        (
            "aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore_varlen",
            "FlashAttentionScore",
        ),
        ("BatchMatMul96", "BatchMatMul"),
        ("ScaledMaskedSoftmax98", "ScaledMaskedSoftmax"),
        ("hcom_allReduce__445_2", "hcom_allReduce_"),  # msprof-analyze's sample: that Type
        ("MEMCPY_ASYNC", "MEMCPY_ASYNC"),
        # GE node numbers go, whatever the type (issue 28 item 8) ...
        ("ReduceSum7", "ReduceSum"),
        ("trans_TransData_9", "TransData"),
        ("trans_Cast_5", "Cast"),  # msprof-analyze's sample: Type Cast
        ("atomic_memset-1_69_2208226_1_0", "MemSet"),  # msprof-analyze's sample: Type MemSet
        ("LayerNorm90", "LayerNorm"),
        ("Conv2D12", "Conv2D"),
        ("GatherV282", "GatherV2"),  # msprof-analyze's sample: Type GatherV2
        ("BatchMatMulV2110", "BatchMatMulV2"),
        ("Relu613", "Relu6"),
        ("SplitV3", "SplitV"),
        ("Div15", "Div"),  # a type ending in a lower-case v is no version
        # ... but types that end in digits themselves stay whole
        ("MatMulV2", "MatMulV2"),
        ("MatMulV3", "MatMulV3"),
        ("BatchMatMulV3", "BatchMatMulV3"),
        ("SoftmaxV2", "SoftmaxV2"),
        ("Conv2D", "Conv2D"),
        ("Relu6", "Relu6"),
        ("Expm1", "Expm1"),
        ("AccumulateNv2", "AccumulateNv2"),
        (
            "StatelessDropOutGenMask23/DSASTATELESSGENBITMASK",
            "StatelessDropOutGenMask23/DSASTATELESSGENBITMASK",
        ),
    ],
)
def test_op_types_come_from_kernel_names_as_the_cann_tools_derive_them(name, op_type):
    assert type_from_name(name) == op_type


def test_level0_names_of_real_kernels_give_their_types():
    """At Level0 the type comes from the name: the variable-length FlashAttention kernel
    (`..._FlashAttentionScore_varlen`) is fused attention, not an op type `varlen`."""
    att = summarise(FIX / "level0_names", timeline=False).to_json()["attention"]["fused"]
    assert att["types"] == [
        {
            "type": "FlashAttentionScoreGrad",
            "direction": "backward",
            "count": 1,
            "total_us": 757.095,
        },
        {"type": "FlashAttentionScore", "direction": "forward", "count": 1, "total_us": 405.228},
    ]


def test_level0_atomic_clean_kernels_are_one_memset_type_not_one_type_per_name():
    ops = summarise(FIX / "level0_names", timeline=False).to_json()["ops"]
    memset = [o for o in ops if "memset" in o["type"].lower()]
    assert [(o["type"], o["count"], o["total_us"]) for o in memset] == [("MemSet", 2, 3.46)]


def test_level0_collectives_are_one_type_per_collective_not_one_per_call():
    ops = summarise(FIX / "level0_names", timeline=False).to_json()["ops"]
    hcom = [(o["type"], o["count"], o["total_us"]) for o in ops if o["type"].startswith("hcom")]
    assert hcom == [("hcom_allReduce_", 2, 4831.24)]


def test_the_level0_fixture_shows_fused_and_one_unfused_chain_but_no_saving_without_shapes():
    data = summarise(FIX / "torch_npu_2.13_level0").details()
    assert [o["total_us"] for o in data["ops"]] == sorted(
        (o["total_us"] for o in data["ops"]), reverse=True
    )
    fa = data["ops"][0]
    assert (fa["type"], fa["count"], fa["total_us"], fa["max_us"]) == (
        "FlashAttentionScore",
        2,
        60.06,
        30.16,
    )
    att = data["attention"]
    assert att["fused"] == {
        "type": "FlashAttentionScore",
        "count": 2,
        "total_us": 60.06,
        "types": [
            {"type": "FlashAttentionScore", "direction": "forward", "count": 2, "total_us": 60.06}
        ],
        "shapes": [],  # Level0: no shapes to class the calls by
    }
    assert (att["unfused_chains"]["count"], att["unfused_chains"]["total_us"]) == (1, 38.3)
    # no shapes: whether the fused calls computed the chain's attention cannot be told
    assert att["opportunity"]["matched_chains"] == 0
    assert att["opportunity"]["estimated_saving_us"] is None
    assert [f["kind"] for f in data["files"]] == [
        "kernel_details",
        "trace_view",
        "operator_details",
    ]


def test_a_folder_of_runs_adds_them_up():
    whole = summarise(FIX).analysis
    parts = [
        summarise(FIX / d).analysis
        for d in (
            "torch_npu_2.13_level0",
            "torch_npu_2.5_level1",
            "msprof",
            "attention_patterns",
            "fa_shapes",
            "host_fallback",
            "hccl_ranks",
            "level0_names",
            "msprof_devices",
        )
    ]
    assert whole.kernels == sum(p.kernels for p in parts) == 29 + 80 + 7 + 4 + 6 + 7 + 6
    assert (
        whole.chain_count == len(whole.chain_list) == 3 + 6 + 1
    )  # host_fallback: the NPU attention


@pytest.mark.xdist_group("matplotlib")  # the worker that imports it for test_bench_charts
def test_the_timeline_png_shows_fused_and_unfused_side_by_side(tmp_path):
    pytest.importorskip("matplotlib", reason="the timeline needs matplotlib (cannbuild[bench])")
    from cannbuild.profile.chart import draw_timeline

    summary = summarise(FIX / "torch_npu_2.13_level0")
    assert sorted(w.kind for w in summary.analysis.windows) == ["fused", "unfused"]
    unfused = next(w for w in summary.analysis.windows if w.kind == "unfused")
    assert [s.op_type for s in unfused.spans if s.attention] == [
        "BatchMatMulV2",
        "Mul",
        "SoftmaxV2",
        "BatchMatMulV2",
    ]
    data = draw_timeline(summary.analysis.windows, tmp_path / "t.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert width > 2 * height  # two panels side by side


def test_profile_json_is_exactly_the_documented_schema_and_the_rest_goes_to_stderr(tmp_path):
    proc = cli(
        "profile", str(FIX / "torch_npu_2.5_level1"), "--json", "--out", "pics", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == {"ops", "attention", "files"}
    for op in data["ops"]:
        assert set(op) == {"type", "count", "total_us", "mean_us", "max_us", "share"}
    totals = [op["total_us"] for op in data["ops"]]
    assert totals == sorted(totals, reverse=True)
    assert set(data["attention"]) == {"fused", "unfused_chains", "host_fallbacks"}
    assert set(data["attention"]["fused"]) == {"type", "count", "total_us", "types", "shapes"}
    assert data["attention"]["fused"] == {
        "type": None,
        "count": 0,
        "total_us": 0.0,
        "types": [],
        "shapes": [],
    }
    assert isinstance(data["attention"]["fused"]["total_us"], float)  # a number type, always
    chains = data["attention"]["unfused_chains"]
    assert set(chains) == {"count", "total_us", "chains", "unlisted"}
    assert chains["count"] == len(chains["chains"]) == 2 and chains["unlisted"] == 0
    assert chains["total_us"] == round(sum(c["total_us"] for c in chains["chains"]), 3)
    assert data["files"] and all("path" in f for f in data["files"])
    picture = tmp_path / "pics" / "timeline.png"
    assert f"timeline: {picture}" in proc.stderr.splitlines()
    assert picture.read_bytes()[:4] == b"\x89PNG"


def test_without_matplotlib_profile_still_reads_and_says_how_to_get_the_picture(tmp_path):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "matplotlib.py").write_text("raise ImportError('blocked for the test')\n")
    proc = cli(
        "profile",
        str(FIX / "torch_npu_2.5_level1"),
        "--out",
        "pics",
        cwd=tmp_path,
        # before the caller's PYTHONPATH (a checkout under test), not instead of it
        PYTHONPATH=os.pathsep.join(filter(None, (str(blocker), os.environ.get("PYTHONPATH")))),
    )
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'cannbuild[bench]'" in proc.stdout
    assert not (tmp_path / "pics").exists()


def test_a_cut_file_exits_2_naming_it_without_a_traceback(tmp_path):
    source = next(
        (FIX / "torch_npu_2.13_level0").glob("*/ASCEND_PROFILER_OUTPUT/kernel_details.csv")
    )
    bad = tmp_path / "kernel_details.csv"
    bad.write_bytes(source.read_bytes()[:-30])
    proc = cli("profile", str(bad), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"cannbuild: {bad} line 14:") and "Traceback" not in proc.stderr


@pytest.mark.xdist_group("matplotlib")  # the worker that imports it for test_bench_charts
def test_the_timeline_opens_on_the_attention_with_both_panels_on_one_scale():
    pytest.importorskip("matplotlib", reason="the timeline needs matplotlib (cannbuild[bench])")
    from cannbuild.profile.chart import MARGIN, pyplot, timeline_figure

    windows = summarise(FIX / "torch_npu_2.13_level0").analysis.windows
    fig = timeline_figure(windows)
    try:
        fused, unfused = fig.axes[:2]
        assert fused.get_title().startswith("fused:") and unfused.get_title().startswith("unfused:")
        assert fused.get_shared_x_axes().joined(fused, unfused)
        assert fused.get_xlim() == unfused.get_xlim()
        span_ms = 0.0
        for ax in (fused, unfused):
            window = next(w for w in windows if ax.get_title().startswith(w.kind))
            assert ax.get_xlabel().startswith("ms from the attention's first kernel")
            inside = [s for s in window.spans if s.attention]
            t0 = min(s.start_us for s in inside)
            span_ms = max(span_ms, max(s.start_us + s.dur_us - t0 for s in inside) / 1e3)
            starts = sorted(bars.get_paths()[0].vertices[0][0] for bars in ax.collections)
            assert 0.0 in [pytest.approx(x, abs=1e-9) for x in starts]  # the attention's first
        # the view: the longest attention and a margin of it either side, in ms (not us)
        assert fused.get_xlim() == pytest.approx((-MARGIN * span_ms, (1 + MARGIN) * span_ms))
    finally:
        pyplot().close(fig)


def test_a_trace_without_torch_to_npu_flows_calls_no_torch_op_a_host_fallback():
    """Without flows a trace cannot tell a host op from one that launched device work: the
    real eager trace's aten::matmul is not judged, and no fallback is reported."""
    from cannbuild.profile.trace import read_trace

    eager = FIX / "attention_patterns" / "eager"
    (trace,) = eager.glob("*/ASCEND_PROFILER_OUTPUT/trace_view.json")
    analysis, _ = read_trace(trace)
    (matmul,) = [o for o in analysis.host_ops if o.name == "aten::matmul"]
    assert matmul.judged is False and matmul.host_only == 0 and not matmul.is_fallback
    assert summarise(eager, timeline=False).to_json()["attention"]["host_fallbacks"] == []


def test_the_time_in_collectives_is_said_apart_from_the_computing():
    """A training step's all-reduce is waiting as much as work: the profile gives its time
    beside the total (JSON and text), and says nothing of it where there is none."""
    import io

    from cannbuild.ui import print_profile

    with_hccl = summarise(FIX / "hccl_ranks" / "rank0_ascend_pt").details()
    assert (with_hccl["device_total_us"], with_hccl["communication_us"]) == (6229.99, 5210.48)
    text = io.StringIO()
    print_profile(with_hccl, text)
    assert "collectives: 5210.5 us of it (84%); computing 1019.5 us" in text.getvalue()
    without = summarise(FIX / "fa_shapes").details()
    assert without["communication_us"] == 0
    text = io.StringIO()
    print_profile(without, text)
    assert "collectives" not in text.getvalue()
