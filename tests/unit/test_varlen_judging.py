"""The VarLen (TND) validation case: what fa_check is told, the per-sequence reference and
the verdict on outputs written as each route writes them.  It must be able to say FAIL:
a kernel that lets a query see the other sequence's keys, or statistics in the wrong order."""

import pytest
from reference import reference_torch

from cannbuild import report_md
from cannbuild.validate import casefiles, cases, example, torchnpu

CASE = next(c for c in cases.CASES if c.layout == "TND")
pytestmark = pytest.mark.xdist_group("torch")  # one xdist worker imports torch for these


@pytest.fixture(scope="module")
def torch():
    return reference_torch()


def kernel_outputs(torch, tensors, case, ignore_kv_lengths=False):
    """A float32 kernel's attentionOut [T1, N1, D] (case dtype) and softmax stats [T1, N1, 8],
    sequence by sequence, or (broken) every query over all T2 keys."""
    q, k, v = (tensors[n].float() for n in ("q", "k", "v"))
    group = case.N1 // case.N2
    outs, maxes, sums = [], [], []
    q_ends, kv_ends = case.cu_seq_q, case.cu_seq_kv
    for q0, q1, k0, k1 in zip((0, *q_ends), q_ends, (0, *kv_ends), kv_ends):
        if ignore_kv_lengths:
            k0, k1 = 0, k.shape[0]
        qs = q[q0:q1].permute(1, 0, 2)  # (N1, s, D)
        ks = k[k0:k1].permute(1, 0, 2).repeat_interleave(group, 0)
        vs = v[k0:k1].permute(1, 0, 2).repeat_interleave(group, 0)
        s = (qs @ ks.transpose(-1, -2)) * case.scale
        mx = s.max(-1).values
        sums.append((s - mx.unsqueeze(-1)).exp().sum(-1).permute(1, 0))  # (s, N1)
        maxes.append(mx.permute(1, 0))
        outs.append((s.softmax(-1) @ vs).permute(1, 0, 2))  # (s, N1, D)
    out = torch.cat(outs).to(cases.torch_dtype(torch, case.dtype))
    lanes = lambda t: torch.cat(t).unsqueeze(-1).expand(-1, -1, 8).contiguous()  # noqa: E731
    return out, lanes(maxes), lanes(sums)


def write(tmp_path, case, out, smax, ssum):
    for suffix, t in (("out", out), ("smax", smax), ("ssum", ssum)):
        (tmp_path / f"{case.name}.{suffix}").write_bytes(casefiles.raw_bytes(t))


def test_the_varlen_case_packs_two_sequences_of_different_lengths():
    assert CASE.varlen and CASE.B == 2 and not CASE.causal
    assert CASE.seq_q[0] != CASE.seq_q[1] and CASE.seq_kv[0] != CASE.seq_kv[1]
    assert CASE.seq_q != CASE.seq_kv  # the key lengths are read, not the query's reused
    assert CASE.shape("q") == (sum(CASE.seq_q), CASE.N1, CASE.D)
    assert CASE.shape("k") == (sum(CASE.seq_kv), CASE.N2, CASE.D)
    assert CASE.stat_shape == (CASE.S, CASE.N1, 8)


def test_fa_check_gets_the_cumulative_ends_and_both_t(tmp_path):
    words = dict(w.split("=", 1) for w in casefiles.manifest_line(CASE, tmp_path).split())
    assert words["layout"] == "TND" and "mask" not in words
    assert words["seqq"] == "129,513" and words["seqkv"] == "300,377"
    assert (words["S1"], words["S2"]) == ("513", "377")


def test_a_tnd_case_must_be_consistent():
    with pytest.raises(ValueError, match="S = T"):
        cases.Case(
            name="bad", dtype="fp16", layout="TND", B=2, N1=1, N2=1, S=10, D=64,
            causal=False, seq_q=(3, 4), seq_kv=(3, 4),
        )  # fmt: skip
    with pytest.raises(ValueError, match="causal"):
        cases.Case(
            name="bad", dtype="fp16", layout="TND", B=1, N1=1, N2=1, S=7, D=64,
            causal=True, seq_q=(7,), seq_kv=(7,),
        )  # fmt: skip


def test_a_kernel_that_attends_within_each_sequence_passes(torch, tmp_path):
    tensors = casefiles.write_inputs(CASE, tmp_path)
    write(tmp_path, CASE, *kernel_outputs(torch, tensors, CASE))
    result = casefiles.judge_files(CASE, tensors, tmp_path, 1.0)
    assert result.status == "PASS", result.message
    assert result.softmax_sum_err is not None and result.softmax_sum_err < 1e-2


