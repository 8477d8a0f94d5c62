"""opbase's own precision standard, measured beside cannbuild's rule: MERE and MARE.

Upstream judges an ecosystem operator by the mean and the maximum relative error of
its output against a higher-precision reference (a CPU implementation), each element's
error taken as |actual - golden| / (|golden| + 1e-7), the 1e-7 keeping a zero golden
from dividing by zero.  A case passes when MERE < threshold and MARE < 10 x threshold,
the threshold set per dtype.  Source: hicann/opbase
docs/zh/ops_precision_standard/experimental_standard.md on the 9.0.0 and 9.1.0 branches
(branch 9.1.0 at 0e247b8c759c, the file as added in 6049643 on 2026-04-09, blob
2ea65ae), translated as docs/en/ops_precision_standard/experimental_standard.md on
master (03a1185).  master's Chinese text has since (adbe441, 2026-07-15) replaced it
with a mixed atol/rtol tolerance that no release branch carries yet.

This module is pure arithmetic: it never imports torch.  `measure_tensors` takes torch
tensors from the caller (cases.judge); `measure_values` takes plain floats (the
examples' printed numbers).  The standard never decides a verdict here: cannbuild's
rule does (see `DECIDES`), and a case where the two disagree is flagged.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple

from msgspec import Struct, field
from msgspec.structs import asdict

from ..states import Verdict

if TYPE_CHECKING:
    from torch import Tensor

# experimental_standard.md (9.1.0, zh) §误差指标: abs(golden) + 1e-7 in both formulas.
EPS = 1e-7
# §通过标准: "MERE < Threshold, MARE < 10 * Threshold" (both strict).
MARE_FACTOR = 10.0
# §通过标准, the threshold row, keyed by cannbuild's dtype names: FLOAT16 2^-10, BFLOAT16 2^-7,
# FLOAT32 2^-13, HiFLOAT32 2^-11, FLOAT8 E4M3 2^-3, FLOAT8 E5M2 2^-2.  No other dtype has one
# (master's text, adbe441 §0, says integer and data-movement operators need their own).
THRESHOLDS: Mapping[str, float] = MappingProxyType(
    {
        "fp16": 2.0**-10,
        "bf16": 2.0**-7,
        "fp32": 2.0**-13,
        "hf32": 2.0**-11,
        "fp8_e4m3": 2.0**-3,
        "fp8_e5m2": 2.0**-2,
    }
)
NAME = "opbase MERE/MARE (9.1)"
SOURCE = (
    "hicann/opbase docs/zh/ops_precision_standard/experimental_standard.md at branch 9.1.0 "
    "(0e247b8c759c; en translation on master 03a1185)"
)
RULE = (
    "MERE = mean(|out - ref64| / (|ref64| + 1e-7)) < T and MARE = max(...) < 10 T, "
    "T per dtype: fp16 2^-10, bf16 2^-7, fp32 2^-13"
)
# Which standard a verdict rests on: cannbuild's rule (cases.RULE).  The upstream text is the
# entry bar for contributed operators, not a release gate, and its MARE fails a correctly
# rounded fp32-accumulated attention wherever the reference crosses zero (|ref| ~ 1e-8 makes
# one rounding step a relative error of 0.1 and more): it is measured and shown, never decisive.
DECIDES = "rule"


class Precision(Struct, frozen=True, kw_only=True):
    """One output measured by the upstream standard; `status` is that standard's verdict."""

    dtype: str
    status: str  # PASS | FAIL | SKIPPED (no threshold for the dtype, or nothing to measure)
    message: str
    threshold: Optional[float] = None
    mere: Optional[float] = None
    mare: Optional[float] = None
    golden_at_mare: Optional[float] = None  # the reference value where MARE occurred
    values: int = 0

    def to_json(self) -> Dict[str, object]:
        limit = None if self.threshold is None else MARE_FACTOR * self.threshold
        return {"standard": NAME, **asdict(self), "mere_limit": self.threshold, "mare_limit": limit}


