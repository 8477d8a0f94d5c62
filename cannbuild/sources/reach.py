"""Which lines of a checkout's CMake a package build (`build.sh --pkg`) runs, and which
cann/cmake modules download only when a target needs them: read without running CMake,
so the lock carries only the archives that build downloads.

A line is taken not to run when an `if()` around it is false with the test switches off
(build.sh turns ENABLE_TEST, UT_TEST_ALL and the <PART>_UT switches on only for its
unit-test options, ops-math@9.1.0:build.sh:576-593; opbase's ENABLE_UT / ENABLE_ST,
opbase@9.1.0:cmake/config.cmake:66) and the options that are OFF unless set, which
build.sh never sets (`option(DOWNLOAD_OPS_TEST_KIT ... OFF)`, ops-math@9.1.0:
CMakeLists.txt:59), when it is in a test folder (tests/ut, which the
top CMakeLists.txt adds only `if(ENABLE_TEST)`, ops-math@9.1.0:CMakeLists.txt:147-152),
or when it is in a function or macro that no running line calls (ops-math@9.1.0:
cmake/ut.cmake's add_*_ut_modules, called from tests/ut).  Anything else is taken to
run: a file included only under a test switch is not followed, so an archive is left
out only where the text says so.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from typing import AbstractSet, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from ..build.cmake_text import TEST_DIR, read_commands

_SWITCH = re.compile(r"ENABLE_(?:TEST|UT|ST)|UT_TEST_ALL|[A-Z][A-Z0-9_]*_UT")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[()]|[^\s"()]+')
_YES = ("TRUE", "ON", "1", "YES")
_OPTION = re.compile(
    r'\boption\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s+"[^"]*"\s*([A-Za-z0-9]*)\s*\)', re.I
)
# calls deeper than this through functions are taken to run
_MAX_DEPTH = 8

Value = Optional[bool]  # a condition's value with the test switches off; None: not known


def condition(text: str, off: AbstractSet[str] = frozenset()) -> Value:
    """The value of an if() condition (its raw argument text) with every test switch
    and every name in `off` off: False or True where that settles it, None where it
    depends on anything else (CMake's precedence: parentheses, then the tests, NOT, AND,
    OR)."""
    value, rest = _joined(_TOKEN.findall(text), off, "OR")
    return value if not rest else None


def _joined(tokens: List[str], off: AbstractSet[str], word: str) -> Tuple[Value, List[str]]:
    """`a OR b ...` over AND terms, or `a AND b ...` over NOT terms: one operand of the
    word's own value (True for OR, False for AND) settles it, all of the other value too."""
    wins = word == "OR"
    left, tokens = _joined(tokens, off, "AND") if wins else _not(tokens, off)
    while tokens and tokens[0].upper() == word:
        right, tokens = _joined(tokens[1:], off, "AND") if wins else _not(tokens[1:], off)
        left = wins if wins in (left, right) else (left if left is right else None)
    return left, tokens


def _not(tokens: List[str], off: AbstractSet[str]) -> Tuple[Value, List[str]]:
    if tokens and tokens[0].upper() == "NOT":
        value, tokens = _not(tokens[1:], off)
        return (None if value is None else not value), tokens
    if tokens and tokens[0] == "(":
        value, tokens = _joined(tokens[1:], off, "OR")
        if tokens[:1] != [")"]:  # unbalanced: nothing is settled
            return None, tokens
        return value, tokens[1:]
    atom: List[str] = []
    while tokens and tokens[0].upper() not in ("AND", "OR", ")", "("):
        atom.append(tokens.pop(0))
    # a bare switch, `${SWITCH}` or `"${SWITCH}"`; `X STREQUAL y`, `EXISTS p` are not known
    name = re.sub(r"^\$\{(.*)\}$", r"\1", atom[0].strip('"')) if len(atom) == 1 else ""
    return (False if _SWITCH.fullmatch(name) or name in off else None), tokens


def options_off(lines: Iterable[Tuple[str, int, str]], script: str) -> FrozenSet[str]:
    """The options a package build leaves off: declared `option(NAME "help" OFF)` (or
    with no value) in the CMake lines (path, line, text), and never named by build.sh."""
    found = set()
    for _, _, text in lines:
        for name, value in _OPTION.findall(text.split("#", 1)[0]):
            if value.upper() in ("", "OFF", "FALSE", "0", "NO"):
                found.add(name)
    # named as a word, or set on cmake's command line (`-DBUILD_WITH_...=ON`)
    return frozenset(
        n for n in found if not re.search(rf"(?:(?<!\w)|(?<=-D)){re.escape(n)}(?!\w)", script)
    )


