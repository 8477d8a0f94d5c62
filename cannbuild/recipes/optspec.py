"""The options a repository's `build.sh` accepts, read from the script's own text.

The three ways the real scripts declare them:

- a `case` over `$1` inside `while [[ $# -gt 0 ]]` (ops-transformer at every ref:
  cannmirror/ops-transformer@9.1.0:build.sh:1117-1460, @v9.0.0:979-1280,
  @v8.5.0:867-1153, @c29bc106:656-916): each arm's patterns are shell globs
  (`--soc=*`, `-j*`, `-O[0-3]`), the first arm that matches a word takes it, and an
  unmatched word reaches `*)` (help, exit 1);
- `getopt -a -o SHORTS -l LONGS` then a `case "$1"` over what getopt hands back
  (opbase: hicann/opbase@9.1.0:build.sh:92-165, @v9.0.0:68-142): getopt refuses an
  option it does not declare, and the `case` refuses one it has no arm for (`-s` at
  9.1.0 is declared at :92 but its v9.0.0:95 arm is gone: "Undefined option");
- bash's builtin `getopts` with a `-:` arm for long options, after a check of every word
  against SUPPORTED_LONG_OPTS (ops-math, ops-nn, ops-cv: hicann/ops-math@v9.0.0:build.sh:
  16-25, 791-798, 839-959): read by `recipes/getopts.py`.

`option_spec` turns a script into an `OptionSpec` (plain data, kept as JSON under
tests/fixtures/buildsh/); `judge` walks a command line's words through it the way
the script would.  No script is run.
"""

from __future__ import annotations

import fnmatch
import re
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

import msgspec

from ..lazy import lazy_module
from .getopts import find_loop, getopts_spec, judge_getopts
from .shellopts import (
    CASE,
    GETOPT,
    GETOPTS,
    VARIABLE,
    BuildOption,
    NoOptionLoop,
    OptionSpec,
    Verdict,
    arm_values,
    case_arms,
    case_on,
    code_of,
    following,
)

if TYPE_CHECKING:
    import difflib
else:  # only a flag that is not accepted needs a did-you-mean
    difflib = lazy_module("difflib")

SCRIPT = "build.sh"
# `while [[ $# -gt 0 ]]; do` (@9.1.0:build.sh:1117); the sandbox's stand-in spells it `[ ... ]`.
_LOOP = re.compile(r"^\s*while\s+\[\[?\s+\$#\s+-gt\s+0\s+\]\]?\s*;?\s*(do)?\b")
# `source "${SCRIPT_DIR}/scripts/build_options.sh"`: a script beside build.sh (its folder
# by a variable or `$(dirname "$0")`), not the toolkit's setenv.bash
_SOURCE = re.compile(
    r'^\s*(?:source|\.)\s+"?(?:\$\{?[A-Z_]*DIR\}?|\$\{?BASE_PATH\}?|\$\(dirname[^)]*\)|\.)/'
    r'([\w./-]+\.sh)"?\s*$'
)
# `parsed_args=$(getopt -a -o j:hvusO: -l help,...,cann_3rd_lib_path: -- "$@")` (opbase @9.1.0:92)
_GETOPT = re.compile(r"\bgetopt\s+(.*?)\s+--\s")


def option_spec(text: str, read: Optional[Callable[[str], Optional[str]]] = None) -> OptionSpec:
    """The options of a build.sh text (raises NoOptionLoop when it has no option loop).
    `read` gives a script build.sh sources by its path beside build.sh (None: absent):
    where build.sh parses no options itself, they are read with those scripts inlined."""
    try:
        return _own_spec(text)
    except NoOptionLoop as exc:
        if read is None or not sourced_scripts(text.splitlines()):
            raise
        own = exc
    inlined, files = _inlined(text, read)
    try:
        return msgspec.structs.replace(_own_spec(inlined), files=files)
    except NoOptionLoop:
        raise own from None


def _inlined(
    text: str, read: Callable[[str], Optional[str]]
) -> Tuple[str, Tuple[Tuple[int, str, int], ...]]:
    """build.sh with each script it sources from its folder in place of the `source` line,
    as bash reads them (one level: the 9.2 scripts source nothing further)."""
    lines = text.splitlines()
    at = {number: path for number, path in sourced_scripts(lines)}
    out: List[str] = []
    files: List[Tuple[int, str, int]] = []
    for number, line in enumerate(lines, 1):
        body = read(at[number]) if number in at and ".." not in at[number].split("/") else None
        if body is None:
            if not files or files[-1][1] != SCRIPT:
                files.append((len(out) + 1, SCRIPT, number))
            out.append(line)
        else:
            files.append((len(out) + 1, at[number], 1))
            out += body.splitlines()
    return "\n".join(out), tuple(files)


