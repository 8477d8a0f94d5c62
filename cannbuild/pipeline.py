"""doctor -> resolve -> fetch -> build -> install, as plain functions over plain data.

`open_session` reads the host and picks the recipe; `sync.syncing_sources` pins and
checks out the sources (writing or honouring the lock); `run_steps` runs the
steps that are not up to date, each once its repo is ready.  Tasks call these and
render what they return.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence

from .errors import DoctorBlocked, UsageError
from .host.check import FAIL, PASS, WARN, Check
from .host.doctor import HostReport, read_host
from .host.toolkit import Toolkit, host_arch
from .options import Options
from .overlay import overlay_env
from .plan import (
    UP_TO_DATE,
    PlannedStep,
    StepContext,
    check_force,
    check_selection,
    hashed_env_values,
    not_selected_reason,
    plan_all,
    plan_step,
    selected,
)
from .recipes import Recipe, check_requirements, select_recipe
from .render import command_env, render_value
from .resources import data_dir
from .runner import (
    ActionContext,
    NoProgress,
    Progress,
    RunLogs,
    StepOutcome,
    new_run_id,
    run_step,
    skip,
)
from .sources import Fetcher, mirror_git_env
from .sync import Sources, SourceState
from .workspace import Workspace

if TYPE_CHECKING:
    from .sandbox import SandboxInfo

# a step waiting this long for its repo's fetch says so (a short wait is not news)
SILENT_WAIT_S = 1.0


@dataclass(frozen=True)
class Session:
    options: Options
    ws: Workspace
    host: HostReport
    recipe: Recipe
    toolkit: Toolkit
    soc: str
    values: Mapping[str, Any]
    sandbox: Optional[SandboxInfo] = None
    sandbox_lease: Optional[Any] = field(default=None, compare=False, repr=False)

    @property
    def fetcher(self) -> Fetcher:
        return Fetcher(
            mirrors=self.options.mirrors, offline=self.options.offline, retries=self.options.retries
        )

    @property
    def vendor_dir(self) -> Path:
        return self.ws.opp / "vendors" / f"{self.options.vendor_name}_transformer"


@dataclass(frozen=True)
class Sandboxed:
    """The options pointed at the sandbox, its info, and the lease that keeps another run
    from replacing it while this one uses it (hold it as long as the sandbox is used)."""

    options: Options
    info: Optional[SandboxInfo] = None
    created: bool = False
    lease: Optional[Any] = field(default=None, compare=False, repr=False)


def with_sandbox(options: Options) -> Sandboxed:
    """For --sandbox: create (or reuse) the emulated host and point the options at it."""
    if not options.sandbox:
        return Sandboxed(options)
    assert options.sandbox_dir is not None
    from .sandbox import create_sandbox, resolve_spec  # a real host never pays for it

    spec = resolve_spec(options.sandbox_dir, options.sandbox_variant, options.sandbox_cann)
    if options.workspace in spec.dir.parents:  # the sandbox lives in the workspace: claim it first
        from .ownership import claim

        claim(options.workspace, "workspace", "--workspace")
    result = create_sandbox(spec)
    info = result.info
    user_prefixes = {prefix for prefix, _ in options.mirrors}
    mirrors = list(options.mirrors) + [
        (p, r) for p, r in info.mirrors.items() if p not in user_prefixes
    ]
    pointed = options.with_(
        sysroot=info.sysroot,
        mirrors=tuple(sorted(mirrors, key=lambda kv: -len(kv[0]))),
        sandbox_variant=info.variant,
        sandbox_cann=info.cann,
    )
    return Sandboxed(pointed, info, result.created, result.lease)


def requirement_checks(
    recipe: Recipe, host: HostReport, options: Optional[Options] = None
) -> List[Check]:
    """What the recipe needs of this host, as doctor rows: the toolkit's share/info
    packages, the files its builds read from the toolkit (for the steps that will run),
    and the tools its builds call (gawk: every ops-transformer build.sh pipes its output
    through it and exits 127 without it)."""
    checks: List[Check] = _contents_checks(recipe, host, options or Options())
    toolkit = host.toolkit
    if toolkit is not None and toolkit.version is not None:
        unmet = check_requirements(recipe, toolkit.share_info)
        if unmet:
            listed = "; ".join(
                f"{pkg} {spec} ({'missing' if have is None else f'{have}: {problem}'})"
                for pkg, spec, have, problem in unmet
            )
            checks.append(
                Check(
                    "recipe.toolkit",
                    FAIL,
                    f"the toolkit at {toolkit.path} lacks what recipe {recipe.name} needs in "
                    f"share/info: {listed}",
                    f"Install the CANN {toolkit.version.release} packages that provide them, or "
                    "pick another recipe with --recipe.",
                    blocking=True,
                )
            )
        elif recipe.requires:
            checks.append(
                Check(
                    "recipe.toolkit",
                    PASS,
                    f"share/info has what recipe {recipe.name} needs "
                    f"({', '.join(pkg for pkg, _ in recipe.requires)})",
                )
            )
    path = (host.build_env or {}).get("PATH") or os.environ.get("PATH", os.defpath)
    for tool in recipe.tools:
        found = shutil.which(tool.name, path=path)
        if found:
            checks.append(Check(f"recipe.tool.{tool.name}", PASS, f"{tool.name} at {found}"))
        else:
            checks.append(
                Check(
                    f"recipe.tool.{tool.name}",
                    FAIL,
                    f"{tool.name} is not on PATH; recipe {recipe.name} needs it: {tool.why}",
                    f"Install it: {tool.install}.",
                    blocking=True,
                )
            )
    return checks


def _contents_checks(recipe: Recipe, host: HostReport, options: Options) -> List[Check]:
    """The files the recipe's builds read from the toolkit (recipe [[toolkit.files]]), and
    where ops-transformer looks for opbase's headers."""
    from .host.contents import contents_check

    tk = host.toolkit
    if tk is None or tk.version is None:
        return []
    steps = [s.name for s in recipe.steps if selected(s, options.optional_steps, options.force)]
    home = Path((host.build_env or {}).get("ASCEND_HOME_PATH") or tk.path)
    checks = [contents_check(recipe.toolkit_files, steps, home, host_arch(), recipe.name)]
    if recipe.opbase == "toolkit" and recipe.opbase_headers != "pkg_inc":
        checks.append(_opbase_headers_check(recipe, home, options.install_into_toolkit))
    return checks


