"""The validate task: prove the installed package, and say which build made it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from .. import ui
from ._config import Context
from ._flags import SESSION_FLAGS, FlagValue, cli_task, make_options
from ._session import DryRunStop, open_session


@cli_task(*SESSION_FLAGS, "json", "require_device", "cases", "dry_run", "package")
def validate(
    c: Context,
    json: bool = False,
    cases: str = "",
    package: Optional[str] = None,
    **flags: FlagValue,
) -> None:
    """Check the installed package: the library, FlashAttention through the C API against a
    float64 reference, the repo's own example, the torch_npu route.

    PASS only when the numerical check ran on every case and passed; SKIPPED (no NPU, no
    torch) says why and how to make it run, and exits 5 with --require-device.  With
    --package, what is checked is that package as shipped (CI's NPU job)."""
    from ..progress import publish_summary
    from ..transaction import run_validate
    from ..validate import check_verdict
    from ..validate.cases import select

    names = [n.strip() for n in (cases or "").split(",") if n.strip()]
    selected = select(names)  # a typo fails before anything runs
    if flags.get("dry_run"):
        try:
            session = open_session(c, flags)
        except DryRunStop as stop:
            ui.note(f"dry run: {stop}. Nothing was changed.")
            return
        library = session.ws.opp / session.recipe.validate.library
        what = (
            f"{package} installed into {session.ws.validate / 'package'}"
            if package
            else (f"{session.vendor_dir} ({library.name})")
        )
        ui.note(f"dry run: would validate {what} on {len(selected)} cases; nothing was changed.")
        return
    session = open_session(c, flags)
    shipped = Path(package) if package else None
    run = run_validate(session, os.environ, names, "cannbuild validate", shipped)
    if shipped is not None:
        ui.note(f"validated the shipped package {shipped} (sha256 in the report)")
    ui.show_validation(run, as_json=json)
    publish_summary(run.report_dir)
    assert run.validation is not None
    check_verdict(run.validation.validation, make_options(c, flags).require_device)


TASKS = (validate,)
