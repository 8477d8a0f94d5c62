"""The steps of a session: their context, their plan, and running them.

`session.open_session` reads the host and picks the recipe; `sources.pinning.syncing_sources`
pins and checks out the sources (writing or honouring the lock); `run_steps` runs
the steps that are not up to date, each once its repo is ready.
"""

from __future__ import annotations

from typing import Any, Callable, List, Mapping, Optional, Sequence, Set

from msgspec import Struct
from msgspec.structs import replace

from .. import safefs
from ..errors import CannbuildError
from ..host.check import Check
from ..host.toolkit import host_arch
from ..recipes import StepSpec
from ..render.templates import render_value
from ..sandbox.hostside import HostSide, lay_out_host_side
from ..sources.fetch import mirror_git_env
from ..sources.pinning import sources_from_lock, unlocked_reason
from ..sources.state import Sources, SourceState
from ..states import Outcome
from ..workspace import Workspace
from .actions import ActionContext
from .compile_cache import CompileCache, compile_cache, with_cache
from .derived import refuse_blocking
from .plan import (
    NEEDS_RUN,
    NOT_SELECTED,
    UP_TO_DATE,
    PlannedStep,
    StepContext,
    hashed_env_values,
    pattern_folder,
    recipe_templates,
    selected,
    walk,
)
from .reproducible import with_source_date
from .requirements import derived_rows
from .runner import NoProgress, Progress, RunLogs, StepOutcome, new_run_id, run_step, skip
from .session import Session
from .variant import Variant, make_copy, variant_context

# a step waiting this long for its repo's fetch says so (a short wait is not news)
SILENT_WAIT_S = 1.0


# --- steps -----------------------------------------------------------------------


def step_context(
    session: Session,
    sources: Optional[SourceState],
    env: Mapping[str, str],
    running: bool = False,
) -> StepContext:
    """`running`: steps will run, so compiled templates may be kept in the workspace (a
    plan or a dry run writes nothing there; rendered commands are kept by `run_steps`)."""
    host = session.host
    tk = session.toolkit
    base = dict(host.build_env or env)
    extra = {"TMPDIR": str(session.ws.tmp)}
    extra.update(mirror_git_env(session.options.mirrors, session.options.offline))
    return StepContext(
        values=session.values,
        sources=dict(sources.identities) if sources else {},
        toolkit={"version": tk.version_text or "", "path": str(tk.path)},
        hashed_env=hashed_env_values(env),
        base_env=base,
        overlay_env=session.overlaid_env(base),
        extra_env=extra,
        recipe=session.recipe.name,
        templates=recipe_templates(
            session.recipe,
            session.ws.jinja_cache if running else None,
            session.ws.render_memo("steps"),
        ),
    )


def make_plan(
    session: Session, sources: Optional[SourceState], env: Mapping[str, str], phases: Sequence[str]
) -> List[PlannedStep]:
    """The plan of the given phases (nothing is run or written)."""
    ctx = step_context(session, sources, env)
    options = session.options
    return walk(session.recipe, ctx, session.ws, phases, options.force, options.optional_steps)


def plan_session(
    session: Session, env: Mapping[str, str], phases: Sequence[str]
) -> List[PlannedStep]:
    """The plan as `cannbuild plan` shows it: from the lock's sources; before there is a
    lock every selected step needs a run (its inputs are not known yet)."""
    request = session.source_request()
    sources = sources_from_lock(request)
    steps = make_plan(session, sources, env, phases)
    if sources is not None:
        return steps
    reason = unlocked_reason(request)
    return [
        s
        if s.status == NOT_SELECTED  # an optional step nobody asked for stays so
        else replace(s, status=NEEDS_RUN, reason=reason)
        for s in steps
    ]


class RunResult(Struct, frozen=True, kw_only=True):
    run_id: str
    outcomes: Sequence[StepOutcome]

    @property
    def failed(self) -> Optional[StepOutcome]:
        return next((o for o in self.outcomes if o.status == Outcome.FAILED), None)

    @property
    def ran(self) -> List[str]:
        return [o.name for o in self.outcomes if o.status == Outcome.RAN]


