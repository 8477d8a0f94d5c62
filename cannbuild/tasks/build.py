"""Tasks that build: plan, fetch, lock, build, install, setup, bundle, clean, status."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, List, Mapping, Optional

from .. import ui
from ..decoded import to_plain
from ..errors import DryRun, UsageError
from ..lazy import lazy_module
from ..ownership import check_lock_writable, check_writable, remove_inside, require_owned
from ..workspace import Workspace
from ._flags import RUN_FLAGS, SESSION_FLAGS, TARGET_FLAGS, FlagValue, cli_task, text_of
from ._frame import Frame, run_build

if TYPE_CHECKING:
    from .. import housekeeping, locks, transaction
    from .. import target as targets
    from .. import validate as validation
    from ..build import session as build_session
    from ..build import steps as build_steps
    from ..build.session import Session
    from ..sources import bundle as bundles
    from ..sources import pinning
    from ..sources import pins as source_pins
    from ..transaction import PipelineRun
    from ..validate import cases as validation_cases
else:  # only the task that runs loads its core (`cannbuild --help` loads every task module)
    housekeeping = lazy_module("cannbuild.housekeeping")
    locks = lazy_module("cannbuild.locks")
    targets = lazy_module("cannbuild.target")
    transaction = lazy_module("cannbuild.transaction")
    validation = lazy_module("cannbuild.validate")
    build_session = lazy_module("cannbuild.build.session")
    build_steps = lazy_module("cannbuild.build.steps")
    bundles = lazy_module("cannbuild.sources.bundle")
    pinning = lazy_module("cannbuild.sources.pinning")
    source_pins = lazy_module("cannbuild.sources.pins")
    validation_cases = lazy_module("cannbuild.validate.cases")


def _phases(text: Optional[str]) -> List[str]:
    phases = [p.strip() for p in (text or "build,install").split(",") if p.strip()]
    for p in phases:
        if p not in ("build", "install"):
            raise UsageError(
                f"--phases {p!r} is not build or install.", "Example: --phases build,install"
            )
    return phases


def show_plan(session: Session, phases: List[str], as_json: bool = False) -> None:
    """The plan of the given phases, marking everything as needing a run while the
    sources are not fetched and locked yet."""
    steps = build_steps.plan_session(session, os.environ, phases)
    state = pinning.sources_from_lock(session.source_request())
    sharing = source_pins.pin_sharing(session.recipe, state.lock if state else None)
    # what the checkouts need of the toolkit (a failing row stopped open_session already)
    rows = build_steps.toolkit_rows(session)
    if as_json:
        ui.print_json(
            {
                "recipe": session.recipe.name,
                "repos": list(session.recipe.order),
                "toolkit": to_plain(rows),
                "steps": [s.to_json() for s in steps],
                "pinned_sources": sharing,
            }
        )
    else:
        ui.print_plan(session, steps, rows, sharing)


@cli_task(*SESSION_FLAGS, "with_step", "json", "phases")
def plan(
    frame: Frame, json: bool = False, phases: Optional[str] = None, **flags: FlagValue
) -> None:
    """Show each step: its rendered command, cwd, and whether it must run (and why).

    Commands are printed whole, as they would run."""
    show_plan(frame.session(), _phases(phases), as_json=json)


def _sync(frame: Frame, session: Optional[Session] = None, **how: bool) -> None:
    """fetch and lock; `session`: a lock without a toolkit's (`--cann` without --sandbox),
    which neither records a target nor lays the host side out."""
    mine = session or frame.session(builds=True)
    options, command = mine.options, frame.command
    if frame.dry_run:
        names = ", ".join(f"{r.name} ({r.url})" for r in mine.recipe.repos)
        cann = f" for CANN {mine.toolkit.version_text} ({mine.soc}, recipe {mine.recipe.name})"
        raise DryRun(
            f"{command} would fetch {names}{cann if session else ''} and write {options.lock_file}"
        )
    check_lock_writable(options.lock_file)
    laid = None
    with locks.WorkspaceLock(mine.ws, command, options.wait, ui.waiting):
        state = pinning.sync_sources(mine.source_request(), **how)
        if session is None:
            targets.record_session(mine, command)
            laid = build_steps.host_side(mine, lambda repo: state.identities[repo])
    ui.print_sources(state, options.lock_file)
    if laid is not None and laid.laid_out:
        ui.note(build_steps.host_side_note(laid))
    if session is not None:
        ui.note(
            f"locked for CANN {mine.toolkit.version_text} on {mine.soc} without a toolkit: "
            "`cannbuild setup --locked` checks the toolkit on the build host"
        )


@cli_task(*SESSION_FLAGS, "with_step", "dry_run")
def fetch(frame: Frame, **flags: FlagValue) -> None:
    """Clone or update every source at its pinned commit (writes cannbuild.lock if needed)."""
    _sync(frame, refresh=True)


@cli_task(
    *SESSION_FLAGS,
    "with_step",
    "dry_run",
    help={
        "cann": "the CANN version to lock for; without --sandbox no toolkit is needed (with "
        "--soc and, if it is not the version's train, --recipe)"
    },
)
def lock(frame: Frame, **flags: FlagValue) -> None:
    """Resolve every tag/branch to a commit and hash every archive into cannbuild.lock.

    The archives of a repo none of whose steps runs (9.0's optional opbase-build) are
    left out, and the lock says so; `--with-step` adds them.

    `--cann 9.0.0 --soc ascend910_93` locks on any machine that reaches the sources (or
    a mirror), with no CANN installed: `setup --locked` checks the toolkit on the build
    host."""
    cann = str(flags["cann"]) if flags.get("cann") and not flags.get("sandbox") else None
    free = (
        build_session.locking_session(frame.options, os.environ, Path.cwd(), cann) if cann else None
    )
    _sync(frame, free, update_lock=True)


def run_and_report(
    frame: Frame, flags: Mapping[str, FlagValue], phases: List[str], validate: bool = False
) -> PipelineRun:
    """The build transaction, rendered: progress, the digest of a failed step, what was
    made and how to use it."""
    names = [n.strip() for n in (text_of(flags, "cases") or "").split(",") if n.strip()]
    if names:
        validation_cases.select(names)  # a typo fails before any build, not after it
    options = frame.target(builds=True)
    revalidate = "validate" in options.force  # no step: setup's word for "validate again"
    steps = tuple(f for f in options.force if f != "validate")
    session = frame.session(options=options.with_(force=steps))
    if frame.dry_run:
        show_plan(session, phases)
        raise DryRun(f"{frame.command} would run the steps above that need a run")
    check_lock_writable(session.options.lock_file)
    if validate:
        ui.print_doctor_summary(session.host)
    request = transaction.RunRequest(
        command=frame.command,
        phases=tuple(phases),
        validate=validate,
        case_names=tuple(names),
        reuse_validation=not revalidate,
    )
    run = run_build(session, request, verbose=bool(flags.get("verbose")))
    if run.validation is None:
        ui.print_made(run)
    return run


@cli_task(*RUN_FLAGS)
def build(frame: Frame, **flags: FlagValue) -> None:
    """Build opbase, then each repo's package (--repos; skipping what is up to date)."""
    run_and_report(frame, flags, ["build"])


@cli_task(*RUN_FLAGS)
def install(frame: Frame, **flags: FlagValue) -> None:
    """Build if needed, then install each repo's package under <workspace>/opp (with
    several, <workspace>/opp/set_env.bash sets them in the --repos order)."""
    run_and_report(frame, flags, ["build", "install"])


@cli_task(*RUN_FLAGS, "require_device", "cases")
def setup(frame: Frame, **flags: FlagValue) -> None:
    """Start here: doctor -> fetch -> build -> install -> validate -> report (--sandbox: on the emulated host).

    Validation is reused when nothing it checks has changed (--force validate reruns it)."""
    run = run_and_report(frame, flags, ["build", "install"], validate=True)
    assert run.validation is not None
    ui.show_validation(run, report_line=False, tables=bool(flags.get("verbose")))
    ui.print_made(run)
    validation.check_verdict(run.validation.validation, frame.targeted.options.require_device)


@cli_task(
    "workspace",
    "lock_file",
    "dry_run",
    positional=[("out", "the bundle file to write, e.g. cann-8.5.tar")],
)
def bundle(frame: Frame, out: str, **flags: FlagValue) -> None:
    """Pack the locked sources and archives into OUT for an offline build elsewhere
    (`cannbuild setup --offline --bundle OUT`)."""
    options = frame.lock_to_read()
    ws = Workspace(root=options.workspace)
    target = Path(os.path.abspath(out))  # not resolved: a link at OUT is refused, not followed
    bundles.refuse_foreign_out(target)
    if frame.dry_run:
        names = bundles.bundle_contents(ws, options.lock_file)
        raise DryRun(f"would write {target} with: " + ", ".join(names))
    check_writable(target, "OUT")
    summary = bundles.make_bundle(ws, options.lock_file, target)
    ui.note(
        f"bundle written: {summary['path']} ({summary['files']} files, {summary['bytes'] / 1e6:.1f} MB)"
    )


@cli_task(
    "workspace",
    "dry_run",
    "json",
    "wait",
    extra=[
        ("keep", "10", "logs and reports of this many latest runs are kept (default 10)"),
        ("include_sources", False, "also remove the checkouts and the git and download caches"),
        ("include_sandbox", False, "also remove the workspace's sandbox (<workspace>/sandbox)"),
    ],
)
def clean(
    frame: Frame,
    keep: str = "10",
    include_sources: bool = False,
    include_sandbox: bool = False,
    **flags: FlagValue,
) -> None:
    """Remove build trees, what runs that died left half-made, and the logs and reports
    of old runs.

    The sources cache and the sandbox stay unless asked for (--include-sources,
    --include-sandbox); the installed package, stamps and lock stay, so `status` still
    says what was built.  Like every task that writes, it holds the workspace lock:
    exit 7 while a build runs (or --wait for it)."""
    options = frame.options
    try:
        runs = int(keep)
        if runs < 1:
            raise ValueError
    except ValueError:
        raise UsageError(
            f"--keep {keep!r} is not a whole number >= 1.", "For example --keep 5."
        ) from None
    exists = options.workspace.exists()
    targets = []
    if exists:
        require_owned(options.workspace, "workspace")  # a dry run of someone's folder lists nothing
        targets = housekeeping.clean_plan(
            options.workspace, runs, sources=include_sources, sandbox=include_sandbox
        )
    if flags.get("json"):
        ui.print_json({"dry_run": frame.dry_run, "remove": [str(p) for p in targets]})
    if not exists:
        ui.note(f"nothing to clean: {options.workspace} does not exist")
        return
    if frame.dry_run:
        for path in targets:
            ui.note(f"would remove {path}")
        raise DryRun(f"{len(targets)} paths would be removed")
    ws = Workspace(root=options.workspace)
    with locks.WorkspaceLock(ws, "cannbuild clean", options.wait, ui.waiting, sweep=False):
        # planned again under the lock: a run that held it may have changed what is there
        targets = housekeeping.clean_plan(
            options.workspace, runs, sources=include_sources, sandbox=include_sandbox
        )
        freed = remove_inside(options.workspace, targets, "workspace")
    ui.note(f"removed {len(targets)} paths ({freed / 1e6:.1f} MB) from {options.workspace}")


@cli_task(
    "workspace",
    "lock_file",
    "json",
    *TARGET_FLAGS,
    help={"sandbox": "the workspace's sandbox target (read only: status never makes one)"},
)
def status(frame: Frame, json: bool = False, **flags: FlagValue) -> None:
    """What this workspace holds: its target, what is built and installed, from which
    commits, the last validation and the last build attempt (reads the workspace only).

    An install or validation made for another SoC, toolkit or commit than the current
    target and lock is marked stale."""
    options = frame.lock_to_read(targeted=True)
    data = housekeeping.workspace_status(
        options.workspace,
        options.lock_file,
        soc=options.soc,
        target=targets.read_target(options.workspace),
    )
    if json:
        ui.print_json(data)
    else:
        ui.print_status(data)


TASKS = (plan, fetch, lock, build, install, setup, bundle, clean, status)
