"""The numeric checks of validation, by name (issue 27): each repository's representative
operator through its aclnn C API, judged against a float64 reference.

"ops-transformer.flash_attention" is the FlashAttention check of cases.py and capi.py; the
others run one program per operator (kernels/op_checks/<op>_check.cpp), compiled and run
the way capi.py compiles and runs fa_check: against the vendor's libcust_opapi.so and the
toolkit's libraries, one `CASE <name> OK|ERROR` line per case.  Every output is judged by
FlashAttention's rule (cases.RULE), which decides, and measured by opbase's MERE/MARE
standard (precision.py), which is reported beside it.
"""

from __future__ import annotations

import json
from pathlib import Path
from threading import Event
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct, field
from msgspec.structs import asdict

from .. import safefs
from ..bounded import DATA_FILE, read_bytes
from ..errors import UsageError
from ..host.pystack import read_python_stack
from ..phases import PhaseSink, no_phases
from ..resources import data_dir
from ..states import Verdict
from . import capi, precision
from .casefiles import raw_bytes, read_tensor
from .cases import judge_output, reference_torch, torch_dtype, why_no_torch
from .inputs import ValidationInputs
from .opcases import CASES, OpCase, make_input, manifest_line, out_shape, reference
from .precision import Judged
from .verdict import ValidationCheck

if TYPE_CHECKING:
    from torch import Tensor

OP_RULE = (
    "max|out - ref64| <= 2 * max|out_torch_same_dtype - ref64| + 2 * max|ref64 + 0.3 - 0.3 - ref64| "
    "(rounded in the kernel dtype) + 1e-5 for fp32"
)


class OpCheck(Struct, frozen=True, kw_only=True):
    """One repository's numeric check: which operator, through which API, and why."""

    name: str  # "<repo>.<op>", the recipe's [repos.X.validate] check
    repo: str
    op: str  # the --ops / --run_example name
    api: str
    symbols: Tuple[str, ...]  # what the vendor library must export
    program: str  # kernels/op_checks/<program>
    # libraries besides -lcust_opapi -lascendcl -lnnopbase that the repository's own cust
    # example links (ops-nn's: -lopapi_math, build.sh build_single_example)
    extra_libs: Tuple[str, ...] = ()


CHECKS: Mapping[str, OpCheck] = {
    check.name: check
    for check in (
        OpCheck(
            name="ops-math.segsum",
            repo="ops-math",
            op="segsum",
            api="aclnnExpSegsum",
            symbols=("aclnnExpSegsumGetWorkspaceSize", "aclnnExpSegsum"),
            program="segsum_check.cpp",
        ),
        OpCheck(
            name="ops-nn.swi_glu",
            repo="ops-nn",
            op="swi_glu",
            api="aclnnSwiGlu",
            symbols=("aclnnSwiGluGetWorkspaceSize", "aclnnSwiGlu"),
            program="swi_glu_check.cpp",
            extra_libs=("opapi_math",),
        ),
        OpCheck(
            name="ops-cv.upsample_bilinear2d",
            repo="ops-cv",
            op="upsample_bilinear2d",
            api="aclnnUpsampleBilinear2d",
            symbols=("aclnnUpsampleBilinear2dGetWorkspaceSize", "aclnnUpsampleBilinear2d"),
            program="upsample_bilinear2d_check.cpp",
        ),
    )
}


class OpResult(Judged, kw_only=True):
    check: str
    case: OpCase

    def to_json(self) -> Dict[str, object]:
        c = self.case
        head = {"check": self.check, "name": c.name, "dtype": c.dtype, "shape": list(c.shape)}
        return {**head, **super().to_json()}


class OpOutcome(Struct, kw_only=True):
    """A check's verdict over its cases (`status` PASS only when every case ran and passed)."""

    check: str
    status: str
    message: str
    results: List[OpResult] = field(default_factory=list)
    command: str = ""
    exit_code: Optional[int] = None

    def to_json(self) -> Dict[str, object]:
        return {
            "check": self.check,
            "status": self.status,
            "message": self.message,
            "rule": OP_RULE,
            "command": self.command,
            "exit_code": self.exit_code,
            "cases": [r.to_json() for r in self.results],
        }


def judge(check: str, case: OpCase, got: Tensor, ref: Tensor, same: Tensor) -> OpResult:
    """One case's output (its dtype) against the float64 reference, by FlashAttention's rule,
    with opbase's MERE/MARE beside it."""
    torch = reference_torch()
    result = OpResult(check=check, case=case, status=Verdict.PASS)
    dt = torch_dtype(torch, case.dtype)
    same_err = float((same.double() - ref).abs().max()) if ref.numel() else 0.0
    noise = float(((ref.to(dt) + 0.3 - 0.3).double() - ref).abs().max()) if ref.numel() else 0.0
    judge_output(result, got.double(), ref, same_err, noise, "the output")
    if result.status == Verdict.PASS:
        result.message = f"max abs error {result.max_abs_err:.3g} <= bound {result.bound:.3g}"
    return result


def program_source(check: OpCheck) -> Path:
    return data_dir("kernels") / "op_checks" / check.program


