"""FlashAttention shape classes judged from the profile itself, and attention that fell
back to the host (issue 28 items 3, 4), on real-shaped samples (fixtures/profiler/
fa_shapes, host_fallback, with their .source notes)."""

from __future__ import annotations

from pathlib import Path

from cannbuild.diagnose.facts import operator_facts
from cannbuild.diagnose.profile_rows import fa_shape_checks, host_fallback_checks
from cannbuild.profile.affinity import fa_dims
from cannbuild.profile.summary import summarise

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profiler"


def _facts(tmp_path: Path):
    return operator_facts(None, "Ascend910B3", tmp_path / "no-checkout")


def test_d_and_s_are_read_from_bnsd_bsh_tnd_and_the_backward_inputs():
    # BNSD: D last in the query, N and S from softmax_max (B, N, S, 8).
    bnsd = fa_dims("FlashAttentionScore", "2,8,4096,128;2,8,4096,128;;", "2,8,4096,8;2,8,4096,8;;x")
    assert (bnsd.D, bnsd.S, bnsd.N) == (128, 4096, 8)
    # BSH (msprof-analyze's real sample): H 512 over N 4 is D 128.
    bsh = fa_dims(
        "FlashAttentionScore", "4096,2,512;4096,2,512;;", "2,4,4096,8;2,4,4096,8;;4096,2,512"
    )
    assert (bsh.D, bsh.S) == (128, 4096)
    tnd = fa_dims("FlashAttentionVarLenScore", "8192,16,96;8192,16,96", "8192,16,8;8192,16,8")
    assert (tnd.layout, tnd.D, tnd.S) == ("TND", 96, None)
    grad = fa_dims(
        "FlashAttentionScoreGrad",
        "4,1000,864;4,1000,864;4,1000,864;4,1000,864;1000,1000;4,12,1000,8",
        "",
    )
    assert (grad.D, grad.S) == (72, 1000)
    assert fa_dims("FlashAttentionScore", "", "") is None  # Level0: N/A shapes


def test_each_shape_class_is_reported_once_with_its_calls_and_time(tmp_path):
    a = summarise(FIX / "fa_shapes", timeline=False).analysis
    rows = fa_shape_checks(a, _facts(tmp_path))
    assert [r.status for r in rows] == ["pass", "warn", "warn"]
    aligned, grad, fwd = rows
    assert (
        "FlashAttentionScore x3, 631.5 us" in aligned.detail and "D=128, S=4096" in aligned.detail
    )
    assert "FlashAttentionScoreGrad x2, 381.0 us" in grad.detail
    assert "D=72, S=1000" in fwd.detail
    assert "padded to 80" in fwd.detail
    assert "D is not divisible by 128 and S is not divisible by 128" in fwd.detail


def test_a_head_dim_past_the_docs_range_fails(tmp_path):
    a = summarise(FIX / "fa_shapes", timeline=False).analysis
    facts = _facts(tmp_path)
    facts = type(facts)(
        **{
            **{f: getattr(facts, f) for f in facts.__struct_fields__},
            "limits": {
                **facts.limits,
                "D": type(facts.limits["D"])(axis="D", low=1, high=64, source="doc:1"),
            },
        }
    )
    rows = fa_shape_checks(a, facts)
    assert rows[0].status == "fail" and "outside 1..64" in rows[0].detail


def test_profile_json_lists_the_shape_classes():
    data = summarise(FIX / "fa_shapes", timeline=False).to_json()
    shapes = data["attention"]["fused"]["shapes"]
    assert [(s["type"], s["count"], s["D"], s["S"]) for s in shapes] == [
        ("FlashAttentionScore", 3, 128, 4096),
        ("FlashAttentionScoreGrad", 2, 72, 1000),
        ("FlashAttentionScore", 2, 72, 1000),
    ]


def test_host_fallbacks_are_the_outermost_calls_that_launched_nothing():
    summary = summarise(FIX / "host_fallback", timeline=False)
    fallbacks = summary.to_json()["attention"]["host_fallbacks"]
    by_name = {f["name"]: f for f in fallbacks}
    # SDPA on CPU tensors is named by the backend it ran; matmul/softmax by the outer call only
    # (aten::bmm inside aten::matmul is not counted twice).
    assert set(by_name) == {
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::matmul",
        "aten::softmax",
    }
    # Two matmuls ran on the host, two launched their kernels: 4 calls, 2 host-only.
    assert by_name["aten::matmul"]["count"] == 4 and by_name["aten::matmul"]["host_only"] == 2
    assert by_name["aten::matmul"]["host_only_us"] == 1240.0
    rows = host_fallback_checks(summary.analysis)
    assert all(r.status == "fail" for r in rows) and len(rows) == 3
    assert "SDPA ran PyTorch's CPU flash SDPA kernel" in rows[0].detail
    assert "2380.2 us" in rows[0].detail


def test_ops_that_launched_their_kernels_are_no_fallback():
    # The Level0 sample's aten::matmul has its torch_to_npu flow: it ran on the device.
    summary = summarise(FIX / "torch_npu_2.13_level0", timeline=False)
    assert summary.to_json()["attention"]["host_fallbacks"] == []
    assert host_fallback_checks(summary.analysis) == []
