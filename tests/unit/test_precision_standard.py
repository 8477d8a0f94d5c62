"""opbase's MERE/MARE standard (precision.py) on hand-computed numbers, its per-dtype
thresholds, the example judge's use of it, and the report that shows it beside the rule.
No torch here: the tensor route is in test_precision_cases.py."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest

from cannbuild import ui
from cannbuild.report_md import render_markdown
from cannbuild.validate import (
    ValidationCheck,
    ValidationReport,
    ValidationSummary,
    cases,
    example,
    precision,
)
from cannbuild.validate.precision import Measured, measure_values

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
STAMP = "[2026-03-21 12:00:00] "
KNOWN = "test_aclnn_flash_attention_score_v2_fp32.cpp"


def test_mere_and_mare_of_a_small_array_as_the_document_writes_them():
    # errors: 0, 0.2 / (2 + 1e-7), 0.5 / (5 + 1e-7)
    m = measure_values([1.0, 2.2, 4.5], [1.0, 2.0, 5.0])
    e1, e2 = 0.2 / (2.0 + 1e-7), 0.5 / (5.0 + 1e-7)
    assert m.values == 3
    assert m.mere == pytest.approx((0.0 + e1 + e2) / 3, rel=1e-12)
    assert m.mare == pytest.approx(e2, rel=1e-12)
    assert m.golden_at_mare == 5.0


def test_a_zero_in_the_reference_divides_by_the_1e_7_epsilon_alone():
    # |actual - 0| / (0 + 1e-7): 1e-9 -> 0.01, 1e-7 -> 1, 3e-7 -> 3
    m = measure_values([1e-9, 1e-7, 3e-7, 0.0], [0.0, 0.0, 0.0, 0.0])
    assert m.mare == pytest.approx(3.0)
    assert m.mere == pytest.approx((0.01 + 1.0 + 3.0 + 0.0) / 4)
    assert m.golden_at_mare == 0.0
    # an exact zero against a zero reference is no error at all
    assert measure_values([0.0], [0.0]).mare == 0.0
    # the epsilon is absolute: it barely moves a large reference's relative error
    assert precision.relative_error(101.0, 100.0) == pytest.approx(0.01, rel=1e-8)


def test_the_thresholds_are_the_documents_table():
    assert dict(precision.THRESHOLDS) == {
        "fp16": 2**-10,
        "bf16": 2**-7,
        "fp32": 2**-13,
        "hf32": 2**-11,
        "fp8_e4m3": 2**-3,
        "fp8_e5m2": 2**-2,
    }
    assert precision.EPS == 1e-7 and precision.MARE_FACTOR == 10
    # every dtype a FlashAttention case uses has a row
    assert {c.dtype for c in cases.CASES} <= set(precision.THRESHOLDS)


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
def test_the_pass_rule_is_strict_on_both_limits_per_dtype(dtype):
    t = precision.THRESHOLDS[dtype]

    def verdict(mere, mare):
        measured = Measured(mere=mere, mare=mare, golden_at_mare=1.0, values=8)
        return precision.judge(dtype, measured).status

    assert verdict(0.99 * t, 9.9 * t) == "PASS"
    assert verdict(t, 0.0) == "FAIL"  # MERE < T, not <=
    assert verdict(0.0, 10 * t) == "FAIL"  # MARE < 10 T, not <=


def test_the_same_figures_pass_one_dtype_and_fail_another():
    measured = Measured(mere=2**-12, mare=2**-9, golden_at_mare=1.0, values=1)
    verdicts = {d: precision.judge(d, measured).status for d in ("fp16", "bf16", "fp32")}
    assert verdicts == {"fp16": "PASS", "bf16": "PASS", "fp32": "FAIL"}


def test_the_verdict_names_the_failing_figure_and_where_mare_occurred():
    p = precision.judge("fp16", measure_values([1.0, 1e-6], [1.0, 2e-6]))
    assert p.status == "FAIL"
    assert p.message.startswith("MERE ") and "MARE " in p.message
    assert "at a reference value of 2e-06" in p.message
    assert p.to_json()["mare_limit"] == 10 * 2**-10


def test_nan_fails_and_an_unlisted_dtype_or_nothing_measured_is_skipped():
    nan = precision.judge("fp32", measure_values([float("nan"), 1.0], [1.0, 1.0]))
    assert nan.status == "FAIL" and "NaN/Inf" in nan.message and nan.mere is None
    assert precision.judge("int32", measure_values([1.0], [1.0])).status == "SKIPPED"
    assert precision.judge("fp16", measure_values([], [])).status == "SKIPPED"
    with pytest.raises(ValueError):
        measure_values([1.0], [1.0, 2.0])


def test_a_disagreement_needs_two_verdicts_that_differ():
    fail = precision.judge("fp16", Measured(mere=1.0, mare=1.0, golden_at_mare=1.0, values=1))
    ok = precision.judge("fp16", Measured(mere=0.0, mare=0.0, golden_at_mare=1.0, values=1))
    skipped = precision.judge("int8", Measured(mere=0.0, mare=0.0, golden_at_mare=1.0, values=1))
    assert precision.disagrees("PASS", fail) and precision.disagrees("FAIL", ok)
    assert not precision.disagrees("PASS", ok) and not precision.disagrees("FAIL", fail)
    assert not precision.disagrees("PASS", skipped) and not precision.disagrees("SKIPPED", fail)
    assert not precision.disagrees("PASS", None)


# ---- the examples' printed values ----


MAX = 128 / math.sqrt(128)


def block(name, out=(1.0,) * 32768, mx=MAX, sm=256.0):
    values = list(out) + [mx] * 2048 + [sm] * 2048
    lines = [f"{STAMP}Start compile and run example file: ../examples/{name}"]
    lines += [f"{STAMP}mean result[{i}] is: {v:f}" for i, v in enumerate(values)]
    return [*lines, f"{STAMP}run test_aclnn_flash_attention_score, execute samples success"]


def test_a_correct_example_passes_both_standards():
    status, message, (run,) = example.judge_run(block(KNOWN), [], 0)
    assert status == "PASS" and run.precision is not None
    assert run.precision.status == "PASS" and run.precision.dtype == "fp32"
    assert run.precision.values == 36864 and run.precision.mare < 1e-7  # %f rounding only
    assert message.endswith("; opbase MERE/MARE (9.1): 1/1 PASS")
    assert run.to_json()["disagree"] is False


def test_an_example_the_rule_fails_and_the_standard_passes_is_flagged():
    # attentionOut 1.00002 in one place: beyond the rule's 1e-5, a relative 2e-5 by MERE/MARE
    status, message, (run,) = example.judge_run(block(KNOWN, out=[1.00002] + [1.0] * 32767), [], 0)
    assert status == "FAIL" and run.status == "FAIL"
    assert run.precision is not None and run.precision.status == "PASS"
    assert run.disagree and run.to_json()["disagree"] is True
    assert f"disagreeing with the rule on 1 ({KNOWN}); the rule decides" in message


def test_a_broken_example_fails_both_and_an_unknown_one_is_not_measured():
    status, message, (run,) = example.judge_run(block(KNOWN, mx=1.0), [], 0)
    assert status == "FAIL" and run.precision is not None and run.precision.status == "FAIL"
    assert not run.disagree and "0/1 PASS" in message
    _, _, (unknown,) = example.judge_run(block("test_aclnn_other.cpp"), [], 0)
    assert unknown.judged == "run" and unknown.precision is None


# ---- the report: both verdicts, which one decides ----

CASE = cases.CASES[3]  # fp16_bsh_s2048_d128


def a_result(status, mere, mare, **figures):
    measured = Measured(mere=mere, mare=mare, golden_at_mare=5.3e-9, values=524288)
    return cases.CaseResult(
        case=CASE,
        status=status,
        message=f"max abs error 0.000244 {'<=' if status == 'PASS' else '>'} bound 0.000977",
        max_abs_err=2.44e-4,
        bound=9.77e-4,
        precision=precision.judge(CASE.dtype, measured),
        **figures,
    )


def validation(result):
    report = ValidationReport(
        target="sandbox",
        checks=[ValidationCheck(id="capi", status=result.status, message="1/1 cases")],
        cases=[result],
    )
    return report, report.to_json()


def test_the_report_json_says_what_decides_and_lists_a_disagreement():
    _, data = validation(a_result("PASS", 1.8e-4, 0.275))
    assert data["status"] == "PASS"  # the rule decides
    assert data["decided_by"] == "rule" and data["precision_standard"]["decides"] is False
    assert data["precision_standard"]["thresholds"]["fp16"] == 2**-10
    assert "branch 9.1.0" in data["precision_standard"]["source"]
    assert data["disagreements"] == [{"check": "capi", "name": CASE.name}]
    case = data["cases"][0]
    assert case["status"] == "PASS" and case["precision"]["status"] == "FAIL"
    assert case["precision"]["mare"] == 0.275 and case["disagree"] is True
    json.dumps(data)  # plain JSON, no Struct left inside


def rendered(result):
    report = json.loads((FIXTURES / "shipped-package-fails.json").read_text())
    report["validation"] = validation(result)[1]
    return render_markdown(report)


def test_report_md_shows_both_verdicts_where_they_disagree():
    md = rendered(a_result("PASS", 1.8e-4, 0.275))
    assert "Every verdict here rests on the rule above (decided by: rule)" in md
    assert f"**The two standards differ on 1** (rule verdict stands): capi: {CASE.name}" in md
    assert "| verdict | MERE | MARE | opbase |" in md
    assert "| PASS | 0.00018 | 0.275 | differs (FAIL) |" in md
    assert (
        f"- **{CASE.name}**: the rule says PASS (max abs error 0.000244 <= bound 0.000977); "
        "opbase MERE/MARE (9.1) says FAIL (MARE 0.275 >= 0.00977 at a reference value of 5.3e-09)"
    ) in md


def test_report_md_of_agreeing_verdicts_flags_nothing():
    md = rendered(a_result("FAIL", 5e-3, 0.5))
    assert "differ" not in md
    assert "| FAIL | 0.005 | 0.5 | FAIL |" in md


def test_the_verbose_table_shows_mere_mare_and_the_difference(monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")
    out = io.StringIO()
    report, _ = validation(a_result("PASS", 1.8e-4, 0.275))
    ui.print_validation(ValidationSummary(reports=[report]), stream=out, tables=True)
    text = out.getvalue()
    assert "MERE" in text and "0.275" in text and "differs (FAIL)" in text
    assert f"differs from the rule on 1 (capi: {CASE.name}); the verdict rests on the rule" in text


def test_the_terminal_says_one_line_per_check_and_that_the_standards_differ(monkeypatch):
    """No case table without --verbose (report.md has it), and a disagreement between the
    two standards is "differs", never a FAIL under a PASS (issue 42)."""
    monkeypatch.setenv("COLUMNS", "240")
    out = io.StringIO()
    report, _ = validation(a_result("PASS", 1.8e-4, 0.275))
    ui.print_validation(ValidationSummary(reports=[report]), stream=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("validation: ")
    assert len(lines) == 1 + len(report.checks) + 1, lines
    assert "FAIL" not in out.getvalue() and "MERE" in lines[-1] and "differs" in lines[-1]
    assert CASE.name not in out.getvalue()


def test_cases_failing_for_one_cause_are_said_once_and_a_stale_verdict_says_so(monkeypatch):
    """After `build --soc A3` on the A2 sandbox a bare setup printed one 5-line error for
    each of 13 cases, and a bare validate said PASS of the stale A2 package (issue 42)."""
    monkeypatch.setenv("COLUMNS", "240")
    why = "aclnnFlashAttentionScoreV2 returned 561000: no kernel for ascend910b"
    failed = [
        cases.CaseResult(case=c, status="FAIL", message=why, max_abs_err=None, bound=None)
        for c in cases.CASES[:13]
    ]
    report = ValidationReport(
        target="sandbox",
        checks=[ValidationCheck(id="capi", status="FAIL", message="0/13 cases PASS")],
        cases=failed,
    )
    for tables in (False, True):
        out = io.StringIO()
        ui.print_validation(ValidationSummary(reports=[report]), stream=out, tables=tables)
        said = [x for x in out.getvalue().splitlines() if why in x]
        assert len(said) == 1 and "FAIL 13 cases" in said[0] and "and 10 more" in said[0]
    out = io.StringIO()
    ok, _ = validation(a_result("PASS", 1e-4, 1e-4))
    stale = "built for ascend910b; this workspace now targets ascend910_93"
    ui.print_validation(ValidationSummary(reports=[ok]), stream=out, stale=stale)
    assert (
        out.getvalue()
        .splitlines()[0]
        .startswith(f"validation: PASS of a STALE package ({stale}; `cannbuild install` installs")
    )
