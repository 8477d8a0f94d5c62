"""The `cannbuild` console script: the same tasks as `invoke` in a checkout, with
cannbuild's own core options, help and exit codes.

invoke's core options (--dry, --pty, --hide, --warn-only, ...) do nothing for
cannbuild, so they are not offered; a usage error exits 2 with a did-you-mean;
`cannbuild help TASK` and `cannbuild TASK --help` print the task's help.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any, List, Optional

from invoke import Argument, Exit, ParseError, Program
from invoke.completion.complete import print_completion_script

from . import __version__
from .errors import EXIT_CODES, SignalInterrupt, UsageError, signal_number

USAGE_EXIT = UsageError.exit_code


class CannbuildProgram(Program):
    def core_args(self) -> List[Argument]:
        return [
            Argument(names=("help", "h"), optional=True, help="show help (of a task: TASK --help)"),
            Argument(names=("version", "V"), kind=bool, default=False, help="show the version"),
            Argument(names=("list", "l"), optional=True, help="list the tasks"),
            Argument(
                names=("config",),
                help="an invoke.yaml-style config file to read besides ./invoke.yaml",
            ),
            Argument(names=("debug",), kind=bool, default=False, help="log debug output"),
            Argument(
                names=("complete",), kind=bool, default=False, help="print completion candidates"
            ),
            Argument(
                names=("print-completion-script",),
                kind=str,
                default="",
                help="print the shell completion script (bash, zsh or fish)",
            ),
        ]

    def run(self, argv: Optional[List[str]] = None, exit: bool = True) -> None:
        """invoke's run, with cannbuild's exits: a usage error is 2, an Exit its own code."""
        try:
            self.create_config()
            self.parse_core(_help_first(list(sys.argv if argv is None else argv)))
            self.parse_collection()
            self.parse_tasks()
            self.parse_cleanup()
            self.update_config()
            self.execute()
        except ParseError as exc:
            _usage_exit(str(exc), self)
        except Exit as exc:
            if exc.message:
                print(exc.message, file=sys.stderr)
            sys.exit(exc.code)
        except KeyboardInterrupt as exc:
            print("cannbuild: interrupted", file=sys.stderr)
            sys.exit(128 + signal_number(exc))

    def parse_core(self, argv: Optional[List[str]]) -> None:
        self.normalize_argv(argv)
        self.parse_core_args()
        if self.args.debug.value:
            from invoke.util import enable_logging

            enable_logging()
        if self.args.version.value:
            self.print_version()
            raise Exit
        if self.args["print-completion-script"].value:
            print_completion_script(
                shell=self.args["print-completion-script"].value, names=self.binary_names
            )
            raise Exit

    def parse_collection(self) -> None:
        """Loads `./invoke.yaml` like `invoke` does for a project, so the `cannbuild` key
        is read the same way whichever entry point is used; a broken file is a usage error."""
        super().parse_collection()
        self.config.set_project_location(os.getcwd())
        try:
            self.config.load_project()
        except Exception as exc:  # yaml's errors, a binary file, a folder: all the user's file
            found = [
                name
                for name in ("invoke.yaml", "invoke.yml", "invoke.json", "invoke.py")
                if os.path.exists(name)
            ]
            where = found[0] if found else "the project config"
            raise Exit(
                f"cannbuild: {os.path.abspath(where)} cannot be read as a config file "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'}). "
                "Fix its syntax (YAML: `cannbuild:` then indented `key: value` lines) or remove it.",
                code=USAGE_EXIT,
            ) from None

    def parse_cleanup(self) -> None:
        halp = self.args.help.value
        if halp is True:
            self.print_help()
            raise Exit
        if halp:
            if halp not in self.parser.contexts:
                raise ParseError(f"No idea what '{halp}' is!")
            self.print_task_help(halp)
            raise Exit
        if self.args.list.value:
            self.list_flat()
            raise Exit
        if self.args.complete.value:
            from invoke.completion.complete import complete

            complete(
                names=self.binary_names,
                core=self.core,
                initial_context=self.initial_context,
                collection=self.collection,
                parser=self._make_parser(),
            )
        if not self.tasks:
            self.print_help()
            raise Exit

    def update_config(self, merge: bool = True) -> None:
        path: Any = self.args.config.value or os.environ.get("INVOKE_RUNTIME_CONFIG")
        self.config.set_runtime_path(path)
        try:
            self.config.load_runtime(merge=False)
        except Exception as exc:
            raise Exit(
                f"cannbuild: --config {path} cannot be read ({type(exc).__name__}: {exc}). "
                "Pass a YAML file with a `cannbuild:` key.",
                code=USAGE_EXIT,
            ) from None
        if merge:
            self.config.merge()

    def print_help(self) -> None:
        from .tasks._help import program_help

        print(program_help(self.collection))

    def print_task_help(self, name: str) -> None:
        from .tasks._help import task_help

        print(task_help(self.collection[name], name, self.parser.contexts[name]))


def _help_first(argv: List[str]) -> List[str]:
    """`cannbuild help build` and `cannbuild build ... --help` mean `cannbuild --help build`
    (a task's positional argument must not swallow --help)."""
    if len(argv) < 2:
        return argv
    rest = argv[1:]
    if rest[0] == "help":
        return [argv[0], "--help", *rest[1:2]]
    task = next((a for a in rest if not a.startswith("-")), None)
    if task is not None and any(a in ("--help", "-h") for a in rest):
        return [argv[0], "--help", task]
    return argv


def _usage_exit(message: str, program: Any) -> None:
    """invoke's parse errors, as one paragraph, a did-you-mean and exit 2."""
    hint = "Run `cannbuild --help` for the tasks, `cannbuild help TASK` for a task's options."
    word = message.split("'")[1] if message.count("'") >= 2 else ""
    collection = getattr(program, "collection", None)
    names: List[str] = []
    if word.startswith("-") and collection is not None:
        argv = list(getattr(program, "argv", []) or [])[1:]
        task = next((a for a in argv if a in collection.task_names), None)
        tasks = [collection[task]] if task else list(collection.tasks.values())
        for t in tasks:
            for arg in t.get_arguments():
                names += [f"--{n}" if len(n) > 1 else f"-{n}" for n in arg.names]
    elif collection is not None and word:
        names = sorted(collection.task_names)
    import difflib  # only for a mistyped word

    close = difflib.get_close_matches(word, sorted(set(names)), n=1, cutoff=0.7)
    if close:
        hint = f"Did you mean {close[0]}? {hint}"
    sys.stderr.write(f"cannbuild: {message.rstrip('.!')}. {hint}\n")
    sys.exit(USAGE_EXIT)


def on_termination() -> None:
    """SIGTERM and SIGHUP end a run as Ctrl-C does (see errors.SignalInterrupt); a second
    signal during that cleanup is ignored, so the cleanup finishes."""
    seen: List[int] = []

    def handler(signum: int, _frame: Any) -> None:
        if seen:
            return
        seen.append(signum)
        raise SignalInterrupt(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def main() -> None:
    from .tasks import ns

    on_termination()
    CannbuildProgram(namespace=ns, version=__version__, name="cannbuild", binary="cannbuild").run()


__all__ = ["EXIT_CODES", "CannbuildProgram", "main"]
