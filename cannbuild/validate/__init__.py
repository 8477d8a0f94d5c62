"""Validation: prove each installed package computes its operator correctly.

For each repository the run builds that names a `[repos.X.validate]`, in the --repos
order, checks in turn: the library (ELF, exports, dependencies); its numerical check
(registry.py: FlashAttention's cases through the C API for ops-transformer) judged
against a float64 reference; the repository's own example, judged; any route after it
(FlashAttention's torch_npu).  Statuses are PASS, FAIL and SKIPPED; no NPU (and no
sandbox) is SKIPPED, never PASS; the run's verdict is PASS only when every repository's
is.  Every judged output is also measured by opbase's own standard (MERE/MARE,
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

from msgspec import Struct
from msgspec.structs import replace

from .. import safefs
from ..bounded import STAMP, read_state
from ..build.plan import example_values, recipe_templates, render_command
from ..build.session import Session
from ..decoded import JSONValue
from ..host.pystack import read_python_stack
from ..host.sysroot import Sysroot
from ..host.toolchain import capture_env
from ..host.toolkit import host_arch
from ..lazy import lazy_module
from ..phases import PhaseSink, no_phases
from ..recipes import RepoSpec
from ..render.templates import Templates, render_value
from ..states import Verdict
from ..workspace import write_json_atomic
from . import precision
from .inputs import FA_CHECK, ValidationInputs
from .registry import CHECKS
from .verdict import JudgedCase, ValidationCheck, ValidationReport, ValidationSummary, check_verdict

if TYPE_CHECKING:
    from . import elfcheck, example
    from .ahead import Ahead
else:  # the checks' modules load when they run
    elfcheck = lazy_module("cannbuild.validate.elfcheck")
    example = lazy_module("cannbuild.validate.example")

PASS, FAIL, SKIPPED = Verdict.PASS, Verdict.FAIL, Verdict.SKIPPED

__all__ = [
    "FA_CHECK",
    "ValidationCheck",
    "ValidationInputs",
    "ValidationReport",
    "ValidationRun",
    "ValidationSummary",
    "check_verdict",
    "inputs_for",
    "run_validation",
    "validate_session",
    "validation_key",
]


def inputs_for(
    session: Session,
    env: Mapping[str, str],
    case_names: Sequence[str] = (),
    templates: Optional[Templates] = None,
    package_env: bool = True,
    repo: Optional[str] = None,
) -> ValidationInputs:
    """What validation judges of `repo` (default: the first validated repo) and with
    what; `templates` (plan.recipe_templates) renders the repo's example command.  Without
    `package_env` the env is the toolkit's, before the package's set_env.bash is sourced:
    enough for validation_key, and no child process."""
    recipe = session.recipe
    spec = _validated(session, repo)
    assert spec.validate is not None
    where = f"[repos.{spec.name}.validate]"
    values = example_values(session.values, spec.name, spec.validate.example_op)
    library = session.ws.opp / render_value(
        spec.validate.library, values, f"recipe {recipe.path}: {where} library"
    )
    target, reason = validation_target(session)
    argv = command = None
    if spec.validate.example:
        command = render_command(
            recipe, spec.validate.example, values, f"{where} example", templates
        )
        argv = shlex.split(command)
    vendor = _vendor_dir(session, spec, library)
    built = str(session.context.repos.get(spec.name, {}).get("ops", ""))
    return ValidationInputs(
        op=spec.validate.example_op or "",
        built_ops=tuple(o for o in built.split(",") if o),
        vendor_dir=vendor,
        library=library,
        symbols=spec.validate.symbols,
        env=validation_env(session, package_env, vendor),
        workdir=session.ws.validate
        if len(recipe.validated) < 2
        else session.ws.validate / spec.name,
        target=target,
        no_device_reason=reason,
        example_argv=argv,
        example_command=command or "",
        example_cwd=session.ws.checkout(spec.name),
        case_names=case_names,
        example_lookup=spec.validate.example_lookup,
        vendor_name=session.options.vendor_name,
        repo=spec.name,
        check=spec.validate.check or FA_CHECK,
        why=spec.validate.why,
    )


def validation_target(session: Session) -> Tuple[Optional[str], str]:
    """Where the checks run ("sandbox" or "npu"), or None and why not."""
    if session.sandbox is not None:
        return "sandbox", ""
    # NPUs seen on the real host; a --sysroot tree's NPUs are files, not devices.
    if session.host.hardware.npu_count > 0 and Sysroot.at(session.options.sysroot).is_host:
        return "npu", ""
    return None, (
        "no NPU is visible on this host (a build-only machine): run `cannbuild validate` on an "
        "Ascend host, or use --sandbox"
    )


def _validated(session: Session, repo: Optional[str]) -> RepoSpec:
    validated = session.recipe.validated
    found = next((r for r in validated if repo in (None, r.name)), None)
    if found is None:
        raise KeyError(repo or "no validated repo")
    return found


def _vendor_dir(session: Session, spec: RepoSpec, library: Path) -> Path:
    """The repo's vendor folder; for a recipe whose library path names no vendor suffix,
    the folder the library is in, three levels up (`<vendor>/op_api/lib/<lib>`)."""
    if spec.buildable:
        return session.vendor_dir_of(spec.name)
    return library.parent.parent.parent


def validation_key(inp: ValidationInputs) -> str:
    """What a verdict depends on: the installed package, the numerical check's program,
    cases and rule, torch, the target, the toolkit env.  Same key, same verdict: setup can
    reuse it.

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
    numeric = CHECKS.get(inp.check)
    digest.update(
        json.dumps(
            {
                "check": inp.check,
                "numeric": numeric.key(inp) if numeric is not None else None,
                "precision": precision.standard_json(),
                "target": inp.target,
                "example": inp.example_command,
                "example_lookup": inp.example_lookup,
                # Where the toolkit is and what the loader searches decide which libraries the
                # checks load.
                "home": inp.env.get("ASCEND_HOME_PATH"),
                "ld": inp.env.get("LD_LIBRARY_PATH"),
                "custom_opp": inp.env.get("ASCEND_CUSTOM_OPP_PATH"),
            },
            sort_keys=True,
        ).encode()
    )
    return digest.hexdigest()


