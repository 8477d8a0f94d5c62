"""`invoke TASK` in a checkout (tasks.py): the same command line as the `cannbuild` script.

invoke's program imports tasks.py after reading its own core options and before it
parses the task's options or reads the project's invoke.yaml.  `take_over` uses that
moment: it hands the rest of the command line to cannbuild's parser (`cli.main`), so
both routes share one grammar, one config loader and one exit-code table (exit 2 and
one paragraph for a usage error or a broken invoke.yaml, 141 when the reader left),
where invoke's parser would exit 1 or print a traceback: `invoke --list`, `invoke
--help TASK`, `invoke help [TASK]` and a mistyped word read exactly as on the script.

What stays with invoke: finding tasks.py (--search-root, --collection), completion
(--complete) and the listings only it formats (--list-format, --list-depth), which list
`namespace()` (their values are checked here first: a wrong one is exit 2 with a
did-you-mean, not invoke's traceback).  A bare `invoke --help` or `invoke --version`
never reaches tasks.py: invoke answers them while reading its own core options
(invoke@3.0.3:invoke/program.py:441 --version, :473 a bare --help), and `invoke` is
invoke's console script, so they stay invoke's help and version; `invoke help` is
cannbuild's.

`namespace()` builds the tasks as an invoke collection from the same `TaskSpec`s, for
those listings and for anyone importing the collection: each task's first paragraph is
its listed line (invoke lists a docstring's first line, which cut the summaries
mid-sentence), it turns a `TaskExit` into invoke's `Exit` and handles SIGTERM and SIGHUP
as the script does.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from pathlib import Path
from typing import Dict, List, Optional, Set

from invoke import Argument, Collection, Exit, Program, Task

from ..cli import check_project_config, main, usage_exit
from ..signals import on_termination
from . import all_tasks
from ._argv import ArgvError
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
        body.__doc__ = listed_doc(spec)
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


def listed_doc(spec: TaskSpec) -> str:
    """The task's docstring with its first paragraph on one line: invoke lists the first
    line (invoke@3.0.3:invoke/util.py:143, helpline), the script the first paragraph (TaskSpec.summary)."""
    rest = spec.doc.split("\n\n", 1)[1:]
    return "\n\n".join([spec.summary, *rest])


def namespace() -> Collection:
    ns = Collection()
    for name, spec in all_tasks().items():
        ns.add_task(CannbuildTask(spec), name)
    return ns


# invoke's core options that mean the same to cannbuild (spelled as cannbuild spells them)
# and those that only find tasks.py; every other one (--dry, --echo, --pty, ...) drives
# invoke's `c.run`, which no cannbuild task uses: it is passed on as the user spelled it,
# and refused as any unknown option is.
_SAME = {"config": "--config", "debug": "--debug", "help": "--help"}
_FINDING = ("search-root", "collection")
# Program.list_tasks calls list_<format> (invoke@3.0.3:invoke/program.py:815)
LIST_FORMATS = ("flat", "nested", "json")


def _loading_program() -> Optional[Program]:
    """The invoke program importing tasks.py right now, if any (None on a plain import).
    A Program imports tasks.py only while loading its collection (Program.load_collection,
    after its core options are parsed into `core`); any method of it up the stack will do,
    so a renamed or split method in a later invoke still finds it."""
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, Program) and getattr(owner, "core", None) is not None:
            return owner
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _spelled(program: Program, name: str) -> str:
    """How the command line spelled invoke's core option `name` (`-e`, `--echo`), so an
    error quotes the word the user typed."""
    names = program.core[0].args[name].names
    longs = {f"--{n}" for n in names if len(n) > 1}
    shorts = {n for n in names if len(n) == 1}
    for word in program.argv[1:]:
        if word == "--":
            break
        if word.split("=", 1)[0] in longs:
            return word.split("=", 1)[0]
        if word[:1] == "-" and word[1:2] in shorts and not word.startswith("--"):
            return word[:2]
    return "--" + name


def _invoke_listing(program: Program, given: Dict[str, object]) -> None:
    """Check the values of a listing invoke formats itself (--list-format, --list-depth);
    raise ArgvError where invoke would print a traceback or exit 1."""
    root, fmt = given["list"], given.get("list-format", "flat")
    if fmt not in LIST_FORMATS:
        raise ArgvError(
            f"{_spelled(program, 'list-format')} takes {', '.join(LIST_FORMATS)}, not '{fmt}'",
            str(fmt),
            LIST_FORMATS,
        )
    if fmt == "json" and "list-depth" in given:
        raise ArgvError(
            f"{_spelled(program, 'list-depth')} does not go with --list-format json "
            "(the JSON lists every task; leave out one of them)"
        )
    if root is not True:
        raise ArgvError(
            f"'{root}' names no sub-collection: cannbuild's tasks are one flat list "
            f"(use {_spelled(program, 'list')} without a name)"
        )


def cannbuild_argv(program: Program) -> Optional[List[str]]:
    """The command line invoke was given, as the `cannbuild` script would be given it;
    None where invoke itself should answer (a listing only it can format, completion).
    ArgvError where a value for invoke's listing is wrong."""
    given = {name: arg.value for name, arg in program.core[0].args.items() if arg.got_value}
    if "complete" in given:
        return None
    if "list" in given and ("list-format" in given or "list-depth" in given):
        _invoke_listing(program, given)
        return None
    # invoke's --list takes an optional ROOT (the next word): as the script reads it, the
    # listing and then a task's name (listed; a mistyped one is a did-you-mean)
    root = given.pop("list", None)
    words: List[str] = ["--list"] if root is not None else []
    for name, value in given.items():
        if name in _FINDING:
            continue
        words.append(_SAME.get(name) or _spelled(program, name))
        if value is not True:
            words.append(str(value))
    if root is not None and root is not True:
        words.append(str(root))
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
    try:
        argv = cannbuild_argv(program)
    except ArgvError as exc:
        usage_exit(exc)
    if argv is None:  # invoke lists or completes: a broken config is still exit 2, not a traceback
        check_project_config(program.core[0].args.config.value, project)
        return
    main(argv, project)


__all__ = [
    "LIST_FORMATS",
    "CannbuildTask",
    "cannbuild_argv",
    "listed_doc",
    "namespace",
    "take_over",
]
