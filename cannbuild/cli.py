"""The `cannbuild` console script: the same tasks as `invoke TASK` in a checkout, with
cannbuild's own core options, help and exit codes.

It reads the command line itself (tasks/_argv.py) and imports only the group of the
task it runs: importing invoke and every task was most of a no-op run's time.  A usage
error exits 2 with a did-you-mean; `cannbuild help TASK` and `cannbuild TASK --help`
print the task's help.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, NoReturn, Optional, Sequence

from . import __version__
from .errors import EXIT_CODES, CannbuildError, UsageError, signal_number
from .interpreter import leave
from .lazy import lazy_module
from .redact import redact
from .signals import on_termination
from .tasks import GROUPS, TaskSpec, all_tasks, task
from .tasks._argv import ArgvError, Invocation, core_names, parse, values_for
from .tasks._config import load_config
from .tasks._flags import TaskExit
from .tasks._help import program_help, task_help, task_list

if TYPE_CHECKING:
    import difflib
    import logging

    from invoke import exceptions as invoke_exceptions
    from invoke.completion import complete as invoke_complete
else:  # only a mistyped word, --debug or the completion script pays for these
    difflib = lazy_module("difflib")
    logging = lazy_module("logging")
    invoke_exceptions = lazy_module("invoke.exceptions")
    invoke_complete = lazy_module("invoke.completion.complete")

USAGE_EXIT = UsageError.exit_code
HINT = "Run `cannbuild --help` for the tasks, `cannbuild help TASK` for a task's options."


def _find(name: str) -> Optional[TaskSpec]:
    return task(name) if name in GROUPS else None


def _help_first(argv: List[str]) -> List[str]:
    """`cannbuild help build` and `cannbuild build ... --help` mean `cannbuild --help build`
    (a task's positional argument must not swallow --help)."""
    if not argv:
        return argv
    if argv[0] == "help":
        return ["--help", *argv[1:2]]
    words = argv[: argv.index("--")] if "--" in argv else argv
    name = next((a for a in words if not a.startswith("-")), None)
    if name is not None and any(a in ("--help", "-h") for a in words):
        return ["--help", name]
    return argv


def _say(paragraph: str) -> None:
    """An error paragraph on stderr: it may quote a value the user gave (a mirror URL
    with its password, a token on the command line), so it is redacted like a log."""
    sys.stderr.write(redact(paragraph) + "\n")


def usage_exit(error: ArgvError) -> NoReturn:
    """One paragraph, a did-you-mean and exit 2 (tasks.py's take-over says invoke's own
    listing errors this way too)."""
    hint = HINT
    choices = error.choices or (sorted(GROUPS) if error.word and error.word[0] != "-" else ())
    close = difflib.get_close_matches(error.word, sorted(set(choices)), n=1, cutoff=0.7)
    if close:
        hint = f"Did you mean {close[0]}? {hint}"
    _say(f"cannbuild: {str(error).rstrip('.!')}. {hint}")
    sys.exit(USAGE_EXIT)


def _complete(remainder: Sequence[str]) -> None:
    """Candidates for the shell's tab (the completion script calls `--complete -- WORDS`)."""
    words = list(remainder[1:])  # without the program name
    names = sorted(GROUPS)
    current = next((task(w) for w in reversed(words) if w in GROUPS), None)
    flags = [n for o in current.options for n in o.spellings] if current else core_names()
    tail = words[-1] if words else ""
    if not tail.startswith("-"):
        print("\n".join(names))
    elif tail not in flags:
        print("\n".join(f for f in flags if tail == "-" or f.startswith(tail) or tail == "--"))
    elif current is None or not any(tail in o.spellings and o.takes_value for o in current.options):
        print("\n".join(names))


def _core(invocation: Invocation) -> bool:
    """Carry out the core options; True when that was the whole job."""
    core = invocation.core
    if core.get("debug"):
        logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
    if core.get("version"):
        print(f"cannbuild {__version__}")
        return True
    shell = core.get("print-completion-script")
    if isinstance(shell, str) and shell:
        try:
            invoke_complete.print_completion_script(shell=shell, names=["cannbuild"])
        except invoke_exceptions.ParseError as exc:
            raise ArgvError(str(exc)) from None
        return True
    if core.get("complete"):
        _complete(invocation.remainder)
        return True
    halp = core.get("help")
    if not (halp or core.get("list") or not invocation.calls):
        return False
    if isinstance(halp, str):
        spec = _find(halp)
        if spec is None:
            raise ArgvError(f"there is no task '{halp}'", halp)
        print(task_help(spec))
        return True
    if core.get("list"):
        print(task_list(all_tasks()))
        return True
    print(program_help(all_tasks()))
    return True


def run(argv: Sequence[str], project: Optional[Path] = None) -> int:
    """Parse and run; the exit code (a usage error exits here with 2).  `project` is the
    folder whose invoke.yaml is the project config: the cwd for the script, the folder
    holding tasks.py for `invoke TASK` (as invoke itself reads it)."""
    try:
        invocation = parse(_help_first(list(argv)), _find)
        if _core(invocation):
            return 0
        config = invocation.core.get("config")  # an option that takes a value: a str
        runtime = config if isinstance(config, str) else None
        context = load_config(runtime, project or Path.cwd(), os.environ)
    except ArgvError as exc:
        usage_exit(exc)
    except CannbuildError as exc:  # the config files
        _say(f"cannbuild: {exc.paragraph()}")
        return exc.exit_code
    for call in invocation.calls:
        try:
            call.task.body(context, *call.args, **values_for(call))
        except TaskExit as exc:
            if exc.message:
                _say(exc.message)
            return exc.code
    return 0


def check_project_config(runtime: Optional[str], project: Path) -> None:
    """Exit as `run` would (one paragraph, exit 2) where the config files cannot be read;
    for `invoke --list ...`, which invoke answers itself after reading them."""
    try:
        load_config(runtime, project, os.environ)
    except CannbuildError as exc:
        _say(f"cannbuild: {exc.paragraph()}")
        leave(exc.exit_code)


def main(argv: Optional[Sequence[str]] = None, project: Optional[Path] = None) -> NoReturn:
    """The whole process: `argv` (default: the command line) run to its exit code, a
    reader that left as 141, an interrupt as 128 + the signal.  tasks.py hands `invoke
    TASK` here too, so both routes share one grammar and one exit-code table."""
    on_termination()
    try:
        try:
            code = run(sys.argv[1:] if argv is None else argv, project)
        except KeyboardInterrupt as exc:
            print("cannbuild: interrupted", file=sys.stderr)
            code = 128 + signal_number(exc)
        sys.stdout.flush()
    except BrokenPipeError:
        # `cannbuild plan | head`: the reader left.  Stop quietly, as a program killed by
        # SIGPIPE would (exit 141), and keep Python from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 128 + signal.SIGPIPE
    leave(code)


__all__ = ["EXIT_CODES", "check_project_config", "main", "run", "usage_exit"]
