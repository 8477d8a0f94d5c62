"""The CLI as a user runs it, in a process of its own, without the caller's CANNBUILD_*
settings (unit tests use it for what only a whole process shows: exit codes, help).

The contract is tested through the `cannbuild` script (`python -m cannbuild`); `invoke
TASK` in a checkout (tasks.py at the checkout's top, found with --search-root as it would
be from the checkout itself) hands its command line to the same program, which
test_routes.py proves once for every task, flag, typo and help."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import warmcli

CHECKOUT = Path(__file__).resolve().parents[1]


def argv_for(route: str, args: Sequence[str]) -> List[str]:
    """The command line of `args` through `route`."""
    if route == "cannbuild":
        return [sys.executable, "-m", "cannbuild", *args]
    if route == "invoke":
        return [sys.executable, "-m", "invoke", "--search-root", str(CHECKOUT), *args]
    raise ValueError(f"no route {route!r}")


def clean_env(**env: str) -> Dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CANNBUILD_")}
    full.update(env)
    return full


def run_route(
    route: str,
    *args: str,
    cwd: Path,
    timeout: float = 120,
    env: Optional[Dict[str, str]] = None,
    memory_cap: Optional[int] = None,
    **extra_env: str,
) -> subprocess.CompletedProcess:
    """`args` through `route` in `cwd`; a hang fails the test (TimeoutExpired) after
    `timeout` seconds instead of hanging the suite.  `memory_cap`: the bytes of address
    space the child may map (RLIMIT_AS), to prove a bound on memory.  The script route is
    a fork of a warmed server (warmcli.py) where the environment allows."""
    env = env if env is not None else clean_env(**extra_env)
    warm = warmcli.server() if route == "cannbuild" else None
    if warm is not None and warm.can_run(env):
        return warm.run(args, cwd=cwd, env=env, timeout=timeout, memory_cap=memory_cap)
    return subprocess.run(
        argv_for(route, args),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=None
        if memory_cap is None
        else functools.partial(warmcli.cap_memory, memory_cap),
    )


def cannbuild(*args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    """`cannbuild ARGS` in `cwd` (run_route's keywords: timeout, env, memory_cap, env vars)."""
    return run_route("cannbuild", *args, cwd=cwd, **kwargs)
