"""A validation's verdict: its checks, one repository's report, and the summary over
every validated repository (what the run report and `status` show)."""

from __future__ import annotations

from typing import Dict, List, Mapping, Sequence

from msgspec import Struct, field

from ..decoded import JSONValue
from ..errors import ValidationFailed
from ..states import Verdict
from . import precision
from .cases import RULE
from .precision import Judged

PASS, FAIL, SKIPPED = Verdict.PASS, Verdict.FAIL, Verdict.SKIPPED


JudgedCase = Judged  # FlashAttention's cases.CaseResult, another op's opchecks.OpResult


class ValidationCheck(Struct, kw_only=True):
    id: str
    status: str
    message: str
    details: Dict[str, object] = field(default_factory=dict)

    def to_json(self) -> Dict[str, object]:
        return {"id": self.id, "status": self.status, "message": self.message, **self.details}


class ValidationReport(Struct, kw_only=True):
    """One repository's validation: its checks (the numerical one is `capi`) and cases."""

    target: str
    checks: List[ValidationCheck]
    cases: Sequence[JudgedCase]
    duration_s: float = 0.0
    rule: str = RULE
    repo: str = ""  # the repository whose installed package it judged
    check: str = ""  # the numerical check's name (registry.py)
    why: str = ""  # why the recipe picked that operator

    @property
    def status(self) -> str:
        """FAIL if any check failed; PASS only if the numerical check ran and passed:
        FlashAttention's (`capi`) on every selected case of `cases`, another one (its id is
        its name, its cases in its details) by its own verdict; SKIPPED otherwise."""
        if any(c.status == FAIL for c in self.checks):
            return FAIL
        numeric = next((c for c in self.checks if c.id in ("capi", self.check)), None)
        if numeric is None or numeric.status != PASS:
            return SKIPPED
        if numeric.id == "capi" and not (self.cases and all(r.status == PASS for r in self.cases)):
            return SKIPPED
        return PASS

    @property
    def disagreements(self) -> List[Dict[str, str]]:
        """Where opbase's MERE/MARE standard would reverse the rule's verdict: the C API
        cases, then any check's own judged cases or examples (torch_npu, example)."""
        found = [{"check": "capi", "name": r.case.name} for r in self.cases if r.disagree]
        for check in self.checks:
            for key, label in (("cases", "name"), ("examples", "file")):
                items = check.details.get(key)
                for item in items if isinstance(items, list) else ():
                    if isinstance(item, dict) and item.get("disagree"):
                        found.append({"check": check.id, "name": str(item.get(label))})
        return found

    @property
    def reason(self) -> str:
        """Why the verdict is not PASS, with the fix: the first check that failed or was
        skipped, the numerical one first."""
        if self.status == PASS:
            return ""
        order = sorted(self.checks, key=lambda c: (c.status != FAIL, c.id != "capi"))
        for check in order:
            if check.status in (FAIL, SKIPPED):
                return f"{check.id}: {check.message}"
        return "the numerical check did not run on every case"

    def to_json(self) -> Dict[str, object]:
        return {
            "status": self.status,
            "reason": self.reason,
            "target": self.target,
            "rule": self.rule,
            # The verdict rests on `rule`; the upstream standard is measured beside it.
            "decided_by": precision.DECIDES,
            "precision_standard": precision.standard_json(),
            "disagreements": self.disagreements,
            "duration_s": round(self.duration_s, 3),
            "checks": [c.to_json() for c in self.checks],
            "cases": [c.to_json() for c in self.cases],
        }

    def repo_json(self) -> Dict[str, object]:
        """This report as one entry of the summary's `repos`: which repo, which check, why."""
        return {"repo": self.repo, "check": self.check, "why": self.why, **self.to_json()}


class ValidationSummary(Struct, kw_only=True):
    """Every validated repository's report, in the --repos order: the verdict is PASS only
    when each repository's is, FAIL when one fails."""

    reports: List[ValidationReport]

    @property
    def status(self) -> str:
        states = [r.status for r in self.reports]
        if FAIL in states:
            return FAIL
        return PASS if states and all(s == PASS for s in states) else SKIPPED

    @property
    def reason(self) -> str:
        if not self.reports:
            return "the recipe names no validation for the repos this run builds"
        several = len(self.reports) > 1
        for r in sorted(self.reports, key=lambda r: r.status != FAIL):
            if r.status != PASS:
                return f"{r.repo}: {r.reason}" if several else r.reason
        return ""

    def to_json(self) -> Dict[str, object]:
        """The first repository's report as before (status and reason over all of them),
        each repository's under `repos`."""
        first: Dict[str, object] = self.reports[0].to_json() if self.reports else {"target": "none"}
        disagreements = [
            {"repo": r.repo, **d} if len(self.reports) > 1 else d
            for r in self.reports
            for d in r.disagreements
        ]
        return {
            **first,
            "status": self.status,
            "reason": self.reason,
            "disagreements": disagreements,
            "duration_s": round(sum(r.duration_s for r in self.reports), 3),
            "repos": [r.repo_json() for r in self.reports],
        }


def check_verdict(validation: Mapping[str, JSONValue], require_device: bool) -> None:
    """Raise ValidationFailed (exit 5) for FAIL, and for SKIPPED when the caller needs a
    verdict (CI on NPU hosts); the report has already been shown."""
    status = validation.get("status")
    if status == FAIL or (require_device and status == SKIPPED):
        raise ValidationFailed(
            ""
            if status == FAIL
            else f"--require-device: validation was SKIPPED ({validation.get('reason')})."
        )
