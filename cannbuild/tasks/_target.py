"""The workspace's remembered target for the tasks that target a host: their options
with it applied (target.py), the lines saying where a flag differs from it, and
`--cann-path=<a sandbox's toolkit>` taken as that sandbox."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, List, Mapping, Tuple

from .. import ui
from ..lazy import lazy_module
from ..options import Options, given_fields, resolve_options
from ._config import Context
from ._flags import FlagValue, option_fields, spellings

if TYPE_CHECKING:
    from .. import target as targets
else:  # `cannbuild --help` loads this module; a task pays for the record when it runs
    targets = lazy_module("cannbuild.target")


def target_options(c: Context, flags: Mapping[str, FlagValue], builds: bool = False) -> Options:
    """`Options` as `make_options` makes them, with the workspace's remembered target
    under the flags, environment and config (flag > env > config > remembered >
    default); each explicit value that differs from the record says so in one line.
    `builds`: the task builds for the target (its lines say "building for")."""
    options, notes = target_choice(c, flags, builds)
    for line in notes:
        ui.note(line)
    return options


def target_choice(
    c: Context, flags: Mapping[str, FlagValue], builds: bool = False
) -> Tuple[Options, List[str]]:
    """`target_options` with its lines returned, not said: for a task that decides after
    reading the options whether it builds (diagnose --profile off the NPU host), so the
    lines are said once, in the wording of what it then does."""
    notes: List[str] = []
    config = c.config.get("cannbuild") or {}
    cli = option_fields(flags)
    spelled = spellings()
    given = given_fields(cli, os.environ, config, spelled)
    plain = resolve_options(cli, os.environ, config, spelled)
    if plain.cann_path is not None and not plain.sandbox:
        info = targets.sandbox_of_toolkit(plain.cann_path)
        if info is not None:
            notes.append(
                f"{given['cann_path']} {plain.cann_path} is the toolkit of the sandbox at "
                f"{info.dir} ({info.variant}, CANN {info.cann}): running on that emulated "
                "host, as --sandbox does"
            )
            cli = {**cli, "sandbox": True, "sandbox_dir": str(info.dir)}
            given = {**given, "sandbox": given["cann_path"], "sandbox_dir": given["cann_path"]}
            plain = resolve_options(cli, os.environ, config, spelled)
    remembered = targets.read_target(plain.workspace)
    if remembered is None:
        return plain, notes
    choice = targets.choose(remembered, given, plain, builds)
    notes.extend(choice.notes)
    if not choice.layer:
        return plain, notes
    where = str(targets.target_file(plain.workspace))
    return resolve_options(cli, os.environ, config, spelled, choice.layer, where), notes
