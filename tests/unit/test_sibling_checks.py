"""The numeric checks of ops-math, ops-nn and ops-cv (issue 27): their float64 references
follow each operator's docs (cross-checked against torch's own implementation where torch
has one), the judge is FlashAttention's rule with MERE/MARE beside it, and the examples'
printed values are judged by index.  No build: the kernels' side is in
tests/integration/test_sibling_standins.py."""

from __future__ import annotations

import math
from typing import Any

import pytest
from reference import reference_torch

from cannbuild.validate import example, opcases, registry
from cannbuild.validate.inputs import FA_CHECK, ValidationInputs
from cannbuild.validate.opcases import CASES, OpCase, make_input, manifest_line, out_shape
from cannbuild.validate.opchecks import CHECKS, OpNumeric, judge
from cannbuild.validate.verdict import ValidationCheck, ValidationReport

pytestmark = pytest.mark.xdist_group("torch")  # one xdist worker imports torch for these
torch: Any = None  # bound by the fixture below, on the one worker that runs these


@pytest.fixture(autouse=True, scope="module")
def _reference_torch() -> None:
    """torch when the first test here runs, not at collection, where every xdist worker
    would import it (1.5 s of CPU each); skips the tests, naming why, where it cannot."""
    global torch
    torch = reference_torch()


def test_segsum_reference_is_the_docs_masked_cumsum_then_exp():
    """out[..., i, j] = exp(x[j+1] + ... + x[i]) on and below the diagonal, 0 above
    (docs/aclnnExpSegsum.md steps 1-8), for the example's input and a random one."""
    x = torch.tensor([[[[0.0, 1.0, 2.0, 3.0]]]], dtype=torch.float64)
    got = opcases.segsum(x).reshape(-1).tolist()
    assert got == pytest.approx(list(example.EXPECTED["test_aclnn_segsum.cpp"]))
    y = torch.randn(2, 3, 7, dtype=torch.float64)
    out = opcases.segsum(y)
    assert out.shape == (2, 3, 7, 7)
    for i in range(7):
        for j in range(7):
            want = math.exp(float(y[1, 2, j + 1 : i + 1].sum())) if j <= i else 0.0
            assert float(out[1, 2, i, j]) == pytest.approx(want, rel=1e-12)


def test_swi_glu_reference_is_swish_of_the_first_half_times_the_second():
    x = torch.arange(64, dtype=torch.float64).reshape(2, 32)
    got = opcases.swi_glu(x, -1).reshape(-1).tolist()
    assert got == pytest.approx(list(example.EXPECTED["test_aclnn_swi_glu.cpp"]))
    y = torch.randn(4, 6, 3, dtype=torch.float64)
    a, b = y[:, :3], y[:, 3:]
    assert torch.allclose(opcases.swi_glu(y, 1), a * torch.sigmoid(a) * b)


@pytest.mark.parametrize("case", opcases.UPSAMPLE_CASES, ids=lambda c: c.name)
def test_the_upsample_reference_agrees_with_torchs_bilinear_upsample_in_float64(case):
    """The docs' formula (opcases.upsample_bilinear2d) against aten::upsample_bilinear2d,
    which takes the same outputSize, alignCorners and scales, both in float64."""
    x = make_input(case).double()
    mine = opcases.upsample_bilinear2d(x, case)
    theirs = opcases.upsample_same_dtype(x, case)
    assert mine.shape == out_shape("upsample_bilinear2d", case)
    assert torch.allclose(mine, theirs, rtol=0, atol=1e-12)


def test_the_upsample_example_values_are_the_reference_on_the_examples_input():
    case = opcases.UPSAMPLE_CASES[0]  # 4x2 -> 8x4, corners aligned: the example's call
    x = torch.arange(8, dtype=torch.float64).reshape(1, 1, 4, 2)
    got = opcases.upsample_bilinear2d(x, case).reshape(-1).tolist()
    assert got == pytest.approx(
        list(example.EXPECTED["test_aclnn_upsample_bilinear2d.cpp"]), abs=1e-12
    )