def _own_spec(text: str) -> OptionSpec:
    lines = text.splitlines()
    getopt_at = next((i for i, line in enumerate(lines) if _GETOPT.search(code_of(line))), None)
    if getopt_at is not None:
        case_at = case_on(lines, getopt_at + 1, "1", within=40)
        if case_at is not None:
            return _getopt_spec(lines, getopt_at, case_at)
    for i, line in enumerate(lines):
        if _LOOP.match(line):
            case_at = case_on(lines, i + 1, "1")  # `case $1 in` (@9.1.0:1118)
            if case_at is not None:
                arms = case_arms(lines, case_at + 1)
                options = tuple(
                    BuildOption(pattern=p, line=n, values=arm_values(body))
                    for patterns, n, body in arms
                    for p in patterns
                    if p != "*"
                )
                return OptionSpec(style=CASE, line=i + 1, options=options)
    loop_at = find_loop(lines)
    if loop_at is not None:
        return getopts_spec(lines, loop_at)
    sourced = sourced_scripts(lines)
    raise NoOptionLoop(
        'no option loop: neither `getopt ... -- "$@"` followed by `case "$1" in`, nor '
        "`while [[ $# -gt 0 ]]` with `case $1 in`, nor `while getopts OPTSTRING NAME` with "
        '`case "$NAME" in`'
        + (
            f" (it sources {', '.join(f'{p} at line {n}' for n, p in sourced)}, which may "
            "parse its options; cannbuild reads only build.sh's own loop)"
            if sourced
            else ""
        )
    )


def sourced_scripts(lines: Sequence[str]) -> List[Tuple[int, str]]:
    """(line, path) of each script of the checkout a build.sh sources from its own folder:
    `source "${SCRIPT_DIR}/scripts/build_options.sh"` (hicann/ops-math@master:build.sh:23,
    from 9.2.0-beta.2 on, where the option loop moved)."""
    found = []
    for number, line in enumerate(lines, 1):
        match = _SOURCE.match(code_of(line))
        if match:
            found.append((number, match.group(1)))
    return found


def _getopt_spec(lines: Sequence[str], getopt_at: int, case_at: int) -> OptionSpec:
    """opbase's shape (@9.1.0:build.sh:92-165): getopt declares, the `case` handles."""
    match = _GETOPT.search(code_of(lines[getopt_at]))
    assert match is not None
    words = match.group(1).split()
    shorts, longs, alternative = "", "", False
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("-a", "--alternative"):
            alternative = True
        elif word in ("-o", "--options") and i + 1 < len(words):
            shorts, i = words[i + 1], i + 1
        elif word in ("-l", "--longoptions", "--long") and i + 1 < len(words):
            longs, i = words[i + 1], i + 1
        elif word.startswith("--longoptions=") or word.startswith("--options="):
            value = word.split("=", 1)[1]
            longs, shorts = (value, shorts) if word.startswith("--long") else (longs, value)
        i += 1
    declared = _declared(shorts.strip("'\"").lstrip("+-"), longs.strip("'\""))
    handled: Dict[str, int] = {}
    for patterns, line, _ in case_arms(lines, case_at + 1):
        for pattern in patterns:
            handled.setdefault(pattern, line)
    options, unhandled = [], []
    for name, argument in declared:
        values = 1 if argument == "required" else 0
        if name in handled:
            options.append(
                BuildOption(pattern=name, line=handled[name], values=values, argument=argument)
            )
        else:
            unhandled.append(
                BuildOption(pattern=name, line=getopt_at + 1, values=values, argument=argument)
            )
    return OptionSpec(
        style=GETOPT,
        line=getopt_at + 1,
        options=tuple(options),
        declared_only=tuple(unhandled),
        alternative=alternative,
    )


def _declared(shorts: str, longs: str) -> List[Tuple[str, str]]:
    """(`-j` / `--pkg`, argument kind) of getopt's `-o` and `-l` lists."""
    found: List[Tuple[str, str]] = []
    i = 0
    while i < len(shorts):
        colons = len(shorts[i + 1 :]) - len(shorts[i + 1 :].lstrip(":"))
        found.append((f"-{shorts[i]}", _kind(min(colons, 2))))
        i += 1 + colons
    for item in filter(None, longs.split(",")):
        name = item.rstrip(":")
        found.append((f"--{name}", _kind(min(len(item) - len(name), 2))))
    return found