class _Case(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> str: ...


class Judged(Struct, kw_only=True):
    """A case a numerical check judged: FlashAttention's (cases.CaseResult) or another
    operator's (opchecks.OpResult), by cannbuild's rule with the standard beside it; what
    the report, the terminal and the verdict read."""

    case: _Case
    status: str  # PASS | FAIL | SKIPPED
    message: str = ""
    max_abs_err: Optional[float] = None
    ref_same_dtype_max_err: Optional[float] = None
    bound: Optional[float] = None
    kernel_ms: Optional[float] = None
    mismatches: List[Dict[str, object]] = field(default_factory=list)
    # the output by opbase's MERE/MARE standard; None where no output was judged
    precision: Optional[Precision] = None

    @property
    def disagree(self) -> bool:
        """The rule and opbase's standard gave different verdicts (the rule's stands)."""
        return disagrees(self.status, self.precision)

    def to_json(self) -> Dict[str, object]:
        """The verdict's fields, as every case's JSON ends them."""
        return {
            "status": self.status,
            "message": self.message,
            "max_abs_err": self.max_abs_err,
            "ref_same_dtype_max_err": self.ref_same_dtype_max_err,
            "bound": self.bound,
            "kernel_ms": self.kernel_ms,
            "first_mismatches": self.mismatches,
            "precision": None if self.precision is None else self.precision.to_json(),
            "disagree": self.disagree,
        }


class Measured(Struct, frozen=True, kw_only=True):
    """MERE and MARE of one output, NaN when the output is not finite."""

    mere: float
    mare: float
    golden_at_mare: float
    values: int


def relative_error(actual: float, golden: float) -> float:
    """One element's relative error, as experimental_standard.md writes it."""
    return abs(actual - golden) / (abs(golden) + EPS)


def measure_values(actual: Sequence[float], golden: Sequence[float]) -> Measured:
    """MERE and MARE of plain numbers (an example's printed values)."""
    if len(actual) != len(golden):
        raise ValueError(f"{len(actual)} values against {len(golden)} reference values")
    errors = [relative_error(a, g) for a, g in zip(actual, golden)]
    if not errors:
        return Measured(mere=math.nan, mare=math.nan, golden_at_mare=math.nan, values=0)
    if not all(math.isfinite(e) for e in errors):
        return Measured(mere=math.nan, mare=math.nan, golden_at_mare=math.nan, values=len(errors))
    worst = max(range(len(errors)), key=errors.__getitem__)
    return Measured(
        mere=math.fsum(errors) / len(errors),
        mare=errors[worst],
        golden_at_mare=float(golden[worst]),
        values=len(errors),
    )


def measure_tensors(actual: Tensor, golden: Tensor) -> Measured:
    """MERE and MARE of two same-shaped tensors (float64 on the CPU: the caller converts)."""
    errors = ((actual - golden).abs() / (golden.abs() + EPS)).reshape(-1)
    count = int(errors.numel())
    if count == 0 or not bool(errors.isfinite().all()):
        return Measured(mere=math.nan, mare=math.nan, golden_at_mare=math.nan, values=count)
    worst = int(errors.argmax())
    return Measured(
        mere=float(errors.mean()),
        mare=float(errors[worst]),
        golden_at_mare=float(golden.reshape(-1)[worst]),
        values=count,
    )


def judge(dtype: str, measured: Measured) -> Precision:
    """The standard's verdict for one output in `dtype` (the output's dtype, whose row of
    the threshold table applies)."""
    threshold = THRESHOLDS.get(dtype)
    if threshold is None:
        return Precision(
            dtype=dtype,
            status=Verdict.SKIPPED,
            message=f"the standard sets no threshold for {dtype} (only for "
            f"{', '.join(THRESHOLDS)})",
            values=measured.values,
        )
    if measured.values == 0:
        return Precision(
            dtype=dtype,
            status=Verdict.SKIPPED,
            message="no values to measure",
            threshold=threshold,
        )
    if not (math.isfinite(measured.mere) and math.isfinite(measured.mare)):
        return Precision(
            dtype=dtype,
            status=Verdict.FAIL,
            message="MERE/MARE undefined: the output has NaN/Inf values",
            threshold=threshold,
            values=measured.values,
        )
    mare_limit = MARE_FACTOR * threshold
    problems = []
    if not measured.mere < threshold:
        problems.append(f"MERE {measured.mere:.3g} >= {threshold:.3g}")
    if not measured.mare < mare_limit:
        problems.append(
            f"MARE {measured.mare:.3g} >= {mare_limit:.3g} at a reference value of "
            f"{measured.golden_at_mare:.3g}"
        )
    figures = (
        f"MERE {measured.mere:.3g} < {threshold:.3g}, MARE {measured.mare:.3g} < {mare_limit:.3g}"
    )
    return Precision(
        dtype=dtype,
        status=Verdict.FAIL if problems else Verdict.PASS,
        message="; ".join(problems) if problems else figures,
        threshold=threshold,
        mere=measured.mere,
        mare=measured.mare,
        golden_at_mare=measured.golden_at_mare,
        values=measured.values,
    )


def disagrees(rule_status: str, precision: Optional[Precision]) -> bool:
    """True where both standards gave a verdict (PASS or FAIL) and they differ."""
    if precision is None:
        return False
    verdicts = (Verdict.PASS, Verdict.FAIL)
    return (
        rule_status in verdicts and precision.status in verdicts and rule_status != precision.status
    )


def standard_json() -> Dict[str, object]:
    """What the report says of the standard, and that it does not decide."""
    return {
        "name": NAME,
        "source": SOURCE,
        "rule": RULE,
        "eps": EPS,
        "mare_factor": MARE_FACTOR,
        "thresholds": dict(THRESHOLDS),
        "decides": False,
    }


def summary(named: Sequence[Tuple[str, str, Optional[Precision]]]) -> str:
    """A clause for a check's message from (name, rule status, precision) triples: how the
    measured ones fare by the standard and where it disagrees with the rule ("" when
    nothing was measured)."""
    measured = [(n, s, p) for n, s, p in named if p is not None and p.status != Verdict.SKIPPED]
    if not measured:
        return ""
    passed = sum(1 for _, _, p in measured if p.status == Verdict.PASS)
    text = f"{NAME}: {passed}/{len(measured)} PASS"
    split = [n for n, s, p in measured if disagrees(s, p)]
    if split:
        shown = ", ".join(split[:3]) + (f" and {len(split) - 3} more" if len(split) > 3 else "")
        text += f", disagreeing with the rule on {len(split)} ({shown}); the rule decides"
    return text


def case_verdict(results: Sequence[Judged], through: str) -> Tuple[str, str]:
    """(status, message) of a check over its judged cases: FAIL naming the first failure,
    else PASS `through` the API; how opbase's standard sees them beside it."""
    failed = [r for r in results if r.status == Verdict.FAIL]
    if failed:
        status = Verdict.FAIL
        first = failed[0]
        message = (
            f"{len(failed)}/{len(results)} cases FAIL; first: {first.case.name}: {first.message}"
        )
    else:
        status = Verdict.PASS
        message = f"{len(results)}/{len(results)} cases PASS through {through}"
    upstream = summary([(r.case.name, r.status, r.precision) for r in results])
    return status, message + (f"; {upstream}" if upstream else "")