def run_check(
    check: OpCheck,
    vendor_dir: Path,
    env: Mapping[str, str],
    workdir: Path,
    phases: PhaseSink = no_phases,
    case_names: Sequence[str] = (),
) -> OpOutcome:
    """Compile the check's program against the vendor's package, run its cases, judge them.
    `workdir` is a folder of its own (made here, beside the workspace's other checks)."""
    cases = select(check, case_names)
    missing_torch = why_no_torch()
    if missing_torch:
        return OpOutcome(
            check=check.name,
            status=Verdict.SKIPPED,
            message=missing_torch,
            results=[OpResult(check=check.name, case=c, status=Verdict.SKIPPED) for c in cases],
        )
    work = safefs.make_dirs(workdir.parent, workdir, "the validation folder")
    phases(f"{check.name}: compiling {check.program} against the package")
    compiled = capi.compile_check(
        vendor_dir,
        env,
        work,
        source=program_source(check),
        extra_includes=(program_source(check).parent,),
        libs=(*check.extra_libs, "cust_opapi", "ascendcl", "nnopbase"),
    )
    if not compiled.ok or compiled.binary is None:
        message = (
            f"{check.program} does not compile and link against the package: {compiled.first_error}"
        )
        return OpOutcome(
            check=check.name,
            status=Verdict.FAIL,
            message=message,
            command=compiled.command,
            results=[
                OpResult(check=check.name, case=c, status=Verdict.FAIL, message=message)
                for c in cases
            ],
        )
    phases(f"{check.name}: {len(cases)} cases through {check.api} against a float64 reference")
    data = safefs.fresh(work, work / "cases", "the validation cases")
    inputs = {}
    for case in cases:
        inputs[case.name] = make_input(case)
        (data / f"{case.name}.in").write_bytes(raw_bytes(inputs[case.name]))
    manifest = data / "manifest.txt"
    manifest.write_text("\n".join(manifest_line(check.op, c, data) for c in cases) + "\n")
    runs, _output, code = capi.run_cases(
        compiled.binary, manifest, capi.library_env(env), [c.name for c in cases]
    )
    results = [_judge_run(check, case, inputs[case.name], data, runs[case.name]) for case in cases]
    return _outcome(check, results, compiled.command, code)


def _judge_run(check: OpCheck, case: OpCase, x: Tensor, data: Path, run: capi.CaseRun) -> OpResult:
    if not run.ok:
        why = f"ACL/aclnn error: {run.error}"
        return OpResult(check=check.name, case=case, status=Verdict.FAIL, message=why)
    torch = reference_torch()
    try:
        got = read_tensor(data / f"{case.name}.out", torch_dtype(torch, case.dtype))
        got = got.reshape(out_shape(check.op, case))
    except (UsageError, RuntimeError, ValueError) as exc:
        why = f"the output cannot be read: {exc}"
        return OpResult(check=check.name, case=case, status=Verdict.FAIL, message=why)
    ref, same = reference(check.op, case, x)
    result = judge(check.name, case, got, ref, same)
    result.kernel_ms = run.kernel_ms
    return result


def _outcome(check: OpCheck, results: List[OpResult], command: str, code: int) -> OpOutcome:
    status, message = precision.case_verdict(results, check.api)
    return OpOutcome(
        check=check.name,
        status=status,
        message=message,
        results=results,
        command=command,
        exit_code=code,
    )


def select(check: OpCheck, names: Sequence[str]) -> Tuple[OpCase, ...]:
    """The named cases of the check (all when none are named); an unknown name is an error."""
    cases = CASES[check.op]
    if not names:
        return cases
    known = {c.name for c in cases}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(
            f"--cases {unknown[0]!r} is not a case of check {check.name}.",
            f"Cases: {', '.join(c.name for c in cases)}.",
        )
    return tuple(c for c in cases if c.name in names)


class OpNumeric:
    """A check of OpCheck's kind as validation's registry runs it (registry.NumericCheck):
    the C API route is the report's `capi` check, its cases the report's cases."""

    def __init__(self, check: OpCheck) -> None:
        self.check = check

    def key(self, inp: ValidationInputs) -> Dict[str, object]:
        """What the verdict depends on besides the package and the env."""
        source = program_source(self.check)
        header = source.parent / "op_check.h"
        return {
            "program": (read_bytes(source, DATA_FILE) + read_bytes(header, DATA_FILE)).hex(),
            "cases": json.dumps(
                [asdict(c) for c in select(self.check, inp.case_names)], sort_keys=True
            ),
            "rule": OP_RULE,
            "torch": read_python_stack().torch,
        }

    def prepare(self, case_names: Sequence[str], memo: Dict[str, object], stop: Event) -> None:
        """torch's import: these references are cheap beside it."""
        why_no_torch()

    def skipped(self, inp: ValidationInputs, reason: str) -> Tuple[ValidationCheck, List[OpResult]]:
        cases = select(self.check, inp.case_names)
        return ValidationCheck(id="capi", status=Verdict.SKIPPED, message=reason), [
            OpResult(check=self.check.name, case=c, status=Verdict.SKIPPED, message=reason)
            for c in cases
        ]

    def run(
        self, inp: ValidationInputs, phases: PhaseSink
    ) -> Tuple[ValidationCheck, List[OpResult]]:
        outcome = run_check(
            self.check, inp.vendor_dir, inp.env, inp.workdir, phases, inp.case_names
        )
        details: Dict[str, object] = {
            "check": self.check.name,
            "api": self.check.api,
            "rule": OP_RULE,
            "command": outcome.command,
            "exit_code": outcome.exit_code,
        }
        check = ValidationCheck(
            id="capi", status=outcome.status, message=outcome.message, details=details
        )
        return check, outcome.results

    def after(self, inp: ValidationInputs, phases: PhaseSink) -> List[ValidationCheck]:
        """No route after the example: torch_npu has no call of these operators to check."""
        return []
