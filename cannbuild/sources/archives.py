"""Third-party archives a checkout's own CMake downloads, and where its ref takes a copy.

The real opbase and ops-transformer builds download protobuf, abseil-cpp, eigen,
nlohmann json and makeself with CMake (`ExternalProject_Add` / `FetchContent_Declare`
with `URL` and `URL_HASH` / `URL_MD5`) while they configure and build.  A git mirror
rule never reaches those downloads, and the upstream CMake has no URL override, so
cannbuild reads the archives (URL and declared hash) from the checkout's own
`cmake/third_party/*.cmake` at the pinned commit, fetches them itself (through the
mirror map, pinned by sha256 in the lock, carried in offline bundles) and puts each
where that ref looks for a local copy before downloading.  Where that is differs per
repository and per tag; the recipe says it (`[[repos.<name>.third_party]]`, each
entry citing the upstream lines), and may add archives or override a URL or hash.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from msgspec import Struct
from msgspec.structs import replace

from ..bounded import ARCHIVE, MEMO, digest, read_state
from ..errors import FetchError, UsageError
from ..recipes import RepoSpec
from ..redact import redact
from ..workspace import remember
from .fetch import Fetcher

# Where both repos declare their downloads up to 9.0 (makeself-fetch.cmake, protobuf.cmake,
# eigen.cmake, json.cmake, ...).  From v9.1.0.pre these modules are gone and
# `add_cann_third_party` in the shared cann/cmake repository declares them instead (reference
# real-host-findings.md §6): a checkout with cmake/fetch_cann_cmake.cmake is read by
# canncmake.py, through the cann/cmake commit the recipe pins.
THIRD_PARTY_DIR = "cmake/third_party"
# json comes as `include.zip`; the others as `.tar.gz`.
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".zip")

# A plain one-value `set`, the shape that carries a URL or file name upstream:
#   set(MAKESELF_URL "https://gitcode.com/cann-src-third-party/makeself/releases/...tar.gz")
#   set(EIGEN_VERSION_PKG eigen-5.0.0.tar.gz)
SET = re.compile(r'^\s*set\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s+"?([^\s")]+)"?\s*\)', re.IGNORECASE)
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
FULL_ID = re.compile(r"[0-9a-f]{40,64}")
# Stops at a quote, `)` or blank, where the URL ends inside `URL ${REQ_URL})` or `"..."`.
_URL = re.compile(r"(?:https?|ftp)://[^\s\"'<>()]+")
# `URL_HASH SHA256=<64 hex>` (FetchContent_Declare / ExternalProject_Add), `EXPECTED_HASH`
# (file(DOWNLOAD)), and `URL_MD5 <32 hex>`, which opbase v8.5.0 / v9.0.0 use for makeself.
_HASH = re.compile(
    r"\b(?:URL_HASH|EXPECTED_HASH)\s+\"?(SHA256|MD5)=([0-9a-fA-F]+)|\bURL_MD5\s+\"?([0-9a-fA-F]{32})\b",
    re.IGNORECASE,
)


class Declared(Struct, frozen=True, kw_only=True):
    """An archive a repo's CMake downloads, as its `cmake/third_party/*.cmake` declares it,
    or (9.1 layout, canncmake.py) a module of the shared cann/cmake repository."""

    name: str
    url: str
    where: str  # "cmake/third_party/json.cmake:46"
    md5: Optional[str] = None
    sha256: Optional[str] = None
    hashed: str = ""  # the line that declares its hash ("cmake/third_party/json.cmake:55")
    # 9.1 layout only: the `add_cann_third_party` name, the local copies the module takes
    # (checkout-relative, in the order it checks; "dir/" = unpacked), and the lines that say so
    module: str = ""
    places: Tuple[str, ...] = ()
    source: str = ""


class Needed(Struct, frozen=True, kw_only=True):
    """One archive a repo's build downloads at its pinned commit, and where its copy goes."""

    name: str
    url: str
    place: str  # checkout-relative; "" when the ref accepts no local copy; "dir/" = unpacked
    source: str  # the upstream lines that say where the ref looks
    where: str  # the cmake line that declares it, or the recipe
    md5: Optional[str] = None
    sha256: Optional[str] = None
    # where md5/sha256 are declared: "ops-transformer@1a2b3c4d5e6f cmake/third_party/x.cmake:35",
    # or the recipe's entry when it overrides them (hash_by "recipe")
    hash_at: str = ""
    hash_by: str = "checkout"
    # placed where the cann/cmake module takes a copy, no recipe rule saying so: the lock
    # records the place
    from_cmake: bool = False
    places: Tuple[str, ...] = ()  # every place the ref takes a copy at, `place` first


