"""What a checkout's CMake looks for in the toolkit, read without running CMake.

A regex reading of the checkout's own `CMakeLists.txt` and `cmake/**/*.cmake` (tests'
files left out): every `find_package(X ...)` whose `cmake/modules/FindX.cmake` is in
the checkout, each `find_path` / `find_library` that module runs (names, and the folders
it searches once `${ASCEND_DIR}` and friends are the toolkit), whether configure stops
without it, and every folder the targets put on the include path.  Upstream shapes it
mirrors: cannmirror/ops-transformer@v9.0.0 cmake/dependencies.cmake:56-64 (the
find_package calls), cmake/modules/Find{dlog,metadef,runtime,...}.cmake (the lookups),
cmake/variables.cmake:107-160 and cmake/obj_func.cmake:287-480 (include folders);
v9.1.0-beta.3 keeps the same modules and adds `${OPBASE_SOURCE_PATH}/include`
(FindOPBASE.cmake:18-23).

Variables are taken as the union of every value a `set`/`list(APPEND)`/`find_*` gives
them anywhere (an if and its else both count): a folder named in either branch may be
searched, which errs on the side of finding a header, never of a false "missing".
"""

from __future__ import annotations

import posixpath
import re
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

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
_TEST_DIR = re.compile(r"(^|/)(tests?|ut|utest|llt)(/|$)")
_TEST_FILE = re.compile(r"(^|/)([^/]*(utest|llt|gtest|mockcpp)[^/]*|ut\.cmake)$")
_COMMAND = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(")
_REF = re.compile(r"\$(?:ENV)?\{([A-Za-z0-9_]+)\}")
# keywords that end a list of values in the find_* signatures
_FIND_KEYWORDS = {
    "NAMES", "NAME", "HINTS", "PATHS", "PATH_SUFFIXES", "DOC", "REQUIRED", "NO_DEFAULT_PATH",
    "NO_CMAKE_PATH", "NO_CMAKE_ENVIRONMENT_PATH", "NO_SYSTEM_ENVIRONMENT_PATH",
    "NO_CMAKE_SYSTEM_PATH", "NO_CMAKE_FIND_ROOT_PATH", "CMAKE_FIND_ROOT_PATH_BOTH",
    "ONLY_CMAKE_FIND_ROOT_PATH", "NO_PACKAGE_ROOT_PATH", "NO_CMAKE_INSTALL_PREFIX",
    "NAMES_PER_DIR", "ENV", "VALIDATOR", "REGISTRY_VIEW", "NO_CACHE",
}  # fmt: skip
_FPHSA_KEYWORDS = {
    "FOUND_VAR", "REQUIRED_VARS", "VERSION_VAR", "HANDLE_COMPONENTS", "HANDLE_VERSION_RANGE",
    "CONFIG_MODE", "NAME_MISMATCHED", "REASON_FAILURE_MESSAGE", "FAIL_MESSAGE", "DEFAULT_MSG",
}  # fmt: skip
MAX_ALTERNATIVES = 64  # expansions of one expression (a variable set in many branches)


class Lookup(Struct, frozen=True, kw_only=True):
    """One `find_path` / `find_library` of a Find module: found when any `dirs/name` is a
    file (dirs relative to ASCEND_HOME_PATH, `{arch}` for the machine), or is in the
    checkout or the opbase source where it searches those too (FindOPBASE from v9.0.0)."""

    var: str
    kind: str  # "header" or "library"
    names: Tuple[str, ...]
    dirs: Tuple[str, ...]
    blocking: str  # why the build stops without it ("" when it does not, as far as read)
    source: str  # "cmake/modules/Finddlog.cmake:54"
    repo_dirs: Tuple[str, ...] = ()
    opbase_dirs: Tuple[str, ...] = ()


class Module(Struct, frozen=True, kw_only=True):
    name: str
    required: bool
    source: str  # where find_package is called
    lookups: Tuple[Lookup, ...]


class CmakeFacts(Struct, frozen=True, kw_only=True):
    modules: Tuple[Module, ...]
    toolkit_dirs: Tuple[str, ...]  # include folders under ASCEND_HOME_PATH
    repo_dirs: Tuple[str, ...]  # include folders in the checkout ("" = its top)
    opbase_dirs: Tuple[str, ...]  # include folders in ${OPBASE_SOURCE_PATH}
    repo_sources: Tuple[str, ...]  # globs of sources the cmake compiles, in the checkout
    opbase_sources: Tuple[str, ...]  # ... in ${OPBASE_SOURCE_PATH}
    files: int  # cmake files read


class _Command(Struct, frozen=True, kw_only=True):
    name: str
    args: Tuple[str, ...]
    path: str
    line: int
    text: str  # the raw argument text


def is_test_file(path: str) -> bool:
    return bool(_TEST_DIR.search(path) or _TEST_FILE.search(path))


def _strip_comments(text: str) -> str:
    text = re.sub(r"#\[(=*)\[.*?\]\1\]", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
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


def _commands(path: str, text: str) -> List[_Command]:
    text = _strip_comments(text)
    found: List[_Command] = []
    pos = 0
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
        line = text.count("\n", 0, m.start()) + 1
        found.append(
            _Command(name=m.group(1).lower(), args=_tokens(body), path=path, line=line, text=body)
        )
        pos = i


def _tokens(body: str) -> Tuple[str, ...]:
    return tuple(
        a or b for a, b in re.findall(r'"((?:[^"\\]|\\.)*)"|([^\s"()]+)', body) if (a or b)
    )


def _strip_genex(token: str) -> str:
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


class _Vars:
    """Every value each variable is given anywhere, roots replaced by their markers."""

    def __init__(self) -> None:
        self.values: Dict[str, List[str]] = {}

    def add(self, name: str, items: Iterable[str]) -> None:
        if name in ROOTS:
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
        choices = [ROOTS[name]] if name in ROOTS else self.values.get(name, [])
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


def _local(token: str, path: str) -> str:
    here = _here(path)
    return re.sub(
        r"\$\{(CMAKE_CURRENT_SOURCE_DIR|CMAKE_CURRENT_LIST_DIR)\}",
        lambda m: here[m.group(1)],
        token,
    )


def _norm(path: str) -> str:
    return posixpath.normpath(path).rstrip("/")


def _split_find(args: Sequence[str]) -> Tuple[List[str], List[str], List[str], Set[str]]:
    """(names, search dirs, suffixes, flags) of a find_path/find_library call."""
    names: List[str] = []
    dirs: List[str] = []
    suffixes: List[str] = []
    flags: Set[str] = set()
    section = "short"
    for token in args[1:]:
        if token in _FIND_KEYWORDS:
            section = token
            flags.add(token)
            continue
        if section in ("NAMES", "NAME") or (section == "short" and not names):
            names.append(token)
        elif section in ("PATHS", "HINTS", "short"):
            dirs.append(token)
        elif section == "PATH_SUFFIXES":
            suffixes.append(token)
    return names, dirs, suffixes, flags


def _library_files(names: Sequence[str]) -> Tuple[str, ...]:
    out: List[str] = []
    for name in names:
        if name.startswith("lib") and re.search(r"\.(so|a)(\.\d+)*$", name):
            out.append(name)  # a file name given whole: `NAMES libascendalog.so`
        else:
            out += [f"lib{name}.so", f"lib{name}.a"]
    return tuple(out)


def scan_cmake(files: Mapping[str, str]) -> CmakeFacts:
    """The facts of one checkout's cmake files (`{relative path: text}`, tests' left out
    by the caller or here)."""
    commands: List[_Command] = []
    for path in sorted(files):
        if not is_test_file(path):
            commands += _commands(path, files[path])
    v = _Vars()
    for c in commands:  # values first: a variable may be used before the file that sets it
        args = tuple(_local(_strip_genex(a), c.path) for a in c.args)
        if c.name == "set" and args:
            values = list(args[1:])
            if "CACHE" in values:
                values = values[: values.index("CACHE")]
            v.add(args[0], [x for x in values if x != "PARENT_SCOPE"])
        elif c.name == "list" and len(args) > 2 and args[0] in ("APPEND", "PREPEND"):
            v.add(args[1], args[2:])
        elif c.name == "get_filename_component" and len(args) >= 3:
            value = args[1] if args[2] in ("REALPATH", "ABSOLUTE") else f"{args[1]}/.."
            v.add(args[0], [value])
    prefixes = [p for p in v.expand("${CMAKE_PREFIX_PATH}") if p.startswith(TOOLKIT)]
    for c in commands:  # what a find_* sets its variable to: the folders it searches
        if c.name in ("find_path", "find_file") and c.args:
            args = tuple(_local(_strip_genex(a), c.path) for a in c.args)
            _, dirs, _, flags = _split_find(args)
            if not flags & {"NO_DEFAULT_PATH", "NO_CMAKE_PATH"}:
                dirs = [f"{p}/include" for p in prefixes] + dirs
            v.add(args[0], dirs)
    toolkit, repo, opbase = _include_dirs(commands, v)
    repo_src, opbase_src = _source_globs(commands, v)
    return CmakeFacts(
        modules=_modules(commands, files, v, prefixes),
        toolkit_dirs=toolkit,
        repo_dirs=repo,
        opbase_dirs=opbase,
        repo_sources=repo_src,
        opbase_sources=opbase_src,
        files=len({c.path for c in commands}),
    )


def _rooted(expanded: Iterable[str], root: str) -> List[str]:
    """The items under `root`, relative to it (a `;`-list counts as its items); a test
    folder a shared variable names (tests/ut/.../stub) is no folder a package build uses."""
    out: List[str] = []
    for value in expanded:
        for item in value.split(";"):
            item = _norm(item) if item else item
            if item != root and not item.startswith(root + "/"):
                continue
            rel = item[len(root) :].lstrip("/")
            if rel not in out and not (root == REPO and _TEST_DIR.search(rel)):
                out.append(rel)
    return out


def _include_dirs(
    commands: Sequence[_Command], v: _Vars
) -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]:
    """Folders given to target_include_directories / include_directories and to the
    INTERFACE_INCLUDE_DIRECTORIES of imported targets, by root."""
    expanded: List[str] = []
    for c in commands:
        args: Sequence[str] = ()
        if c.name in ("target_include_directories", "include_directories"):
            args = c.args
        elif c.name == "set_target_properties" and "INTERFACE_INCLUDE_DIRECTORIES" in c.args:
            i = c.args.index("INTERFACE_INCLUDE_DIRECTORIES")
            args = c.args[i + 1 : i + 2]
        for raw in args:
            for token in _local(_strip_genex(raw), c.path).split(";"):
                if "$" in token or "/" in token:
                    expanded += v.expand(token)
    return (
        tuple(_rooted(expanded, TOOLKIT)),
        tuple(_rooted(expanded, REPO)),
        tuple(_rooted(expanded, OPBASE)),
    )


def _source_globs(
    commands: Sequence[_Command], v: _Vars
) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """`file(GLOB[_RECURSE] ...)` patterns of C++ sources, by root (the common code the
    package compiles: common/src/*.cpp, opbase's src/op_common/**)."""
    expanded: List[str] = []
    for c in commands:
        if c.name != "file" or not c.args or c.args[0] not in ("GLOB", "GLOB_RECURSE"):
            continue
        for raw in c.args[2:]:
            token = _local(_strip_genex(raw), c.path)
            if token.endswith((".cpp", ".cc")):
                expanded += v.expand(token)
    return tuple(_rooted(expanded, REPO)), tuple(_rooted(expanded, OPBASE))


def _modules(
    commands: Sequence[_Command], files: Mapping[str, str], v: _Vars, prefixes: Sequence[str]
) -> Tuple[Module, ...]:
    by_file: Dict[str, str] = {}
    for path in files:
        m = re.search(r"(?:^|/)Find([^/]+)\.cmake$", path)
        if m and path.startswith("cmake/"):
            by_file.setdefault(m.group(1), path)
    linked = {
        token
        for c in commands
        if c.name == "target_link_libraries"
        for token in (_strip_genex(a) for a in c.args)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.+-]*", token)
    }
    modules: Dict[str, Module] = {}
    for c in commands:
        if c.name != "find_package" or not c.args:
            continue
        name = c.args[0]
        module_file = by_file.get(name)
        if module_file is None:
            continue  # CMake's own (Python, OpenMP) or a config package: not the toolkit's
        required = "REQUIRED" in c.args
        previous = modules.get(name)
        if previous is not None and (previous.required or not required):
            continue  # the first call, unless a later one is REQUIRED
        modules[name] = Module(
            name=name,
            required=required,
            source=f"{c.path}:{c.line}",
            lookups=_lookups(module_file, files[module_file], v, prefixes, required, linked),
        )
    return tuple(modules[n] for n in sorted(modules))


