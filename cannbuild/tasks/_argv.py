"""Reading the command line into plain data: core options, then one or more tasks with
their values.  One grammar for every task (the one invoke's parser has, so `invoke TASK`
in a checkout reads the same words): `--name VALUE`, `--name=VALUE`, `-j 8`, `-j8`,
bare `--flag` for switches, a repeatable option given again adds to its list, a
positional argument by place or by name, several tasks one after another."""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from msgspec import Struct, field

from ._flags import FlagValue, Option, TaskSpec, spelled

# Core options, before the first task: (names, takes a value, help).
CORE: Tuple[Tuple[Tuple[str, ...], bool, str], ...] = (
    (("--help", "-h"), False, "show help (of a task: TASK --help, or help TASK)"),
    (("--version", "-V"), False, "show the version"),
    (("--list", "-l"), False, "list the tasks"),
    (("--config",), True, "an invoke.yaml-style config file to read besides ./invoke.yaml"),
    (("--debug",), False, "log each command cannbuild runs (to stderr)"),
    (("--complete",), False, "print completion candidates (used by the completion script)"),
    (("--print-completion-script",), True, "print the shell completion script (bash, zsh, fish)"),
)


class ArgvError(Exception):
    """A usage error: `message` says what is wrong, `choices` are the words it may have
    meant (for a did-you-mean)."""

    def __init__(self, message: str, word: str = "", choices: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.word = word
        self.choices = tuple(choices)


class Call(Struct, kw_only=True):
    task: TaskSpec
    args: List[str] = field(default_factory=list)
    values: Dict[str, FlagValue] = field(default_factory=dict)


class Invocation(Struct, kw_only=True):
    core: Dict[str, Union[str, bool]]
    calls: List[Call]
    remainder: List[str]  # after `--`, for --complete


def _split(word: str) -> Tuple[str, Optional[str]]:
    """`--name=value` as (`--name`, `value`); other words as (word, None)."""
    if word.startswith("--") and "=" in word:
        name, value = word.split("=", 1)
        return name, value
    return word, None


def core_names() -> List[str]:
    return [n for names, _, _ in CORE for n in names]


def _core_option(word: str) -> Tuple[str, bool]:
    for names, takes_value, _ in CORE:
        if word in names:
            return names[0][2:], takes_value
    raise ArgvError(
        f"'{word}' is not a cannbuild option (the options before the task are "
        f"{', '.join(names[0] for names, _, _ in CORE)})",
        word,
        core_names(),
    )


def _option(call: Call, word: str) -> Tuple[Option, Optional[str]]:
    """The option `word` names (with a value glued on by `=` or to a letter)."""
    spec = call.task
    name, glued = _split(word)
    for option in spec.options:
        if name == option.option:
            return option, glued
        if option.short and word.startswith(f"-{option.short}") and not word.startswith("--"):
            rest = word[2:]
            if not rest:
                return option, None
            if option.takes_value:
                return option, rest.removeprefix("=")
    for positional, text in spec.positional:
        if name == spelled(positional):
            return Option(name=positional, kind=str, default=None, help=text), glued
    names = [n for o in spec.options for n in o.spellings]
    names += [spelled(p) for p, _ in spec.positional]
    raise ArgvError(f"{spec.name} does not take '{word}'", word, names)


def _set(call: Call, option: Option, value: str) -> None:
    if any(option.name == p for p, _ in call.task.positional):
        call.args.append(value)
    elif option.kind is list:
        given = call.values.setdefault(option.name, [])
        assert isinstance(given, list)
        given.append(value)
    else:
        call.values[option.name] = value


def parse(argv: Sequence[str], find: Callable[[str], Optional[TaskSpec]]) -> Invocation:
    """`argv` without the program name.  `find` gives the task of a name, or None."""
    words = list(argv)
    core: Dict[str, Union[str, bool]] = {}
    remainder: List[str] = []
    if "--" in words:
        cut = words.index("--")
        words, remainder = words[:cut], words[cut + 1 :]
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        word, glued = _split(words[i])
        name, takes_value = _core_option(word)
        if takes_value and glued is None:
            if i + 1 >= len(words):
                raise ArgvError(f"'{word}' needs a value")
            glued, i = words[i + 1], i + 1
        elif name == "help" and i + 1 < len(words) and find(words[i + 1]) is not None:
            glued, i = words[i + 1], i + 1  # `--help TASK`
        core[name] = True if glued is None else glued
        i += 1
    calls: List[Call] = []
    while i < len(words):
        spec = find(words[i])
        if spec is None:
            raise ArgvError(f"there is no task '{words[i]}'", words[i])
        call = Call(task=spec)
        calls.append(call)
        i += 1
        while i < len(words):
            word = words[i]
            if word.startswith("-") and word != "-":
                option, value = _option(call, word)
                if not option.takes_value:
                    if value is not None:
                        raise ArgvError(f"'{option.option}' is a switch and takes no value")
                    call.values[option.name] = True  # a switch: never positional, never a list
                elif value is None:
                    if i + 1 >= len(words):
                        raise ArgvError(f"'{option.option}' of {spec.name} needs a value")
                    _set(call, option, words[i + 1])
                    i += 1
                else:
                    _set(call, option, value)
            elif len(call.args) < len(spec.positional):
                call.args.append(word)
            elif find(word) is not None:
                break  # the next task
            else:
                raise ArgvError(f"{spec.name} takes no argument '{word}'", word)
            i += 1
        missing = [
            p.upper() for p, _ in spec.positional[len(call.args) :] if p not in spec.optional
        ]
        if missing:
            raise ArgvError(f"{spec.name} needs {' '.join(missing)}")
    if remainder and "complete" not in core:  # only the completion script passes words so
        raise ArgvError(f"no task takes words after '--' (got '{' '.join(remainder)}')")
    return Invocation(core=core, calls=calls, remainder=remainder)


def values_for(call: Call) -> Dict[str, FlagValue]:
    """Every option of the task by name, the given ones set and the rest at their default
    (as the task functions expect)."""
    out: Dict[str, FlagValue] = {
        o.name: (list(o.default) if isinstance(o.default, list) else o.default)
        for o in call.task.options
    }
    out.update(call.values)
    return out


__all__ = ["CORE", "ArgvError", "Call", "Invocation", "core_names", "parse", "values_for"]