def test_each_check_has_fp32_fp16_and_bf16_cases_of_several_shapes():
    for op, cases in CASES.items():
        assert {c.dtype for c in cases} == {"fp32", "fp16", "bf16"}, op
        assert len({c.shape for c in cases}) >= 4, op
        assert len({c.name for c in cases}) == len(cases), op


def test_inputs_are_seeded_by_name_and_in_the_cases_dtype():
    case = opcases.SEGSUM_CASES[2]
    a, b = make_input(case), make_input(case)
    assert a.dtype == torch.float16 and torch.equal(a, b)
    assert float(a.max()) <= 0.0  # log decays: exp of their sums stays in fp16's range


def test_manifest_lines_carry_each_operators_parameters(tmp_path):
    up = manifest_line("upsample_bilinear2d", opcases.UPSAMPLE_CASES[1], tmp_path)
    assert "size=10,21" in up and "align=0" in up and "scales=2.0,3.0" in up
    sw = manifest_line("swi_glu", opcases.SWIGLU_CASES[1], tmp_path)
    assert "dim=0" in sw and "shape=6,5,7" in sw
    assert out_shape("swi_glu", opcases.SWIGLU_CASES[1]) == (3, 5, 7)
    assert out_shape("segsum", opcases.SEGSUM_CASES[0]) == (2, 3, 16, 16)


def _outputs(op: str, case: OpCase):
    x = make_input(case)
    return opcases.reference(op, case, x)


@pytest.mark.parametrize(
    "op,case",
    [(op, c) for op, cases in CASES.items() for c in cases],
    ids=lambda v: v if isinstance(v, str) else v.name,
)
def test_a_correctly_rounded_output_passes_both_standards(op, case):
    """The float64 reference rounded to the case's dtype, as a kernel computing in float
    and rounding once writes it: PASS by the rule and by opbase's MERE/MARE."""
    ref, same = _outputs(op, case)
    dt = make_input(case).dtype
    result = judge(f"x.{op}", case, ref.to(dt), ref, same)
    assert result.status == "PASS", result.message
    assert result.precision is not None and result.precision.status == "PASS"
    assert result.bound is not None and result.max_abs_err is not None


def test_a_kernel_that_keeps_the_diagonal_in_its_mask_fails():
    """segsum-diagonal (the stand-in's fault): x[j] summed too, exp(x[j]) off everywhere."""
    case = opcases.SEGSUM_CASES[0]
    x = make_input(case)
    ref, same = opcases.reference("segsum", case, x)
    n = x.shape[-1]
    wrong = ref * torch.exp(x.double()).unsqueeze(-2).expand(*x.shape[:-1], n, n)
    result = judge("ops-math.segsum", case, wrong.to(x.dtype), ref, same)
    assert result.status == "FAIL" and "exceeds the bound" in result.message
    assert result.mismatches and result.precision.status == "FAIL"


def test_a_nan_in_the_output_fails_at_once():
    case = opcases.SWIGLU_CASES[0]
    ref, same = _outputs("swi_glu", case)
    got = ref.float().clone()
    got[0, 3] = float("nan")
    result = judge("ops-nn.swi_glu", case, got, ref, same)
    assert result.status == "FAIL" and "NaN/Inf" in result.message


def test_the_registry_holds_every_repositorys_check_by_name():
    assert set(registry.CHECKS) == {
        FA_CHECK,
        "ops-math.segsum",
        "ops-nn.swi_glu",
        "ops-cv.upsample_bilinear2d",
    }
    assert CHECKS["ops-nn.swi_glu"].extra_libs == ("opapi_math",)  # as ops-nn links its example


