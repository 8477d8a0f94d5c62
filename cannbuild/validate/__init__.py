"""Validation: prove the installed package computes FlashAttention correctly.

Checks, in order: the library (ELF, exports, dependencies); a minimal
inference through the public C API on the FlashAttention cases, judged against
a float64 reference; the repository's own example, judged; the torch_npu route.
Statuses are PASS, FAIL and SKIPPED; no NPU (and no sandbox) is SKIPPED, never
PASS.  Every judged output is also measured by opbase's own standard (MERE/MARE,
precision.py) and reported beside the verdict, which rests on cannbuild's rule.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct, field
from msgspec.structs import asdict, replace

from .. import safefs
from ..build.overlay import overlay_env
from ..build.plan import recipe_templates, render_command
from ..build.session import Session
from ..decoded import JSONValue
from ..errors import ValidationFailed
from ..host.pystack import read_python_stack
from ..host.sysroot import Sysroot
from ..host.toolchain import capture_env
from ..host.toolkit import host_arch
from ..lazy import lazy_module
from ..phases import PhaseSink, no_phases
from ..render.templates import Templates, render_value
from ..states import Verdict
from ..workspace import read_json, write_json_atomic
from . import capi, casefiles, cases, precision
from .cases import RULE, CaseResult

if TYPE_CHECKING:
    from . import elfcheck, example, torchnpu
else:  # the checks' modules load when they run
    elfcheck = lazy_module("cannbuild.validate.elfcheck")
    example = lazy_module("cannbuild.validate.example")
    torchnpu = lazy_module("cannbuild.validate.torchnpu")

PASS, FAIL, SKIPPED = Verdict.PASS, Verdict.FAIL, Verdict.SKIPPED


class ValidationCheck(Struct, kw_only=True):
    id: str
    status: str
    message: str
    details: Dict[str, object] = field(default_factory=dict)

    def to_json(self) -> Dict[str, object]:
        return {"id": self.id, "status": self.status, "message": self.message, **self.details}


class ValidationReport(Struct, kw_only=True):
    target: str
    checks: List[ValidationCheck]
    cases: List[CaseResult]
    duration_s: float = 0.0
    rule: str = RULE

    @property
    def status(self) -> str:
        """FAIL if any check failed; PASS only if the numerical FlashAttention check (the C
        API route) ran on every selected case and passed; SKIPPED otherwise."""
        if any(c.status == FAIL for c in self.checks):
            return FAIL
        numeric = next((c for c in self.checks if c.id == "capi"), None)
        if (
            numeric is not None
            and numeric.status == PASS
            and self.cases
            and all(r.status == PASS for r in self.cases)
        ):
            return PASS
        return SKIPPED

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
        return "the numerical FlashAttention check did not run on every case"

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


class ValidationInputs(Struct, frozen=True, kw_only=True):
    """What validation needs from a session, as plain data."""

    vendor_dir: Path
    library: Path
    symbols: Sequence[str]
    env: Mapping[str, str]
    workdir: Path
    target: Optional[str]  # "sandbox", "npu" or None (no device)
    no_device_reason: str
    example_argv: Optional[Sequence[str]] = None
    example_command: str = ""
    example_cwd: Optional[Path] = None
    case_names: Sequence[str] = ()
    example_lookup: str = "custom-opp"
    vendor_name: str = "custom"


def inputs_for(
    session: Session,
    env: Mapping[str, str],
    case_names: Sequence[str] = (),
    templates: Optional[Templates] = None,
    package_env: bool = True,
) -> ValidationInputs:
    """What validation judges and with what; `templates` (plan.recipe_templates) renders
    the repo's example command.  Without `package_env` the env is the toolkit's, before
    the package's set_env.bash is sourced: enough for validation_key, and no child
    process."""
    recipe = session.recipe
    values = dict(session.values)
    library = session.ws.opp / render_value(
        recipe.validate.library, values, f"recipe {recipe.path}: [validate] library"
    )
    hw = session.host.hardware
    if session.sandbox is not None:
        target: Optional[str] = "sandbox"
        reason = ""
    # NPUs seen on the real host; a --sysroot tree's NPUs are files, not devices.
    elif hw.npu_count > 0 and Sysroot.at(session.options.sysroot).is_host:
        target, reason = "npu", ""
    else:
        target = None
        reason = (
            "no NPU is visible on this host (a build-only machine): run `cannbuild validate` on an "
            "Ascend host, or use --sandbox"
        )
    argv = command = None
    if recipe.validate.example:
        command = render_command(
            recipe, recipe.validate.example, values, "[validate] example", templates
        )
        argv = shlex.split(command)
    cwd = session.ws.checkout("ops-transformer")
    return ValidationInputs(
        vendor_dir=session.vendor_dir,
        library=library,
        symbols=recipe.validate.symbols,
        env=validation_env(session, package_env),
        workdir=session.ws.validate,
        target=target,
        no_device_reason=reason,
        example_argv=argv,
        example_command=command or "",
        example_cwd=cwd,
        case_names=case_names,
        example_lookup=recipe.validate.example_lookup,
        vendor_name=session.options.vendor_name,
    )


def validation_key(inp: ValidationInputs) -> str:
    """What a verdict depends on: the installed package, the program, the cases, the rule,
    torch, the target, the toolkit env.  Same key, same verdict: setup can reuse it.

    The env is taken before the package's set_env.bash is sourced (inputs_for without
    package_env): the script is one of the package's files, whose sizes and times are
    hashed, and what it exports follows from it and that env.  Sourcing it here was a
    bash run in every no-op setup."""
    digest = hashlib.sha256()
    files = (
        sorted(p for p in inp.vendor_dir.rglob("*") if p.is_file())
        if inp.vendor_dir.is_dir()
        else []
    )
    for path in files:
        st = path.stat()
        # Size and mtime of every installed file, not contents: cheap, and a reinstall rewrites the
        # times.
        digest.update(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode())
    digest.update(capi.fa_check_source().read_bytes())
    stack = read_python_stack()
    digest.update(
        json.dumps(
            {
                "cases": [asdict(c) for c in cases.select(inp.case_names)],
                "rule": cases.RULE,
                "precision": precision.standard_json(),
                "torch": stack.torch,
                "torch_npu": stack.torch_npu,
                "target": inp.target,
                "example": inp.example_command,
                "example_lookup": inp.example_lookup,
                # Where the toolkit is and what the loader searches decide which libraries the
                # checks load.
                "home": inp.env.get("ASCEND_HOME_PATH"),
                "ld": inp.env.get("LD_LIBRARY_PATH"),
            },
            sort_keys=True,
        ).encode()
    )
    return digest.hexdigest()


def run_validation(inp: ValidationInputs, phases: PhaseSink = no_phases) -> ValidationReport:
    """Every check in turn; `phases` hears each one that runs as it starts."""
    start = time.monotonic()
    checks: List[ValidationCheck] = []
    phases(f"library: {inp.library.name} (ELF, exports, dependencies)")
    lib = elfcheck.check_library(inp.library, inp.symbols, inp.env, host_arch())
    checks.append(
        ValidationCheck(
            id="library",
            status=PASS if lib.ok else FAIL,
            message=f"{inp.library.name} exports {', '.join(lib.exported)}; all dependencies resolve"
            if lib.ok
            else "; ".join(lib.problems),
            details={"path": str(inp.library), "resolved": lib.resolved},
        )
    )
    selected = cases.select(inp.case_names)
    results: List[cases.CaseResult] = []
    if inp.target is None:
        checks.append(ValidationCheck(id="capi", status=SKIPPED, message=inp.no_device_reason))
        results = [
            cases.CaseResult(case=c, status=SKIPPED, message=inp.no_device_reason) for c in selected
        ]
    elif not inp.library.is_file():
        checks.append(
            ValidationCheck(
                id="capi",
                status=SKIPPED,
                message="not run: the operator library is missing (see the library check)",
            )
        )
    else:
        check, results = _run_capi(inp, selected, phases)
        checks.append(check)
    if inp.example_argv and inp.target is not None and inp.example_cwd is not None:
        phases(f"example: {inp.example_command}")
        ex = example.run_example(
            inp.example_command,
            inp.example_argv,
            inp.example_cwd,
            inp.env,
            inp.example_lookup,
            inp.vendor_dir,
            inp.vendor_name,
        )
        checks.append(
            ValidationCheck(
                id="example",
                status=ex.status,
                message=ex.message,
                details={
                    "command": ex.command,
                    "exit_code": ex.exit_code,
                    "tail": list(ex.tail),
                    "examples": [r.to_json() for r in ex.examples],
                },
            )
        )
    elif inp.example_argv:
        checks.append(ValidationCheck(id="example", status=SKIPPED, message=inp.no_device_reason))
    checks.append(_torch_npu_check(inp, selected, phases))
    return ValidationReport(
        target=inp.target or "none",
        checks=checks,
        cases=results,
        duration_s=time.monotonic() - start,
    )


def _torch_npu_check(
    inp: ValidationInputs, selected: Sequence[cases.Case], phases: PhaseSink
) -> ValidationCheck:
    """The route users take: torch_npu.npu_fusion_attention, in its own process."""
    why_not = torchnpu.unavailable(inp.target, inp.no_device_reason, read_python_stack())
    if why_not is None and not inp.library.is_file():
        why_not = "not run: the operator library is missing (see the library check)"
    if why_not is None:
        why_not = cases.why_no_torch()
    if why_not:
        return ValidationCheck(id="torch_npu", status=SKIPPED, message=why_not)
    phases(f"torch_npu: npu_fusion_attention on {len(selected)} cases (its own process)")
    outcome = torchnpu.run(selected, inp.library, inp.env, inp.workdir)
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
        lines = compiled.output.splitlines()
        # The linker's `undefined reference to ...` names the missing symbol; else the first error.
        first = next(
            (line for line in lines if "undefined reference" in line),
            next((line for line in lines if "error" in line), compiled.output[-300:]),
        )
        message = f"fa_check does not compile and link against the package: {first}"
        return ValidationCheck(
            id="capi", status=FAIL, message=message, details={"command": compiled.command}
        ), [cases.CaseResult(case=c, status=FAIL, message=message) for c in selected]
    phases(f"capi: {len(selected)} FlashAttention cases against a float64 reference")
    data = safefs.fresh(work.parent, work / "cases", "the validation cases")
    tensors = {c.name: casefiles.write_inputs(c, data) for c in selected}
    manifest = data / "manifest.txt"
    manifest.write_text("\n".join(casefiles.manifest_line(c, data) for c in selected) + "\n")
    runs, _output, code = capi.run_cases(
        compiled.binary, manifest, capi.library_env(inp.env), [c.name for c in selected]
    )
    results: List[cases.CaseResult] = []
    for case in selected:
        case_run = runs[case.name]
        if not case_run.ok:
            results.append(
                cases.CaseResult(
                    case=case, status=FAIL, message=f"ACL/aclnn error: {case_run.error}"
                )
            )
            continue
        results.append(casefiles.judge_files(case, tensors[case.name], data, case_run.kernel_ms))
    failed = [r for r in results if r.status == FAIL]
    if failed:
        worst = failed[0]
        message = (
            f"{len(failed)}/{len(results)} cases FAIL; first: {worst.case.name}: {worst.message}"
        )
        status = FAIL
    else:
        # fa_check.cpp's APIs: the dense layouts through V2, TND through VarLenScoreV4
        apis = sorted(
            {
                "aclnnFlashAttentionVarLenScoreV4" if c.varlen else "aclnnFlashAttentionScoreV2"
                for c in selected
            }
        )
        message = f"{len(results)}/{len(results)} cases PASS through {' and '.join(apis)}"
        status = PASS
    upstream = precision.summary([(r.case.name, r.status, r.precision) for r in results])
    message += f"; {upstream}" if upstream else ""
    return ValidationCheck(
        id="capi",
        status=status,
        message=message,
        details={"command": compiled.command, "exit_code": code},
    ), results


# --- a session's validation ----------------------------------------------------


def validation_env(session: Session, package_env: bool = True) -> Dict[str, str]:
    """The toolkit env plus (with `package_env`) the custom package's own set_env.bash,
    as a user would source it.

    Where opbase was overlaid on the toolkit (not installed into it), the toolkit env is
    the overlay's, as the build's was: the package (built without an RPATH, as CANN's
    package builds are) finds the opbase it was built against only there."""
    base = dict(session.host.build_env or os.environ)
    overlay = session.ws.overlay
    # Recipes that put opbase into the toolkit (<= 8.5) install it into the overlay unless
    # --install-into-toolkit was given.
    overlaid = session.recipe.opbase == "toolkit" and not session.options.install_into_toolkit
    if overlaid and overlay.is_dir():
        tk = session.toolkit
        home = Path(base.get("ASCEND_HOME_PATH", str(tk.path)))
        base = overlay_env(base, [home, tk.path, tk.real_path], overlay)
    return with_package_env(session, base) if package_env else base


def with_package_env(session: Session, base: Mapping[str, str]) -> Dict[str, str]:
    """`base` with the custom package's own set_env.bash sourced on top (when installed)."""
    set_env = session.vendor_dir / "bin" / "set_env.bash"
    if not set_env.is_file():
        return dict(base)
    return dict(capture_env(set_env, base).env)


