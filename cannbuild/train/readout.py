"""What one repository says about itself at one commit, read from its git cache (no
work tree): the options its build.sh accepts, the SoCs it builds for, whether it calls
gawk, what it needs of the toolkit, and the git sources its CMake clones at a pin.

Each reading cites the file and line it comes from; what cannot be read is returned
as a sentence for the draft's list of what it could not decide."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Mapping, Optional, Tuple

from msgspec import Struct

from ..recipes import SourcePin
from ..recipes.optspec import NoOptionLoop, OptionSpec, code_of, option_spec
from ..sources.canncmake import FETCH_CANN_CMAKE, THIRD_PARTY_ROOT, checkout_of
from ..sources.fetch import Fetcher, GitFailed

# `SUPPORT_COMPUTE_UNIT_SHORT=("ascend910b" ... "mc62")` (cannmirror/ops-transformer@9.1.0:build.sh:46),
# on two lines in ops-cv (hicann/ops-cv@9.1.0:build.sh:15-16)
_SOCS = re.compile(r"^[ \t]*SUPPORT_COMPUTE_UNIT_SHORT=\(([^)]*)\)", re.M)
# `set_cann_build_dependencies(runtime ">=8.5")` (@9.1.0:version.cmake:13-20);
# `set_build_dependencies(...)` at v9.0.0 (version.cmake:13-21)
_DEPS = re.compile(r'^\s*set_(?:cann_)?build_dependencies\(\s*([A-Za-z0-9_.-]+)\s+"([^"]+)"\s*\)')
_GAWK = re.compile(r"(?:^|[\s|;(])gawk\b")
# A git source a CMake file clones at a pin: `GIT_TAG ${OPBASE_TAG_ID}`
# (@9.1.0:cmake/third_party/opbase.cmake:33), `GIT_TAG ${CANN_CMAKE_TAG}`
# (cmake/fetch_cann_cmake.cmake:27), `GIT_TAG ${OPTENSOR_TAG_ID}` (ops-tensor.cmake:68).
_GIT_TAG = re.compile(r"\bGIT_TAG\s+\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_GIT_REPOSITORY = re.compile(r"\bGIT_REPOSITORY\s+\"?([^\s\")]+)")
_SET_LINE = r'^\s*set\(\s*{var}\s+("?)([^\s")]+)\1\s*\)'
_HTTPS = re.compile(r"https://[^\s\")]+")
# the first local copy the file looks for under ${CANN_3RD_LIB_PATH}
# (`elseif(EXISTS "${CANN_3RD_LIB_PATH}/opbase")`, opbase.cmake:16;
# `IS_DIRECTORY "${CANN_3RD_LIB_PATH}/cann-cmake"`, fetch_cann_cmake.cmake:12)
_LOCAL = re.compile(
    r"\b(?:EXISTS|IS_DIRECTORY)\s+\"?\$\{CANN_3RD_LIB_PATH\}/([A-Za-z0-9_.+-]+)\"?[\s)]"
)
_COMMIT = re.compile(r"[0-9a-f]{40}")
PIN_FILES_DIR = "cmake/third_party"


class Pinned(Struct, frozen=True, kw_only=True):
    """A pin the draft derived: the recipe's SourcePin, and where it was read."""

    pin: SourcePin
    value: str  # what the file pins (a commit id or a tag name)
    where: str  # "cmake/third_party/opbase.cmake:10"
    url: str  # the repository the file clones


class Readout(Struct, frozen=True, kw_only=True):
    repo: str
    commit: str
    spec: Optional[OptionSpec]
    spec_problem: str = ""
    socs: Tuple[str, ...] = ()
    socs_line: int = 0
    gawk_lines: Tuple[int, ...] = ()
    deps: Tuple[Tuple[str, str], ...] = ()
    deps_lines: Tuple[int, ...] = ()
    deps_file: str = ""
    pins: Tuple[Pinned, ...] = ()
    unused_pins: Tuple[str, ...] = ()  # sources only a test build clones, and why

    def cite(self, path: str, *lines: int) -> str:
        at = ",".join(str(n) for n in lines)
        return f"{self.repo}@{self.commit[:12]}:{path}" + (f":{at}" if at else "")


def show(fetcher: Fetcher, cache: Path, commit: str, path: str) -> Optional[str]:
    """A file of the repository at `commit`; None when it has none."""
    try:
        return fetcher.git(["show", f"{commit}:{path}"], cwd=cache)
    except GitFailed:
        return None


def listing(fetcher: Fetcher, cache: Path, commit: str, folder: str) -> List[str]:
    try:
        out = fetcher.git(["ls-tree", "--name-only", commit, folder.rstrip("/") + "/"], cwd=cache)
    except GitFailed:
        return []
    return out.splitlines()


