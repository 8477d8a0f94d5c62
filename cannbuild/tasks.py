"""Invoke tasks: parse flags, build `Options`, call the core, render the result.

Task bodies stay thin; everything they call returns plain data.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable, Dict, Optional, TypeVar

from invoke import Collection, Exit, task

from . import ui
from .errors import CannbuildError
from .options import Options, resolve_options

F = TypeVar("F", bound=Callable[..., Any])

COMMON_HELP = {
    "cann_path": "CANN toolkit folder (the one holding set_env.sh), e.g. /usr/local/Ascend/cann",
    "sysroot": "read the host under this root instead of / (fixtures, sandbox)",
    "workspace": "where sources, builds, logs and reports go (default ./.cannbuild)",
    "soc": "SoC to build for: ascend910b (Atlas A2) or ascend910_93 (Atlas A3); default: detected",
    "jobs": "parallel compile jobs (default: CPUs available)",
    "sandbox": "run against the emulated Ascend host under <workspace>/sandbox",
    "json": "print machine-readable JSON instead of a table",
}


def helps(*names: str, **extra: str) -> Dict[str, str]:
    """`--help` texts for the flags a task takes."""
    return {**{n: COMMON_HELP[n] for n in names}, **extra}


def guarded(fn: F) -> F:
    """Turn cannbuild errors into one paragraph and their exit code."""

    @functools.wraps(fn)
    def wrapper(c: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(c, *args, **kwargs)
        except CannbuildError as exc:
            raise Exit(f"cannbuild: {exc.paragraph()}", code=exc.exit_code) from None
        except KeyboardInterrupt:
            raise Exit("cannbuild: interrupted", code=130) from None

    return wrapper  # type: ignore[return-value]


def make_options(c: Any, **flags: Any) -> Options:
    config = c.config.get("cannbuild") or {}
    cli: Dict[str, Any] = {k: v for k, v in flags.items() if v not in (None, False)}
    return resolve_options(cli, os.environ, dict(config))


@task(help=helps("cann_path", "sysroot", "workspace", "soc", "sandbox", "json"))
@guarded
def doctor(
    c: Any,
    cann_path: Optional[str] = None,
    sysroot: Optional[str] = None,
    workspace: Optional[str] = None,
    soc: Optional[str] = None,
    sandbox: bool = False,
    json: bool = False,
) -> None:
    """Check the host: toolkit, NPUs, driver, tools, torch. Exit 1 if a check fails."""
    from .host.doctor import read_host

    options = make_options(
        c, cann_path=cann_path, sysroot=sysroot, workspace=workspace, soc=soc, sandbox=sandbox
    )
    report = read_host(options, os.environ)
    if json:
        ui.print_json(report.to_json())
    else:
        out = ui.console()
        out.print(ui.checks_table(report.checks, title="cannbuild doctor"))
        out.print(ui.summary_line(report.checks))
    if report.failed:
        raise Exit(code=1)


ns = Collection(doctor)
