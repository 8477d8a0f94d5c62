"""Options of a build.sh that parses with the bash builtin `getopts` (ops-math, ops-nn and
ops-cv at every 9.x ref), read from the script's text, and a command line through them.

The shape (hicann/ops-math@v9.0.0:build.sh; ops-nn and ops-cv alike):

- `SUPPORTED_SHORT_OPTS="hj:vO:uf:-:"` (:16) and `SUPPORTED_LONG_OPTS=(...)` (:19-25);
- before parsing, every word that starts with `-` must pass check_option_validity
  (:39-89, called at :791-798): a short option's letters must be in the short list, a
  long option's name (the part before `=`) must be in the long list, with or without its
  trailing `=`; anything else is "Invalid long option", exit 1;
- `while getopts $SUPPORTED_SHORT_OPTS opt` (:839) with `case "${opt}"` (:840): one arm
  per short option, and `-)` (:853) whose `case $OPTARG in` takes the long ones
  (`--ops=add` reaches it as `ops=add`, so a long option's value is always glued on with
  `=`); its `*)` (:922-951) accepts only the names in RELEASE_TARGETS/UT_TARGETS (as they
  stand when the loop runs: ops-math empties UT_TARGETS at :782), else "Invalid option";
- getopts stops at the first word that is not an option, and no word from there on is
  read: ops-math then says "unparsed param" (:960-965: usage, then `exit` with usage's
  status, 0, so it neither builds nor fails), ops-nn and ops-cv go on without them
  (ops-nn@9.1.0:910-912, ops-cv@9.1.0:967-969).
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from typing import AbstractSet, Dict, List, Optional, Sequence, Set, Tuple

from .shellopts import (
    GETOPTS,
    VARIABLE,
    BuildOption,
    OptionSpec,
    Verdict,
    case_arms,
    case_on,
    code_of,
    following,
)

# `while getopts $SUPPORTED_SHORT_OPTS opt; do` (ops-math@v9.0.0:839)
_LOOP = re.compile(r"^\s*while\s+getopts\s+(\S+)\s+([A-Za-z_][A-Za-z0-9_]*)\b")
# `-) case $OPTARG in` (:853)
_ON_OPTARG = re.compile(r"\bcase\s+\"?\$\{?OPTARG\}?\"?\s+in\b")
# `in_array "$OPTARG" "${RELEASE_TARGETS[@]}"` (:924)
_ARRAY_USE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\[@\]\}")
# the pre-check's list (:19); a script without one has no pre-check
LONG_LIST = "SUPPORTED_LONG_OPTS"
# an arm that reads the words after its option moves OPTIND itself, in the arm or in a
# function it hands "$@" (`checkopts_run_example "$@"`, ops-math@v9.0.0:909 and :681-701;
# `set_example_opt "$@"`, ops-nn@9.1.0:868 and :928-941), or reads them by position and
# shifts them off (`set_example_opt $2 $3 $4; shift $step`, ops-nn@v8.5.0:744-747)
_READS_ON = re.compile(r"OPTIND|\"\$@\"|\bshift\b")


def find_loop(lines: Sequence[str]) -> Optional[int]:
    """The index of the `while getopts` line followed by its `case "${opt}" in`."""
    for i, line in enumerate(lines):
        match = _LOOP.match(code_of(line))
        if match and case_on(lines, i + 1, match.group(2)) is not None:
            return i
    return None


def getopts_spec(lines: Sequence[str], loop_at: int) -> OptionSpec:
    """The spec of the `while getopts` loop at line index `loop_at`: its short options, the
    long ones its `-)` arm takes, each checked against SUPPORTED_LONG_OPTS when it has one."""
    match = _LOOP.match(code_of(lines[loop_at]))
    outer_at = case_on(lines, loop_at + 1, match.group(2)) if match else None
    assert match is not None and outer_at is not None  # find_loop found both
    outer = {p: (n, body) for patterns, n, body in case_arms(lines, outer_at + 1) for p in patterns}
    options: List[BuildOption] = []
    declared: List[BuildOption] = []
    unlisted: List[BuildOption] = []
    for letter, argument in _shorts(_value(lines, loop_at, match.group(1))).items():
        if letter == "-":  # `-:`: `--name` comes back as `-` with OPTARG `name`
            continue
        option = BuildOption(
            pattern=f"-{letter}",
            line=outer.get(letter, (loop_at + 1, ""))[0],
            values=1 if argument else 0,
            argument=argument,
        )
        (options if letter in outer else declared).append(option)
    listed = _listed(lines, loop_at)
    taken: Set[str] = set()
    for pattern, line, body in _long_arms(lines, loop_at, outer.get("-", (0, ""))[0]):
        option = BuildOption(
            pattern=f"--{pattern}", line=line, values=VARIABLE if _READS_ON.search(body) else 0
        )
        taken.add(option.name[2:])
        ok = listed is None or option.name[2:] in listed
        (options if ok else unlisted).append(option)
    for name, line in (listed or {}).items():
        if name not in taken:
            declared.append(BuildOption(pattern=f"--{name}", line=line))
    return OptionSpec(
        style=GETOPTS,
        line=loop_at + 1,
        options=tuple(options),
        declared_only=tuple(declared),
        unlisted=tuple(unlisted),
    )


def _long_arms(lines: Sequence[str], loop_at: int, dash_line: int) -> List[Tuple[str, int, str]]:
    """(pattern, line, body) of each arm of the `case $OPTARG` in the `-)` arm that starts
    at `dash_line` (1-based; 0: no such arm), then the names its `*)` lets through; a
    pattern seen before is left out (the first arm that matches takes the word)."""
    inner_at = next(
        (
            i
            for i in range(max(dash_line - 1, 0), len(lines))
            if _ON_OPTARG.search(code_of(lines[i]))
        ),
        None,
    )
    if not dash_line or inner_at is None:
        return []
    arms: List[Tuple[str, int, str]] = []
    fallback: List[Tuple[str, int, str]] = []
    for patterns, line, body in case_arms(lines, inner_at + 1):
        for pattern in patterns:
            if pattern != "*":
                arms.append((pattern, line, body))
            else:
                fallback = [(name, line, "") for name in _targets(lines, loop_at, body)]
    seen: Set[str] = set()
    out = []
    for arm in arms + fallback:
        if arm[0] not in seen:
            seen.add(arm[0])
            out.append(arm)
    return out


def _value(lines: Sequence[str], before: int, word: str) -> str:
    """`word` (`$SUPPORTED_SHORT_OPTS`, `"hj:v"`) as the loop sees it: a variable's last
    assignment above the loop, else the word itself."""
    name = word.strip("\"'").lstrip("$").strip("{}")
    if not word.strip("\"'").startswith("$"):
        return word.strip("\"'")
    assign = re.compile(r"^\s*(?:local\s+|readonly\s+|declare\s+)?" + re.escape(name) + r"=(\S*)")
    for line in reversed(lines[:before]):
        found = assign.match(code_of(line))
        if found:
            return found.group(1).strip("\"'")
    return ""


def _shorts(optstring: str) -> Dict[str, str]:
    """getopts' option letters, "required" where a `:` follows (a leading `:` is the
    silent-error switch, not a letter)."""
    out: Dict[str, str] = {}
    text = optstring[1:] if optstring.startswith(":") else optstring
    for i, letter in enumerate(text):
        if letter != ":":
            out[letter] = "required" if text[i + 1 : i + 2] == ":" else ""
    return out


def _array(lines: Sequence[str], before: int, name: str) -> Optional[Tuple[int, List[str]]]:
    """The last `name=(...)` above line index `before` (it may span lines): its line and words."""
    start = re.compile(
        r"^\s*(?:local\s+|readonly\s+|declare\s+(?:-a\s+)?)?" + re.escape(name) + r"=\("
    )
    for i in range(before - 1, -1, -1):
        if start.match(code_of(lines[i])):
            text = ""
            for line in lines[i:before]:
                text += " " + code_of(line)
                if ")" in text.split("(", 1)[1]:
                    break
            inside = text.split("(", 1)[1].rsplit(")", 1)[0]
            return i + 1, shlex.split(inside)
    return None


def _listed(lines: Sequence[str], loop_at: int) -> Optional[Dict[str, int]]:
    """The names the pre-check lets through (`ops=` lists `ops`), with the list's line."""
    found = _array(lines, loop_at, LONG_LIST)
    if found is None:
        return None
    line, words = found
    return {w.rstrip("="): line for w in words}


