"""One run of the pipeline as a transaction: the workspace lock, the sources, the steps,
validation, and a report whatever the outcome.

Every run writes `reports/<run-id>/` and points `reports/latest` at it, a failed build
included (which step, its digest), so `latest` always means the latest run; the
attempt is also recorded, so a later `validate` can say that the package it judges
is older than the last build attempt.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct

from . import vendors
from .bounded import ATTEMPT, read_state
from .build import compile_cache
from .build.cache_probe import PROBE_TIMEOUT_S
from .build.plan import PlannedStep
from .build.reproducible import artifact_records, step_epoch
from .build.runner import Progress, StepOutcome, new_run_id
from .build.session import Session
from .build.stamps import read_stamp
from .build.steps import RunResult, host_side, host_side_note, run_steps
from .decoded import to_plain
from .errors import CannbuildError, Interrupted, UsageError, path_error, storage_error
from .housekeeping import ATTEMPT_FILE, RUNNING, install_staleness, step_facts
from .locks import WorkspaceLock
from .phases import PhaseSink, no_phases
from .report import build_report, step_records, write_report
from .shipped import install_package
from .sources.pinning import sources_from_lock, syncing_sources
from .states import Outcome
from .target import Target, read_target, record_session
from .validate import ValidationRun, validate_session
from .validate.ahead import Ahead
from .validate.ahead import start as start_ahead
from .workspace import Workspace, write_json_atomic

if TYPE_CHECKING:
    from .sources.state import SourceState


class RunRequest(Struct, frozen=True, kw_only=True):
    command: str  # what the user ran, e.g. "cannbuild setup"
    phases: Tuple[str, ...] = ("build", "install")
    validate: bool = False
    case_names: Tuple[str, ...] = ()
    reuse_validation: bool = False  # take a PASS whose inputs are unchanged


class Made(Struct, frozen=True, kw_only=True):
    """What the workspace now holds, for the closing lines a user acts on."""

    packages: Tuple[Tuple[str, str, str], ...]  # (step, .run path, sha256)
    installed: Optional[Path]  # the first vendor folder that holds this target's install
    # the one file to source: the vendor's own set_env.bash, or with several vendors
    # <ws>/opp/set_env.bash, which sets them in the --repos order
    set_env: Optional[Path]
    # why a vendor folder's package is not this build's (another SoC, a rebuilt package)
    stale: Tuple[str, ...] = ()
    stale_dir: Optional[Path] = None
    # (repo, vendor folder) of every selected repo installed for this target, --repos order
    vendors: Tuple[Tuple[str, Path], ...] = ()


class PipelineRun(Struct, frozen=True, kw_only=True):
    run_id: str
    result: Optional[RunResult]  # None for a validate-only run
    notes: Tuple[str, ...]  # what resolving the sources found after the steps started
    validation: Optional[ValidationRun]
    report_dir: Path
    made: Made
    built_from: Optional[Mapping[str, object]] = None  # the build that made what was validated

    @property
    def failed(self) -> Optional[StepOutcome]:
        return self.result.failed if self.result is not None else None


def made(session: Session) -> Made:
    """The packages the build steps' stamps record, and the installs of this session's
    build, one vendor folder per selected repo: an install made for another SoC, or of a
    package built again since, is named stale, not installed
    (housekeeping.install_staleness)."""
    packages: List[Tuple[str, str, str]] = []
    vendors: List[Tuple[str, Path]] = []
    stale: List[str] = []
    stale_dir: Optional[Path] = None
    for spec in session.recipe.steps:
        stamp = read_stamp(session.ws, spec.name)
        if stamp is None:
            continue
        for artifact in stamp.get("artifacts", []):
            packages.append((spec.name, artifact["path"], artifact.get("sha256", "")))
        owner = session.recipe.step_owner(spec)
        if spec.action == "vendor" and owner in session.recipe.order:
            state, why = step_facts(session.ws, {"step": spec.name, **stamp})
            mine = [why] if state != "built" else []
            mine += install_staleness(session.ws, stamp, session.soc, None)
            if mine:
                stale += mine
                stale_dir = stale_dir or session.vendor_dir_of(owner)
            else:
                vendors.append((owner, session.vendor_dir_of(owner)))
    order = session.recipe.order
    vendors.sort(key=lambda rv: order.index(rv[0]))
    return Made(
        packages=tuple(packages),
        installed=vendors[0][1] if vendors else None,
        set_env=_set_env(session, [d for _, d in vendors]),
        stale=tuple(stale),
        stale_dir=stale_dir,
        vendors=tuple(vendors),
    )


def _set_env(session: Session, dirs: Sequence[Path]) -> Optional[Path]:
    """What a user sources: one vendor's own set_env.bash, or for several the workspace's
    opp/set_env.bash (written by `install_order`) when it lists exactly them."""
    if len(dirs) == 1:
        own = dirs[0] / vendors.VENDOR_SET_ENV
        return own if own.is_file() else None
    if dirs and vendors.source_order(session.ws.opp) == list(dirs):
        return vendors.source_file(session.ws.opp)
    return None


def install_order(session: Session) -> Optional[Path]:
    """After the installs: with several selected vendors installed, `<ws>/opp/set_env.bash`
    that puts them on ASCEND_CUSTOM_OPP_PATH in the --repos order (first wins)."""
    dirs = [d for d in session.vendor_dirs.values() if (d / vendors.VENDOR_SET_ENV).is_file()]
    if len(dirs) < 2 or len(dirs) != len(session.vendor_dirs):
        return None
    if vendors.source_order(session.ws.opp) == dirs:
        return vendors.source_file(session.ws.opp)
    asked = "--repos " + ",".join(session.recipe.order)
    return vendors.write_source_file(session.ws.root, session.ws.opp, dirs, asked)


def built_from(session: Session, repo: Optional[str] = None) -> Optional[Dict[str, object]]:
    """The build behind the installed packages validation judges (`repo`: that repo's
    alone): when each finished, from which commits (the first package's at the top, the
    other validated repos' under `also`, in the --repos order), and whether a later build
    attempt failed (then validation judges the older package)."""
    recipe = session.recipe
    names: List[Optional[str]] = [r.name for r in recipe.validated if r.name in recipe.order]
    if repo or not names:  # a recipe of no buildable repo: its first vendor step
        names = [repo or next(iter(recipe.order), None)]
    found = [_package_built(session, name) for name in names]
    packages = [p for p in found if p is not None]
    if not packages:
        return None
    record = dict(packages[0])
    if packages[1:]:
        record["also"] = packages[1:]
    oldest = min(str(p.get("finished", "")) for p in packages)
    attempt = read_state(session.ws.reports / ATTEMPT_FILE, ATTEMPT)
    if (
        isinstance(attempt, dict)
        and attempt.get("status") in ("failed", "interrupted")
        and str(attempt.get("finished", "")) > oldest
    ):
        record["newer_failed_attempt"] = {
            k: attempt.get(k) for k in ("run_id", "finished", "command", "status", "failed_step")
        }
    return record


def _package_built(session: Session, repo: Optional[str]) -> Optional[Dict[str, object]]:
    """`repo`'s installed package (None: the recipe's first): its install step, when it
    finished, in which run, from which commits."""
    recipe = session.recipe
    install = next(
        (
            s
            for s in recipe.steps
            if s.action == "vendor" and (repo is None or recipe.step_owner(s) == repo)
        ),
        None,
    )
    stamp = read_stamp(session.ws, install.name) if install else None
    if install is None or stamp is None:
        return None
    commits: Dict[str, str] = {}
    for spec in session.recipe.steps:
        owner = recipe.step_owner(spec)
        if owner not in (repo, None) and owner in recipe.order:
            continue  # another selected repo's build: not behind this package
        step_stamp = read_stamp(session.ws, spec.name) or {}
        commit = (step_stamp.get("inputs", {}).get("source") or {}).get("commit")
        if spec.repo and commit:
            commits[spec.repo] = commit
    return {
        "step": install.name,
        "finished": stamp.get("finished"),
        "run_id": stamp.get("run_id"),
        "commits": commits,
    }


def _record_attempt(session: Session, run_id: str, command: str, **fields: object) -> None:
    """The attempt, as it starts (`status=RUNNING` with its pid: a run killed with -9
    leaves it so, and `status` then says the last attempt was interrupted, its pid gone,
    not what the one before it came to) and as it ends."""
    record = {"run_id": run_id, "command": command, **fields}
    write_json_atomic(session.ws.reports / ATTEMPT_FILE, record)


def resuming_note(ws: Workspace) -> Optional[str]:
    """What the last build attempt left for this one, said before it starts: one stopped
    by a signal, or one whose record still says running (read under the workspace lock,
    so its process died: kill -9, a power cut).  None after a finished or failed one."""
    last = read_state(ws.reports / ATTEMPT_FILE, ATTEMPT)
    if not isinstance(last, dict) or last.get("status") not in ("interrupted", RUNNING):
        return None
    if last.get("status") == "interrupted":
        how = "was interrupted"
    else:
        how = f"(pid {last.get('pid')}) ended without finishing"
    step = last.get("failed_step")
    during = f" during {step}" if step else ""
    return (
        f"resuming: the last run ({last.get('command')}, run {last.get('run_id')}) {how}"
        f"{during}; the steps it finished are kept, what it left unfinished runs again"
    )


def _record_end(
    session: Session,
    run_id: str,
    command: str,
    failed: Optional[str],
    status: Optional[str] = None,
    **detail: str,
) -> None:
    """The attempt's end: `status` (else failed or ok by `failed`, the step) and a detail."""
    finished = time.strftime("%Y-%m-%d %H:%M:%S")
    status = status or ("failed" if failed else "ok")
    _record_attempt(
        session, run_id, command, finished=finished, status=status, failed_step=failed, **detail
    )


