"""The archives a checkout downloads through the shared cann/cmake repository (9.1 layout).

From ops-transformer and opbase 9.1 (branch 9.1.0, tag v9.1.0.pre) the archive modules
are gone from the checkout's `cmake/third_party/`: its CMake calls
`add_cann_third_party(<name>)`, a macro of the shared cann/cmake repository that
includes that repository's `third_party/<name>.cmake`
(hicann/cmake@master-026:function/prepare.cmake:184-188), and `set_cann_cpack_config`
calls it for makeself itself (:225).  The checkout clones that repository at the tag its
`cmake/fetch_cann_cmake.cmake` names (:17), which the recipe pins as a source.  So the
archives of such a checkout are read from git alone: the names from the checkout's
CMake files at its commit, each module (following
`include(${CMAKE_CURRENT_LIST_DIR}/x.cmake)`: protobuf.cmake:18 includes abseil-cpp)
from the cann/cmake repository at its locked commit, with its URL, declared hash, and
the places under `${CANN_3RD_LIB_PATH}` where the module takes a local copy before it
downloads (its `if(EXISTS ...)` / `IS_DIRECTORY` checks), in the order it checks them.
Only what a package build downloads counts (reach.py): gtest, which ops-nn asks for
`if(ENABLE_TEST)` and ops-math through cmake/ut.cmake (an on-demand ExternalProject no
package target needs), is left out, saying why.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from msgspec.structs import replace

from ..bounded import MEMO, read_state
from ..build.cmake_text import Vars
from ..workspace import remember
from .archives import ARCHIVE_SUFFIXES, SET, Declared, archive_stem, discover, memo_file
from .checkout import git_says_yes
from .fetch import Fetcher, GitFailed
from .reach import Reach, names_any, on_demand, options_off

# The checkout's own file that clones the shared repository: its presence marks the layout.
FETCH_CANN_CMAKE = "cmake/fetch_cann_cmake.cmake"
# ...where ops-math and ops-cv 9.1 keep it too; ops-nn 9.1 keeps it in cmake/third_party/
# (ops-nn@9.1.0:cmake/third_party/fetch_cann_cmake.cmake:17).
FETCH_CANN_CMAKE_FILES = (FETCH_CANN_CMAKE, "cmake/third_party/fetch_cann_cmake.cmake")
# `${CANN_3RD_LIB_PATH}` as the checkout sees it: build.sh's default `<src>/third_party`
# (ops-transformer@9.1.0:build.sh:83, opbase@9.1.0:build.sh:89), and what the recipes' steps
# pass as --cann_3rd_lib_path (build.session: `<checkout>/third_party`).
THIRD_PARTY_ROOT = "third_party"
_3RD = "@3RD"  # what `${CANN_3RD_LIB_PATH}` expands to (cmake_text.Vars roots)

_CALL = re.compile(r"\badd_cann_third_party\s*\(\s*([A-Za-z0-9_.+-]+)\s*\)")
# a module the checkout includes from the shared repository itself: ops-math 9.1's
# `include(${CANN_CMAKE_DIR}/third_party/makeself-fetch.cmake)` (cmake/package.cmake:13)
_CANN_INCLUDE = re.compile(
    r"\binclude\s*\(\s*\"?\$\{CANN_CMAKE_DIR\}/third_party/([A-Za-z0-9_.+-]+)\.cmake\"?\s*\)"
)
_DEFINE = re.compile(r"^\s*(?:function|macro)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)
_END = re.compile(r"^\s*end(?:function|macro)\s*\(", re.IGNORECASE)
# protobuf.cmake:18 `include(${CMAKE_CURRENT_LIST_DIR}/abseil-cpp.cmake)`
_INCLUDE = re.compile(
    r"\binclude\s*\(\s*\"?\$\{CMAKE_CURRENT_LIST_DIR\}/([A-Za-z0-9_.+-]+\.cmake)\"?\s*\)"
)
_CONDITION = re.compile(r"^\s*(?:if|elseif)\s*\(", re.IGNORECASE)
_PROBE = re.compile(r"\b(EXISTS|IS_DIRECTORY)\s+\"?([^\s\")]+)\"?")


def uses_cann_cmake(
    fetcher: Fetcher, cache: Path, commit: str, memo: Optional[Path] = None
) -> bool:
    """Whether the checkout at `commit` clones the shared cann/cmake repository; a
    commit's files never change, so the answer is kept in `memo` (a no-op asked git
    twice per repo on every run)."""
    path = memo_file(memo, commit, ".cann-cmake.json")
    known = read_state(path, MEMO, Dict[str, str]) if path is not None else None
    if known is not None and known.get("uses") in ("yes", "no"):
        return known["uses"] == "yes"
    uses = any(
        git_says_yes(fetcher, cache, ["cat-file", "-e", f"{commit}:{path}"])
        for path in FETCH_CANN_CMAKE_FILES
    )
    if known is None and path is not None:
        remember(path, {"uses": "yes" if uses else "no"})
    return uses


def wrappers(files: Mapping[str, str]) -> Dict[str, List[Tuple[str, str]]]:
    """function/macro name -> [(module, where)] of the `add_cann_third_party(<literal>)`
    calls inside it, in the cann/cmake repository's function files (path -> text)."""
    found: Dict[str, List[Tuple[str, str]]] = {}
    for path in sorted(files):
        current: Optional[str] = None
        for number, line in enumerate(files[path].splitlines(), 1):
            if line.lstrip().startswith("#"):
                continue
            define = _DEFINE.match(line)
            if define:
                current = define.group(1)
            elif _END.match(line):
                current = None
            elif current is not None:
                for call in _CALL.finditer(line):
                    found.setdefault(current, []).append((call.group(1), f"{path}:{number}"))
    return found


