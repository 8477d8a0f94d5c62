"""FlashAttention's numerical check (`ops-transformer.flash_attention`): the cases
(cases.py) through the aclnn C API (kernels/flash_attention/fa_check.cpp, capi.py) and
through torch_npu.npu_fusion_attention, each judged against a float64 reference."""

from __future__ import annotations

import json
from threading import Event
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from msgspec.structs import asdict

from .. import safefs
from ..bounded import DATA_FILE, read_bytes
from ..host.pystack import read_python_stack
from ..lazy import lazy_module
from ..phases import PhaseSink
from ..signals import deferred
from ..states import Verdict
from . import capi, casefiles, cases, precision
from .cases import CaseResult
from .inputs import ValidationInputs
from .verdict import ValidationCheck

if TYPE_CHECKING:
    from . import torchnpu
else:  # the torch_npu route loads when it runs
    torchnpu = lazy_module("cannbuild.validate.torchnpu")

PASS, FAIL, SKIPPED = Verdict.PASS, Verdict.FAIL, Verdict.SKIPPED


class FlashAttention:
    """The numerical check of a package that ships aclnnFlashAttentionScore(V2)."""

    def key(self, inp: ValidationInputs) -> Dict[str, object]:
        """What the verdict depends on besides the package and the env: the program, the
        cases, the rule, torch."""
        stack = read_python_stack()
        return {
            "program": read_bytes(capi.fa_check_source(), DATA_FILE).hex(),
            "cases": json.dumps([asdict(c) for c in cases.select(inp.case_names)], sort_keys=True),
            "rule": cases.RULE,
            "torch": stack.torch,
            "torch_npu": stack.torch_npu,
        }

    def skipped(
        self, inp: ValidationInputs, reason: str
    ) -> Tuple[ValidationCheck, List[CaseResult]]:
        selected = cases.select(inp.case_names)
        return ValidationCheck(id="capi", status=SKIPPED, message=reason), [
            cases.CaseResult(case=c, status=SKIPPED, message=reason) for c in selected
        ]

    def run(
        self, inp: ValidationInputs, phases: PhaseSink
    ) -> Tuple[ValidationCheck, List[CaseResult]]:
        if _why_no_torch_npu(inp) is None:
            # its worker imports torch_npu while this route and the example run (after() takes
            # it; run_validation closes it if the run ends first)
            with deferred():  # a signal now would orphan the worker run_validation stops
                inp.memo[TORCH_NPU] = torchnpu.Started(inp.env, inp.workdir)
        return _run_capi(inp, cases.select(inp.case_names), phases)

    def prepare(self, case_names: Sequence[str], memo: Dict[str, object], stop: Event) -> None:
        """Each case's seeded inputs and float64 reference, before the package is there."""
        if cases.why_no_torch():
            return
        for case in cases.select(case_names):
            if stop.is_set():
                return
            cases.reference_once(memo, case, cases.inputs_once(memo, case))

    def after(self, inp: ValidationInputs, phases: PhaseSink) -> List[ValidationCheck]:
        """The route users take, after the repository's example."""
        return [_torch_npu_check(inp, cases.select(inp.case_names), phases)]


TORCH_NPU = "torch_npu-worker"  # ValidationInputs.memo: the worker run() started


def _why_no_torch_npu(inp: ValidationInputs) -> Optional[str]:
    why_not = torchnpu.unavailable(inp.target, inp.no_device_reason, read_python_stack())
    if why_not is None and not inp.library.is_file():
        why_not = "not run: the operator library is missing (see the library check)"
    return why_not or cases.why_no_torch()


def _torch_npu_check(
    inp: ValidationInputs, selected: Sequence[cases.Case], phases: PhaseSink
) -> ValidationCheck:
    """The route users take: torch_npu.npu_fusion_attention, in its own process."""
    why_not = _why_no_torch_npu(inp)
    if why_not:  # a worker run() started stays in the memo: run_validation stops it
        return ValidationCheck(id="torch_npu", status=SKIPPED, message=why_not)
    started = inp.memo.pop(TORCH_NPU, None)
    started = started if isinstance(started, torchnpu.Started) else None
    phases(f"torch_npu: npu_fusion_attention on {len(selected)} cases (its own process)")
    outcome = torchnpu.run(
        selected,
        inp.library,
        inp.env,
        inp.workdir,
        inp.memo,
        started,
    )
    return ValidationCheck(
        id="torch_npu", status=outcome.status, message=outcome.message, details=outcome.details
    )


def _run_capi(
    inp: ValidationInputs, selected: Sequence[cases.Case], phases: PhaseSink
) -> Tuple[ValidationCheck, List[CaseResult]]:
    missing_torch = cases.why_no_torch()
    if missing_torch:
        return ValidationCheck(id="capi", status=SKIPPED, message=missing_torch), [
            cases.CaseResult(case=c, status=SKIPPED, message=missing_torch) for c in selected
        ]
    # workdir is <workspace>/validate: nothing below the workspace is written through a link
    work = safefs.make_dirs(inp.workdir.parent, inp.workdir, "the validation folder")
    phases("capi: compiling fa_check against the package")
    compiled = capi.compile_check(inp.vendor_dir, inp.env, work)
    if not compiled.ok or compiled.binary is None:
        message = f"fa_check does not compile and link against the package: {compiled.first_error}"
        return ValidationCheck(
            id="capi", status=FAIL, message=message, details={"command": compiled.command}
        ), [cases.CaseResult(case=c, status=FAIL, message=message) for c in selected]
    phases(f"capi: {len(selected)} FlashAttention cases against a float64 reference")
    data = safefs.fresh(work.parent, work / "cases", "the validation cases")
    # references worked out beside the build (ahead.py) before this route needed them
    ahead = sum(f"fa-reference:{c.name}" in inp.memo for c in selected)
    tensors = {c.name: casefiles.write_inputs(c, data, inp.memo) for c in selected}
    manifest = data / "manifest.txt"
    manifest.write_text("\n".join(casefiles.manifest_line(c, data) for c in selected) + "\n")
    runs, _output, code = capi.run_cases(
        compiled.binary, manifest, capi.library_env(inp.env), [c.name for c in selected]
    )
    results: List[cases.CaseResult] = []
    for case in selected:
        ran = runs[case.name]
        if ran.ok:
            expected = cases.reference_once(inp.memo, case, tensors[case.name])
            results.append(
                casefiles.judge_files(case, tensors[case.name], data, ran.kernel_ms, expected)
            )
        else:
            error = f"ACL/aclnn error: {ran.error}"
            results.append(cases.CaseResult(case=case, status=FAIL, message=error))
    # fa_check.cpp's APIs: the dense layouts through V2, TND through VarLenScoreV4
    apis = {
        "aclnnFlashAttentionVarLenScoreV4" if c.varlen else "aclnnFlashAttentionScoreV2"
        for c in selected
    }
    status, message = precision.case_verdict(results, " and ".join(sorted(apis)))
    return ValidationCheck(
        id="capi",
        status=status,
        message=message,
        details={
            "command": compiled.command,
            "exit_code": code,
            "references_ahead": ahead,
            # of this run's references, those this machine kept from an earlier run (refcache.py)
            "references_kept": sum(f"fa-reference-kept:{c.name}" in inp.memo for c in selected),
        },
    ), results