def read_repo(
    fetcher: Fetcher, cache: Path, repo: str, commit: str, repos: Mapping[str, str]
) -> Readout:
    """`repo` at `commit`; `repos` (name -> url) are the recipe's repositories, so a pin of
    one of them becomes a `repo = ...` pin (the 9.0 `opbase_source` form)."""
    script = show(fetcher, cache, commit, "build.sh") or ""
    spec: Optional[OptionSpec] = None
    problem = ""
    try:
        spec = option_spec(script, lambda path: show(fetcher, cache, commit, path))
    except NoOptionLoop as exc:
        problem = f"{repo}@{commit[:12]}:build.sh: {exc}" if script else f"{repo} has no build.sh"
    found = _SOCS.search(script)
    socs = tuple(w.strip("\"'") for w in found.group(1).split()) if found else ()
    socs_line = script.count("\n", 0, found.start()) + 1 if found else 0
    gawk: List[int] = []
    for number, line in enumerate(script.splitlines(), 1):
        if _GAWK.search(code_of(line)):
            gawk.append(number)
    deps: List[Tuple[str, str]] = []
    deps_lines: List[int] = []
    version = show(fetcher, cache, commit, "version.cmake") or ""
    for number, line in enumerate(version.splitlines(), 1):
        match = _DEPS.match(line)
        if match:
            deps.append((match.group(1), match.group(2)))
            deps_lines.append(number)
    files = [p for p in listing(fetcher, cache, commit, PIN_FILES_DIR) if p.endswith(".cmake")]
    files.append(FETCH_CANN_CMAKE)
    pins = []
    for path in files:
        text = show(fetcher, cache, commit, path)
        if text is not None:
            pins += pins_in(path, text, repos)
    pins, unused = _package_pins(fetcher, cache, repo, commit, pins)
    return Readout(
        repo=repo,
        commit=commit,
        spec=spec,
        spec_problem=problem,
        socs=socs,
        socs_line=socs_line,
        gawk_lines=tuple(gawk),
        deps=tuple(deps),
        deps_lines=tuple(deps_lines),
        deps_file="version.cmake" if deps else "",
        pins=tuple(pins),
        unused_pins=tuple(unused),
    )


def _package_pins(
    fetcher: Fetcher, cache: Path, repo: str, commit: str, pins: List[Pinned]
) -> Tuple[List[Pinned], List[str]]:
    """The pins a package build clones, and why each other one is left out: its file is
    included only where such a build does not go (sources/reach.py), as ops-test-kit's
    `if(DOWNLOAD_OPS_TEST_KIT)`, an option OFF that build.sh never sets
    (ops-math@9.1.0:CMakeLists.txt:59,94-95)."""
    if not pins:
        return pins, []
    checkout = checkout_of(fetcher, cache, commit)
    kept: List[Pinned] = []
    unused: List[str] = []
    for item in pins:
        sites = checkout.included_at(item.pin.pin_file)
        if sites and not any(checkout.reach.runs(p, n) for p, n in sites):
            at = ", ".join(f"{repo}@{commit[:12]}:{p}:{n}" for p, n in sites)
            unused.append(
                f"{item.pin.name or item.pin.repo} ({item.where} pins {item.value}) left out: "
                f"{item.pin.pin_file} is included only at {at}, which a package build does not "
                "run (a test switch, or an option OFF that build.sh never sets)"
            )
        else:
            kept.append(item)
    return kept, unused


def pins_in(path: str, text: str, repos: Mapping[str, str]) -> List[Pinned]:
    """The git sources `path` clones at a pin it sets itself: `set(VAR value)` and a
    `FetchContent_Declare(... GIT_REPOSITORY url GIT_TAG ${VAR})`; the local copy it
    takes first under `${CANN_3RD_LIB_PATH}` is where cannbuild puts the clone."""
    found: List[Pinned] = []
    for var in dict.fromkeys(_GIT_TAG.findall(text)):
        setting = re.search(_SET_LINE.format(var=re.escape(var)), text, re.MULTILINE)
        local = _LOCAL.search(text)
        repository = _GIT_REPOSITORY.search(text)
        if setting is None or local is None or repository is None:
            continue
        quoted, value = setting.group(1), setting.group(2)
        url = _url(repository.group(1), text)
        if url is None:
            continue
        line = text.count("\n", 0, setting.start()) + 1
        commit = bool(_COMMIT.fullmatch(value))
        if commit:
            regex = rf"set\({var}\s+([0-9a-f]{{40}})\)"
        elif quoted:
            regex = rf'set\({var}\s+"([^"]+)"\)'
        else:
            regex = rf"set\({var}\s+([^\s)]+)\)"
        dest = f"{THIRD_PARTY_ROOT}/{local.group(1)}"
        name = local.group(1)
        own = next((n for n, u in repos.items() if _same_repo(u, url)), None)
        pin = SourcePin(
            pin_file=path,
            pin_regex=regex,
            dest=dest,
            repo=own,
            name=None if own else name,
            url=None if own else url,
            pin="commit" if commit else "tag",
        )
        found.append(Pinned(pin=pin, value=value, where=f"{path}:{line}", url=url))
    return found


def _url(raw: str, text: str) -> Optional[str]:
    """A GIT_REPOSITORY value: a URL, or a variable the file sets (the https one, where
    it sets an ssh one too: ops-tensor.cmake:56-62)."""
    if raw.startswith("https://"):
        return raw
    var = re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", raw)
    if var is None:
        return None
    values = re.findall(_SET_LINE.format(var=re.escape(var.group(1))), text, re.MULTILINE)
    https = [v for _, v in values if _HTTPS.fullmatch(v)]
    return https[0] if https else None


def _same_repo(a: str, b: str) -> bool:
    def norm(url: str) -> str:
        return url.rstrip("/").removesuffix(".git").lower()

    return norm(a) == norm(b)