def output_patterns(step: PlannedStep, values: Mapping[str, Any], ws: Workspace) -> List[str]:
    """The step's `produces` globs, each checked to stay inside the workspace: the runner
    deletes what they match before the step runs."""
    patterns = []
    for raw in step.spec.produces:
        what = f"step {step.name!r} produces"
        pattern = step.cwd / render_value(raw, values, what)
        safefs.check_below(ws.root, pattern_folder(pattern), f"{what} {raw!r}")
        patterns.append(str(pattern))
    return patterns


def run_steps(
    session: Session,
    sources: Sources,
    env: Mapping[str, str],
    phases: Sequence[str],
    progress: Optional[Progress] = None,
    run_id: Optional[str] = None,
    cache: Optional[CompileCache] = None,
    variant: Optional[Variant] = None,
    before_first_run: Optional[Callable[[], None]] = None,
) -> RunResult:
    """Walk the plan and run each step that is not up to date, in order; a step waits for
    its own repo only (`sources` may still be fetching the others).  `cache`: the compile
    cache the run found (its remote asked once, at the start of the run).  `variant`: the
    walk over a variant's copy and prefix instead (build/variant.py), in its own folder.
    `before_first_run` is called once, before the first step that runs (none on a no-op)."""
    progress = progress or NoProgress()
    ctx = step_context(session, None, env, running=True)
    recipe, ws, options = session.recipe, session.ws, session.options
    vendor_dirs = session.vendor_dirs
    if variant is not None:
        ctx = variant_context(ctx, session.context, variant, recipe, session.ws)
        safefs.make_dirs(ws.root, variant.root, f"the build folder of variant {variant.name}")
        ws, vendor_dirs = variant.ws, {variant.repo: variant.vendor_dir}
    logs = RunLogs(ws=ws, run_id=run_id or new_run_id())
    actions = ActionContext(
        toolkit_home=session.context.cann.home,
        overlay=session.ws.overlay,
        stage=ws.stage,
        opp=ws.opp,
        vendor_dirs=vendor_dirs,
        overlay_enabled=ctx.overlay_env is not None,
        toolkit_target=(
            session.toolkit.real_path if options.install_into_toolkit and variant is None else None
        ),
        toolkit_backup=ws.root / "toolkit-backup",
        opbase_headers=recipe.opbase_headers,
        arch=host_arch(),
    )
    if cache is None:  # ccache, issue 14 (a variant shares the workspace's)
        cache = compile_cache(options.cache_remote, session.ws.root, ctx.base_env)
    outcomes: List[StepOutcome] = []
    copied: List[str] = []  # the variant's repo, once its copy is made in this run
    first_run = [before_first_run] if before_first_run is not None else []

    def source_of(spec: StepSpec) -> Mapping[str, Any]:
        assert spec.repo is not None
        if not sources.is_ready(spec.repo, within_s=SILENT_WAIT_S):  # say why nothing moves
            progress.note(f"{spec.name}: waiting for the {spec.repo} sources to be fetched")
        identity = sources.identity_of(spec.repo)
        if variant is not None and spec.repo == variant.repo:
            return variant.identity(identity)
        return identity

    def visit(step: PlannedStep) -> bool:
        if step.status == NOT_SELECTED:
            progress.note(f"{step.name}: not run ({step.reason})")
            return True
        if step.status == UP_TO_DATE:
            outcomes.append(skip(step, progress))
            return True
        while first_run:
            first_run.pop()()
        if gate is not None:
            gate.before(step)
        if variant is not None and step.spec.repo == variant.repo and not copied:
            failed = _copy(session, variant, step, logs)
            if failed is not None:
                outcomes.append(failed)
                return False
            copied.append(variant.repo)
        patterns = output_patterns(step, ctx.values, ws)
        step = with_source_date(
            with_cache(step, cache, recipe)
        )  # ccache, SOURCE_DATE_EPOCH (issue 14)
        outcome = run_step(step, ws, logs, actions, progress, patterns)
        outcomes.append(outcome)
        return outcome.status != Outcome.FAILED

    gate = DerivedGate(session, sources) if variant is None else None
    if gate is not None:
        laid = host_side(session, sources.identity_of)
        if laid is not None and laid.laid_out:
            progress.note(host_side_note(laid))
        gate.ready_now()
    walk(recipe, ctx, ws, phases, options.force, options.optional_steps, source_of, visit)
    if ctx.templates is not None:
        ctx.templates.save()  # a run that acts keeps what it rendered (a plan does not)
    return RunResult(
        run_id=logs.run_id,
        outcomes=tuple(outcomes),
    )