def _opbase_headers_check(recipe: Recipe, home: Path, into_toolkit: bool) -> Check:
    """opbase installs op_common under pkg_inc; this recipe's ops-transformer looks elsewhere."""
    where = f"{host_arch()}-linux/{recipe.opbase_headers}"
    header = home / where / "op_common/op_host/util/opbase_export.h"
    if header.is_file():
        return Check(
            "recipe.opbase_headers",
            PASS,
            f"the toolkit ships {where}/op_common, where ops-transformer looks for opbase",
        )
    detail = (
        f"opbase at recipe {recipe.name}'s ref installs op_common under pkg_inc only, its "
        f"ops-transformer looks under {where}, and the toolkit has no {where}/op_common"
    )
    if into_toolkit:
        return Check(
            "recipe.opbase_headers",
            FAIL,
            detail + ": with --install-into-toolkit the build stops at 'Could NOT find OPBASE'",
            "Drop --install-into-toolkit: cannbuild's workspace overlay exposes opbase's "
            f"headers under both pkg_inc and {recipe.opbase_headers}.",
            blocking=True,
        )
    return Check(
        "recipe.opbase_headers",
        WARN,
        detail + "; the workspace overlay exposes them under both",
        "Nothing to do with the default overlay; a toolkit install of this opbase "
        "(--install-into-toolkit) would not build.",
    )


def doctor_report(options: Options, env: Mapping[str, str], cwd: Path) -> HostReport:
    """The host's rows, and (when a recipe can be chosen) what that recipe needs of it."""
    host = read_host(options, env)
    toolkit = host.toolkit
    if toolkit is None or toolkit.version is None:
        return host
    try:
        recipe = select_recipe(options.recipe, toolkit.version.train, cwd)
    except UsageError as exc:
        row = Check("recipe", WARN, exc.message.rstrip("."), exc.hint or "Pass --recipe.")
        return replace(host, checks=(*host.checks, row))
    extra = [
        Check("recipe", PASS, f"{recipe.name} ({recipe.path.name}) for CANN {toolkit.version}")
    ]
    extra += requirement_checks(recipe, host, options)
    needed = {c.id.rsplit(".", 1)[-1] for c in extra if c.id.startswith("recipe.tool.")}
    kept = tuple(c for c in host.checks if not (c.id.startswith("tool.") and c.id[5:] in needed))
    return replace(host, checks=(*kept, *extra))