def _kind(colons: int) -> str:
    return ("", "required", "optional")[colons]


# --- a command line through a spec -------------------------------------------------


def judge(spec: OptionSpec, args: Sequence[str]) -> List[Verdict]:
    """Each option word of `args` (the words after `build.sh`) with the option that
    takes it, or why none does."""
    if spec.style == GETOPTS:
        return judge_getopts(spec, args)
    return _judge_getopt(spec, args) if spec.style == GETOPT else _judge_case(spec, args)


def _judge_case(spec: OptionSpec, args: Sequence[str]) -> List[Verdict]:
    out: List[Verdict] = []
    i = 0
    while i < len(args):
        word = args[i]
        # bash takes the first arm whose pattern matches (`case` semantics)
        option = next((o for o in spec.options if fnmatch.fnmatchcase(word, o.pattern)), None)
        if option is None:
            out.append(
                Verdict(word=word, at=i, accepted=False, why="no `case` arm matches it (`*)`)")
            )
            i += 1
            continue
        if option.values == VARIABLE:
            taken = following(args, i)
        else:
            taken = tuple(args[i + 1 : i + 1 + option.values])
            if len(taken) < option.values:
                out.append(
                    Verdict(
                        word=word, at=i, accepted=False, option=option, why="its value is missing"
                    )
                )
                break
        out.append(Verdict(word=word, at=i, accepted=True, option=option, values=taken))
        i += 1 + len(taken)
    return out


def _judge_getopt(spec: OptionSpec, args: Sequence[str]) -> List[Verdict]:
    """GNU getopt's reading (long options by unique prefix, `-a` single-dash long
    options, short options grouped or with the value glued on), then the `case`."""
    every = {o.pattern: o for o in (*spec.options, *spec.declared_only)}
    longs = [n for n in every if n.startswith("--")]
    out: List[Verdict] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            break
        if not word.startswith("-") or word == "-":
            out.append(
                Verdict(
                    word=word,
                    at=i,
                    accepted=False,
                    why="not an option: getopt moves it after `--`, where build.sh ignores it",
                )
            )
            i += 1
            continue
        long_word = word.startswith("--") or (spec.alternative and len(word) > 2)
        name, eq, value = word.lstrip("-").partition("=")
        glued = value if eq else None
        hits = [n for n in longs if n[2:] == name] or [n for n in longs if n[2:].startswith(name)]
        if long_word and len(hits) == 1:
            option, taken = every[hits[0]], []
            if glued is None and option.argument == "required":
                taken = list(args[i + 1 : i + 2])
            verdict = _handled(spec, i, word, option, tuple(taken), glued is not None)
            out.append(verdict)
            i += 1 + len(taken)
            continue
        if word.startswith("--"):
            why = "ambiguous: " + ", ".join(hits) if hits else "getopt does not declare it"
            out.append(Verdict(word=word, at=i, accepted=False, why=why))
            i += 1
            continue
        short = every.get(word[:2])
        if short is None:
            out.append(Verdict(word=word, at=i, accepted=False, why="getopt does not declare it"))
            i += 1
            continue
        taken = []
        if short.argument == "required" and len(word) == 2:
            taken = list(args[i + 1 : i + 2])
        out.append(_handled(spec, i, word, short, tuple(taken), len(word) > 2))
        i += 1 + len(taken)
    return out


def _handled(
    spec: OptionSpec, i: int, word: str, option: BuildOption, taken: Tuple[str, ...], glued: bool
) -> Verdict:
    if glued and not option.argument and option.pattern.startswith("--"):
        return Verdict(word=word, at=i, accepted=False, option=option, why="takes no value")
    if option.argument == "required" and not glued and not taken:
        return Verdict(word=word, at=i, accepted=False, option=option, why="its value is missing")
    if option in spec.declared_only:
        return Verdict(
            word=word,
            at=i,
            accepted=False,
            option=option,
            why="getopt declares it, but no `case` arm takes it (`*)`: Undefined option)",
        )
    return Verdict(word=word, at=i, accepted=True, option=option, values=taken)


def closest(spec: OptionSpec, word: str) -> Optional[str]:
    """The accepted option nearest to `word`, for a did-you-mean."""
    name = word.split("=", 1)[0]
    found = difflib.get_close_matches(name, spec.names(), n=1, cutoff=0.6)
    return found[0] if found else None