def called_modules(
    lines: Iterable[Tuple[str, int, str]], wrapped: Mapping[str, List[Tuple[str, str]]]
) -> Dict[str, List[Tuple[str, int, str]]]:
    """module -> (path, line, label) of every site where the checkout asks for it, in file
    order, from its CMake lines (path, line, text): `add_cann_third_party(json)`, or a call
    of a cann/cmake function that asks for one itself (`set_cann_cpack_config` ->
    makeself-fetch, labelled with the function)."""
    calls = {name: re.compile(rf"\b{re.escape(name)}\s*\(") for name in wrapped}
    found: Dict[str, List[Tuple[str, int, str]]] = {}
    for path, number, text in sorted(lines):
        if text.lstrip().startswith("#"):
            continue
        site = f"{path}:{number}"
        for call in _CALL.finditer(text):
            found.setdefault(call.group(1), []).append((path, number, site))
        for call in _CANN_INCLUDE.finditer(text):
            found.setdefault(call.group(1), []).append((path, number, f"{site} (include)"))
        for name, pattern in calls.items():
            if pattern.search(text):
                for module, inside in wrapped[name]:
                    label = f"{site} ({name}, {inside})"
                    found.setdefault(module, []).append((path, number, label))
    return found


def _labels(sites: Iterable[Tuple[str, int, str]]) -> str:
    return ", ".join(label for _, _, label in sites)


def local_places(text: str) -> List[Tuple[str, int]]:
    """(place relative to `${CANN_3RD_LIB_PATH}`, line) of each local copy a module
    checks for before it downloads, in its order: a file it takes (`EXISTS .../x.tar.gz`),
    a folder (`IS_DIRECTORY .../eigen` -> `eigen/`), and the folder it unpacks into
    (`SOURCE_DIR`) when it looks for a file there (`EXISTS .../makeself/makeself.sh` ->
    `makeself/`).  A variable set several times stands for each of its values
    (protobuf.cmake:136-146), and a folder it unpacks into that it first looks in with
    `find_path` (json.cmake:29-33: `json/include`, so `json/`).  Paths outside
    `${CANN_3RD_LIB_PATH}`, with `..`, or naming a variable the module does not set are
    left out."""
    lines = text.splitlines()
    variables = Vars({"CANN_3RD_LIB_PATH": _3RD})
    for line in lines:
        match = SET.match(line)
        if match:
            variables.add(match.group(1), [match.group(2)])
    unpacked = {
        rel.rstrip("/") + "/"
        for raw in _SOURCE_DIR.findall(text)
        for rel in _under_3rd(raw, variables)
    }
    found: List[Tuple[str, int]] = []
    number, counted = 1, 0
    for match in _FIND_PATH.finditer(text):
        number += text.count("\n", counted, match.start())  # on from the last match: linear
        counted = match.start()
        for raw in re.findall(r"\$\{[^}]+\}[^\s\")]*", match.group(1)):
            for rel in _under_3rd(raw, variables):
                place = next((u for u in sorted(unpacked) if (rel + "/").startswith(u)), None)
                if place is not None and place not in [p for p, _ in found]:
                    found.append((place, number))
    for number, line in enumerate(lines, 1):
        if not _CONDITION.match(line):
            continue
        for kind, raw in _PROBE.findall(line):
            for rel in _under_3rd(raw, variables):
                if kind.upper() == "IS_DIRECTORY":
                    place = rel.rstrip("/") + "/"
                elif rel.lower().endswith(ARCHIVE_SUFFIXES):
                    place = rel
                elif posixpath.dirname(rel) + "/" in unpacked:
                    place = posixpath.dirname(rel) + "/"
                else:
                    continue
                if place not in [p for p, _ in found]:
                    found.append((place, number))
    return found