def line_states(
    path: str, text: str, off: AbstractSet[str] = frozenset()
) -> List[Tuple[int, bool, str]]:
    """(line, runs, function) from each command of a CMake file on: whether the if()
    blocks around it let it run with the test switches off, and the function or macro
    it is in (lower case; "" outside any)."""
    states: List[Tuple[int, bool, str]] = []
    frames: List[Tuple[bool, bool]] = []  # (a branch before was taken, this branch may run)
    functions: List[str] = []
    for command in read_commands(path, text):
        name = command.name
        if name in ("if", "elseif"):
            value = condition(command.text, off)
            taken = frames.pop()[0] if name == "elseif" and frames else False
            frames.append((taken or value is True, not taken and value is not False))
        elif name == "else" and frames:
            taken = frames.pop()[0]
            frames.append((True, not taken))
        elif name == "endif" and frames:
            frames.pop()
        elif name in ("function", "macro"):
            functions.append(command.args[0].lower() if command.args else "")
        elif name in ("endfunction", "endmacro") and functions:
            functions.pop()
        live = all(runs for _, runs in frames)
        states.append((command.line, live, functions[-1] if functions else ""))
    return states


class Reach:
    """Whether a line of the checkout runs in a package build.  `read(path)` gives a
    file of the checkout ("" when absent), `callers(name)` the (path, line) of each call
    of a function or macro in it."""

    def __init__(
        self,
        read: Callable[[str], str],
        callers: Callable[[str], Sequence[Tuple[str, int]]],
        off: AbstractSet[str] = frozenset(),
    ) -> None:
        self.read, self.callers, self.off = read, callers, off
        self._states: Dict[str, List[Tuple[int, bool, str]]] = {}

    def runs(self, path: str, line: int, seen: Tuple[str, ...] = ()) -> bool:
        if TEST_DIR.search(posixpath.dirname(path) + "/"):
            return False
        if path not in self._states:
            self._states[path] = line_states(path, self.read(path), self.off)
        states = self._states[path]
        at = bisect.bisect_right([s[0] for s in states], line) - 1
        if at < 0:
            return True
        _, live, function = states[at]
        if not live or function in seen:  # a call from within itself opens no new way in
            return False
        if not function or len(seen) >= _MAX_DEPTH:
            return True
        return any(self.runs(p, n, (*seen, function)) for p, n in self.callers(function))


def on_demand(path: str, text: str) -> Tuple[str, ...]:
    """The targets whose build makes a module download, when it downloads nothing by
    itself: each of its ExternalProject_Add is `EXCLUDE_FROM_ALL TRUE` and nothing is
    fetched while configuring (FetchContent, file(DOWNLOAD)); then its projects and the
    targets it makes depend on them (hicann/cmake@master-016:third_party/gtest.cmake:
    111-127, `add_dependencies(GTest::gtest third_party_gtest)` :137).  () otherwise."""
    commands = read_commands(path, text)
    projects = [c for c in commands if c.name == "externalproject_add" and c.args]
    eager = any(
        c.name in ("fetchcontent_makeavailable", "fetchcontent_populate")
        or (c.name == "file" and c.args[:1] == ("DOWNLOAD",))
        for c in commands
    )
    if eager or not projects or not all(_excluded(c.args) for c in projects):
        return ()
    names = {c.args[0] for c in projects}
    pulled = {
        c.args[0] for c in commands if c.name == "add_dependencies" and names & set(c.args[1:])
    }
    return tuple(sorted(names | pulled))


def _excluded(args: Sequence[str]) -> bool:
    at = [i for i, a in enumerate(args) if a == "EXCLUDE_FROM_ALL"]
    return any(i + 1 < len(args) and args[i + 1].upper() in _YES for i in at)


def names_any(text: str, targets: Sequence[str]) -> bool:
    """Whether CMake text names one of `targets` (as a whole word)."""
    return any(re.search(rf"(?<![\w:]){re.escape(t)}(?![\w:])", text) for t in targets)
