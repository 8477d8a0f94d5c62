"""The command line's tasks, grouped by what they act on, each parsing its options,
calling the core and rendering what it returns.

host (doctor, sandbox), build (plan, fetch, lock, build, install, setup, bundle, clean,
status), validate, bench, container (container, container-run, ci), analyze (profile,
diagnose), recipe (recipe check, recipe draft).  Every option is declared once, in
`_flags.FLAGS`; each group module lists its tasks in `TASKS`; cli.py makes them one
invoke collection.
"""

from __future__ import annotations

from typing import Dict

from . import analyze, bench, build, container, host, recipe, validate
from ._flags import TaskSpec

# What `cannbuild --help` says first (issue 42: it had no "start here"); setup's summary
# starts with the same words, so the task list says it where the help does not render this.
START_HERE = (
    "Start here: `cannbuild setup --sandbox` (no NPU needed) or `cannbuild setup` on an Ascend "
    "host runs doctor, fetch, build, install and validate in one go; then `cannbuild status`."
)

GROUPS = (host, build, validate, bench, container, analyze, recipe)


def all_tasks() -> Dict[str, TaskSpec]:
    """Every task by name, sorted."""
    return dict(sorted((t.name, t) for group in GROUPS for t in group.TASKS))


__all__ = ["START_HERE", "TaskSpec", "all_tasks"]
