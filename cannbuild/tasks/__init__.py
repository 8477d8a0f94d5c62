"""The command line: tasks grouped by what they act on, each parsing its options, calling
the core and rendering what it returns.

host (doctor, sandbox), build (plan, fetch, lock, build, install, setup, bundle, clean,
status), validate, bench, container (container, container-run, ci), analyze (profile,
diagnose), recipe (recipe check, recipe draft).  Every option is declared once, in `_flags.FLAGS`; each group module lists
its tasks in `TASKS`.  Only the group of the task being run is imported (start-up time
of every run), so `GROUPS` names where each task lives; a test keeps it true.
"""

from __future__ import annotations

import importlib
from typing import Dict

from ._flags import TaskSpec

# What `cannbuild --help` says first (issue 42: it had no "start here"); setup's summary
# starts with the same words, so the task list says it where the help does not render this.
START_HERE = (
    "Start here: `cannbuild setup --sandbox` (no NPU needed) or `cannbuild setup` on an Ascend "
    "host runs doctor, fetch, build, install and validate in one go; then `cannbuild status`."
)

GROUPS: Dict[str, str] = {
    "doctor": "host",
    "sandbox": "host",
    "plan": "build",
    "fetch": "build",
    "lock": "build",
    "build": "build",
    "install": "build",
    "setup": "build",
    "bundle": "build",
    "clean": "build",
    "status": "build",
    "validate": "validate",
    "bench": "bench",
    "container": "container",
    "container-run": "container",
    "ci": "container",
    "profile": "analyze",
    "diagnose": "analyze",
    "recipe": "recipe",
}


def task(name: str) -> TaskSpec:
    """The task called `name` (a key of GROUPS), importing only its group."""
    module = importlib.import_module(f"{__name__}.{GROUPS[name]}")
    return next(t for t in module.TASKS if t.name == name)


def all_tasks() -> Dict[str, TaskSpec]:
    return {name: task(name) for name in sorted(GROUPS)}


__all__ = ["GROUPS", "TaskSpec", "all_tasks", "task"]
