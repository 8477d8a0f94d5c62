"""Building one variant through the plan walk and the step runner (build/variant.py: the
baseline's steps over the variant's copy and prefix, stamped in its folder), and
validating every variant."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Mapping, Optional, Sequence

from .. import safefs
from ..build.plan import PlannedStep
from ..build.runner import NoProgress, StepOutcome
from ..build.session import Session
from ..build.steps import run_steps
from ..build.variant import Variant
from ..sources.state import Sources
from ..validate import capi, validation_env
from ..validate.casefiles import judge_files, manifest_line, write_inputs
from ..validate.cases import CASES, reference
from ..workspace import write_atomic
from .routes import RouteError, compile_program


class VariantProgress(NoProgress):
    """A variant's steps as bench notes: one line when it starts building (with where
    its logs go), one per step that ran, nothing for a step that is up to date."""

    def __init__(self, name: str, how: str, note: Callable[[str], None]) -> None:
        self.name, self.how, self._note = name, how, note
        self.building = False

    def started(self, step: PlannedStep, log: Path) -> None:
        if not self.building:
            self.building = True
            self.note(f"building ({self.how}); logs {log.parent}")
        self.note(f"{step.name}: {step.reason}")

    def finished(self, outcome: StepOutcome) -> None:
        self.note(f"{outcome.name}: {outcome.status} in {outcome.duration_s:.1f}s")

    def note(self, text: str) -> None:
        self._note(f"variant {self.name}: {text}")


def build_one(
    session: Session,
    variant: Variant,
    sources: Sources,
    env: Mapping[str, str],
    progress: VariantProgress,
    run_id: str,
) -> Optional[str]:
    """The variant's steps that are not up to date, run; None on success, else why not
    (the step's log has the rest)."""
    result = run_steps(
        session, sources, env, ("build", "install"), progress, run_id, variant=variant
    )
    failed = result.failed
    if failed is None:
        return None
    last = failed.errors[0][1] if failed.errors else next(iter(failed.tail[-1:]), "")
    code = f"exited with {failed.exit_code}" if failed.exit_code is not None else "failed"
    return f"{failed.name} {code}: {last.strip()} (log {failed.log})"


def validate_all(
    session: Session, variants: Sequence[Variant], note: Callable[[str], None]
) -> Dict[str, str]:
    """Each variant's package on the validation cases through the C API, judged as
    `cannbuild validate` judges; the references are computed once for all."""
    if not variants:
        return {}
    data = safefs.fresh(
        session.ws.root, session.ws.tmp / "bench" / "validate", "the variants' validation data"
    )
    tensors = {c.name: write_inputs(c, data) for c in CASES}
    expected = {c.name: reference(c, tensors[c.name]) for c in CASES}
    manifest = data / "manifest.txt"
    write_atomic(manifest, ("\n".join(manifest_line(c, data) for c in CASES) + "\n").encode())
    verdicts: Dict[str, str] = {}
    for variant in variants:
        name, vendor = variant.name, variant.vendor_dir
        try:
            program = compile_program(
                vendor,
                validation_env(session, vendor=vendor),
                session.ws.tmp / "bench" / "programs" / name,
            )
        except RouteError as exc:
            verdicts[name] = f"FAIL: {exc}"
            continue
        runs, _, _ = capi.run_cases(program.binary, manifest, program.env, [c.name for c in CASES])
        failed = []
        for case in CASES:
            r = runs[case.name]
            result = (
                judge_files(case, tensors[case.name], data, r.kernel_ms, expected[case.name])
                if r.ok
                else None
            )
            if result is None or result.status != "PASS":
                failed.append(f"{case.name}: {result.message if result else r.error}")
        verdicts[name] = (
            "PASS" if not failed else f"FAIL ({len(failed)}/{len(CASES)} cases; first {failed[0]})"
        )
        note(f"variant {name}: validation {verdicts[name]}")
    return verdicts