class ArchivePlan(Struct, frozen=True, kw_only=True):
    placed: Tuple[Needed, ...]  # fetched, locked, bundled and put in place
    unplaceable: Tuple[Needed, ...]  # the build downloads them itself, every time
    unknown: Tuple[Declared, ...]  # declared, but the recipe says nothing of them


def archive_name(url: str) -> str:
    """`https://gitcode.com/cann-src-third-party/eigen/releases/...` -> `eigen`: the
    project of a forge URL, else the file name without its archive suffix."""
    parts = [p for p in urlsplit(url).path.split("/") if p]
    # A forge path is `/<owner>/<project>/releases/download/...`: gitcode.com/cann-src-third-party
    # and gitee.com/openeuler/libboundscheck both put the project second.
    if len(parts) >= 3:
        return parts[1]
    return archive_stem(parts[-1] if parts else url)


def archive_stem(url: str) -> str:
    """`.../eigen/releases/download/5.0.0-h0.trunk/eigen-5.0.0.tar.gz` -> `eigen-5.0.0`:
    the file name without its archive suffix, whatever host serves it, so an archive
    keeps its name when it moves between gitcode releases and the OBS bucket."""
    name = url.rstrip("/").rsplit("/", 1)[-1]
    for suffix in ARCHIVE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _is_archive(url: str) -> bool:
    # A URL still holding `${...}` names a file only the build's own variables can resolve.
    return url.lower().endswith(ARCHIVE_SUFFIXES) and "${" not in url


def discover(files: Mapping[str, str]) -> Tuple[Declared, ...]:
    """The archive URLs (and their declared hashes) in CMake files, path -> text.

    `${VAR}` is expanded where the same file sets VAR to a plain value.  A hash belongs
    to the nearest archive URL written before it (else the first one after it): the
    shapes the upstream files use, a URL set in a variable and the hash in the
    `ExternalProject_Add` or `FetchContent_Declare` below it."""
    found: Dict[str, Declared] = {}
    for path in sorted(files):
        lines = files[path].splitlines()
        variables: Dict[str, str] = {}
        # Only plain values count (a local-copy branch's `file://${CANN_3RD_LIB_PATH}/...` is
        # none), and a name's first plain value wins.
        for line in lines:
            match = SET.match(line)
            if match and "${" not in match.group(2):
                variables.setdefault(match.group(1), match.group(2))
        urls: List[Tuple[Tuple[int, int], str]] = []
        hashes: List[Tuple[Tuple[int, int], str, str]] = []
        # the line a URL is written out on, which `where` names over one that expands to it
        # (`if(NOT EXISTS ${PROTOBUF_PATH})` above `set(PROTOBUF_PATH "https://...")`)
        written: Dict[str, int] = {}
        for number, line in enumerate(lines, 1):
            # A commented-out `# ExternalProject_Add(old URL https://...)` declares nothing.
            if line.lstrip().startswith("#"):
                continue
            text = _expand(line, variables)
            for match in _URL.finditer(text):
                url = match.group(0).rstrip("\"'")
                # A git URL (`GIT_REPOSITORY https://gitcode.com/cann/opbase.git`) is no archive: a
                # recipe's pinned sources place that checkout (ready.py).
                if _is_archive(url):
                    urls.append(((number, match.start()), url))
                    if url in line:
                        written.setdefault(url, number)
            for match in _HASH.finditer(text):
                algo, value = (
                    (match.group(1), match.group(2)) if match.group(1) else ("MD5", match.group(3))
                )
                hashes.append(((number, match.start()), algo.lower(), value.lower()))
        declared: Dict[str, Dict[str, str]] = {}
        # Positions are (line, column), so "before" also works for a URL and hash on one line.
        for pos, url in urls:
            declared.setdefault(url, {"where": f"{path}:{written.get(url, pos[0])}"})
        for pos, algo, value in hashes:
            before = [u for p, u in urls if p < pos]
            after = [u for p, u in urls if p > pos]
            owner = before[-1] if before else (after[0] if after else None)
            if owner is not None:
                declared[owner].setdefault(algo, value)
                declared[owner].setdefault("hashed", f"{path}:{pos[0]}")
        # The same URL in two files is one archive: the first file names it, either may add a hash.
        for url, facts in declared.items():
            old = found.get(url)
            if old is not None:
                found[url] = replace(
                    old,
                    md5=old.md5 or facts.get("md5"),
                    sha256=old.sha256 or facts.get("sha256"),
                    hashed=old.hashed or facts.get("hashed", ""),
                )
            else:
                found[url] = Declared(
                    name=archive_name(url),
                    url=url,
                    where=facts["where"],
                    md5=facts.get("md5"),
                    sha256=facts.get("sha256"),
                    hashed=facts.get("hashed", ""),
                )
    return tuple(found.values())


