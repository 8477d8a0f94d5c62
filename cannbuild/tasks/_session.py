"""Opening a session from the command line: the sandbox (made or reused) and the host."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Optional, Tuple

from .. import ui
from ..options import Options
from ._flags import make_options


class DryRunStop(Exception):
    """A dry run that cannot go further without changing something; the message says what."""


def sandboxed(options: Options, dry_run: bool) -> Tuple[Options, Optional[Any]]:
    """The options pointed at the sandbox (made or reused) when --sandbox is given, and
    the sandbox's info.  A dry run never makes one: it stops, saying it would."""
    if not options.sandbox:
        return options, None
    from ..pipeline import with_sandbox

    if dry_run:
        from ..sandbox import plan_sandbox, resolve_spec

        assert options.sandbox_dir is not None
        spec = resolve_spec(options.sandbox_dir, options.sandbox_variant, options.sandbox_cann)
        plan = plan_sandbox(spec)
        if not plan.startswith("up to date"):
            raise DryRunStop(f"the sandbox: {plan}")
    options, info, created = with_sandbox(options)
    if created and info is not None:
        ui.note(f"sandbox created: {info.variant} host with CANN {info.cann} at {info.dir}")
    return options, info


def on_sandbox(options: Options, dry_run: bool) -> Options:
    return sandboxed(options, dry_run)[0]


def open_session(c: Any, flags: Mapping[str, Any]) -> Any:
    from ..pipeline import open_session as open_

    options, info = sandboxed(make_options(c, flags), bool(flags.get("dry_run")))
    return open_(options, os.environ, Path.cwd(), info)
