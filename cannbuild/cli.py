"""The command line of both routes: one invoke `Program` over one `Collection`.

The `cannbuild` script runs `CannbuildProgram`; `invoke TASK` in a checkout hands invoke's
command line to the same program (tasks.py calls `take_over`), so both read the same words
with invoke's own parser: `--name VALUE`, `--name=VALUE`, `-j8`, a repeatable option given
again, a positional argument by place or by name, tasks one after another.  What this
module adds to invoke's Program is the project's contract (README, Guarantees): a usage
error is one paragraph with a did-you-mean and exit 2 (invoke exits 1), cannbuild's help,
config files read within bounds (tasks/_config.py), and the exit-code table: a typed
error's code, 130/143/129 on a signal, 141 when the reader left.

A bare `invoke --help` or `invoke --version` never reaches tasks.py (invoke answers them
while reading its own core options, invoke@3.0.3:invoke/program.py:441 and :473): they
stay invoke's, and `invoke help` is cannbuild's.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import re
import signal
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, List, NoReturn, Optional, Sequence, Set, Tuple

from invoke import Argument, Collection, Config, Context, Exit, ParseError, Program, Task
from invoke.completion.complete import complete, print_completion_script
from invoke.parser import Parser, ParserContext

from . import __version__, ui
from .errors import (
    EXIT_CODES,
    CannbuildError,
    UsageError,
    interrupted_line,
    signal_number,
    storage_error,
)
from .interpreter import leave
from .lazy import lazy_module
from .signals import on_termination
from .tasks import START_HERE, all_tasks
from .tasks._config import load_config
from .tasks._flags import FLAGS, FlagValue, TaskSpec

if TYPE_CHECKING:
    import difflib
else:  # only a mistyped word pays for it
    difflib = lazy_module("difflib")

HINT = "Run `cannbuild --help` for the tasks, `cannbuild help TASK` for a task's options."
LIST_FORMATS = ("flat", "nested", "json")  # Program.list_<format>


class CannbuildTask(Task):
    """A task made from its `TaskSpec`: the options the spec declares, their letters and
    no automatic short flags (a letter means the same in every task)."""

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec

        @functools.wraps(spec.body)
        def body(c: Context, *args: FlagValue, **kwargs: FlagValue) -> None:
            return spec.body(c, *args, **kwargs)

        params = [inspect.Parameter("c", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        params += [
            inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
            if n in spec.optional
            else inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for n, _ in spec.positional
        ]
        params += [
            inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default)
            for o in spec.options
        ]
        body.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        # invoke lists a docstring's first line (invoke/util.py helpline): the summary whole
        body.__doc__ = "\n\n".join([spec.summary, *spec.doc.split("\n\n", 1)[1:]])
        super().__init__(
            body,
            name=spec.name,
            help={**dict(spec.positional), **{o.name: o.help for o in spec.options}},
            positional=[n for n, _ in spec.positional],
            iterable=[o.name for o in spec.options if o.kind is list],
            auto_shortflags=False,
        )

    def get_arguments(self, ignore_unknown_help: Optional[bool] = None) -> List[Argument]:
        texts = dict(self.help)
        try:
            return super().get_arguments(ignore_unknown_help)
        finally:
            self.help = texts  # invoke pops each text it uses: a second parser would lose them

    def arg_opts(self, name: str, default: str, taken_names: Set[str]) -> Dict[str, object]:
        opts = super().arg_opts(name, default, taken_names)
        opts["names"] = [
            *opts["names"],
            *(o.short for o in self.spec.options if o.name == name and o.short),
        ]  # type: ignore[misc]
        return opts


def namespace() -> Collection:
    """Every task, as invoke's collection (tasks.py's `ns` too)."""
    ns = Collection()
    for name, spec in all_tasks().items():
        ns.add_task(CannbuildTask(spec), name)
    return ns


class CannbuildProgram(Program):
    """invoke's Program with cannbuild's core options, help and exit codes.  `project`:
    the folder whose invoke.yaml is the project config (the cwd for the script, the
    folder of tasks.py for `invoke TASK`, as invoke itself reads it)."""

    def __init__(self, project: Optional[Path] = None, binary_names: Sequence[str] = ()) -> None:
        super().__init__(
            version=__version__,
            name="cannbuild",
            binary="cannbuild",
            binary_names=list(binary_names) or ["cannbuild"],
        )
        self.project = project or _cwd()
        self.relaxed: Set[str] = set()  # tasks whose optional positionals were left out

    def core_args(self) -> List[Argument]:
        return [
            Argument(
                names=("help", "h"),
                optional=True,
                help="show help; cannbuild help TASK shows a task's options",
            ),
            Argument(names=("version", "V"), kind=bool, default=False, help="show the version"),
            Argument(names=("list", "l"), kind=bool, default=False, help="list the tasks"),
            Argument(
                names=("list-format", "F"), default="flat", help="--list as flat, nested or json"
            ),
            Argument(names=("config",), help="read this config file besides ./invoke.yaml"),
            Argument(
                names=("debug",),
                kind=bool,
                default=False,
                help="log each command cannbuild runs (to stderr)",
            ),
            Argument(
                names=("complete",),
                kind=bool,
                default=False,
                help="print completion candidates (the completion script calls it)",
            ),
            Argument(
                names=("print-completion-script",),
                default="",
                help="print the shell completion script (bash, zsh, fish)",
            ),
        ]

    def task_args(self) -> List[Argument]:
        return []  # invoke's --collection, --search-root: the script has one collection

    def run(self, argv: Optional[List[str]] = None, exit: bool = True) -> int:  # type: ignore[override]
        """The whole run to its exit code; `exit`: end the process with it (leave)."""
        on_termination()
        _printable_streams()
        try:
            try:
                code = self._run(argv)
            except KeyboardInterrupt as exc:
                print(interrupted_line(exc), file=sys.stderr)
                code = 128 + signal_number(exc)
            sys.stdout.flush()
        except BrokenPipeError:
            # `cannbuild plan | head`: the reader left.  Stop quietly, as a program killed by
            # SIGPIPE would (exit 141), and keep Python from complaining at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            code = 128 + signal.SIGPIPE
        except OSError as exc:  # `--help > /dev/full`: what the tasks say (tasks/_flags.py)
            known = storage_error(exc, output=True)  # only the output is written here
            if known is None:
                raise
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            _say(f"cannbuild: {known.paragraph()}")
            code = known.exit_code
        if exit:
            leave(code)
        return code

    def _run(self, argv: Optional[List[str]]) -> int:
        try:
            self.config = Config(lazy=True)  # no file is read before the command line is
            self.parse_core(argv)
            self.parse_collection()
            self.parse_tasks()
            self.parse_cleanup()
            if self.project is None:  # --help and --version answered above without one
                raise UsageError(
                    "the current folder no longer exists (it was removed or renamed after "
                    "the shell entered it).",
                    "cd to a folder that exists and run the command again.",
                )
            self.config = load_config(self.args.config.value, self.project, os.environ)
            self.execute()
        except ParseError as exc:
            _say(self.usage_paragraph(exc))
            return UsageError.exit_code
        except Exit as exc:
            if exc.message:
                _say(exc.message)
            return exc.code
        except CannbuildError as exc:  # the config files
            _say(f"cannbuild: {exc.paragraph()}")
            return exc.exit_code
        return 0

    def parse_core(self, argv: Optional[List[str]]) -> None:
        self.normalize_argv(argv)
        self.argv = [self.argv[0], *_help_first(self.argv[1:])]
        self.parse_core_args()
        if self.args.debug.value:
            logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
            if not os.environ.get("INVOKE_DEBUG"):  # invoke's own parser steps
                logging.getLogger("invoke").setLevel(logging.INFO)
        if self.args.version.value:
            self.print_version()
            raise Exit
        shell = self.args["print-completion-script"].value
        if shell:
            print_completion_script(shell=shell, names=self.binary_names)
            raise Exit

    def parse_collection(self) -> None:
        self.collection = self.scoped_collection = namespace()
        self.list_root: Optional[str] = None
        self.list_depth: Optional[int] = None
        self.list_format = "flat"

    def parse_tasks(self) -> None:
        """invoke takes every positional argument as required: where a parse fails only on
        trailing ones the task marks optional (`recipe draft`, `bench` without --compare),
        it parses again with those taken by name only."""
        try:
            super().parse_tasks()
        except ParseError as exc:
            context = exc.context
            name = context.name if context is not None else None
            if context is None or name is None or name in self.relaxed:
                raise
            missing = {a.name for a in context.missing_positional_args}
            if not missing or not missing <= set(self.collection[name].spec.optional):
                raise
            self.relaxed.add(name)
            self.parse_tasks()
            return
        # invoke takes a mistyped option of a task with positional arguments for their value
        # (`bench --jsn`): an option-shaped value is an option it does not know
        for context in self.tasks:
            for arg in context.positional_args:
                value = arg.value
                if isinstance(value, str) and _OPTION.match(value):
                    word = value.split("=", 1)[0]
                    raise _Usage(
                        f"{context.name} does not take '{word}'", word, context.flag_names()
                    )

    def _make_parser(self) -> Parser:
        """A parser knowing only the tasks the command line names: the parser looks a
        context up only for a word that names it, and copies every context it knows on
        each parse (copy.deepcopy, most of a short run's parse time with all of them)."""
        words = {*self.argv, *self.core.remainder.split()}
        contexts = []
        for name in self.collection.task_names:
            if name in words:
                context = ParserContext(name=name, args=self.collection[name].get_arguments())
                if name in self.relaxed:
                    optional = self.collection[name].spec.optional
                    context.positional_args = [
                        a for a in context.positional_args if a.name not in optional
                    ]
                contexts.append(context)
        return Parser(initial=self.initial_context, contexts=contexts)

    def parse_cleanup(self) -> None:
        halp = self.args.help.value
        listing = self.args.list.value
        if halp is True or not (self.tasks or listing or self.args.complete.value or halp):
            self.print_help()
            raise Exit
        if halp:
            if halp not in self.parser.contexts:
                raise ParseError(f"No idea what {halp!r} is!")
            self.print_task_help(halp)
            raise Exit
        if self.args.complete.value:
            complete(
                names=self.binary_names,
                core=self.core,
                initial_context=self.initial_context,
                collection=self.collection,
                parser=self._make_parser(),
            )
        if self.core.remainder:
            raise ParseError(f"no task takes words after '--' (got '{self.core.remainder}')")
        if listing:
            self.list_format = self.args["list-format"].value
            if self.list_format not in LIST_FORMATS:
                raise _Usage(
                    f"--list-format takes {', '.join(LIST_FORMATS)}, not '{self.list_format}'",
                    self.list_format,
                    LIST_FORMATS,
                )
            self.list_tasks()
            raise Exit

    def usage_paragraph(self, exc: ParseError) -> str:
        """invoke's parse error as one paragraph in cannbuild's words, with a did-you-mean."""
        message, word, choices = _explained(exc, self)
        close = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.7)
        hint = f"Did you mean {close[0]}? {HINT}" if close else HINT
        return f"cannbuild: {message.rstrip('.!')}. {hint}"

    # --- help -----------------------------------------------------------------------------

    def print_columns(self, tuples: Sequence[Tuple[str, Optional[str]]]) -> None:
        print("\n".join(_columns((a, b or "") for a, b in tuples)) + "\n")

    def task_list_opener(self, extra: str = "") -> str:
        return "Tasks"

    def print_help(self) -> None:
        specs = [t.spec for t in self.collection.tasks.values()]
        common = [f for f in FLAGS.values() if f.short] + [FLAGS[n] for n in ("sandbox", "dry_run")]
        env_flags = sorted((f for f in FLAGS.values() if f.env), key=lambda f: f.env or "")
        lines = [
            "Usage: cannbuild TASK [options]      (cannbuild help TASK: the task's options)",
            "",
            *textwrap.wrap(
                "Build, install and validate CANN's opbase and ops-transformer (--repos: its "
                "siblings too) on an Ascend host; --sandbox runs everything on an emulated host "
                "(no NPU, no CANN).",
                min(ui.width(), 88),
            ),
            "",
            *textwrap.wrap(START_HERE, min(ui.width(), 100)),
            "",
            "Tasks:",
            *_columns((s.name, s.summary) for s in sorted(specs, key=lambda s: s.name)),
            "",
            "Common options (same meaning in every task that takes them):",
            *_columns(
                [
                    *((f"-{f.short}, {f.option}" if f.short else f.option, f.help) for f in common),
                    ("-h, --help", "show help; cannbuild help TASK shows a task's options"),
                    ("-V, --version", "show the version"),
                    ("-l, --list", "list the tasks (--list-format flat, nested or json)"),
                    ("--config FILE", "read this config file besides ./invoke.yaml"),
                ]
            ),
            "",
            "Environment (flags beat CANNBUILD_* variables, which beat the `cannbuild:` key of ./invoke.yaml):",
            *_columns(
                [
                    *((f.env or "", f.option) for f in env_flags),
                    ("CANNBUILD_MIRRORS", "URL prefix rewrites: PREFIX=REPLACEMENT,..."),
                    ("CANNBUILD_CACHE_REMOTE", "a shared ccache storage (redis:// or http(s)://)"),
                    ("CANNBUILD_RETRIES", "retries of a transient network error (default 3)"),
                    ("CANNBUILD_SANDBOX_DIR", "where --sandbox keeps the emulated host"),
                ]
            ),
            "",
            "Exit codes:",
            *_columns((str(code), meaning) for code, meaning in EXIT_CODES),
        ]
        print(ui.fit("\n".join(lines), sys.stdout))

    def print_task_help(self, name: str) -> None:
        spec: TaskSpec = self.collection[name].spec
        words = [f"[{n.upper()}]" if n in spec.optional else n.upper() for n, _ in spec.positional]
        lines = [f"Usage: {' '.join(['cannbuild', spec.name, *words, '[options]'])}", ""]
        width = min(ui.width(), 100)
        lines += [textwrap.fill(p, width) for p in spec.doc.split("\n\n") if p.strip()]
        rows = [(n.upper(), text) for n, text in spec.positional]
        for option in sorted(spec.options, key=lambda o: o.name):
            spelled = ", ".join(reversed(option.spellings))
            if option.kind is not bool:
                spelled += "=VALUE" if option.kind is str else "=VALUE (repeatable)"
            rows.append((spelled, option.help))
        lines += ["", "Options:" if rows else "Options: none", *_columns(rows)]
        print("\n".join(lines))