# the arguments of a `find_path(...)` (one level of parentheses: its arguments have none)
_FIND_PATH = re.compile(r"\bfind_path\s*\(([^()]*)\)", re.IGNORECASE)
# `SOURCE_DIR "${MAKESELF_PATH}"` in FetchContent_Declare / ExternalProject_Add
_SOURCE_DIR = re.compile(r"\bSOURCE_DIR\s+\"?([^\s\")]+)\"?")


def _under_3rd(raw: str, variables: Vars) -> List[str]:
    """The paths below `${CANN_3RD_LIB_PATH}` that `raw` stands for, relative to it:
    every value a `${NAME}` in it can stand for, from the module's own `set()` lines
    (`${MAKESELF_PATH}` -> `${CANN_3RD_LIB_PATH}/${MAKESELF_NAME}` -> `.../makeself`)."""
    out: List[str] = []
    for path in variables.expand(raw):
        if not path.startswith(_3RD + "/"):
            continue
        rel = path[len(_3RD) + 1 :]
        if rel and "${" not in rel and ".." not in rel.split("/") and rel not in out:
            out.append(rel)
    return out


def module_files(
    read: Callable[[str], Optional[str]], module: str
) -> Tuple[Dict[str, str], List[str]]:
    """`third_party/<module>.cmake` of the cann/cmake repository and the files it
    includes, path -> text (`read(path)` gives one, None when absent); and the paths
    that are not there."""
    texts: Dict[str, str] = {}
    missing: List[str] = []
    queue = [f"third_party/{module}.cmake"]
    while queue:
        path = queue.pop(0)
        if path in texts or path in missing:
            continue
        text = read(path)
        if text is None:
            missing.append(path)
            continue
        texts[path] = text
        queue += [posixpath.join(posixpath.dirname(path), m) for m in _INCLUDE.findall(text)]
    return texts, missing


def module_archives(
    read: Callable[[str], Optional[str]], module: str, label: str, called: str
) -> Tuple[List[Declared], List[str]]:
    """The archives `third_party/<module>.cmake` of the cann/cmake repository declares,
    with the files it includes; `read(path)` gives a file of that repository (None when
    absent).  `label` names the repository at its commit in `where`; `called` is where
    the checkout asks for the module.  Also returns notes (a module that is not there)."""
    found: List[Declared] = []
    texts, missing = module_files(read, module)
    notes = [f"{called} asks for {module}, but {label} has no {path}" for path in missing]
    for path, text in texts.items():
        places = local_places(text)
        declared = discover({f"{label}:{path}": text})
        for item in declared:
            # One URL in the file: every place is its; several: each takes the places named as
            # its own file.
            own = [
                (p, n)
                for p, n in places
                if len(declared) == 1 or posixpath.basename(p) == item.url.rsplit("/", 1)[-1]
            ]
            lines = ",".join(dict.fromkeys(str(n) for _, n in own))
            source = f"add_cann_third_party({module}) at {called}"
            if own:
                source += f"; {label}:{path}:{lines} takes a local copy"
            found.append(
                replace(
                    item,
                    name=archive_stem(item.url),
                    module=posixpath.basename(path)[: -len(".cmake")],
                    places=tuple(f"{THIRD_PARTY_ROOT}/{p}" for p, _ in own),
                    source=source,
                )
            )
    return found, notes