def _expand(line: str, variables: Mapping[str, str]) -> str:
    return VAR.sub(lambda m: variables.get(m.group(1), m.group(0)), line)


def plan_archives(
    recipe_path: Path, repo: RepoSpec, commit: str, declared: Sequence[Declared]
) -> ArchivePlan:
    """The recipe's rules for `repo` applied to what its CMake declares at `commit`.

    A rule matches an archive by its name or (9.1 layout) its module's name.  An archive
    no rule covers is placed where its cann/cmake module takes a copy (`places`), else
    listed as unknown."""
    by_name: Dict[str, List[Declared]] = {}
    for found_item in declared:
        for key in dict.fromkeys(k for k in (found_item.name, found_item.module) if k):
            by_name.setdefault(key, []).append(found_item)
    placed: List[Needed] = []
    unplaceable: List[Needed] = []
    covered = set()
    for rule in repo.third_party:
        covered.add(rule.name)
        if not rule.needed:
            continue
        matches = by_name.get(rule.name, [])
        # An entry's url picks one of several declared URLs with that name, or adds an archive the
        # cmake files do not declare (no hash then, unless the entry gives one).
        if rule.url is not None:
            same = [d for d in matches if d.url == rule.url]
            found = same[0] if same else None
            url = rule.url
        elif len(matches) == 1:
            found = matches[0]
            url = found.url
        elif not matches:
            raise UsageError(
                f"recipe {recipe_path}: [[repos.{repo.name}.third_party]] {rule.name!r} names an "
                f"archive that {repo.name}'s {_declaring(declared)} at {commit[:12]} does not "
                f"download (it declares {_listed(declared)}).",
                "Give the entry a url (to add the archive), or remove it: this ref may not need it.",
            )
        else:
            raise UsageError(
                f"recipe {recipe_path}: [[repos.{repo.name}.third_party]] {rule.name!r} matches "
                f"{len(matches)} URLs in {repo.name} at {commit[:12]} "
                f"({', '.join(redact(m.url) for m in matches)}).",
                "Set the entry's url to the one it means.",
            )
        item = Needed(
            name=rule.name,
            url=url,
            # The copy goes to the first place, the one the recipe prefers; the rest document the
            # other spots that ref would also accept.
            place=rule.place[0] if rule.place else "",
            places=tuple(rule.place),
            source=rule.source,
            where=found.where if found else f"recipe {recipe_path.name}",
            md5=rule.md5 or (found.md5 if found else None),
            sha256=rule.sha256 or (found.sha256 if found else None),
            hash_at=(
                f"recipe {recipe_path} [[repos.{repo.name}.third_party]] {rule.name!r}"
                if rule.md5 or rule.sha256
                else _hash_at(found, repo.name, commit)
                if found
                else ""
            ),
            hash_by="recipe" if rule.md5 or rule.sha256 else "checkout",
        )
        (placed if item.place else unplaceable).append(item)
    rest = [d for d in declared if d.name not in covered and d.module not in covered]
    placed += [
        Needed(
            name=d.name,
            url=d.url,
            place=preferred_place(d.url, d.places),
            places=d.places,
            source=d.source,
            where=d.where,
            md5=d.md5,
            sha256=d.sha256,
            hash_at=_hash_at(d, repo.name, commit),
            from_cmake=True,
        )
        for d in rest
        if d.places
    ]
    unknown = tuple(d for d in rest if not d.places)
    return ArchivePlan(placed=tuple(placed), unplaceable=tuple(unplaceable), unknown=unknown)


