"""The validate task: prove the installed package, and say which build made it."""

from __future__ import annotations

import os
from typing import Any

from invoke import Collection

from .. import ui
from ._flags import SESSION_FLAGS, cli_task, make_options
from ._session import DryRunStop, open_session


@cli_task(*SESSION_FLAGS, "json", "require_device", "cases", "dry_run")
def validate(c: Any, json: bool = False, cases: str = "", **flags: Any) -> None:
    """Check the installed package: the library, FlashAttention through the C API against a
    float64 reference, the repo's own example, the torch_npu route.

    PASS only when the numerical check ran on every case and passed; SKIPPED (no NPU, no
    torch) says why and how to make it run, and exits 5 with --require-device."""
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
        ui.note(
            f"dry run: would validate {session.vendor_dir} ({library.name}) on {len(selected)} "
            "cases; nothing was changed."
        )
        return
    session = open_session(c, flags)
    run = run_validate(session, os.environ, names, "cannbuild validate")
    ui.show_validation(run, as_json=json)
    publish_summary(run.report_dir)
    assert run.validation is not None
    check_verdict(run.validation.validation, make_options(c, flags).require_device)


collection = Collection(validate)