def _build_record(
    command: str, result: Optional[RunResult], error: Optional[CannbuildError]
) -> Dict[str, object]:
    if result is None and error is None:
        return {"command": command, "status": "not run (validation only)"}
    failed = result.failed if result is not None else None
    record: Dict[str, object] = {"command": command, "status": "ok"}
    if failed is not None:
        record.update(
            status="failed",
            failed_step=failed.name,
            exit_code=failed.exit_code,
            log=str(failed.log) if failed.log else None,
            tail=list(failed.tail),
            hint=failed.hint,
        )
    elif error is not None:
        record.update(status="failed", error=error.paragraph(), exit_code=error.exit_code)
    return record


def _write_report(
    session: Session,
    run_id: str,
    command: str,
    result: Optional[RunResult] = None,
    error: Optional[CannbuildError] = None,
    validation: Optional[Mapping[str, object]] = None,
    built: Optional[Mapping[str, object]] = None,
    cache: Optional[Mapping[str, object]] = None,
    package: Optional[Mapping[str, object]] = None,
    sources: Optional[SourceState] = None,
) -> Path:
    """`sources`: what this run made ready (else the lock on disk is read)."""
    recipe = session.recipe
    if sources is None:
        try:
            sources = sources_from_lock(session.source_request())
        except CannbuildError:  # a lock the run could not use: the report still says what ran
            sources = None
    full = build_report(
        run_id=run_id,
        host=session.host.facts,
        recipe={
            "name": recipe.name,
            "path": str(recipe.path),
            "digest": recipe.digest,
            "train": recipe.train,
            # the operator release its refs rendered from (--ops-release, else the toolkit's)
            "ops_release": session.values["ops_release"],
        },
        lock=sources.lock if sources else None,
        steps=step_records(
            session.ws, result.outcomes if result else None, [s.name for s in recipe.steps]
        ),
        validation=validation,
        sandbox=to_plain(session.sandbox) if session.sandbox else None,
        build=_build_record(command, result, error),
        built_from=built,
        artifacts=artifact_records(
            [
                (step, path, sha, _epoch(session, step))
                for step, path, sha in made(session).packages
            ],
            session.ws.root,
            session.ws.artifact_memo,
        ),
        cache=cache or {"status": "not used", "detail": "no build step ran in this run"},
        package=package,
    )
    return write_report(session.ws, run_id, full)


