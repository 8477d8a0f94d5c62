"""Unfused attention chains as real graphs leave them on a device stream, fused calls by
direction, GE node names in a trace-only op table, and the timeline's fallback, on the
real-shaped samples in tests/fixtures/profiler/attention_patterns (see its .source)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Sequence, Tuple

import pytest

from cannbuild.profile.analysis import MAX_LISTED, Analyzer, Kernel
from cannbuild.profile.chains import MAX_BETWEEN
from cannbuild.profile.summary import summarise

from clirun import cannbuild as cli

PATTERNS = Path(__file__).resolve().parents[1] / "fixtures" / "profiler" / "attention_patterns"


def found(run: str) -> List[Tuple[str, ...]]:
    return [
        tuple(k.op_type for k in c.kernels) for c in summarise(PATTERNS / run).analysis.chain_list
    ]


@pytest.mark.parametrize(
    "run, ops, shapes",
    [
        # FlashAttentionFusionPass (op_fusion_pass.yaml), aclnn kernel names, torch_npu eager
        (
            "eager",
            ("BatchMatMulV2", "Mul", "SoftmaxV2", "BatchMatMulV2"),
            "16,1024,128;16,128,1024",
        ),
        # npu_fusion_attention's aten pattern: scale (a division), additive mask, dropout, and a
        # view of V before the second MatMul
        (
            "eager",
            (
                "BatchMatMulV3",
                "RealDiv",
                "Add",
                "SoftmaxV2",
                "DropOutDoMaskV3",
                "ViewCopy",
                "BatchMatMulV3",
            ),
            "16,1024,128;16,128,1024",
        ),
        # autocast: masked_fill, the Softmax in fp32 between two Casts, V as a strided view
        (
            "eager",
            (
                "BatchMatMulV2",
                "Muls",
                "MaskedFill",
                "Cast",
                "SoftmaxV2",
                "Cast",
                "AsStrided",
                "BatchMatMulV2",
            ),
            "16,1024,128;16,128,1024",
        ),
        # the real Megatron sample's order on stream 16 (GE names, msprof op_summary), while stream
        # 17 runs trans_Cast_18 and the dropout mask between ScaledMaskedSoftmax98 and
        # DropOutDoMask100
        (
            "graph",
            (
                "BatchMatMul",
                "Mul",
                "ScaledMaskedSoftmax",
                "DropOutDoMask",
                "AsStrided",
                "BatchMatMul",
            ),
            "12,1024,512;12,512,1024",
        ),
        # FlashAttentionFusionPass_V2: Mul -> TransData -> Softmax
        (
            "graph",
            ("BatchMatMulV2", "Mul", "TransData", "SoftmaxV2", "BatchMatMulV2"),
            "12,1024,512;12,512,1024",
        ),
        # the same from a trace alone (GE node names `SoftmaxV299`, `trans_TransData_98`): no shapes
        ("graph_trace", ("BatchMatMul", "Mul", "TransData", "SoftmaxV2", "BatchMatMul"), ""),
    ],
)
def test_each_pattern_real_graphs_make_is_one_chain_with_its_ops_time_and_shapes(run, ops, shapes):
    analysis = summarise(PATTERNS / run).analysis
    chain = next(c for c in analysis.chain_list if tuple(k.op_type for k in c.kernels) == ops)
    assert chain.kernels[0].input_shapes == shapes
    assert chain.total_us == pytest.approx(sum(k.dur_us for k in chain.kernels))
    assert all(k.dur_us > 0 for k in chain.kernels)


def test_a_chain_broken_by_a_non_view_op_or_past_the_bound_is_not_matched():
    chains = found("eager")
    # the eager sample also holds BatchMatMulV2 > Mul > SoftmaxV2 > GeluV2 > BatchMatMulV2 and a
    # Softmax followed by thirteen view kernels: neither is a chain
    assert len(chains) == 3
    assert not any("GeluV2" in c or "Transpose" in c for c in chains)
    assert found("graph_trace") == [("BatchMatMul", "Mul", "TransData", "SoftmaxV2", "BatchMatMul")]


def feed(types: Sequence[str], analyzer: Analyzer, stream: str = "s", t0: float = 0.0) -> None:
    for i, t in enumerate(types):
        analyzer.add(Kernel(stream=stream, name=t, op_type=t, start_us=t0 + i * 10.0, dur_us=1.0))


@pytest.mark.parametrize(
    "types, chains",
    [
        (["BatchMatMulV2", "SoftmaxV2", *["AsStrided"] * MAX_BETWEEN, "BatchMatMulV2"], 1),
        (["BatchMatMulV2", "SoftmaxV2", *["AsStrided"] * (MAX_BETWEEN + 1), "BatchMatMulV2"], 0),
        (["BatchMatMulV2", *["Mul"] * (MAX_BETWEEN + 1), "SoftmaxV2", "BatchMatMulV2"], 0),
        # the scale and mask come before the Softmax, the dropout after it
        (["BatchMatMulV2", "SoftmaxV2", "Mul", "BatchMatMulV2"], 0),
        (["BatchMatMulV2", "DropOutDoMask", "SoftmaxV2", "BatchMatMulV2"], 0),
        (["BatchMatMulV2", "Transpose", "Muls", "Cast", "SoftmaxV2", "Transpose", "MatMulV3"], 1),
        (["BatchMatMulV2", "Mul", "SoftmaxV2", "SoftmaxV2", "BatchMatMulV2"], 0),
    ],
)
def test_the_matcher_follows_the_pattern_and_its_bound(types, chains):
    analyzer = Analyzer()
    feed(types, analyzer)
    assert analyzer.result().chain_count == chains


def test_chains_past_the_listed_ones_are_still_counted():
    analyzer = Analyzer(windows=False)
    one = ["BatchMatMulV2", "Mul", "SoftmaxV2", "BatchMatMulV2"]
    for i in range(MAX_LISTED + 5):
        feed(one, analyzer, t0=i * 100.0)
    result = analyzer.result()
    assert result.chain_count == MAX_LISTED + 5
    assert (len(result.chain_list), result.chains_unlisted) == (MAX_LISTED, 5)
    merged = result.merged(result)
    assert (len(merged.chain_list), merged.chains_unlisted) == (MAX_LISTED, MAX_LISTED + 10)


def test_profile_json_keeps_the_counts_and_lists_each_chain_and_each_fused_type(tmp_path):
    proc = cli("profile", str(PATTERNS / "eager"), "--json", "--out", "pics", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    att = json.loads(proc.stdout)["attention"]
    chains = att["unfused_chains"]
    assert chains["count"] == 3 and chains["unlisted"] == 0
    assert chains["total_us"] == round(sum(c["total_us"] for c in chains["chains"]), 3)
    first = chains["chains"][0]
    assert first["stream"] == "device 0 stream 2"
    assert [o["type"] for o in first["ops"]] == [
        "BatchMatMulV2",
        "Mul",
        "SoftmaxV2",
        "BatchMatMulV2",
    ]
    assert first["ops"][0] == {
        "type": "BatchMatMulV2",
        "name": "aclnnBatchMatMul_BatchMatMulNd_BatchMatMulV2",
        "dur_us": 45.5,
        "input_shapes": "16,1024,128;16,128,1024",
        "input_dtypes": "DT_BF16;DT_BF16",
    }
    # 3 forward and 2 backward calls: the sum as before, and each direction on its own
    fused = att["fused"]
    assert (fused["count"], fused["total_us"]) == (
        5,
        round(410.188 + 406.128 + 407.008 + 762.215 + 763.215, 3),
    )
    assert fused["types"] == [
        {
            "type": "FlashAttentionScoreGrad",
            "direction": "backward",
            "count": 2,
            "total_us": 1525.43,
        },
        {"type": "FlashAttentionScore", "direction": "forward", "count": 3, "total_us": 1223.324},
    ]


def test_a_trace_only_op_table_drops_ge_node_numbers_but_keeps_types_ending_in_digits():
    ops = {o.op_type: o.count for o in summarise(PATTERNS / "graph_trace").analysis.ops}
    # ReduceSum7 and ReduceSum101 beside aclnnReduceSum_..._ReduceSum; two trans_TransData_<n>
    assert ops == {
        "ReduceSum": 3,
        "TransData": 2,
        "MatMulV2": 1,
        "Conv2D": 1,
        "Relu6": 1,
        "BatchMatMul": 2,
        "Mul": 1,
        "SoftmaxV2": 1,
    }


def test_the_timeline_comes_from_the_kernel_table_when_the_trace_lacks_the_attention_ops():
    summary = summarise(PATTERNS / "eager")
    assert sorted(w.kind for w in summary.analysis.windows) == ["fused", "unfused"]
    used = {f.kind: f.used_for for f in summary.files}
    assert used == {"kernel_details": ("ops", "chains", "timeline"), "trace_view": ()}
    # a trace that has them draws it (the Level0 fixture's trace holds both)
    level0 = summarise(PATTERNS.parent / "torch_npu_2.13_level0")
    assert {f.kind: f.used_for for f in level0.files}["trace_view"] == ("timeline",)
    assert {f.kind: f.used_for for f in level0.files}["kernel_details"] == ("ops", "chains")


def test_a_mask_op_whose_output_broadcasts_to_the_scores_stays_in_the_chain():
    """An op of no known family between the MatMuls stays when it prepares the scores: a
    causal mask of (1, 1, S, S) broadcasts to the (B, N, S, S) scores."""
    from cannbuild.profile.chains import ChainMatcher

    def k(op: str, inputs: str, output: str) -> Kernel:
        return Kernel(stream="s", name=op, op_type=op, start_us=0.0, dur_us=1.0,
                      input_shapes=inputs, output_shapes=output)  # fmt: skip

    run = [
        k("BatchMatMulV2", "2,8,1024,128;2,8,128,1024", "2,8,1024,1024"),
        k("Equal", "1,1,1024,1024;", "1,1,1024,1024"),
        k("MaskedFill", "2,8,1024,1024;1,1,1024,1024;", "2,8,1024,1024"),
        k("SoftmaxV2", "2,8,1024,1024", "2,8,1024,1024"),
        k("BatchMatMulV2", "2,8,1024,1024;2,8,1024,128", "2,8,1024,128"),
    ]
    matcher: ChainMatcher[Kernel] = ChainMatcher()
    done = [matcher.step("s", kernel) for kernel in run]
    assert done[-1] == run