def _targets(lines: Sequence[str], loop_at: int, body: str) -> List[str]:
    """The names the long options' `*)` lets through: the arrays it looks them up in."""
    names: List[str] = []
    for array in dict.fromkeys(_ARRAY_USE.findall(body)):
        found = _array(lines, loop_at, array)
        names += found[1] if found else []
    return names


# --- a command line through a spec -------------------------------------------------


def judge_getopts(spec: OptionSpec, args: Sequence[str]) -> List[Verdict]:
    """Each word of `args` as the script takes it: the pre-check, then getopts and the
    arms; from the first word that is not an option on, nothing is taken."""
    longs = [o for o in spec.options if o.pattern.startswith("--")]
    listed = {o.name for o in (*longs, *spec.declared_only) if o.pattern.startswith("--")}
    shorts = {o.pattern: o for o in (*spec.options, *spec.declared_only) if len(o.pattern) == 2}
    out: List[Verdict] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--" or not word.startswith("-") or word == "-":
            why = "getopts stops at the first word that is not an option: not read from here on"
            out += [
                Verdict(word=w, at=k, accepted=False, why=why)
                for k, w in enumerate(args[i:], i)
                if w != "--" or k > i
            ]
            break
        if word.startswith("--"):
            out.append(_long(longs, listed, word, i, args))
            i += 1 + len(out[-1].values)
            continue
        verdict, used = _short(spec, shorts, word, i, args)
        out.append(verdict)
        i += 1 + used
    return out


