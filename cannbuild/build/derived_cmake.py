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
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from msgspec import Struct

from .cmake_text import (
    OPBASE,
    REPO,
    TOOLKIT,
    Command,
    Vars,
    is_test_file,
    local,
    norm,
    read_commands,
    rooted,
    strip_genex,
)

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
    # toolkit programs the cmake runs (`tools/opbuild/op_build`, config.cmake:50), with
    # where each is named: "path\tcmake/config.cmake:50"
    programs: Tuple[str, ...] = ()


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
    commands: List[Command] = []
    for path in sorted(files):
        if not is_test_file(path):
            commands += read_commands(path, files[path])
    v = Vars()
    for c in commands:  # values first: a variable may be used before the file that sets it
        args = tuple(local(strip_genex(a), c.path) for a in c.args)
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
            args = tuple(local(strip_genex(a), c.path) for a in c.args)
            _, dirs, _, flags = _split_find(args)
            if not flags & {"NO_DEFAULT_PATH", "NO_CMAKE_PATH"}:
                dirs = [f"{p}/include" for p in prefixes] + dirs
            v.add(args[0], dirs)
    toolkit, repo, opbase = _include_dirs(commands, v)
    repo_src, opbase_src = _source_globs(commands, v)
    programs = _programs(commands, v)
    return CmakeFacts(
        modules=_modules(commands, files, v, prefixes),
        toolkit_dirs=toolkit,
        repo_dirs=repo,
        opbase_dirs=opbase,
        repo_sources=repo_src,
        opbase_sources=opbase_src,
        files=len({c.path for c in commands}),
        programs=programs,
    )


def _programs(commands: Sequence[Command], v: Vars) -> Tuple[str, ...]:
    """Programs under the toolkit's tools/ the cmake names (a file without a suffix),
    each with the first place that names it."""
    found: Dict[str, str] = {}
    for c in commands:
        for raw in c.args:
            if "tools/" not in raw:
                continue
            token = local(strip_genex(raw), c.path)
            for rel in rooted(v.expand(token), TOOLKIT):
                name = posixpath.basename(rel)
                if rel.startswith("tools/") and name and "." not in name and "*" not in rel:
                    found.setdefault(rel, f"{c.path}:{c.line}")
    return tuple(f"{rel}\t{where}" for rel, where in sorted(found.items()))


def _include_dirs(
    commands: Sequence[Command], v: Vars
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
            for token in local(strip_genex(raw), c.path).split(";"):
                if "$" in token or "/" in token:
                    expanded += v.expand(token)
    return (
        _arch_variants(rooted(expanded, TOOLKIT)),
        tuple(rooted(expanded, REPO)),
        tuple(rooted(expanded, OPBASE)),
    )


def _arch_variants(dirs: Sequence[str]) -> Tuple[str, ...]:
    """Each toolkit folder, and the same under `{arch}-linux/` for one outside it: the
    toolkit root's include, lib64 and pkg_inc are links into `<arch>-linux/`, so a folder
    a module takes the REALPATH and then the DIRECTORY of lands there
    (cannmirror/ops-transformer@v9.0.0 cmake/modules/Findtilingapi.cmake:33-45:
    `<arch>-linux/ascendc/include/highlevel_api/tiling`)."""
    out: List[str] = []
    for d in dirs:
        out.append(d)
        if not d.startswith("{arch}-linux"):
            out.append(norm(f"{{arch}}-linux/{d}"))
    return tuple(dict.fromkeys(out))


def _source_globs(commands: Sequence[Command], v: Vars) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """`file(GLOB[_RECURSE] ...)` patterns of C++ sources, by root (the common code the
    package compiles: common/src/*.cpp, opbase's src/op_common/**)."""
    expanded: List[str] = []
    for c in commands:
        if c.name != "file" or not c.args or c.args[0] not in ("GLOB", "GLOB_RECURSE"):
            continue
        for raw in c.args[2:]:
            token = local(strip_genex(raw), c.path)
            if token.endswith((".cpp", ".cc")):
                expanded += v.expand(token)
    return tuple(rooted(expanded, REPO)), tuple(rooted(expanded, OPBASE))


def _modules(
    commands: Sequence[Command], files: Mapping[str, str], v: Vars, prefixes: Sequence[str]
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
        for token in (strip_genex(a) for a in c.args)
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
    v: Vars,
    prefixes: Sequence[str],
    required: bool,
    linked: Set[str],
) -> Tuple[Lookup, ...]:
    commands = read_commands(path, text)
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
        args = tuple(local(strip_genex(a), path) for a in c.args)
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
            root: _with_suffixes(rooted(searched, root), suffixes)
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
        final += [norm(posixpath.join(d, s)) for s in suffixes] + [d]
    return tuple(dict.fromkeys(final))


def _not_windows(commands: Sequence[Command]) -> Iterator[Command]:
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