def run_validation(inp: ValidationInputs, phases: PhaseSink = no_phases) -> ValidationReport:
    """Every check of one repository in turn; `phases` hears each one that runs as it
    starts."""
    try:
        return _run_checks(inp, phases)
    finally:  # what a check started ahead for a later one and the run ended before (a child)
        for kept in inp.memo.values():
            close = getattr(kept, "close", None)
            if callable(close):
                close()


def _run_checks(inp: ValidationInputs, phases: PhaseSink) -> ValidationReport:
    start = time.monotonic()
    checks: List[ValidationCheck] = []
    phases(f"library: {inp.library.name} (ELF, exports, dependencies)")
    lib = elfcheck.check_library(inp.library, inp.symbols, inp.env, host_arch())
    target = inp.target
    exports = f"exports {', '.join(lib.exported)}"
    if (
        inp.symbols
        and not lib.exported
        and inp.op
        and inp.built_ops
        and inp.op not in inp.built_ops
    ):
        # A package built for other operators (--ops abs in ops-math): its library has none
        # of the API this repo's check calls, which is no fault of the build.  Its library
        # is still checked; the checks of the operator it lacks are not run.
        built = ",".join(inp.built_ops)
        lib = elfcheck.check_library(inp.library, (), inp.env, host_arch())
        exports = (
            f"holds no {inp.op}: it exports none of its {len(inp.symbols)} API symbols (e.g. "
            f"{inp.symbols[0]}), the package built with --ops {built}"
        )
        inp = replace(
            inp,
            target=None,
            no_device_reason=f"not run: the package was built with --ops {built}, without "
            f"{inp.op}, the operator cannbuild's check of {inp.repo or 'this repo'} judges (see "
            f"the library row), and cannbuild has no check of {built}: add {inp.op} to --ops "
            "to have the package validated",
        )
    checks.append(
        ValidationCheck(
            id="library",
            status=PASS if lib.ok else FAIL,
            message=f"{inp.library.name} {exports}; all dependencies resolve"
            if lib.ok
            else "; ".join(lib.problems),
            details={"path": str(inp.library), "resolved": lib.resolved},
        )
    )
    numeric = CHECKS.get(inp.check)
    results: Sequence[JudgedCase] = ()
    if numeric is None:
        checks.append(
            ValidationCheck(
                id="capi",
                status=FAIL,
                message=f"the recipe names check {inp.check!r} for {inp.repo or 'this repo'}, "
                f"which this cannbuild does not have (it has: {', '.join(sorted(CHECKS))})",
            )
        )
    elif inp.target is None:
        check, results = numeric.skipped(inp, inp.no_device_reason)
        checks.append(check)
    elif not inp.library.is_file():
        check, _ = numeric.skipped(
            inp, "not run: the operator library is missing (see the library check)"
        )
        checks.append(check)
    else:
        check, results = numeric.run(inp, phases)
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
            phases,
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
                    "stopped_by": ex.stopped_by or None,
                },
            )
        )
    elif inp.example_argv:
        checks.append(ValidationCheck(id="example", status=SKIPPED, message=inp.no_device_reason))
    if numeric is not None:
        checks += numeric.after(inp, phases)
    return ValidationReport(
        target=target or "none",
        checks=checks,
        cases=results,
        duration_s=time.monotonic() - start,
        repo=inp.repo,
        check=inp.check,
        why=inp.why,
    )