def test_a_report_of_a_sibling_is_pass_when_its_c_api_cases_all_pass(tmp_path):
    numeric = registry.CHECKS["ops-cv.upsample_bilinear2d"]
    assert isinstance(numeric, OpNumeric)
    inp = ValidationInputs(
        vendor_dir=tmp_path,
        library=tmp_path / "libcust_opapi.so",
        symbols=(),
        env={},
        workdir=tmp_path / "validate",
        target=None,
        no_device_reason="no NPU",
        check="ops-cv.upsample_bilinear2d",
    )
    check, results = numeric.skipped(inp, "no NPU")
    assert check.id == "capi" and check.status == "SKIPPED" and len(results) == 6
    report = ValidationReport(target="none", checks=[check], cases=results)
    assert report.status == "SKIPPED"
    passed = []
    for case in opcases.UPSAMPLE_CASES:
        ref, same = _outputs("upsample_bilinear2d", case)
        passed.append(judge(check.id, case, ref.to(make_input(case).dtype), ref, same))
    ok = ValidationCheck(id="capi", status="PASS", message="6/6")
    assert ValidationReport(target="sandbox", checks=[ok], cases=passed).status == "PASS"
    # the report's JSON names each case, its shape and both verdicts
    first = ValidationReport(target="sandbox", checks=[ok], cases=passed).to_json()["cases"][0]
    assert first["name"] == "upsample_fp32_align_4x2_to_8x4" and first["shape"] == [1, 1, 4, 2]
    assert first["precision"]["status"] == "PASS"
    # another check's key changes with its cases
    assert numeric.key(inp) != registry.CHECKS["ops-math.segsum"].key(inp)


STAMP = "[2026-12-02 18:27:13] "


def test_ops_nn_examples_tail_is_judged_by_its_indices():
    """ops-nn's build.sh shows the last 10 lines of an example (`| tail -n 10`)."""
    values = example.EXPECTED["test_aclnn_swi_glu.cpp"]
    lines = [f"{STAMP}Start to run example,op_name:swi_glu example_name:swi_glu mode:eager."]
    lines += [f"{STAMP}result[{i}] is: {values[i]:f}" for i in range(22, 32)]
    lines += [f"{STAMP}Run test_aclnn_swi_glu success."]
    status, message, (run,) = example.judge_run(lines, [], 0)
    assert status == "PASS", message
    assert run.file == "test_aclnn_swi_glu.cpp" and run.judged == "values"
    assert "the last 10" in run.message
    lines[5] = f"{STAMP}result[26] is: 1.000000"
    status, message, (run,) = example.judge_run(lines, [], 0)
    assert status == "FAIL" and "result[26] is 1.0" in message


def test_ops_math_examples_announcement_and_values():
    values = example.EXPECTED["test_aclnn_segsum.cpp"]
    head = (
        f"{STAMP}Start compile and run examples file: ../math/segsum/examples/test_aclnn_segsum.cpp"
    )
    body = [f"{STAMP}result[{i}] is: {v:f}" for i, v in enumerate(values)]
    tail = [f"{STAMP}run test_aclnn_segsum, execute samples success"]
    status, message, (run,) = example.judge_run([head, *body, *tail], [], 0)
    assert status == "PASS" and run.precision is not None, message
    # a gap in the indices is not a tail: the example printed something else
    status, message, _ = example.judge_run([head, *body[:5], *body[7:], *tail], [], 0)
    assert status == "FAIL" and "expected all 16" in message


def test_the_home_opp_lookup_skips_a_workspace_install(tmp_path):
    """ops-math/ops-nn/ops-cv at v9.0.0 look only in $ASCEND_HOME_PATH/opp/vendors."""
    vendor = tmp_path / "ws/opp/vendors/custom_math"
    vendor.mkdir(parents=True)
    env = {"ASCEND_HOME_PATH": str(tmp_path / "cann")}
    why = example.lookup_skip("home-opp", env, vendor, "custom")
    assert why is not None and "$ASCEND_HOME_PATH/opp/vendors/custom_math" in why
    installed = tmp_path / "cann/opp/vendors/custom_math"
    installed.mkdir(parents=True)
    assert example.lookup_skip("home-opp", env, installed, "custom") is None
