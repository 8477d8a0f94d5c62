"""`invoke TASK` in a checkout (tasks.py): the same command line as the `cannbuild` script.

invoke's program imports tasks.py after reading its own core options and before it
parses the task's options or reads the project's invoke.yaml.  `take_over` uses that
moment: it hands the rest of the command line to cannbuild's parser (`cli.main`), so
both routes share one grammar, one config loader and one exit-code table (exit 2 and
one paragraph for a usage error or a broken invoke.yaml, 141 when the reader left),
where invoke's parser would exit 1 or print a traceback.  Only what is invoke's alone
stays with invoke: finding tasks.py (--search-root, --collection), its own --help and
--version (answered before tasks.py is read), and --complete or --list with a format,
depth or root, which list `namespace()`.

`namespace()` builds the tasks as an invoke collection from the same `TaskSpec`s, for
those listings and for anyone importing the collection: it turns a `TaskExit` into
invoke's `Exit` and handles SIGTERM and SIGHUP as the script does.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from pathlib import Path
from typing import Dict, List, Optional, Set

from invoke import Argument, Collection, Exit, Program, Task

from ..cli import check_project_config, main
from ..signals import on_termination
from . import all_tasks
from ._config import Context
from ._flags import FlagValue, TaskExit, TaskSpec


class CannbuildTask(Task):
    """A task whose options come from its `TaskSpec`: no automatic short flags."""

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec

        @functools.wraps(spec.body)
        def body(c: Context, *args: FlagValue, **kwargs: FlagValue) -> None:
            on_termination()  # as the script does: SIGTERM/SIGHUP stop the run cleanly
            try:
                return spec.body(c, *args, **kwargs)
            except TaskExit as exc:
                raise Exit(exc.message, code=exc.code) from None

        params = [inspect.Parameter("c", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        params += [
            inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            if n not in spec.optional
            else inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
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

    def get_arguments(self, ignore_unknown_help: Optional[bool] = None) -> List[Argument]:
        texts = dict(self.help)
        try:
            return super().get_arguments(ignore_unknown_help)
        finally:
            self.help = texts  # invoke pops each text it uses: a second parse would lose them

    def arg_opts(self, name: str, default: str, taken_names: Set[str]) -> Dict[str, object]:
        opts = super().arg_opts(name, default, taken_names)
        shorts: List[str] = [o.short for o in self.spec.options if o.name == name and o.short]
        opts["names"] = [*opts["names"], *shorts]
        return opts


def namespace() -> Collection:
    ns = Collection()
    for name, spec in all_tasks().items():
        ns.add_task(CannbuildTask(spec), name)
    return ns


# invoke's core options that mean the same to cannbuild (spelled as cannbuild spells them)
# and those that only find tasks.py; every other one (--dry, --echo, --pty, ...) drives
# invoke's `c.run`, which no cannbuild task uses: it is passed on, and refused as any
# unknown option is.
_SAME = {"config": "--config", "debug": "--debug", "help": "--help"}
_FINDING = ("search-root", "collection")


def _loading_program() -> Optional[Program]:
    """The invoke program importing tasks.py right now, if any (None on a plain import)."""
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if frame.f_code.co_name == "load_collection" and isinstance(owner, Program):
            return owner
        frame = frame.f_back  # type: ignore[assignment]
    return None


def cannbuild_argv(program: Program) -> Optional[List[str]]:
    """The command line invoke was given, as the `cannbuild` script would be given it;
    None where invoke itself should answer (a listing only it can format, completion)."""
    given = {name: arg.value for name, arg in program.core[0].args.items() if arg.got_value}
    if "complete" in given:
        return None
    if "list" in given:
        if given["list"] is not True or "list-format" in given or "list-depth" in given:
            return None
        given.pop("list")
        words = ["--list"]
    else:
        words = []
    for name, value in given.items():
        if name in _FINDING:
            continue
        words.append(_SAME.get(name, "--" + name))
        if value is not True:
            words.append(str(value))
    words += program.core.unparsed
    if "--" in program.argv:
        words += program.argv[program.argv.index("--") :]
    return words


def take_over(tasks_file: str) -> None:
    """Run invoke's command line through cannbuild's front end and exit, when invoke's
    program is loading tasks.py; return (and let the importer have `namespace()`)
    otherwise.  `tasks_file` is tasks.py: its folder holds the project's invoke.yaml."""
    program = _loading_program()
    if program is None:
        return
    project = Path(os.path.dirname(os.path.abspath(tasks_file)))
    argv = cannbuild_argv(program)
    if argv is None:  # invoke lists or completes: a broken config is still exit 2, not a traceback
        check_project_config(program.core[0].args.config.value, project)
        return
    main(argv, project)


__all__ = ["CannbuildTask", "cannbuild_argv", "namespace", "take_over"]
