"""Opening a session from the command line: the sandbox (made or reused) and the host."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from .. import ui
from ..options import Options
from ._config import Context
from ._flags import FlagValue, make_options

if TYPE_CHECKING:
    from ..build.session import Sandboxed, Session


class DryRunStop(Exception):
    """A dry run that cannot go further without changing something; the message says what."""


def sandboxed(options: Options, dry_run: bool) -> Sandboxed:
    """The options pointed at the sandbox (made or reused) when --sandbox is given, with
    its info and lease (`pipeline.Sandboxed`).  A dry run never makes one: it stops,
    saying it would."""
    from ..build.session import Sandboxed, with_sandbox

    if not options.sandbox:
        return Sandboxed(options=options)
    if dry_run:
        from ..sandbox import plan_sandbox, resolve_spec

        assert options.sandbox_dir is not None
        spec = resolve_spec(options.sandbox_dir, options.sandbox_variant, options.sandbox_cann)
        plan = plan_sandbox(spec)
        if not plan.startswith("up to date"):
            raise DryRunStop(f"the sandbox: {plan}")
    made = with_sandbox(options)
    if made.created and made.info is not None:
        ui.note(
            f"sandbox created: {made.info.variant} host with CANN {made.info.cann} at {made.info.dir}"
        )
    return made


def on_sandbox(options: Options, dry_run: bool) -> Options:
    return sandboxed(options, dry_run).options


def open_session(c: Context, flags: Mapping[str, FlagValue]) -> Session:
    from ..build.session import open_session as open_

    made = sandboxed(make_options(c, flags), bool(flags.get("dry_run")))
    return open_(made.options, os.environ, Path.cwd(), made.info, made.lease)