def _epoch(session: Session, step: str) -> Optional[int]:
    """The SOURCE_DATE_EPOCH that step built with (reproducible.with_source_date)."""
    spec = next((s for s in session.recipe.steps if s.name == step), None)
    checkout = session.ws.checkout(spec.repo) if spec is not None and spec.repo else None
    return step_epoch(os.environ, checkout, session.ws.commit_memo)


class _Watched(Progress):
    """The run's progress, passed on, and the step running now: a run that ends mid-step
    (Ctrl-C, SIGTERM, a full disk) records which."""

    def __init__(self, inner: Progress) -> None:
        self.inner = inner
        self.running: Optional[str] = None
        self.steps_started = 0

    def started(self, step: PlannedStep, log: Path) -> None:
        self.running = step.name
        self.steps_started += 1
        self.inner.started(step, log)

    def output(self, line: str) -> None:
        self.inner.output(line)

    def finished(self, outcome: StepOutcome) -> None:
        if outcome.status != Outcome.INTERRUPTED:  # an interrupted step is still the one
            self.running = None
        self.inner.finished(outcome)

    def skipped(self, step: PlannedStep) -> None:
        self.inner.skipped(step)

    def note(self, text: str) -> None:
        self.inner.note(text)


@contextlib.contextmanager
def _reported(
    session: Session, run_id: str, command: str, watched: Optional[_Watched] = None
) -> Iterator[None]:
    """A run that ends in an error (a fetch, a drift, Ctrl-C) still leaves its report;
    `watched`: the steps of a build run (which one was running).  Only a build run is a
    build attempt (status, the validation report's "a later build attempt")."""
    try:
        yield
    except (CannbuildError, OSError) as exc:  # OSError: a full or read-only disk (exit 11)
        known = exc if isinstance(exc, CannbuildError) else storage_error(exc) or path_error(exc)
        error = known or CannbuildError(str(exc))
        if isinstance(error, Interrupted):
            status = "interrupted"
            try:
                how = signal.Signals(error.exit_code - 128).name
            except ValueError:  # not one Python names (a real-time signal)
                how = "a signal"
            detail = f"stopped by {how}; the next build reruns what it left unfinished"
        else:
            status, detail = "failed", error.paragraph().split(". ")[0]
        cache = (
            {"status": "not counted", "detail": "the run stopped before it counted the cache"}
            if watched and watched.steps_started
            else None
        )
        with contextlib.suppress(CannbuildError, OSError):
            if watched is not None:
                _record_end(session, run_id, command, watched.running, status, detail=detail)
            _write_report(session, run_id, command, error=error, cache=cache)
        raise