def _long(
    longs: Sequence[BuildOption],
    listed: AbstractSet[str],
    word: str,
    i: int,
    args: Sequence[str],
) -> Verdict:
    name = word.split("=", 1)[0]
    if name not in listed:
        why = f"{LONG_LIST} does not list it (check_option_validity: Invalid long option)"
        return Verdict(word=word, at=i, accepted=False, why=why)
    option = next((o for o in longs if fnmatch.fnmatchcase(word, o.pattern)), None)
    if option is None:
        glued = next((o for o in longs if o.pattern == name + "=*"), None)
        why = (
            f"its value must be glued on: {name}=VALUE (getopts hands the arms one word)"
            if glued
            else "no arm of `case $OPTARG` takes it (`*)`: Invalid option)"
        )
        return Verdict(word=word, at=i, accepted=False, option=glued, why=why)
    taken = following(args, i) if option.values == VARIABLE else ()
    return Verdict(word=word, at=i, accepted=True, option=option, values=taken)


def _short(
    spec: OptionSpec, shorts: Dict[str, BuildOption], word: str, i: int, args: Sequence[str]
) -> Tuple[Verdict, int]:
    """A short option word (`-j8`, `-j 8`, `-vu`) and how many words after it it took."""
    for at, letter in enumerate(word[1:], 1):
        option = shorts.get(f"-{letter}")
        if option is None:
            why = f"getopts does not declare -{letter} (Invalid short option)"
            return Verdict(word=word, at=i, accepted=False, why=why), 0
        if option in spec.declared_only:
            why = f"getopts declares -{letter}, but no `case` arm takes it (Undefined option)"
            return Verdict(word=word, at=i, accepted=False, option=option, why=why), 0
        if option.argument == "required":
            if at + 1 < len(word):
                return Verdict(word=word, at=i, accepted=True, option=option), 0
            if i + 1 >= len(args):
                why = "its value is missing"
                return Verdict(word=word, at=i, accepted=False, option=option, why=why), 0
            taken = (args[i + 1],)
            return Verdict(word=word, at=i, accepted=True, option=option, values=taken), 1
    first = shorts[f"-{word[1]}"]
    return Verdict(word=word, at=i, accepted=True, option=first), 0