def _lookups(
    path: str,
    text: str,
    v: _Vars,
    prefixes: Sequence[str],
    required: bool,
    linked: Set[str],
) -> Tuple[Lookup, ...]:
    commands = _commands(path, text)
    required_vars: Set[str] = set()
    for c in commands:
        if c.name == "find_package_handle_standard_args":
            section = "short"
            for token in c.args[1:]:
                if token in _FPHSA_KEYWORDS:
                    section = token
                elif section in ("REQUIRED_VARS", "DEFAULT_MSG", "short"):
                    required_vars.add(token)
    out: List[Lookup] = []
    for c in _not_windows(commands):
        if c.name not in ("find_path", "find_library", "find_file") or not c.args:
            continue
        args = tuple(_local(_strip_genex(a), path) for a in c.args)
        var = args[0]
        names, dirs, suffixes, flags = _split_find(args)
        kind = "library" if c.name == "find_library" else "header"
        searched: List[str] = []
        if not flags & {"NO_DEFAULT_PATH", "NO_CMAKE_PATH"}:
            # CMAKE_PREFIX_PATH (`${ASCEND_DIR}/`, cmake/dependencies.cmake:30) comes first:
            # <prefix>/include for headers, <prefix>/lib and lib64 for libraries
            sub = ("lib", "lib64") if kind == "library" else ("include",)
            searched += [f"{p}/{s}" for p in prefixes for s in sub]
        for d in dirs:
            searched += v.expand(d)
        found_in = {
            root: _with_suffixes(_rooted(searched, root), suffixes)
            for root in (TOOLKIT, REPO, OPBASE)
        }
        if not any(found_in.values()):
            continue  # searches only outside the toolkit ("compile with ci" paths)
        out.append(
            Lookup(
                var=var,
                kind=kind,
                names=_library_files(names) if kind == "library" else tuple(names),
                dirs=found_in[TOOLKIT],
                blocking=_why_blocking(text, var, required, required_vars, linked),
                source=f"{path}:{c.line}",
                repo_dirs=found_in[REPO],
                opbase_dirs=found_in[OPBASE],
            )
        )
    return tuple(out)