def run_pipeline(
    session: Session,
    env: Mapping[str, str],
    request: RunRequest,
    progress: Progress,
    phases: PhaseSink = no_phases,
) -> PipelineRun:
    """Sync the sources and run the steps that are not up to date under the workspace lock;
    then (if asked, and the steps succeeded) validate under the same lock (`phases` hears
    its checks); report."""
    run_id = new_run_id()
    options = session.options
    waiting = lambda who: progress.note(f"waiting for {who} to release the workspace ...")  # noqa: E731
    ahead: List[Ahead] = []  # validation's work that needs no package, beside the build

    def validate_ahead() -> None:
        started = start_ahead(session, request.case_names) if request.validate else None
        ahead.extend([started] if started else [])

    with WorkspaceLock(session.ws, request.command, options.wait, waiting), _closing(ahead):
        resuming = resuming_note(session.ws)
        if resuming:
            progress.note(resuming)
        started = time.strftime("%Y-%m-%d %H:%M:%S")
        _record_attempt(
            session, run_id, request.command, started=started, pid=os.getpid(), status=RUNNING
        )
        cache = compile_cache.compile_cache(
            options.cache_remote,
            session.ws.root,
            session.host.build_env or env,
            probe_timeout=PROBE_TIMEOUT_S,
        )
        if cache is not None and cache.remote_skipped:
            progress.note(
                f"compile cache: {cache.remote_skipped}; this run builds without the remote "
                "(ccache's local cache only)"
            )
        stats_before = compile_cache.read_stats(cache)
        watched = _Watched(progress)
        with _reported(session, run_id, request.command, watched):
            with syncing_sources(session.source_request()) as sources:
                for note in sources.notes:
                    progress.note(note)
                try:
                    result = run_steps(
                        session,
                        sources,
                        env,
                        request.phases,
                        watched,
                        run_id,
                        cache=cache,
                        before_first_run=validate_ahead,
                    )
                except BaseException:
                    # an interrupted run remembers its target as a failed one does below:
                    # a bare rerun resumes it on the same host, not on whatever / holds
                    with contextlib.suppress(Exception):
                        _remember(session, request.command)
                    raise
                state = None
                if result.failed is not None:
                    # the lock is still written if every repo resolves; a fetch error here
                    # would hide the step's own failure, and the next run meets it
                    with contextlib.suppress(CannbuildError):
                        state = sources.finish()
                else:
                    state = sources.finish()
            notes = tuple(state.notes[len(sources.notes) :]) if state else ()
        failed = result.failed.name if result.failed is not None else None
        if failed is None and "install" in request.phases:
            install_order(session)
        _record_end(session, run_id, request.command, failed)
        # what the workspace builds for from now on: its sources are this target's, a
        # failed step included (a bare rerun resumes it); a run refused before (drift under
        # --locked, a fetch error) leaves the record as it was
        notes += _remember(session, request.command)
        validation = None
        if request.validate and failed is None:
            validation = validate_session(
                session,
                env,
                request.case_names,
                run_id,
                request.reuse_validation,
                phases,
                next(iter(ahead), None),
            )
        built = built_from(session) if validation is not None else None
        cache_record = compile_cache.run_record(
            cache, stats_before, compile_cache.read_stats(cache), options.cache_remote
        )
        directory = _write_report(
            session,
            run_id,
            request.command,
            result,
            None,
            validation.validation if validation else None,
            built,
            cache_record,
            sources=state,
        )
    return PipelineRun(
        run_id=run_id,
        result=result,
        notes=notes,
        validation=validation,
        report_dir=directory,
        made=made(session),
        built_from=built,
    )