def _hash_at(found: Declared, repo: str, commit: str) -> str:
    """The line declaring `found`'s hash, in the repository and commit it is read from
    (a cann/cmake module's `where` names its repository and commit already)."""
    line = found.hashed or found.where
    return line if found.module else f"{repo}@{commit[:12]} {line}"


def preferred_place(url: str, places: Sequence[str]) -> str:
    """Where cannbuild puts an archive its cann/cmake module takes a copy of: a place
    named as the archive's own file (copied there as downloaded), else a folder
    (unpacked), else the first place."""
    name = url.rstrip("/").rsplit("/", 1)[-1]
    for place in places:
        if place.rsplit("/", 1)[-1] == name:
            return place
    for place in places:
        if place.endswith("/"):
            return place
    return places[0] if places else ""


def _declaring(declared: Sequence[Declared]) -> str:
    if any(d.module for d in declared):
        return "add_cann_third_party modules"
    return f"{THIRD_PARTY_DIR}/*.cmake"


def _listed(declared: Sequence[Declared]) -> str:
    if not declared:
        return "no archive"
    return ", ".join(sorted({d.name for d in declared}))


class Expected(Struct, frozen=True, kw_only=True):
    """A hash a fetched archive must have, and who declares it (`at` names the file and
    line): the checkout's CMake, the recipe, or cannbuild's lock, in which a resolving run
    (`cannbuild lock` itself) keeps the pin of a file upstream gives no hash for."""

    algo: str  # "sha256" or "md5"
    value: str
    at: str
    by: str = "checkout"  # "checkout", "recipe", "lock", or "kept" (the lock, while resolving)


def expected_hashes(
    item: Needed, locked: Optional[str], lock_file: Path, resolving: bool
) -> Tuple[Expected, ...]:
    """What `item`'s file must hash to: the lock's sha256 (`locked`) first, then each
    hash the checkout's CMake (or the recipe) declares, which its build checks too.  A
    lock that agrees with the declared sha256 adds nothing: that hash is upstream's."""
    declared = tuple(
        Expected(algo=algo, value=value, at=item.hash_at or item.where, by=item.hash_by)
        for algo, value in (("sha256", item.sha256), ("md5", item.md5))
        if value
    )
    if not locked or locked == item.sha256:
        return declared
    kept = Expected(
        algo="sha256", value=locked, at=str(lock_file), by="kept" if resolving else "lock"
    )
    return (kept, *declared)


# What can be done about a file that lacks the hash, by who expects it.
_FIXES = {
    "lock": "The file changed upstream since the lock was made, or the mirror serves another "
    "file: check it, then run `cannbuild lock` to re-pin it deliberately (and commit the lock).",
    "kept": "The lock pinned an earlier download of it, and upstream declares no hash: check the "
    "file; to pin the new one deliberately, remove its [[third_party]] entry from {at} and run "
    "`cannbuild lock` again.",
    "recipe": "The recipe overrides upstream's hash there: check the file, then correct that "
    "entry's hash, or remove it to take the hash the checkout declares.",
    "checkout": "The hash is upstream's, so re-locking cannot change it: serve the real file, "
    "through a cannbuild.mirrors rule (invoke.yaml) for {prefix} to a mirror that holds it byte "
    "for byte, or with an offline bundle made where the URL is reachable (`cannbuild bundle "
    "OUT.tar` there, `cannbuild setup --offline --bundle OUT.tar` here).",
}


