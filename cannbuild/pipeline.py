"""The steps of a session: their context, their plan, and running them.

`session.open_session` reads the host and picks the recipe; `sources.pinning.syncing_sources`
pins and checks out the sources (writing or honouring the lock); `run_steps` runs
the steps that are not up to date, each once its repo is ready.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, List, Mapping, Optional, Sequence

from .cache import compile_cache, with_cache
from .overlay import overlay_env
from .plan import (
    UP_TO_DATE,
    PlannedStep,
    StepContext,
    check_force,
    hashed_env_values,
    plan_all,
    plan_step,
)
from .render import command_env, render_value
from .reproducible import with_source_date
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
from .session import Session
from .sources.fetch import mirror_git_env
from .sources.pinning import Sources, SourceState
from .workspace import Workspace

# a step waiting this long for its repo's fetch says so (a short wait is not news)
SILENT_WAIT_S = 1.0


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
    return plan_all(session.recipe, ctx, session.ws, phases, session.options.force)


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
        toolkit_home=session.context.cann.home,
        overlay=ws.overlay,
        stage=ws.stage,
        opp=ws.opp,
        vendor_dir=session.vendor_dir,
        overlay_enabled=ctx.overlay_env is not None,
        toolkit_target=session.toolkit.real_path if session.options.install_into_toolkit else None,
        toolkit_backup=ws.root / "toolkit-backup",
    )
    check_force(recipe, session.options.force)
    cache = compile_cache(session.options.cache_remote, ws.root, ctx.base_env)  # issue 14
    force = set(session.options.force)
    outcomes: List[StepOutcome] = []
    use_overlay = False
    for spec in recipe.steps:
        if spec.phase not in phases:
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
            step = with_source_date(with_cache(step, cache))  # issue 14: ccache, SOURCE_DATE_EPOCH
            outcome = run_step(step, ws, logs, actions, progress, patterns)
            outcomes.append(outcome)
            if outcome.status == "failed":
                break
        if spec.action == "overlay" and ctx.overlay_env is not None:
            use_overlay = True
    return RunResult(logs.run_id, tuple(outcomes), logs.dir)