# a word shaped like an option (`--jsn`, `-x`), not a value such as `-3` or `-`
_OPTION = re.compile(r"--?[A-Za-z]")


class _Usage(ParseError):
    """A usage error found past invoke's parser, with the words it may have meant."""

    def __init__(self, message: str, word: str = "", choices: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.word = word
        self.choices = tuple(choices)


def _task_words(argv: Sequence[str], context: ParserContext, tasks: Sequence[str]) -> List[str]:
    """The words of `context`'s task on the command line: after its name, up to the next
    task's."""
    if context.name not in argv:
        return []
    words = list(argv[argv.index(context.name) + 1 :])
    end = next((i for i, word in enumerate(words) if word in tasks), len(words))
    return words[:end]


def _unknown_option(
    argv: Sequence[str], context: Optional[ParserContext], core: Sequence[str], tasks: Sequence[str]
) -> str:
    """The first option-shaped word of the task that neither it nor the program knows, else
    '' (invoke took it for a positional value and then met the word after it)."""
    if context is None:
        return ""
    names = {*context.flag_names(), *core}
    for token in _task_words(argv, context, tasks):
        flag = token.split("=", 1)[0]
        if _OPTION.match(flag) and flag not in names:
            return flag
    return ""


def _given_twice(
    argv: Sequence[str], word: str, context: Optional[ParserContext], tasks: Sequence[str]
) -> str:
    """The flag of `context` given twice whose second value is `word` (invoke's parser takes
    that value for a stray argument), else ''; a repeatable flag (--force) is no mistake."""
    if context is None:
        return ""
    names = {name for name in context.flag_names() if context.flags[name].kind is not list}
    words = _task_words(argv, context, tasks)
    seen: Set[str] = set()
    for i, token in enumerate(words):
        flag, has_value, value = token.partition("=")
        if flag not in names:
            continue
        if not has_value:
            value = words[i + 1] if i + 1 < len(words) else ""
        if flag in seen and value == word:
            return flag
        seen.add(flag)
    return ""


def _switch_given_value(
    argv: Sequence[str], word: str, context: Optional[ParserContext], tasks: Sequence[str]
) -> str:
    """The on/off flag the task's words gave `word` to as `--flag=word`, else ''."""
    if context is None:
        return ""
    switches = {name for name in context.flag_names() if context.flags[name].kind is bool}
    for token in _task_words(argv, context, tasks):
        flag, has_value, value = token.partition("=")
        if has_value and value == word and flag in switches:
            return flag
    return ""


def _explained(exc: ParseError, program: CannbuildProgram) -> Tuple[str, str, Sequence[str]]:
    """(what is wrong, the word the user typed, what they may have meant) of invoke's
    parse error (invoke@3.0.3:invoke/parser/parser.py words them)."""
    if isinstance(exc, _Usage):
        return str(exc), exc.word, exc.choices
    text, context = str(exc), exc.context
    task = context.name if context is not None else None
    tasks = sorted(getattr(program, "collection", Collection()).tasks)
    core = program.initial_context.flag_names()
    unknown = re.fullmatch(r"No idea what '(.*)' is!", text)
    if unknown:
        word = unknown.group(1)
        if word.startswith("-") and task and context is not None:
            return f"{task} does not take '{word}'", word, context.flag_names()
        if word.startswith("-"):
            longs = ", ".join(n for n in core if n.startswith("--"))
            return (
                f"'{word}' is not a cannbuild option (the options before the task are {longs})",
                word,
                core,
            )
        argv = getattr(program, "argv", [])
        stray = _unknown_option(argv, context, core, tasks)
        if task and stray and context is not None:  # `bundle --lock-fil x`: the option is wrong
            return f"{task} does not take '{stray}'", stray, context.flag_names()
        switch = _switch_given_value(argv, word, context, tasks)
        if task and switch:  # `setup --sandbox=no`: invoke takes `no` for an argument
            return (
                f"{task}'s {switch} takes no value (it is on when given, off when left out), "
                f"so '{switch}={word}' is not understood",
                "",
                (),
            )
        twice = _given_twice(argv, word, context, tasks)
        if task and twice:
            return f"{task} was given {twice} twice (the second time '{word}')", "", ()
        if task:
            return f"{task} takes no argument '{word}'", word, tasks
        return f"there is no task '{word}'", word, tasks
    flag = re.match(r"Flag <Argument: ([^ >]+).* needed value", text)
    if flag:
        name = flag.group(1).replace("_", "-")  # invoke names the argument cann_path
        return f"'--{name}'{f' of {task}' if task else ''} needs a value", "", ()
    missing = re.fullmatch(r"'(.*)' did not receive required positional arguments: (.*)", text)
    if missing:
        optional = program.collection[missing.group(1)].spec.optional
        names = [n.strip("'") for n in missing.group(2).split(", ")]
        return (
            f"{missing.group(1)} needs {' '.join(n.upper() for n in names if n not in optional)}",
            "",
            (),
        )
    return text, "", ()


def _help_first(words: List[str]) -> List[str]:
    """`help TASK` and `TASK ... --help` mean `--help TASK` (a task's positional argument
    would otherwise take `--help` as its value)."""
    if words[:1] == ["help"]:
        return ["--help", *words[1:2]]
    head = words[: words.index("--")] if "--" in words else words
    if "--help" in head or "-h" in head:
        names = all_tasks()
        name = next((w for w in head if w in names), None)
        if name is not None:
            return ["--help", name]
    return words


def _columns(rows: Iterable[Tuple[str, str]], indent: int = 2) -> List[str]:
    """Two columns, the second wrapped to the terminal (COLUMNS); nothing is ever cut."""
    rows = list(rows)
    left = min(max((len(a) for a, _ in rows), default=0), 32)
    width = ui.width() - indent - left - 3
    out: List[str] = []
    if width < 30:  # narrow (a 40-column terminal): each option, its text under it
        width = max(ui.width() - indent - 4, 20)
        for a, b in rows:
            out.append(" " * indent + a)
            wrapped = textwrap.wrap(b, width, break_on_hyphens=False, break_long_words=False)
            out.extend(" " * (indent + 4) + c for c in wrapped)
        return out
    for a, b in rows:
        chunks = textwrap.wrap(b, width, break_on_hyphens=False, break_long_words=False) or [""]
        if len(a) > left:
            out.append(" " * indent + a)
            chunks = ["", *chunks]
        else:
            out.append(" " * indent + a.ljust(left) + "   " + chunks[0])
        out.extend(" " * (indent + left + 3) + c for c in chunks[1:])
    return [line.rstrip() for line in out]


def _printable_streams() -> None:
    """stdout and stderr that no character stops: under a locale whose encoding lacks one
    cannbuild prints (ASCII, Latin-1: a workspace path in another script, an `≤`) it is
    shown escaped, not a traceback.  Streams that already pass every character on (UTF-8
    mode's surrogateescape) are left as they are."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            # closed, or not a text stream that may change: left as it is
            with contextlib.suppress(OSError, ValueError):
                stream.reconfigure(errors="backslashreplace")


def _say(paragraph: str) -> None:
    """An error paragraph on stderr: it may quote a value the user gave (a mirror URL
    with its password, a token on the command line), so it is redacted like a log."""
    from .redact import redact  # a run that says nothing wrong never loads its patterns

    sys.stderr.write(redact(paragraph) + "\n")


def _cwd() -> Optional[Path]:
    """The current folder; None where it was removed after the shell entered it."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        return None


def main(argv: Optional[Sequence[str]] = None, project: Optional[Path] = None) -> NoReturn:
    """The `cannbuild` script: the command line run to its exit code."""
    CannbuildProgram(project).run(None if argv is None else ["cannbuild", *argv])
    raise AssertionError("unreachable: run() leaves")  # pragma: no cover


# --- `invoke TASK` in a checkout -----------------------------------------------------------

# invoke's core options that mean the same to cannbuild, and those that only find tasks.py;
# every other one (--dry, --echo, --pty, ...) drives invoke's `c.run`, which no cannbuild
# task uses: it is handed on as the user spelled it, and refused as any unknown option is.
_SAME = {"config": "--config", "debug": "--debug", "help": "--help"}
_FINDING = ("search-root", "collection")


def _loading_program() -> Optional[Program]:
    """The invoke program importing tasks.py right now, if any (None on a plain import):
    it imports tasks.py while loading its collection, after parsing its core options."""
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, Program) and getattr(owner, "core", None) is not None:
            return owner
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _spelled(program: Program, name: str) -> str:
    """How the command line spelled invoke's core option `name` (`-e`, `--echo`)."""
    names = program.core[0].args[name].names
    for word in program.argv[1:]:
        if word == "--":
            break
        if word.split("=", 1)[0] in {f"--{n}" for n in names if len(n) > 1}:
            return word.split("=", 1)[0]
        if word[:1] == "-" and word[1:2] in names and not word.startswith("--"):
            return word[:2]
    return "--" + name


def handed_over(program: Program) -> List[str]:
    """invoke's command line as the `cannbuild` script would be given it."""
    words: List[str] = []
    for name, arg in program.core[0].args.items():
        if arg.got_value and name not in _FINDING:
            words.append(_SAME.get(name) or _spelled(program, name))
            if arg.value is not True:
                words.append(str(arg.value))
    words += program.core.unparsed
    if "--" in program.argv:
        words += program.argv[program.argv.index("--") :]
    return words


def take_over(tasks_file: str) -> None:
    """When invoke's program is loading tasks.py: run its command line through
    `CannbuildProgram` and exit with its code (invoke never parses the tasks).  On a plain
    import: return, and the importer has `namespace()`."""
    program = _loading_program()
    if program is None:
        return
    ours = CannbuildProgram(Path(tasks_file).resolve().parent, binary_names=["inv", "invoke"])
    raise SystemExit(ours.run(["invoke", *handed_over(program)], exit=False))


__all__ = ["EXIT_CODES", "CannbuildProgram", "handed_over", "main", "namespace", "take_over"]
