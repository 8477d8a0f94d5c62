"""The tasks as an invoke collection, for `invoke TASK` in a checkout (tasks.py).

The `cannbuild` script does not import invoke (its import is most of a no-op run's
start-up); this builds the same tasks, names, letters and defaults from the same
`TaskSpec`s, turns a `TaskExit` into invoke's `Exit`, and handles SIGTERM and SIGHUP
as the script does.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Dict, List

from invoke import Collection, Exit, Task

from ..signals import on_termination
from . import all_tasks
from ._flags import TaskExit, TaskSpec


class CannbuildTask(Task):
    """A task whose options come from its `TaskSpec`: no automatic short flags."""

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec

        @functools.wraps(spec.body)
        def body(c: Any, *args: Any, **kwargs: Any) -> Any:
            on_termination()  # as the script does: SIGTERM/SIGHUP stop the run cleanly
            try:
                return spec.body(c, *args, **kwargs)
            except TaskExit as exc:
                raise Exit(exc.message, code=exc.code) from None

        params = [inspect.Parameter("c", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        params += [
            inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for n, _ in spec.positional
        ]
        params += [
            inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default)
            for o in spec.options
        ]
        body.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        texts = {**dict(spec.positional), **{o.name: o.help for o in spec.options}}
        super().__init__(
            body,
            name=spec.name,
            help=texts,
            positional=[n for n, _ in spec.positional],
            iterable=[o.name for o in spec.options if o.kind is list],
            auto_shortflags=False,
        )

    def get_arguments(self, ignore_unknown_help: Any = None) -> Any:
        texts = dict(self.help)
        try:
            return super().get_arguments(ignore_unknown_help)
        finally:
            self.help = texts  # invoke pops each text it uses: a second parse would lose them

    def arg_opts(self, name: str, default: str, taken_names: Any) -> Dict[str, Any]:
        opts = super().arg_opts(name, default, taken_names)
        shorts: List[str] = [o.short for o in self.spec.options if o.name == name and o.short]
        opts["names"] = [*opts["names"], *shorts]
        return opts


def namespace() -> Collection:
    ns = Collection()
    for name, spec in all_tasks().items():
        ns.add_task(CannbuildTask(spec), name)
    return ns


__all__ = ["CannbuildTask", "namespace"]
