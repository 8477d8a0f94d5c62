"""Opening a session from the command line (the sandbox, made or reused, and the host), and
running the build transaction on it: for build and install, and before bench, profile --run
and diagnose use the workspace."""

from __future__ import annotations

import errno
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from .. import ui
from ..errors import StepFailed, StorageError
from ..lazy import lazy_module
from ..options import Options
from ..ownership import check_writable
from ._config import Context
from ._flags import FlagValue
from ._target import target_options

if TYPE_CHECKING:
    from .. import progress as progress_ui
    from .. import transaction
    from ..build import plan as build_plan
    from ..build import session as build_session
    from ..build import steps as build_steps
    from ..build.session import Sandboxed, Session
    from ..sandbox import create
    from ..transaction import PipelineRun, RunRequest
else:  # a task loads the build core only when it runs (`cannbuild --help` loads this module)
    progress_ui = lazy_module("cannbuild.progress")
    transaction = lazy_module("cannbuild.transaction")
    build_plan = lazy_module("cannbuild.build.plan")
    build_session = lazy_module("cannbuild.build.session")
    build_steps = lazy_module("cannbuild.build.steps")
    create = lazy_module("cannbuild.sandbox.create")


class DryRunStop(Exception):
    """A dry run that cannot go further without changing something; the message says what."""


def sandboxed(options: Options, dry_run: bool) -> Sandboxed:
    """The options pointed at the sandbox (made or reused) when --sandbox is given, with
    its info and lease (`pipeline.Sandboxed`).  A dry run never makes one: it stops,
    saying it would."""
    if not options.sandbox:
        return build_session.Sandboxed(options=options)
    if dry_run:
        assert options.sandbox_dir is not None
        spec = create.resolve_spec(
            options.sandbox_dir, options.sandbox_variant, options.sandbox_cann
        )
        plan = create.plan_sandbox(spec)
        if not plan.startswith("up to date"):
            raise DryRunStop(f"the sandbox: {plan}")
    began = time.monotonic()
    # only a creation has phases; on a terminal they pass on the live line, summed up below
    with progress_ui.Progress("sandbox", lines=False) as phases:
        made = build_session.with_sandbox(options, phases)
    if made.created and made.info is not None:
        ui.note(
            f"sandbox created: {made.info.variant} host with CANN {made.info.cann} at "
            f"{made.info.dir} in {time.monotonic() - began:.1f}s (log: {made.info.dir}/create.log)"
        )
    return made


def on_sandbox(options: Options, dry_run: bool) -> Options:
    return sandboxed(options, dry_run).options


def open_session(c: Context, flags: Mapping[str, FlagValue], builds: bool = False) -> Session:
    """The session a task runs on: its options (the workspace's remembered target under
    the flags: `_target.target_options`), pointed at the sandbox when it is one, and the
    host read.  `builds`: the task builds for that target (and records it)."""
    options = target_options(c, flags, builds)
    made = sandboxed(options, bool(flags.get("dry_run")))
    session = build_session.open_session(
        made.options, os.environ, Path.cwd(), made.info, made.lease
    )
    for text in session.recipe.notes:  # an old recipe form, read as the new one
        ui.note(f"note: {text}")
    return session


def run_build(
    session: Session, request: RunRequest, verbose: bool = False, show_skipped: bool = True
) -> PipelineRun:
    """The build transaction (`transaction.run_pipeline`: the workspace lock, the sources
    under --locked and --offline, the steps, the report, the validation's phases) as every
    task runs it, its steps and phases on one progress; a failed step ends the task with
    its digest (the progress showed it) and exit 4."""
    with progress_ui.Progress(
        "validation", verbose=verbose, lines=False, show_skipped=show_skipped
    ) as progress:
        run = transaction.run_pipeline(session, os.environ, request, progress, progress)
        for text in run.notes:
            progress.note(text)  # what resolving found: a moved tag, an updated lock
    progress_ui.publish_summary(run.report_dir)
    failed = run.failed
    if failed is not None:
        ui.note(f"report: {run.report_dir}/report.md")
        full = [os.strerror(errno.ENOSPC), os.strerror(errno.EDQUOT)]
        if any(word in line for line in failed.tail for word in full):  # a disk, not the step
            raise StorageError(
                f"{failed.name} could not write its files: its log says the disk is full "
                f"({failed.log}).",
                "Free space on that disk (`cannbuild clean` removes build trees and old logs), "
                "or pass --workspace on a larger one, then rerun.",
            )
        raise StepFailed()
    return run


def bring_up_to_date(session: Session, command: str, as_json: bool, verbose: bool = False) -> None:
    """Before bench, profile --run and diagnose use the workspace, the steps that are not
    up to date run (the walk `cannbuild install` runs), and one line says so: on stdout
    before the task's own output, on stderr under --json (stdout is the JSON alone)."""
    check_writable(session.options.lock_file, "--lock-file")
    run = run_build(session, transaction.RunRequest(command=command), verbose, show_skipped=False)
    ran = run.result.ran if run.result is not None else []
    count = len(run.result.outcomes) if run.result is not None else 0
    line = (
        f"workspace brought up to date first: ran {', '.join(ran)} (report {run.report_dir})"
        if ran
        else f"workspace up to date: all {count} steps were, nothing was built"
    )
    stream = sys.stderr if as_json else sys.stdout
    stream.write(line + "\n")
    stream.flush()


def would_bring_up_to_date(session: Session) -> str:
    """What a dry run says `bring_up_to_date` would do (nothing is run or written)."""
    steps = build_steps.plan_session(session, os.environ, ("build", "install"))
    needed = [s.name for s in steps if s.status == build_plan.NEEDS_RUN]
    if not needed:
        return "the workspace is up to date"
    return f"the workspace would be brought up to date first (would run {', '.join(needed)})"
