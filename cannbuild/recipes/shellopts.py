"""What the build.sh option readers share: the records an option spec is made of, and
the shell they read (a line's code without its comment, the arms of a `case`, how many
words an arm's `shift`s take).  `recipes/optspec.py` reads the `case` and getopt(1)
scripts and `recipes/getopts.py` the bash-builtin getopts ones with these."""

from __future__ import annotations

import itertools
import re
from typing import List, Optional, Sequence, Tuple

from msgspec import Struct

# the option loops: a `case` over $1 (ops-transformer), getopt(1) + `case` (opbase), the
# bash builtin `getopts` with a `-:` long-option arm (ops-math, ops-nn, ops-cv)
CASE, GETOPT, GETOPTS = "case", "getopt", "getopts"
# `values` of an arm that takes a varying number of words: the following words that do not
# start with '-' (ops-transformer's `--run_example <op> <mode> [cust]` counts them in
# set_example_opt, @9.1.0:build.sh:1065-1078, `$1 != -*`, then `shift $step` :1199-1203).
VARIABLE = -1

_CASE = re.compile(r"(?:^|[;\s(])case\s+\S.*?\s+in\b")
_ESAC = re.compile(r"(?:^|[;\s])esac\b")
# `shift`, `shift 2`, `shift $step`; in an arm body, comments taken out first
_SHIFT = re.compile(
    r"(?:^|[;\s])shift(?:[ \t]+([0-9]+|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?))?(?=$|[\s;])"
)
_ARM_END = re.compile(r";;\s*$")


class BuildOption(Struct, frozen=True, kw_only=True):
    """One way the script takes a word: a `case` pattern (`--soc=*`, `-j*`, `--pkg`) or,
    for a getopt script, an option getopt declares and a `case` arm handles (`--pkg`,
    `-j`, `--cann_3rd_lib_path`)."""

    pattern: str
    line: int  # the arm that handles it (1-based)
    # words taken after it when its value is not glued on: 0, 1, ... or VARIABLE
    values: int = 0
    # getopt(s) only: "required" (`name:`), "optional" (`name::`, glued only) or ""
    argument: str = ""

    @property
    def name(self) -> str:
        """The option as a user types it: `--soc=*` -> `--soc`, `-j*` -> `-j`."""
        return re.split(r"[=*?\[]", self.pattern, maxsplit=1)[0] or self.pattern


class OptionSpec(Struct, frozen=True, kw_only=True):
    style: str  # CASE, GETOPT or GETOPTS
    # the option loop (case style), the getopt call (getopt) or the `while getopts` (getopts)
    line: int
    options: Tuple[BuildOption, ...]  # in the script's order: the first match wins
    # getopt style: declared to getopt, but no `case` arm takes them (exit 1 at `*)`);
    # getopts style: declared (optstring, SUPPORTED_LONG_OPTS) but no arm takes them
    declared_only: Tuple[BuildOption, ...] = ()
    # getopts style: an arm takes them, but SUPPORTED_LONG_OPTS does not list them, so the
    # script's check before getopts refuses them ("Invalid long option")
    unlisted: Tuple[BuildOption, ...] = ()
    alternative: bool = False  # getopt -a: a long option may start with one '-'
    # read with the scripts build.sh sources inlined (ops-math and ops-cv from 9.2): where
    # each file's lines start in that text, (first line there, file, its own first line)
    files: Tuple[Tuple[int, str, int], ...] = ()

    def located(self, line: int) -> Tuple[str, int]:
        """(file, line in it) of a line of the text read: build.sh's, or a sourced script's."""
        start, name, first = next(
            (f for f in reversed(self.files) if f[0] <= line), (1, "build.sh", 1)
        )
        return name, line - start + first

    def names(self) -> List[str]:
        return list(dict.fromkeys(o.name for o in self.options))


class Verdict(Struct, frozen=True, kw_only=True):
    """One word of a command line, as the script takes it."""

    word: str
    at: int  # its place among the words judged
    accepted: bool
    option: Optional[BuildOption] = None
    values: Tuple[str, ...] = ()  # the words it took as its value
    why: str = ""


class NoOptionLoop(ValueError):
    """The text has none of the option loops: not a build.sh these rules read."""


def code_of(line: str) -> str:
    """A line without its comment (a `#` at the start of a word, outside quotes)."""
    out, quote = [], ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t;"):
            break
        out.append(ch)
    return "".join(out)


def case_arms(lines: Sequence[str], start: int) -> List[Tuple[List[str], int, str]]:
    """(patterns, line, body) of each arm of the `case` whose first arm starts at
    `start`, up to its `esac`; nested `case ... esac` in a body are skipped over."""
    arms: List[Tuple[List[str], int, str]] = []
    expecting, depth, pending, first = True, 0, "", 0
    body: List[str] = []
    for index in range(start, len(lines)):
        code = code_of(lines[index]).strip()
        if expecting:
            if not code:
                continue
            if not pending and _ESAC.match(code):
                break
            first = first or index + 1
            pending += code[:-1] + " " if code.endswith("\\") else code
            if code.endswith("\\"):  # a pattern list continued (the stand-in's long arms)
                continue
            close = closing_paren(pending)
            patterns = [p.strip().strip("\"'") for p in pending[:close].lstrip("(").split("|")]
            rest = pending[close + 1 :]
            body = [rest]
            arms.append((patterns, first, ""))
            pending, first, expecting = "", 0, False
            code = rest.strip()
        else:
            body.append(code)
        depth += len(_CASE.findall(" " + code)) - len(_ESAC.findall(" " + code))
        if depth < 0:  # the arm had no `;;` before this case's own `esac`
            arms[-1] = (arms[-1][0], arms[-1][1], "\n".join(body[:-1]))
            break
        if depth == 0 and _ARM_END.search(code):
            arms[-1] = (arms[-1][0], arms[-1][1], "\n".join(body))
            expecting = True
    return arms


def closing_paren(text: str) -> int:
    """Where a `case` pattern list ends: its first `)` outside a bracket expression."""
    bracket = False
    for i, ch in enumerate(text):
        if ch == "[":
            bracket = True
        elif ch == "]":
            bracket = False
        elif ch == ")" and not bracket and i > 0:
            return i
    return len(text)


def arm_values(body: str) -> int:
    """Words an arm takes after its option word, from its `shift`s: one `shift N` takes
    N-1 (`--ccache) ...; shift 2`, @9.1.0:build.sh:1173-1176); none, 0 (`-h|--help`
    exits); several, or `shift $var`, a varying number (`--run_example`, :1199-1203; `-e`,
    :1211-1222, shifts again when the next word does not start with '-')."""
    shifts = _SHIFT.findall(body)
    if not shifts:
        return 0
    if len(shifts) > 1 or (shifts[0] and not shifts[0].isdigit()):
        return VARIABLE
    return max(int(shifts[0] or "1") - 1, 0)


def following(args: Sequence[str], i: int) -> Tuple[str, ...]:
    """The words after `args[i]` up to the next that starts with '-': what an arm that takes
    a VARIABLE number of words takes."""
    return tuple(itertools.takewhile(lambda word: not word.startswith("-"), args[i + 1 :]))


def case_on(lines: Sequence[str], start: int, var: str, within: int = 3) -> Optional[int]:
    """The index of a `case $var in` (`case "$1" in`, `case "${opt}" in`) in the `within`
    lines from `start`, or None."""
    pattern = re.compile(r"^\s*case\s+\"?\$\{?" + re.escape(var) + r"\}?\"?\s+in\b")
    for i in range(start, min(len(lines), start + within)):
        if pattern.match(lines[i]):
            return i
    return None
