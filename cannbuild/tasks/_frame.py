"""The command frame every task body runs in (`fn(frame, *positional, **values)`, made
by `_flags.guarded`): the one resolution of its options (`resolve`), the session it runs
on (`run_build` runs the build transaction on it) and --dry-run: a dry run never makes a
sandbox, and a body ends one with `raise DryRun("would ...")`, said once by `guarded`.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from msgspec import Struct

from .. import ui
from ..errors import FREE_SPACE, DryRun, StepFailed, StorageError, says_disk_full
from ..lazy import lazy_module
from ..options import Options, options_from, sources
from ..ownership import check_lock_writable

if TYPE_CHECKING:
    from .. import progress as progress_ui
    from .. import target as targets
    from .. import transaction
    from ..build import plan as build_plan
    from ..build import session as build_session
    from ..build import steps as build_steps
    from ..build.session import Sandboxed, Session
    from ..sandbox import create
    from ..sources import lock as source_lock
    from ..target import Target
    from ..transaction import PipelineRun, RunRequest
else:  # `cannbuild --help` loads this module; a task pays for these when it runs
    progress_ui = lazy_module("cannbuild.progress")
    targets = lazy_module("cannbuild.target")
    transaction = lazy_module("cannbuild.transaction")
    build_plan = lazy_module("cannbuild.build.plan")
    build_session = lazy_module("cannbuild.build.session")
    build_steps = lazy_module("cannbuild.build.steps")
    create = lazy_module("cannbuild.sandbox.create")
    source_lock = lazy_module("cannbuild.sources.lock")


class Resolved(Struct, frozen=True, kw_only=True):
    """The options a run takes, and what the lines about the remembered target need."""

    options: Options
    plain: Options  # the same without the record
    given: Mapping[str, str]  # field -> how the user set it (`--soc`, `environment ...`)
    target: Optional[Target] = None  # the workspace's record, when one was read
    found_sandbox: Optional[str] = None  # --cann-path named a sandbox's toolkit

    def notes(self, builds: bool) -> List[str]:
        """The lines saying where an explicit choice differs from the record; `builds`:
        the run builds for the target ("building for"), else it reads ("this run uses")."""
        lines = [self.found_sandbox] if self.found_sandbox else []
        if self.target is not None:
            lines += targets.choose(self.target, self.given, self.plain, builds).notes
        return lines


def resolve(
    config: object,
    given: Mapping[str, object],
    spelled: Mapping[str, str],
    env: Mapping[str, str],
    remembered: bool,
) -> Resolved:
    """flag > environment > invoke config (its `cannbuild` key) > the workspace's
    remembered target (target.py; when `remembered`: a task that targets a host) >
    default, into the frozen `Options`; each source read and checked once.  A
    `--cann-path` of a sandbox's toolkit is that sandbox."""
    found = sources(given, env, config, spelled)
    plain = options_from(found)
    if not remembered:
        return Resolved(options=plain, plain=plain, given=_spelled(found))
    said = None
    if plain.cann_path is not None and not plain.sandbox:
        info = targets.sandbox_of_toolkit(plain.cann_path)
        if info is not None:
            where = found["cann_path"][0]
            said = (
                f"{where} {plain.cann_path} is the toolkit of the sandbox at {info.dir} "
                f"({info.variant}, CANN {info.cann}): running on that emulated host, as "
                "--sandbox does"
            )
            found = {**found, "sandbox": (where, True), "sandbox_dir": (where, info.dir)}
            plain = options_from(found)
    given = _spelled(found)
    asked = found["sandbox_dir"][1] if "sandbox_dir" in found else None
    target = targets.read_target(plain.workspace, asked)
    layer = targets.choose(target, given, plain, False).layer if target is not None else {}
    record_file = str(targets.target_file(plain.workspace))
    options = options_from(found, layer, record_file) if layer else plain
    return Resolved(options=options, plain=plain, given=given, target=target, found_sandbox=said)


def _spelled(found: Mapping[str, Tuple[str, Any]]) -> Dict[str, str]:
    return {name: where for name, (where, _) in found.items()}