def check_hashes(
    path: Path,
    sha256: str,
    url: str,
    via: str,
    expects: Sequence[Expected],
    stand_in: bool = False,
) -> None:
    """Refuse a file that lacks a hash it must have, naming where that hash is declared
    and what can be done.  `sha256`: the file's; `via`: the URL after the mirror rules;
    `stand_in`: the sandbox served its stand-in of the file."""
    for want in expects:
        actual = sha256 if want.algo == "sha256" else digest(path, ARCHIVE, want.algo)
        if actual == want.value:
            continue
        fetched = "" if via == url else f" (fetched as {redact(via)})"
        fix = _FIXES[want.by].format(at=want.at, prefix=_prefix(url))
        if stand_in:
            fetched = f" (fetched as {redact(via)}: the sandbox's stand-in, not the real file)"
            if want.by == "checkout":
                fix = (
                    "The sandbox serves stand-ins of the third-party archives, which match only "
                    f"its stand-in repositories' hashes; real repositories need the real files. {fix} "
                    "Or take the stand-in by name, `--accept-stand-in <archive>` (or all): the "
                    "lock, the report and status then say so."
                )
        said = f"{redact(url)}{fetched} has {want.algo} {actual}, but {want.at}"
        if want.by in ("lock", "kept"):
            raise FetchError(f"{said} pins {want.value}.", fix)
        raise FetchError(
            f"{said} declares {want.value}: the build checks that hash itself and would "
            "reject the file.",
            fix,
        )


def _prefix(url: str) -> str:
    """The part of an archive URL a mirror rule would name: its host, and on a forge
    (`/<owner>/<project>/releases/...`, as archive_name reads it) the owner."""
    parts = urlsplit(url)
    path = [p for p in parts.path.split("/") if p]
    owner = f"{path[0]}/" if len(path) >= 3 else ""
    return f"{parts.scheme}://{parts.netloc}/{owner}"


def declared_matches(path: Path, item: Needed) -> bool:
    """Whether the file has the hashes the checkout declares."""
    for algo, expected in (("md5", item.md5), ("sha256", item.sha256)):
        if expected and digest(path, ARCHIVE, algo) != expected:
            return False
    return True


def accept_stand_in(item: Needed, repo: str, sha256: str) -> Tuple[Needed, str]:
    """The sandbox's stand-in taken for `item` by name: put unpacked where the build takes
    a copy without checking a hash (a file copy would be checked against the declared one
    and refused), and the reason the lock, the report and status show."""
    place = next((p for p in item.places if p.endswith("/")), None)
    declared = ", ".join(f"{a} {h}" for a, h in (("sha256", item.sha256), ("md5", item.md5)) if h)
    if place is None:
        raise FetchError(
            f"{repo}'s {item.where} declares {declared} for {item.name} ({redact(item.url)}), "
            "and the sandbox serves only its stand-in; this ref checks the hash of every local "
            f"copy it takes ({item.source or 'no unpacked copy is taken'}), so no stand-in can "
            "be accepted for it.",
            "Serve the real file through a mirror rule (cannbuild.mirrors) or an offline bundle "
            "made where it is reachable.",
        )
    return replace(item, place=place), (
        f"sandbox stand-in {sha256[:12]} accepted with --accept-stand-in: {item.hash_at or item.where} "
        f"declares {declared}, which the sandbox cannot serve; unpacked at {place}, where the "
        "build takes a copy without a hash check"
    )


def declared_archives(
    fetcher: Fetcher, cache: Path, commit: str, memo: Optional[Path] = None
) -> Tuple[Declared, ...]:
    """What `cmake/third_party/*.cmake` declares at `commit`, read from the git cache.

    A commit's files never change, so they are kept in `memo` (one JSON per commit): a
    no-op rerun reads one file instead of running git once per .cmake file.  The raw
    files are kept, not the parse, so a newer cannbuild still parses them itself."""
    path = memo_file(memo, commit, ".json")
    files = read_state(path, MEMO, Dict[str, str]) if path is not None else None
    if files is None:
        # Read from the git cache without a checkout: one `git ls-tree`, one `git show` per file.
        listing = fetcher.git(["ls-tree", "--name-only", commit, THIRD_PARTY_DIR + "/"], cwd=cache)
        paths = [p for p in listing.splitlines() if p.endswith(".cmake")]
        files = {p: fetcher.git(["show", f"{commit}:{p}"], cwd=cache) for p in paths}
        if path is not None:
            remember(path, files)
    return discover(files)


def memo_file(memo: Optional[Path], commit: str, suffix: str) -> Optional[Path]:
    """`<memo>/<commit><suffix>`, the memo of what a commit holds; only a full object id
    (40 hex for SHA-1, 64 for SHA-256) may become a file name here."""
    return memo / f"{commit}{suffix}" if memo is not None and FULL_ID.fullmatch(commit) else None