def open_session(
    options: Options,
    env: Mapping[str, str],
    cwd: Path,
    sandbox: Optional[SandboxInfo] = None,
    lease: Optional[Any] = None,
) -> Session:
    from .ownership import check_replaceable

    check_replaceable(options.workspace, "workspace", "--workspace")  # before any reading
    host = read_host(options, env)
    _refuse_blocking(host.checks)
    toolkit = host.toolkit
    assert toolkit is not None and toolkit.version is not None and host.soc is not None
    recipe = select_recipe(options.recipe, toolkit.version.train, cwd)
    _refuse_blocking(requirement_checks(recipe, host, options))
    soc = host.soc.soc
    if recipe.socs and soc not in recipe.socs:
        raise UsageError(
            f"--soc {soc} is not a SoC ops-transformer builds for in recipe {recipe.name} ({recipe.path.name}).",
            f"Use one of {', '.join(recipe.socs)}.",
        )
    ws = Workspace(options.workspace)
    values = template_values(options, ws, toolkit, soc, recipe, host)
    return Session(options, ws, host, recipe, toolkit, soc, values, sandbox, lease)


def _refuse_blocking(checks: Sequence[Check]) -> None:
    blocking = [c for c in checks if c.status == FAIL and c.blocking]
    if blocking:
        first = blocking[0]
        raise DoctorBlocked(
            f"cannot build: doctor check {first.id} failed: {first.detail}.", first.hint
        )


def template_values(
    options: Options, ws: Workspace, tk: Toolkit, soc: str, recipe: Recipe, host: HostReport
) -> Dict[str, Any]:
    assert tk.version is not None
    names = [r.name for r in recipe.repos]
    home = (host.build_env or {}).get("ASCEND_HOME_PATH", str(tk.path))
    values: Dict[str, Any] = {
        "cann": {
            "version": tk.version.text,
            "release": tk.version.release,
            "train": tk.version.train,
            "path": str(tk.path),
            "home": home,
            "layout": tk.layout,
        },
        "arch": host_arch(),
        "soc": soc,
        "jobs": options.jobs,
        "ops": options.ops,
        "vendor_name": options.vendor_name,
        "workspace": str(ws.root),
        "src": {n: str(ws.checkout(n)) for n in names},
        "third_party": {n: str(ws.checkout(n) / "third_party") for n in names},
        "opp": str(ws.opp),
        "stage": str(ws.stage),
        "overlay": str(ws.overlay),
        "opbase_install_path": str(_opbase_install_path(options, ws, tk)),
        "artifacts": {},
    }
    values.update(dict(recipe.vars))
    return values


def _opbase_install_path(options: Options, ws: Workspace, tk: Toolkit) -> Path:
    if not options.install_into_toolkit:
        return ws.stage
    if (tk.real_path / "share" / "info").is_dir():
        return tk.real_path
    raise UsageError(
        f"--install-into-toolkit: {tk.real_path} has no share/info folder for opbase's installer to merge into.",
        "Use the default workspace overlay (drop --install-into-toolkit).",
    )


# --- steps -----------------------------------------------------------------------


def step_context(
    session: Session, sources: Optional[SourceState], env: Mapping[str, str]
) -> StepContext:
    host = session.host
    tk = session.toolkit
    base = dict(host.build_env or env)
    over = None
    if session.recipe.opbase == "toolkit" and not session.options.install_into_toolkit:
        home = Path(base.get("ASCEND_HOME_PATH", str(tk.path)))
        over = overlay_env(base, [home, tk.path, tk.real_path], session.ws.overlay)
    extra = {"TMPDIR": str(session.ws.tmp)}
    extra.update(mirror_git_env(session.options.mirrors, session.options.offline))
    return StepContext(
        values=session.values,
        sources=dict(sources.identities) if sources else {},
        toolkit={"version": tk.version_text or "", "path": str(tk.path)},
        hashed_env=hashed_env_values(env),
        base_env=base,
        overlay_env=over,
        extra_env=extra,
        recipe=session.recipe.name,
        templates=command_env(data_dir("templates")),
    )


def make_plan(
    session: Session, sources: Optional[SourceState], env: Mapping[str, str], phases: Sequence[str]
) -> List[PlannedStep]:
    ctx = step_context(session, sources, env)
    return plan_all(
        session.recipe,
        ctx,
        session.ws,
        phases,
        session.options.force,
        session.options.optional_steps,
    )


@dataclass(frozen=True)
class RunResult:
    run_id: str
    outcomes: Sequence[StepOutcome]
    logs_dir: Path

    @property
    def failed(self) -> Optional[StepOutcome]:
        return next((o for o in self.outcomes if o.status == "failed"), None)

    @property
    def ran(self) -> List[str]:
        return [o.name for o in self.outcomes if o.status == "ran"]