@contextlib.contextmanager
def _closing(ahead: Sequence[Ahead]) -> Iterator[None]:
    """The thread ahead of validation stopped with the run, however it ends."""
    try:
        yield
    finally:
        for started in ahead:
            started.close()


def run_validate(
    session: Session,
    env: Mapping[str, str],
    case_names: Sequence[str],
    command: str,
    package: Optional[Path] = None,
    phases: PhaseSink = no_phases,
) -> PipelineRun:
    """Validate what is installed now (or the shipped `package`, installed into a scratch
    prefix), under the workspace lock, and report it, naming the build that made it (or
    the package and its sha256); `phases` hears each check as it starts."""
    run_id = new_run_id()
    with (
        WorkspaceLock(session.ws, command, session.options.wait, None),
        _reported(session, run_id, command),
    ):
        shipped: Optional[Dict[str, str]] = None
        target = session
        sources = _lay_host_side(session, phases)
        if package is not None:
            target, shipped = install_package(session, package)
        validation = validate_session(target, env, case_names, run_id, False, phases)
        built = built_from(session) if package is None else None
        directory = _write_report(
            session,
            run_id,
            command,
            validation=validation.validation,
            built=built,
            package=shipped,
            sources=sources,
        )
    return PipelineRun(
        run_id=run_id,
        result=None,
        notes=(),
        validation=validation,
        report_dir=directory,
        made=made(session),
        built_from=built,
    )


def _lay_host_side(session: Session, phases: PhaseSink) -> Optional[SourceState]:
    """A sandbox remade since the last build (another cannbuild) holds no host side, which
    the repository's example compiles against: laid out again from the workspace's
    checkouts at their locked commits, as a build lays it.  Returns the lock's sources it
    read (the report takes them; None: not read)."""
    if session.sandbox is None:
        return None
    try:
        sources = sources_from_lock(session.source_request())
    except CannbuildError:  # a lock validate cannot use: the example says what is missing
        return None
    toolkit_repos = [r.name for r in session.recipe.repos if r.toolkit]
    if sources is None or not all(session.ws.checkout(r).is_dir() for r in toolkit_repos):
        return sources
    laid = host_side(session, sources.identity_of)
    if laid is not None and laid.laid_out:
        phases(host_side_note(laid))
    return sources


def _remember(session: Session, command: str) -> Tuple[str, ...]:
    """Record the target this run built for; where that moves the workspace from the one
    it had (a one-off --soc, --repos, another sandbox), one line saying so (issue 42: after
    `build --soc A3` a bare validate judged the A2 package without a word)."""
    try:
        before = read_target(session.options.workspace)
    except UsageError:  # a damaged record is replaced; nothing to compare with
        before = None
    after = record_session(session, command)
    was, now = _words(before) if before else "", _words(after) if after else ""
    if not was or not now or was == now:
        return ()
    return (
        f"remembered: this workspace now targets {now} (it targeted {was}); later tasks "
        "without these flags use it (target.json; pass the old flags to go back)",
    )


def _words(target: Target) -> str:
    repos = f", --repos {','.join(target.repos)}" if target.repos else ""
    return f"{target.host}, --soc={target.built_soc or target.soc_word}{repos}"