def cann_cmake_archives(
    fetcher: Fetcher,
    cache: Path,
    commit: str,
    cmake_cache: Path,
    cmake_commit: str,
    label: str,
    memo: Optional[Path] = None,
) -> Tuple[Tuple[Declared, ...], Tuple[str, ...], Tuple[str, ...]]:
    """Every archive a package build of the checkout at `commit` (in the git cache
    `cache`) downloads through the cann/cmake repository at `cmake_commit` (in
    `cmake_cache`), one per URL; the notes of modules that could not be read; and the
    modules it asks for that such a build does not download, each saying why (reach.py:
    asked for only where it does not go, or on demand and needed by no target it builds).
    What git gives is remembered in `memo` per pair of commits, raw, so a rerun runs no
    git and a newer cannbuild parses it anew."""
    files = _Files(fetcher, cmake_cache, cmake_commit, memo, f"{commit}-{cmake_commit}")
    listing = files.get("ls:function", lambda: _git_list(fetcher, cmake_cache, cmake_commit))
    functions = {p: files.cmake(p) or "" for p in listing.splitlines() if p.endswith(".cmake")}
    wrapped = wrappers(functions)
    names = ["add_cann_third_party", "include", *sorted(wrapped)]
    checkout = Checkout(fetcher, cache, commit, files)
    reach = checkout.reach
    grep = files.get("grep", lambda: checkout.grep(["-E", _calling(names)]))
    modules = called_modules(_grep_lines(grep), wrapped)
    unused: List[str] = []
    running: Dict[str, List[Tuple[str, int, str]]] = {}
    for module, asked in modules.items():
        if any(reach.runs(path, line) for path, line, _ in asked):
            running[module] = asked
        else:
            unused.append(
                f"{module}: asked for only at {_labels(asked)}, which a package build does not "
                "run (test switches off, test folders, functions only those call)"
            )
    texts = {m: module_files(files.cmake, m)[0] for m in running}
    own = {m: f"third_party/{m}.cmake" for m in running}
    demand = {m: on_demand(own[m], texts[m].get(own[m], "")) for m in running}

    def pulled(module: str) -> bool:
        """Whether a module downloading on demand is needed by one that is, or by a
        line of the checkout a package build runs."""
        targets = demand[module]
        if any(names_any(t, targets) for m in needed for t in texts[m].values()):
            return True
        args = ["-w", "-F", *[a for t in targets for a in ("-e", t)]]
        named = checkout.sites(f"names:{module}", args, lambda code: names_any(code, targets))
        return any(reach.runs(p, n) for p, n in named)

    needed = [m for m in running if not demand[m]]
    waiting = [m for m in running if demand[m]]
    while True:
        more = [m for m in waiting if pulled(m)]
        if not more:
            break
        needed += more
        waiting = [m for m in waiting if m not in more]
    unused += [
        f"{m}: {label}:{own[m]} downloads only for a target that needs it (EXCLUDE_FROM_ALL), "
        f"and nothing a package build runs names one ({', '.join(demand[m])}); asked for at "
        f"{_labels(running[m])}"
        for m in waiting
    ]
    by_url: Dict[str, Declared] = {}
    notes: List[str] = []
    for module in [m for m in running if m in needed]:
        found, missing = module_archives(files.cmake, module, label, _labels(running[module]))
        notes += missing
        for item in found:
            by_url.setdefault(item.url, item)
    files.save()
    return tuple(by_url.values()), tuple(notes), tuple(unused)