def output_patterns(step: PlannedStep, values: Mapping[str, Any], ws: Workspace) -> List[str]:
    """The step's `produces` globs, each checked to stay inside the workspace: the runner
    deletes what they match before the step runs."""
    from .ownership import inside

    patterns = []
    for raw in step.spec.produces:
        what = f"step {step.name!r} produces"
        pattern = step.cwd / render_value(raw, values, what)
        fixed = Path(*[part for part in pattern.parts if not any(c in part for c in "*?[")])
        inside(ws.root, fixed.parent if fixed == pattern else fixed, f"{what} {raw!r}")
        patterns.append(str(pattern))
    return patterns


def run_steps(
    session: Session,
    sources: Sources,
    env: Mapping[str, str],
    phases: Sequence[str],
    progress: Optional[Progress] = None,
    run_id: Optional[str] = None,
) -> RunResult:
    """Run each step that is not up to date, in order; a step waits for its own repo
    only (`sources` may still be fetching the others)."""
    progress = progress or NoProgress()
    ctx = step_context(session, None, env)
    recipe, ws = session.recipe, session.ws
    logs = RunLogs(ws, run_id or new_run_id())
    actions = ActionContext(
        toolkit_home=Path(session.values["cann"]["home"]),
        overlay=ws.overlay,
        stage=ws.stage,
        opp=ws.opp,
        vendor_dir=session.vendor_dir,
        overlay_enabled=ctx.overlay_env is not None,
        opbase_headers=recipe.opbase_headers,
        arch=host_arch(),
        toolkit_target=session.toolkit.real_path if session.options.install_into_toolkit else None,
        toolkit_backup=ws.root / "toolkit-backup",
    )
    check_force(recipe, session.options.force)
    check_selection(recipe, session.options.optional_steps)
    force = set(session.options.force)
    outcomes: List[StepOutcome] = []
    use_overlay = False
    for spec in recipe.steps:
        if spec.phase not in phases:
            continue
        if not selected(spec, session.options.optional_steps, session.options.force):
            progress.note(f"{spec.name}: not run ({not_selected_reason(spec)})")
            continue
        if spec.repo and spec.repo not in ctx.sources:
            if not sources.is_ready(spec.repo, within_s=SILENT_WAIT_S):  # say why nothing moves
                progress.note(f"{spec.name}: waiting for the {spec.repo} sources to be fetched")
            ctx = replace(ctx, sources={**ctx.sources, spec.repo: sources.identity_of(spec.repo)})
        step = plan_step(recipe, spec, ctx, ws, use_overlay, (), spec.name in force)
        if step.status == UP_TO_DATE:
            outcomes.append(skip(step, progress))
        else:
            patterns = output_patterns(step, session.values, ws)
            outcome = run_step(step, ws, logs, actions, progress, patterns)
            outcomes.append(outcome)
            if outcome.status == "failed":
                break
        if spec.action == "overlay" and ctx.overlay_env is not None:
            use_overlay = True
    return RunResult(logs.run_id, tuple(outcomes), logs.dir)


def validation_env(session: Session) -> Dict[str, str]:
    """The toolkit env plus the custom package's own set_env.bash, as a user would source it."""
    base = dict(session.host.build_env or os.environ)
    set_env = session.vendor_dir / "bin" / "set_env.bash"
    if not set_env.is_file():
        return base
    from .host.toolchain import capture_env

    captured = capture_env(set_env, base)
    return dict(captured.env)


@dataclass(frozen=True)
class ValidationRun:
    validation: Mapping[str, Any]  # the report's validation part
    report: Optional[Any]  # the ValidationReport; None when a PASS verdict was reused
    reused_from: Optional[str]


def validate_session(
    session: Session,
    env: Mapping[str, str],
    case_names: Sequence[str],
    run_id: str,
    reuse: bool = False,
) -> ValidationRun:
    """Validate (or, with `reuse`, take a PASS whose inputs are unchanged)."""
    from .validate import inputs_for, run_validation, validation_key
    from .workspace import read_json, write_json_atomic

    inputs = inputs_for(session, env, case_names)
    key = validation_key(inputs)
    stamp_file = session.ws.stamps / "validate.json"
    cached = read_json(stamp_file) if reuse else None
    if cached and cached.get("key") == key and cached.get("validation", {}).get("status") == "PASS":
        reused_from = cached["run_id"]
        return ValidationRun(dict(cached["validation"], reused_from=reused_from), None, reused_from)
    report = run_validation(inputs)
    validation = report.to_json()
    write_json_atomic(stamp_file, {"key": key, "run_id": run_id, "validation": validation})
    return ValidationRun(validation, report, None)