# --- a session's validation ----------------------------------------------------


def validation_env(
    session: Session, package_env: bool = True, vendor: Optional[Path] = None
) -> Dict[str, str]:
    """The toolkit env plus (with `package_env`) the custom package's own set_env.bash
    (`vendor`'s, default the first selected repo's), as a user would source it.

    Where opbase was overlaid on the toolkit (not installed into it), the toolkit env is
    the overlay's, as the build's was: the package (built without an RPATH, as CANN's
    package builds are) finds the opbase it was built against only there."""
    base = dict(session.host.build_env or os.environ)
    if session.ws.overlay.is_dir():
        base = session.overlaid_env(base) or base
    if vendor is None:
        vendor = next(iter(session.vendor_dirs.values()), None)
    return with_package_env(vendor, base) if package_env and vendor is not None else base


def with_package_env(vendor: Path, base: Mapping[str, str]) -> Dict[str, str]:
    """`base` with `vendor`'s own set_env.bash sourced on top (when installed): its
    folder first on ASCEND_CUSTOM_OPP_PATH, as each repo's own example needs it (with
    several vendors set, build.sh --run_example links the first entry's library)."""
    set_env = vendor / "bin" / "set_env.bash"
    if not set_env.is_file():
        return dict(base)
    return dict(capture_env(set_env, base).env)


class ValidationRun(Struct, frozen=True, kw_only=True):
    validation: Mapping[str, JSONValue]  # the report's validation part
    report: Optional[ValidationSummary]  # None when a verdict was reused
    reused_from: Optional[str]


def validate_session(
    session: Session,
    env: Mapping[str, str],
    case_names: Sequence[str],
    run_id: str,
    reuse: bool = False,
    phases: PhaseSink = no_phases,
    ahead: Optional[Ahead] = None,
) -> ValidationRun:
    """Validate every validated repo (or, with `reuse`, take a PASS whose inputs are
    unchanged); `phases` hears each check as it starts; `ahead` is the work done beside the
    build (ahead.py)."""
    templates = recipe_templates(
        session.recipe, session.ws.jinja_cache, session.ws.render_memo("validate")
    )
    inputs = [
        inputs_for(session, env, case_names, templates, package_env=False, repo=r.name)
        for r in session.recipe.validated
    ]
    templates.save()
    keys = [validation_key(inp) for inp in inputs]
    key = keys[0] if len(keys) == 1 else hashlib.sha256("".join(keys).encode()).hexdigest()
    stamp_file = session.ws.stamps / "validate.json"
    cached = read_state(stamp_file, STAMP) if reuse else None
    status = cached.get("validation", {}).get("status") if cached else None
    # A PASS is reused, and a SKIPPED where torch is not installed: the key holds torch's
    # version, so installing it makes a new key; a no-op setup on a host without torch worked
    # it out again each time (the example's compile and run, 2 s).  A FAIL, or a SKIPPED
    # beside a torch that is installed (one that cannot be imported: a repair may keep its
    # version), is always worked out again.
    if (
        cached
        and cached.get("key") == key
        and (status == PASS or (status == SKIPPED and read_python_stack().torch is None))
    ):
        reused_from = cached["run_id"]
        return ValidationRun(
            validation=dict(cached["validation"], reused_from=reused_from),
            report=None,
            reused_from=reused_from,
        )
    reports: List[ValidationReport] = []
    if len(inputs) > 1:  # each repo's checks work in validate/<repo>
        safefs.make_dirs(session.ws.root, session.ws.validate, "the validation folder")
    for inp in inputs:
        several = f" of {inp.repo}" if len(inputs) > 1 else ""
        phases(f"reading the package's set_env.bash{several}")
        packaged = replace(
            inp,
            env=with_package_env(inp.vendor_dir, inp.env),
            memo=ahead.memo(inp.check) if ahead is not None else inp.memo,
        )
        reports.append(run_validation(packaged, _for_repo(phases, inp.repo, len(inputs))))
    summary = ValidationSummary(reports=reports)
    validation = summary.to_json()
    write_json_atomic(stamp_file, {"key": key, "run_id": run_id, "validation": validation})
    return ValidationRun(validation=validation, report=summary, reused_from=None)


def _for_repo(phases: PhaseSink, repo: str, count: int) -> PhaseSink:
    """With several repos, each phase names its repo."""
    if count < 2:
        return phases
    return lambda text: phases(f"{repo}: {text}")
