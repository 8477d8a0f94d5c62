"""The validate task: prove the installed package, and say which build made it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from .. import ui
from ..errors import DryRun
from ..lazy import lazy_module
from ._flags import SESSION_FLAGS, FlagValue, cli_task
from ._frame import Frame

if TYPE_CHECKING:
    from .. import progress, transaction
    from .. import validate as validation
    from ..validate import cases as validation_cases
else:  # only the task that runs loads its core (`cannbuild --help` loads every task module)
    progress = lazy_module("cannbuild.progress")
    transaction = lazy_module("cannbuild.transaction")
    validation = lazy_module("cannbuild.validate")
    validation_cases = lazy_module("cannbuild.validate.cases")


@cli_task(*SESSION_FLAGS, "json", "require_device", "cases", "dry_run", "package", "verbose")
def validate(
    frame: Frame,
    json: bool = False,
    cases: str = "",
    package: Optional[str] = None,
    **flags: FlagValue,
) -> None:
    """Check each installed package: the library, its operator through the C API against a
    float64 reference (FlashAttention's cases for ops-transformer), the repo's own
    example, the torch_npu route.

    Every check runs each time (nothing is reused, so there is no --force: that is
    setup's `--force validate`).  PASS only when every repo's numerical check ran on every
    case and passed; SKIPPED (no NPU, no torch) says why and how to make it run, and exits
    5 with --require-device.
    With --package, what is checked is that package as shipped (CI's NPU job)."""
    names = [n.strip() for n in (cases or "").split(",") if n.strip()]
    selected = validation_cases.select(names)  # a typo fails before anything runs
    session = frame.session()
    if frame.dry_run:
        judged = [
            f"{r.name} ({session.vendor_dir_of(r.name)}, check {r.validate.check})"
            for r in session.recipe.validated
            if r.validate is not None
        ]
        what = (
            f"{package} installed into {session.ws.validate / 'package'}"
            if package
            else "; ".join(judged) or "nothing (the recipe names no validation)"
        )
        raise DryRun(f"would validate {what}, FlashAttention on {len(selected)} cases")
    shipped = Path(package) if package else None
    with progress.Progress("validation", lines=bool(flags.get("verbose"))) as phases:
        run = transaction.run_validate(session, os.environ, names, frame.command, shipped, phases)
    if shipped is not None:
        ui.note(f"validated the shipped package {shipped} (sha256 in the report)")
    ui.show_validation(run, as_json=json, tables=bool(flags.get("verbose")))
    progress.publish_summary(run.report_dir)
    assert run.validation is not None
    validation.check_verdict(run.validation.validation, session.options.require_device)


TASKS = (validate,)