class Checkout:
    """A checkout's CMake at `commit`, read from its git cache `cache` through `files`
    (which remembers what git gave): its files, the lines git grep finds, and whether a
    package build runs them (`reach`, reach.py)."""

    def __init__(self, fetcher: Fetcher, cache: Path, commit: str, files: _Files) -> None:
        self.fetcher, self.cache, self.commit, self.files = fetcher, cache, commit, files
        options = files.get("options", lambda: self.grep(["-i", "-E", _calling(["option"])]))
        off = options_off(_grep_lines(options), self.read("build.sh"))
        self.reach = Reach(self.read, self.callers, off)

    def read(self, path: str) -> str:
        return self.files.get(
            f"src:{path}", lambda: _show(self.fetcher, self.cache, self.commit, path)
        )

    def grep(self, args: List[str]) -> str:
        return _grep(self.fetcher, self.cache, self.commit, args)

    def sites(
        self, key: str, args: List[str], code: Callable[[str], bool]
    ) -> List[Tuple[str, int]]:
        """(path, line) of the lines `git grep args` finds whose code (not a comment)
        `code` accepts."""
        found = self.files.get(key, lambda: self.grep(args))
        return [(p, n) for p, n, text in _grep_lines(found) if code(text.split("#", 1)[0])]

    def callers(self, name: str) -> List[Tuple[str, int]]:
        call = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}\s*\(", re.IGNORECASE)
        args = ["-i", "-E", _calling([name])]
        return self.sites(f"callers:{name}", args, lambda c: bool(call.search(c)))

    def included_at(self, path: str) -> List[Tuple[str, int]]:
        """Where the checkout includes the CMake file `path` (by its file name)."""
        name = posixpath.basename(path)
        include = re.compile(rf"\binclude\s*\([^)]*\b{re.escape(name)}", re.IGNORECASE)
        return self.sites(f"includes:{path}", ["-F", "-e", name], lambda c: bool(include.search(c)))


def checkout_of(fetcher: Fetcher, cache: Path, commit: str) -> Checkout:
    """A Checkout that remembers nothing beyond this run (the draft's)."""
    return Checkout(fetcher, cache, commit, _Files(fetcher, cache, commit, None, ""))


class _Files:
    """Text read from git, kept in one memo per (checkout, cann/cmake) commit pair."""

    def __init__(
        self, fetcher: Fetcher, cache: Path, commit: str, memo: Optional[Path], key: str
    ) -> None:
        self.fetcher, self.cache, self.commit = fetcher, cache, commit
        self.path = memo / f"{key}.json" if memo is not None and _HEX_PAIR.fullmatch(key) else None
        self.known: Dict[str, str] = (
            read_state(self.path, MEMO, Dict[str, str]) if self.path else None
        ) or {}
        self.changed = False

    def get(self, key: str, make: Callable[[], str]) -> str:
        if key not in self.known:
            self.known[key] = make()
            self.changed = True
        return self.known[key]

    def cmake(self, path: str) -> Optional[str]:
        """A file of the cann/cmake repository at its commit; None when it has none."""
        key = f"cmake:{path}"
        if key not in self.known:
            try:
                text = self.fetcher.git(["show", f"{self.commit}:{path}"], cwd=self.cache)
            except GitFailed:
                return None
            self.known[key] = text
            self.changed = True
        return self.known[key]

    def save(self) -> None:
        if self.path is not None and self.changed:
            remember(self.path, self.known)


# only full object ids become a memo's file name
_HEX_PAIR = re.compile(r"[0-9a-f]{40,64}-[0-9a-f]{40,64}")


def _git_list(fetcher: Fetcher, cache: Path, commit: str) -> str:
    return fetcher.git(["ls-tree", "--name-only", commit, "function/"], cwd=cache)


def _calling(names: List[str]) -> str:
    """A POSIX ERE (no `\\b`) for a call of one of `names`: not after a word character,
    then `(`."""
    return r"(^|[^A-Za-z0-9_])(" + "|".join(re.escape(n) for n in names) + r")[[:space:]]*\("


def _grep(fetcher: Fetcher, cache: Path, commit: str, args: List[str]) -> str:
    try:
        return fetcher.git(
            ["grep", "-n", "-I", *args, commit, "--", "*.cmake", "*CMakeLists.txt"], cwd=cache
        )
    except GitFailed as exc:
        if exc.code == 1:  # git grep: no line matched
            return ""
        raise


def _show(fetcher: Fetcher, cache: Path, commit: str, path: str) -> str:
    try:
        return fetcher.git(["show", f"{commit}:{path}"], cwd=cache)
    except GitFailed:
        return ""


def _grep_lines(output: str) -> List[Tuple[str, int, str]]:
    lines: List[Tuple[str, int, str]] = []
    for raw in output.splitlines():
        # `<commit>:<path>:<line>:<text>`; a path holds no `:` in these repos
        parts = raw.split(":", 3)
        if len(parts) == 4 and parts[2].isdigit():
            lines.append((parts[1], int(parts[2]), parts[3]))
    return lines