class Frame:
    """One task's run.  `given`: the Options fields its flags set, `spelled`: how they
    were spelled (_flags.option_fields, spellings); resolved when first asked for."""

    def __init__(
        self,
        config: object,
        given: Mapping[str, object],
        spelled: Mapping[str, str],
        command: str,
        dry_run: bool = False,
        env: Mapping[str, str] = os.environ,
    ) -> None:
        self.sources = (config, given, spelled, env)
        self.env, self.command = env, command
        self.dry_run = dry_run

    @functools.cached_property
    def untargeted(self) -> Resolved:
        return resolve(*self.sources, remembered=False)

    @functools.cached_property
    def targeted(self) -> Resolved:
        return resolve(*self.sources, remembered=True)

    @property
    def options(self) -> Options:
        """For a task that targets no host (clean, bundle, container, recipe, sandbox)."""
        return self.untargeted.options

    def target(self, builds: bool = False) -> Options:
        """The options with the workspace's remembered target under the flags; each
        explicit value that differs from it says so in one line."""
        for line in self.targeted.notes(builds):
            ui.note(line)
        return self.targeted.options

    def lock_to_read(self, targeted: bool = False) -> Options:
        """The options of a task that reads a lock (`targeted`: with the remembered
        target, as `target`): without --lock-file (or its variable or config key),
        ./cannbuild.lock, else the workspace's, where a --sandbox run writes it."""
        resolved = self.targeted if targeted else self.untargeted
        options = self.target() if targeted else resolved.options
        fallback = options.workspace / "cannbuild.lock"
        if "lock_file" in resolved.given or options.lock_file.exists() or not fallback.is_file():
            return options
        return options.with_(lock_file=fallback)

    def sandboxed(self, options: Options) -> Sandboxed:
        """The options pointed at the sandbox (made or reused) when they name one.  A
        dry run never makes one: it ends, saying it would."""
        if not options.sandbox:
            return build_session.Sandboxed(options=options)
        if "lock_file" in self.untargeted.given:  # a lock you name is read before a sandbox is made
            source_lock.read_lock(options.lock_file)
        if self.dry_run:
            assert options.sandbox_dir is not None
            spec = create.resolve_spec(
                options.sandbox_dir, options.sandbox_variant, options.sandbox_cann
            )
            plan = create.plan_sandbox(spec)
            if not plan.startswith("up to date"):
                raise DryRun(f"the sandbox: {plan}; then {self.command}")
        began = time.monotonic()
        # only a creation has phases; on a terminal they pass on the live line, summed up below
        with progress_ui.Progress("sandbox", lines=False) as phases:
            made = build_session.with_sandbox(options, phases)
        if made.created and made.info is not None:
            ui.note(
                f"sandbox created: {made.info.variant} host with CANN {made.info.cann} at "
                f"{made.info.dir} in {time.monotonic() - began:.1f}s "
                f"(log: {made.info.dir}/create.log)"
            )
        return made

    def session(self, builds: bool = False, options: Optional[Options] = None) -> Session:
        """The session the task runs on: the targeted options (or `options`, made from
        them), pointed at the sandbox when they name one, and the host read.  `builds`:
        the task builds for that target (its lines say "building for")."""
        made = self.sandboxed(options or self.target(builds))
        session = build_session.open_session(
            made.options, self.env, Path.cwd(), made.info, made.lease
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
        # its last lines or its first errors: a parallel build prints one compiler's
        # ENOSPC and goes on printing for many lines
        if says_disk_full([*failed.tail, *(text for _, text in failed.errors)]):
            raise StorageError(
                f"{failed.name} could not write its files: its log says the disk is full "
                f"({failed.log}).",
                f"{FREE_SPACE}, or pass --workspace on a larger one, then rerun.",
            )
        raise StepFailed()
    return run


def bring_up_to_date(session: Session, command: str, as_json: bool) -> None:
    """Before bench, profile --run and diagnose use the workspace, the steps that are not
    up to date run (the walk `cannbuild install` runs), and one line says so: on stdout
    before the task's own output, on stderr under --json (stdout is the JSON alone)."""
    check_lock_writable(session.options.lock_file)
    run = run_build(session, transaction.RunRequest(command=command), show_skipped=False)
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