def host_side(
    session: Session, identity_of: Callable[[str], Mapping[str, Any]]
) -> Optional[HostSide]:
    """On the sandbox, the toolkit's host side laid out from the recipe's `toolkit` repos
    (sandbox/hostside.py) once their checkouts are ready; None elsewhere."""
    repos = [r.name for r in session.recipe.repos if r.toolkit]
    if session.sandbox is None or not repos:
        return None
    checkouts = {r: (session.ws.checkout(r), str(identity_of(r).get("commit", ""))) for r in repos}
    return lay_out_host_side(
        session.sandbox.dir, session.toolkit.real_path, host_arch(), session.sandbox.cann, checkouts
    )


def host_side_note(laid: HostSide) -> str:
    record = laid.record
    parts = ", ".join(
        f"{repo}@{record.commits[repo][:12]} {count}" for repo, count in record.counts.items()
    )
    return f"sandbox toolkit: host side laid out from {parts} files"


def toolkit_rows(session: Session) -> List[Check]:
    """The derived rows as `plan` shows them: from the checkouts on disk, the memo only
    read (a plan writes nothing)."""
    return derived_rows(session.recipe, session.options, session.context.cann.home, soc=session.soc)


class DerivedGate:
    """What the checkouts of the steps that will run need of the toolkit
    (build/derived.py), checked once per repo: every repo whose sources are ready when the
    run starts (all of them on a rerun) before any step, the others before the first step
    that builds from them, so a fetch still running does not hold a build of another repo
    back.  A missing header or module stops the run there (exit 3), not in a build."""

    def __init__(self, session: Session, sources: Sources) -> None:
        self.session, self.sources = session, sources
        options = session.options
        self.repos = {
            s.repo
            for s in session.recipe.steps
            if s.repo and selected(s, options.optional_steps, options.force)
        }
        self.checked: Set[str] = set()

    def ready_now(self) -> None:
        self._check([r for r in sorted(self.repos) if self._ready(r)])

    def before(self, step: PlannedStep) -> None:
        repo = step.spec.repo
        if repo in self.repos and repo not in self.checked:
            self._check([repo])

    def _ready(self, repo: str) -> bool:
        """Ready and fetched: a failed fetch is the error of the step that waits for it."""
        if not self.sources.is_ready(repo):
            return False
        try:
            self.sources.identity_of(repo)
        except (CannbuildError, OSError):
            return False
        return True

    def _check(self, repos: Sequence[str]) -> None:
        if not repos:
            return
        identities = {repo: self.sources.identity_of(repo) for repo in repos}
        session = self.session
        home = session.context.cann.home
        rows = derived_rows(
            session.recipe, session.options, home, identities, keep=True, soc=session.soc
        )
        self.checked.update(repos)
        refuse_blocking(rows)


def _copy(
    session: Session, variant: Variant, step: PlannedStep, logs: RunLogs
) -> Optional[StepOutcome]:
    """The variant's fresh copy of the checkout its step builds, before the step runs
    (the failed outcome of that step when it cannot be made)."""
    commit = str((step.inputs.get("source") or {}).get("commit", ""))
    log = logs.for_step(f"{step.name}.copy")
    checkout = session.ws.checkout(variant.repo)
    failure = make_copy(variant, checkout, commit, step.env, log, session.ws.root)
    if failure is None:
        return None
    return StepOutcome(
        name=step.name,
        status=Outcome.FAILED,
        reason=step.reason,
        command=step.command,
        log=log,
        tail=(failure,),
        hint=f"The copy of {checkout} for variant {variant.name} could not be made; see the log.",
    )