class ValidationRun(Struct, frozen=True, kw_only=True):
    validation: Mapping[str, JSONValue]  # the report's validation part
    report: Optional[ValidationReport]  # the ValidationReport; None when a PASS verdict was reused
    reused_from: Optional[str]


def validate_session(
    session: Session,
    env: Mapping[str, str],
    case_names: Sequence[str],
    run_id: str,
    reuse: bool = False,
    phases: PhaseSink = no_phases,
) -> ValidationRun:
    """Validate (or, with `reuse`, take a PASS whose inputs are unchanged); `phases`
    hears each check as it starts."""
    templates = recipe_templates(
        session.recipe, session.ws.jinja_cache, session.ws.render_memo("validate")
    )
    inputs = inputs_for(session, env, case_names, templates, package_env=False)
    templates.save()
    key = validation_key(inputs)
    stamp_file = session.ws.stamps / "validate.json"
    cached = read_json(stamp_file) if reuse else None
    # Only a PASS is reused: a FAIL or SKIPPED verdict is always worked out again.
    if cached and cached.get("key") == key and cached.get("validation", {}).get("status") == PASS:
        reused_from = cached["run_id"]
        return ValidationRun(
            validation=dict(cached["validation"], reused_from=reused_from),
            report=None,
            reused_from=reused_from,
        )
    phases("reading the package's set_env.bash")
    report = run_validation(replace(inputs, env=with_package_env(session, inputs.env)), phases)
    validation = report.to_json()
    write_json_atomic(stamp_file, {"key": key, "run_id": run_id, "validation": validation})
    return ValidationRun(validation=validation, report=report, reused_from=None)
