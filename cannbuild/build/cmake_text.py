"""Reading CMake text without running CMake: its commands and arguments, generator
expressions reduced to what a build sees, and variables expanded to every value they are
given anywhere, with the roots a build of a CANN repo starts from as markers.

The commands are found by a regex and balanced parentheses (CMake's own grammar:
`name(args)`, `#` comments, `#[[...]]` brackets); only what derived_cmake.py reads is
handled: set, list(APPEND), get_filename_component, find_*, file(GLOB), the include and
link commands.
"""

from __future__ import annotations

import posixpath
import re
from typing import Dict, Iterable, List, Mapping, Tuple

from msgspec import Struct

# Where a path points once expanded: the toolkit (ASCEND_HOME_PATH), the opbase source the
# build compiles (${OPBASE_SOURCE_PATH}, ops-transformer >= v9.0.0), or the checkout itself.
TOOLKIT, OPBASE, REPO = "@TK", "@OPBASE", "@REPO"
ROOTS = {
    # cmake/dependencies.cmake:11-27 (ASCEND_DIR), CMakeLists.txt (ASCEND_CANN_PACKAGE_PATH,
    # recomputed from CUSTOM_ASCEND_CANN_PACKAGE_PATH / ENV ASCEND_HOME_PATH): the same root
    "ASCEND_DIR": TOOLKIT,
    "ASCEND_CANN_PACKAGE_PATH": TOOLKIT,
    "CUSTOM_ASCEND_CANN_PACKAGE_PATH": TOOLKIT,
    "ASCEND_HOME_PATH": TOOLKIT,
    "ASCEND_INSTALL_PATH": TOOLKIT,
    "ASCEND_PATH": TOOLKIT,
    "OPBASE_SOURCE_PATH": OPBASE,
    "CMAKE_SOURCE_DIR": REPO,
    "PROJECT_SOURCE_DIR": REPO,
    "OPS_TRANSFORMER_DIR": REPO,
    "OPS_ADV_DIR": REPO,
    # CMakeLists.txt:99-101: `set(SYSTEM_PREFIX ${CMAKE_SYSTEM_PROCESSOR}-linux)`
    "SYSTEM_PREFIX": "{arch}-linux",
    "CMAKE_SYSTEM_PROCESSOR": "{arch}",
}
# Files only a test build reads (ENABLE_TEST / ENABLE_UT): cmake/ut.cmake, func_utest.cmake,
# intf_pub_utest.cmake, intf_pub_llt_gccnative.cmake, config_utest.cmake, third_party/gtest.cmake.
TEST_DIR = re.compile(r"(^|/)(tests?|ut|utest|llt)(/|$)")
_TEST_FILE = re.compile(r"(^|/)([^/]*(utest|llt|gtest|mockcpp)[^/]*|ut\.cmake)$")
_COMMAND = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(")
_REF = re.compile(r"\$(?:ENV)?\{([A-Za-z0-9_]+)\}")
_BRACKET_OPEN = re.compile(r"#\[(=*)\[")
MAX_ALTERNATIVES = 64  # expansions of one expression (a variable set in many branches)


class Command(Struct, frozen=True, kw_only=True):
    name: str
    args: Tuple[str, ...]
    path: str
    line: int
    text: str  # the raw argument text


def is_test_file(path: str) -> bool:
    return bool(TEST_DIR.search(path) or _TEST_FILE.search(path))


def _strip_bracket_comments(text: str) -> str:
    """`#[[ ... ]]` and `#[==[ ... ]==]` become their newlines; one left open stays (a line
    comment below).  Each close is looked for once per level: a regex did it at every
    opening, and 80 KB of `#[[` took 10 s."""
    out: List[str] = []
    pos, unclosed = 0, set()
    for opening in _BRACKET_OPEN.finditer(text):
        level = opening.group(1)
        if opening.start() < pos or level in unclosed:
            continue
        close = text.find(f"]{level}]", opening.end())
        if close < 0:
            unclosed.add(level)
            continue
        end = close + len(level) + 2
        out += [text[pos : opening.start()], "\n" * text.count("\n", opening.start(), end)]
        pos = end
    return "".join([*out, text[pos:]])


def _strip_comments(text: str) -> str:
    text = _strip_bracket_comments(text)
    out = []
    for line in text.split("\n"):
        quoted = False
        for i, ch in enumerate(line):
            if ch == '"':
                quoted = not quoted
            elif ch == "#" and not quoted:
                line = line[:i]
                break
        out.append(line)
    return "\n".join(out)


def read_commands(path: str, text: str) -> List[Command]:
    text = _strip_comments(text)
    found: List[Command] = []
    pos = counted = 0
    line = 1
    while True:
        m = _COMMAND.search(text, pos)
        if m is None:
            return found
        depth, i, quoted = 1, m.end(), False
        while i < len(text) and depth:
            ch = text[i]
            if ch == '"' and text[i - 1] != "\\":
                quoted = not quoted
            elif not quoted and ch == "(":
                depth += 1
            elif not quoted and ch == ")":
                depth -= 1
            i += 1
        body = text[m.end() : i - 1]
        line += text.count("\n", counted, m.start())  # on from the last command: linear
        counted = m.start()
        found.append(
            Command(name=m.group(1).lower(), args=_tokens(body), path=path, line=line, text=body)
        )
        pos = i


def _tokens(body: str) -> Tuple[str, ...]:
    return tuple(
        a or b for a, b in re.findall(r'"((?:[^"\\]|\\.)*)"|([^\s"()]+)', body) if (a or b)
    )


def strip_genex(token: str) -> str:
    """`$<BUILD_INTERFACE:x>` and `$<$<BOOL:...>:x>` are x; every other generator
    expression ($<INSTALL_INTERFACE:...>, $<TARGET_FILE:...>, $<IF:...>) is dropped."""
    while True:
        start = token.rfind("$<")
        if start < 0:
            return token
        depth, i = 0, start
        while i < len(token):
            if token.startswith("$<", i):
                depth += 1
                i += 2
                continue
            if token[i] == ">":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        head, sep, body = token[start + 2 : i].partition(":")
        # innermost first: `$<$<BOOL:x>:y>` has become `$<:y>` by the time it is read
        keep = body if sep and head in ("BUILD_INTERFACE", "") else ""
        token = token[:start] + keep + token[i + 1 :]


class Vars:
    """Every value each variable is given anywhere, roots replaced by their markers
    (`roots`: a CANN repo's build roots by default)."""

    def __init__(self, roots: Mapping[str, str] = ROOTS) -> None:
        self.values: Dict[str, List[str]] = {}
        self.roots = roots

    def add(self, name: str, items: Iterable[str]) -> None:
        if name in self.roots:
            return
        bucket = self.values.setdefault(name, [])
        for item in items:
            # `get_filename_component(X ${X} REALPATH)` gives X nothing new
            if item and item not in bucket and item != f"${{{name}}}":
                bucket.append(item)

    def expand(self, text: str, depth: int = 0) -> List[str]:
        """Every string `text` may stand for; none when it names an unknown variable."""
        m = _REF.search(text)
        if m is None:
            return [text]
        if depth > 12:
            return []
        name = m.group(1)
        choices = [self.roots[name]] if name in self.roots else self.values.get(name, [])
        out: List[str] = []
        for choice in choices:
            for result in self.expand(text[: m.start()] + choice + text[m.end() :], depth + 1):
                if result not in out:
                    out.append(result)
                if len(out) >= MAX_ALTERNATIVES:
                    return out
        return out


def _here(path: str) -> Dict[str, str]:
    """What CMAKE_CURRENT_SOURCE_DIR / _LIST_DIR are in `path`: a CMakeLists.txt's own
    folder; for cmake/*.cmake included from the top CMakeLists.txt, the top (source dir)
    and the file's folder (list dir)."""
    folder = posixpath.dirname(path)
    source = REPO if path.startswith("cmake/") else posixpath.join(REPO, folder)
    return {
        "CMAKE_CURRENT_SOURCE_DIR": source.rstrip("/"),
        "CMAKE_CURRENT_LIST_DIR": posixpath.join(REPO, folder).rstrip("/"),
    }


def local(token: str, path: str) -> str:
    here = _here(path)
    return re.sub(
        r"\$\{(CMAKE_CURRENT_SOURCE_DIR|CMAKE_CURRENT_LIST_DIR)\}",
        lambda m: here[m.group(1)],
        token,
    )


def norm(path: str) -> str:
    return posixpath.normpath(path).rstrip("/")


def rooted(expanded: Iterable[str], root: str) -> List[str]:
    """The items under `root`, relative to it (a `;`-list counts as its items); a test
    folder a shared variable names (tests/ut/.../stub) is no folder a package build uses."""
    out: List[str] = []
    for value in expanded:
        for item in value.split(";"):
            item = norm(item) if item else item
            if item != root and not item.startswith(root + "/"):
                continue
            rel = item[len(root) :].lstrip("/")
            if rel not in out and not (root == REPO and TEST_DIR.search(rel)):
                out.append(rel)
    return out
