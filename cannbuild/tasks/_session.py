"""Running the build transaction on a task's session (`_frame.Frame.session`): for build
and install, and before bench, profile --run and diagnose use the workspace."""

from __future__ import annotations

import errno
import os
import sys
from typing import TYPE_CHECKING

from .. import ui
from ..errors import StepFailed, StorageError
from ..lazy import lazy_module
from ..ownership import check_writable

if TYPE_CHECKING:
    from .. import progress as progress_ui
    from .. import transaction
    from ..build import plan as build_plan
    from ..build import steps as build_steps
    from ..build.session import Session
    from ..progress import ConsoleProgress
    from ..transaction import PipelineRun, RunRequest
else:  # a task loads the build core only when it runs (`cannbuild --help` loads this module)
    progress_ui = lazy_module("cannbuild.progress")
    transaction = lazy_module("cannbuild.transaction")
    build_plan = lazy_module("cannbuild.build.plan")
    build_steps = lazy_module("cannbuild.build.steps")


def run_build(session: Session, request: RunRequest, progress: ConsoleProgress) -> PipelineRun:
    """The build transaction (`transaction.run_pipeline`: the workspace lock, the sources
    under --locked and --offline, the steps, the report, the validation's phases shown
    like the steps) as every task runs it; a failed step ends the task with its digest
    (the progress showed it) and exit 4."""
    with progress_ui.PhaseProgress("validation", lines=progress.verbose) as phases:
        run = transaction.run_pipeline(session, os.environ, request, progress, phases)
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
    progress = progress_ui.ConsoleProgress(verbose=verbose, show_skipped=False)
    run = run_build(session, transaction.RunRequest(command=command), progress)
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