def test_a_kernel_that_ignores_the_key_lengths_fails(torch, tmp_path):
    tensors = casefiles.write_inputs(CASE, tmp_path)
    write(tmp_path, CASE, *kernel_outputs(torch, tensors, CASE, ignore_kv_lengths=True))
    result = casefiles.judge_files(CASE, tensors, tmp_path, 1.0)
    assert result.status == "FAIL" and "exceeds the bound" in result.message


def test_statistics_in_ntd_order_fail_where_tnd_is_expected(torch, tmp_path):
    tensors = casefiles.write_inputs(CASE, tmp_path)
    out, smax, ssum = kernel_outputs(torch, tensors, CASE)
    ntd = lambda t: t.permute(1, 0, 2).contiguous()  # noqa: E731
    write(tmp_path, CASE, out, ntd(smax), ntd(ssum))
    result = casefiles.judge_files(CASE, tensors, tmp_path, 1.0)
    assert result.status == "FAIL" and "softmaxMax differs" in result.message


def test_the_torch_route_writes_the_default_ntd_statistics_as_tnd(torch, tmp_path):
    """torch_npu returns softmax_max/sum as [T, N, 8] tensors holding NTD data (its default
    softmax_layout); the worker writes them in the C API route's TND order."""
    tensors = casefiles.write_inputs(CASE, tmp_path)
    out, smax, ssum = kernel_outputs(torch, tensors, CASE)
    as_torch_npu = lambda t: t.permute(1, 0, 2).contiguous().reshape(t.shape)  # noqa: E731
    torchnpu._write_outputs(CASE, tmp_path, (out, as_torch_npu(smax), as_torch_npu(ssum)))
    assert casefiles.judge_files(CASE, tensors, tmp_path, 1.0).status == "PASS"
    torchnpu._write_outputs(CASE, tmp_path, (out, smax, ssum))  # TND data read as NTD: wrong
    assert casefiles.judge_files(CASE, tensors, tmp_path, 1.0).status == "FAIL"


def test_the_report_names_the_sequence_lengths():
    row = cases.CaseResult(case=CASE, status="PASS").to_json()
    assert row["seq_q"] == [129, 384] and row["seq_kv"] == [300, 77]
    table = report_md._validation({"rule": cases.RULE, "checks": [], "cases": [row]})
    assert any(
        line.startswith(f"| {CASE.name} |") and "q 129+384 kv 300+77" in line for line in table
    )


def test_the_varlen_example_is_judged_on_its_softmax_sums():
    """The VarLen example's rows each sum their own 256 keys; over both sequences' keys, 512."""
    file = "/w/attention/flash_attention_score/examples/test_aclnn_flash_attention_score_varlen_v4_fp32.cpp"

    def printed(softmax_sum):
        values = [1.0] * 32768 + [128 / 128**0.5] * 2048 + [softmax_sum] * 2048
        return [f"mean result[{i}] is: {v:f}" for i, v in enumerate(values)]

    right = example.judge_example(file, printed(256.0), True, 0, None)
    assert right.status == "PASS" and right.judged == "values"
    wrong = example.judge_example(file, printed(512.0), True, 0, None)
    assert wrong.status == "FAIL"
    assert wrong.message == "softmaxSum[0] is 512.0, expected 256 for all-ones inputs"


@pytest.mark.parametrize("case", [c for c in cases.CASES if not c.varlen], ids=lambda c: c.name)
def test_each_cases_band_agrees_with_its_mask_as_sparse_mode_0_requires(torch, case, tmp_path):
    """aclnnFlashAttentionScoreV2.md (约束说明): with sparseMode 0 the attenMask and the
    preTokens/nextTokens band must cover the same positions; fa_check is given both."""
    words = dict(w.split("=", 1) for w in casefiles.manifest_line(case, tmp_path).split())
    assert words["sparse"] == "0"
    pre, nxt = int(words["pre"]), int(words["next"])
    i = torch.arange(case.S).unsqueeze(1)
    j = torch.arange(case.S).unsqueeze(0)
    outside_band = ((j - i) > nxt) | ((i - j) > pre)
    mask = cases.make_inputs(case).get("mask")
    expected = mask.bool() if mask is not None else torch.zeros(case.S, case.S, dtype=torch.bool)
    assert torch.equal(outside_band, expected)
