"""The FlashAttention judge measures attentionOut by opbase's MERE/MARE standard beside
the rule: a rounding-correct kernel passes the rule and can fail MARE where the
reference crosses zero; a kernel the rule fails on its statistics can pass MERE/MARE;
a broken kernel fails both."""

from __future__ import annotations

import pytest
from reference import reference_torch

from cannbuild.validate import cases, precision

pytestmark = pytest.mark.xdist_group("torch")  # one xdist worker imports torch for these

# 33 query rows, causal: some outputs come within 1e-6 of zero
NEAR_ZERO = cases.Case(
    name="fp16_bsh_t", dtype="fp16", layout="BSH", B=1, N1=4, N2=2, S=33, D=64, causal=True
)
# one key: attentionOut is v itself, exactly representable, no relative error anywhere
ONE_KEY = cases.Case(
    name="fp16_bnsd_t1", dtype="fp16", layout="BNSD", B=1, N1=2, N2=2, S=1, D=16, causal=False
)


@pytest.fixture(scope="module")
def torch():
    return reference_torch()


def kernel(torch, case, scale=None):
    """What a correct kernel returns: float32 attention rounded once to the case dtype, and
    softmaxMax / softmaxSum in their 8 equal lanes; `scale` breaks it."""
    tensors = cases.make_inputs(case)
    q, k, v = (
        cases.to_bnsd(tensors[n].float(), case.layout, case.B, h, case.S, case.D)
        for n, h in (("q", case.N1), ("k", case.N2), ("v", case.N2))
    )
    group = case.N1 // case.N2
    s = (q @ k.repeat_interleave(group, 1).transpose(-1, -2)) * (scale or case.scale)
    if "mask" in tensors:
        s = s.masked_fill(tensors["mask"].bool(), cases.MASKED)
    mx = s.max(-1).values
    sm = (s - mx.unsqueeze(-1)).exp().sum(-1)
    out = (s.softmax(-1) @ v.repeat_interleave(group, 1)).to(cases.torch_dtype(torch, case.dtype))
    if case.layout == "BSH":
        out = out.permute(0, 2, 1, 3).reshape(case.B, case.S, case.N1 * case.D)
    lanes = lambda t: t.unsqueeze(-1).expand(*t.shape, 8).contiguous()  # noqa: E731
    return tensors, out, lanes(mx), lanes(sm)


def test_the_tensor_route_computes_what_the_value_route_computes(torch):
    got = torch.tensor([1.0, 2.2, 4.5, 3e-7], dtype=torch.float64)
    ref = torch.tensor([1.0, 2.0, 5.0, 0.0], dtype=torch.float64)
    tensors = precision.measure_tensors(got, ref)
    values = precision.measure_values(got.tolist(), ref.tolist())
    assert tensors.mere == pytest.approx(values.mere, rel=1e-12)
    assert (tensors.mare, tensors.golden_at_mare) == (pytest.approx(values.mare), 0.0)
    nan = precision.measure_tensors(torch.tensor([float("nan")]), torch.tensor([1.0]))
    assert precision.judge("fp32", nan).status == "FAIL"


def test_a_correct_kernel_passes_the_rule_and_fails_mare_where_the_reference_is_near_zero(torch):
    tensors, out, mx, sm = kernel(torch, NEAR_ZERO)
    result = cases.judge(NEAR_ZERO, tensors, out, mx, sm, 1.0)
    p = result.precision
    assert result.status == "PASS", result.message
    assert p is not None and p.status == "FAIL" and p.dtype == "fp16"
    assert p.mere < 2**-10 <= p.mare / 10  # the mean is fine, one near-zero output is not
    assert abs(p.golden_at_mare) < 1e-5
    assert result.disagree
    data = result.to_json()
    assert data["status"] == "PASS" and data["precision"]["status"] == "FAIL" and data["disagree"]


def test_the_rule_fails_bad_statistics_that_mere_mare_does_not_measure(torch):
    tensors, out, mx, sm = kernel(torch, ONE_KEY)
    sm = sm.clone()
    sm[0, 1, 0, 3] += 1.0  # one lane of softmaxSum
    result = cases.judge(ONE_KEY, tensors, out, mx, sm, 1.0)
    assert result.status == "FAIL" and "lanes" in result.message
    assert result.precision is not None and result.precision.status == "PASS"
    assert result.precision.mare == 0.0 and result.disagree


def test_a_broken_kernel_fails_both_and_they_agree(torch):
    tensors, out, mx, sm = kernel(torch, NEAR_ZERO, scale=NEAR_ZERO.scale**2)
    result = cases.judge(NEAR_ZERO, tensors, out, mx, sm, 1.0)
    assert result.status == "FAIL" and "exceeds the bound" in result.message
    assert result.precision is not None and result.precision.status == "FAIL"
    assert result.precision.mere > 2**-10  # wrong on average, not only near zero
    assert not result.disagree


def test_a_nan_output_fails_both(torch):
    tensors, out, mx, sm = kernel(torch, ONE_KEY)
    out = out.clone()
    out.view(-1)[3] = float("nan")
    result = cases.judge(ONE_KEY, tensors, out, mx, sm, 1.0)
    assert result.status == "FAIL" and result.precision is not None
    assert result.precision.status == "FAIL" and "NaN/Inf" in result.precision.message
    assert not result.disagree