def _with_suffixes(dirs: Sequence[str], suffixes: Sequence[str]) -> Tuple[str, ...]:
    """Each folder with each PATH_SUFFIXES entry, then the folder itself."""
    final: List[str] = []
    for d in dirs:
        final += [_norm(posixpath.join(d, s)) for s in suffixes] + [d]
    return tuple(dict.fromkeys(final))


def _not_windows(commands: Sequence[_Command]) -> Iterator[_Command]:
    """The commands outside `if(WIN32)` branches (Findsecurec.cmake:24-28 looks for a
    .lib and a .dll there)."""
    stack: List[bool] = []  # per open if: is the current branch the WIN32 one
    for c in commands:
        if c.name == "if":
            stack.append(c.args == ("WIN32",))
        elif c.name in ("elseif", "else") and stack:
            stack[-1] = False
        elif c.name == "endif" and stack:
            stack.pop()
        elif not any(stack):
            yield c


def _why_blocking(
    text: str, var: str, required: bool, required_vars: Set[str], linked: Set[str]
) -> str:
    if required and var in required_vars:
        return "configure stops (Could NOT find, a REQUIRED_VARS of a REQUIRED find_package)"
    fatal = re.search(
        rf"if\s*\(\s*NOT\s+{re.escape(var)}\s*\)(?:(?!endif).)*?FATAL_ERROR", text, re.S | re.I
    )
    if fatal:
        return "configure stops (message(FATAL_ERROR) without it)"
    target = _imported_target(text, var)
    if target and target in linked:
        return f"the link of what uses imported target {target} fails"
    return ""


def _imported_target(text: str, var: str) -> Optional[str]:
    """The imported target whose IMPORTED_LOCATION is `${var}`."""
    m = re.search(rf"IMPORTED_LOCATION\s+\"?\$\{{{re.escape(var)}\}}", text)
    if m is None:
        return None
    targets = re.findall(
        r"add_library\(\s*([A-Za-z0-9_]+)\s+(?:SHARED|STATIC)\s+IMPORTED", text[: m.start()]
    )
    return targets[-1] if targets else None
