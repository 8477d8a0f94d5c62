"""Tasks that read or emulate the host: doctor, sandbox."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from .. import ui
from ..errors import DoctorFailed, DryRun, UsageError
from ..lazy import lazy_module
from ._flags import FlagValue, cli_task
from ._frame import Frame

if TYPE_CHECKING:
    from .. import progress
    from .. import sandbox as sandboxes
    from ..build import requirements
else:  # only the task that runs loads its core (`cannbuild --help` loads every task module)
    progress = lazy_module("cannbuild.progress")
    sandboxes = lazy_module("cannbuild.sandbox")
    requirements = lazy_module("cannbuild.build.requirements")

HOST_FLAGS = (
    "cann_path",
    "sysroot",
    "workspace",
    "soc",
    "recipe",
    "repos",
    "sandbox",
    "variant",
    "cann",
)


@cli_task(*HOST_FLAGS, "ops", "ops_release", "with_step", "json")
def doctor(frame: Frame, json: bool = False, **flags: FlagValue) -> None:
    """Check the host: toolkit, NPUs and their health, driver, tools, torch. Exit 1 if a
    check fails.

    With a toolkit found, the rows also say what the recipe for its CANN needs (tools
    such as gawk, share/info packages)."""
    options = frame.sandboxed(frame.target()).options
    with progress.heartbeat("doctor: reading the host (the torch_npu import takes a while)"):
        report = requirements.doctor_report(options, os.environ, Path.cwd())
    if json:
        ui.print_json(report.to_json())
    else:
        ui.print_checks(report.checks, title="cannbuild doctor")
    if report.failed:
        raise DoctorFailed()


@cli_task(
    "variant",
    "cann",
    "dry_run",
    positional=[("action", "create (the only action)")],
    extra=[("dir", ".cannbuild/sandbox", "where to create the emulated host")],
)
def sandbox(frame: Frame, action: str, dir: str = ".cannbuild/sandbox", **flags: FlagValue) -> None:
    """`sandbox create --dir D --variant A2|A3 --cann VERSION`: an emulated Ascend host.

    A folder that already holds a sandbox of another variant or CANN is not replaced:
    pass the same --variant/--cann, or another --dir."""
    if action != "create":
        raise UsageError(
            f"sandbox {action!r}: the only action is create.",
            "Run: cannbuild sandbox create --dir D",
        )
    options = frame.options
    # what the folder holds when no flag says otherwise; another kind is refused, not replaced
    spec = sandboxes.resolve_spec(Path(dir), options.sandbox_variant, options.sandbox_cann)
    if frame.dry_run:
        raise DryRun(sandboxes.plan_sandbox(spec))
    with progress.Progress("sandbox") as phases:
        result = sandboxes.create_sandbox(spec, phases)
    info = result.info
    state = "created" if result.created else "already up to date"
    ui.note(
        f"sandbox {state}: {info.variant} ({info.chip}) with CANN {info.cann}\n"
        f"  sysroot   {info.sysroot}\n  set_env   {info.set_env}\n  mirror    {info.mirror}\n"
        f"  try: cannbuild doctor --sysroot {info.sysroot}"
    )


TASKS = (doctor, sandbox)
