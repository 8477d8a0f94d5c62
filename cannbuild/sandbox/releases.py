"""What the sandbox emulates for each CANN release, and the stand-in repositories' history:
data, `recipes/sandbox/*.toml` (and a user's `cannbuild-recipes/sandbox/*.toml` after
them), read here into frozen records.

The stand-in `opbase`, `ops-transformer`, `ops-math`, `ops-nn`, `ops-cv`, `cmake`,
`ops-tensor` and toolkit host-side repositories carry one commit per state of the real
repositories that matters, each laid out by its flavor (flavors.py) or state; a
commit's date is fixed so its id is reproducible, and the commits of a repository are
made in date order, whichever file declares them.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type, Union

import msgspec
from msgspec import Struct, field
from msgspec.structs import replace

from .. import facts
from ..decoded import JSONObject
from ..errors import UsageError
from ..recipes import Recipe, render_ref
from ..resources import USER_DATA
from .flavors import OpbaseFlavor, OpsTransformerFlavor, SiblingFlavor, SiblingOp

# The makeself archive every ref's CMake downloads (reference real-host-findings.md §2).
MAKESELF_URL = (
    "https://gitcode.com/cann-src-third-party/makeself/releases/download/"
    "release-2.5.0-patch1.0/makeself-release-2.5.0-patch1.tar.gz"
)
UPSTREAM = "https://gitcode.com/"
Flavor = Union[OpbaseFlavor, OpsTransformerFlavor, SiblingFlavor]
# the repositories laid out from a file tree by `state` (sharedrepos.py, toolkit_files.py)
TREE_REPOS = ("cmake", "ops-tensor", "toolkit")


class Release(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A CANN release the sandbox can lay out."""

    version: str = ""  # its key in the data
    layout: str  # "ascend-toolkit" (<= 8.3) or "cann" (>= 8.5)
    innerversion: str
    compatible_version: str
    driver: str
    driver_inner: str
    driver_compatible: str
    opbase_in_toolkit: bool
    opbase_version: str = ""  # share/info/opbase/version.info's; default: the release
    share_info: Tuple[str, ...] = ()

    @property
    def host_side_from_repos(self) -> bool:
        """The toolkit's host side comes from the open-source repositories the recipe
        names (`toolkit = true`): from 8.5, the first release hicann/manifest lists them
        for; 8.3's is the sandbox's emulation."""
        return self.layout == "cann"


class Commit(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One commit of a stand-in repository; `repo = "toolkit"` is the one history of
    every toolkit host-side repository."""

    repo: str
    date: str
    message: str
    # the stand-in state it lays out: the `ref` of a [flavor.<repo>] table in the data,
    # resolved to that flavor; none for the repositories laid out by `state`
    flavor: Optional[Flavor] = None
    state: str = ""  # cmake, ops-tensor, toolkit: what its files say they are
    tags: Tuple[str, ...] = ()
    branches: Tuple[str, ...] = ()  # made at this commit besides master
    note: str = ""  # an extra README line, to make a distinct commit
    register_in_ge: bool = False  # toolkit: the operator definition headers ship in ge


class _CommitRow(Commit, frozen=True, kw_only=True, forbid_unknown_fields=True):
    flavor: Optional[str] = None  # type: ignore[assignment]  # the name, resolved later


class SandboxFile(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    toolkit_repos: Tuple[str, ...] = ()
    release: Dict[str, Release] = field(default_factory=dict)
    flavor: Dict[str, Dict[str, JSONObject]] = field(default_factory=dict)  # repo -> ref -> table
    sibling_op: Dict[str, JSONObject] = field(default_factory=dict)
    commit: Tuple[_CommitRow, ...] = ()


class StandIns(Struct, frozen=True, kw_only=True):
    """Every sandbox release and stand-in history the data declares."""

    releases: Dict[str, Release]
    histories: Dict[str, Tuple[Commit, ...]]  # repo -> its commits, oldest first
    toolkit_repos: Tuple[str, ...]
    files: Dict[Tuple[str, str], Path] = field(default_factory=dict)  # (repo, ref) -> its file

    def history(self, repo: str) -> Tuple[Commit, ...]:
        """`repo`'s commits; a toolkit host-side repository's are the one "toolkit" history."""
        return self.histories.get("toolkit" if repo in self.toolkit_repos else repo, ())

    def index(self, repo: str, message: str, by: Commit) -> int:
        """The commit of `repo` the pin of `by`'s flavor names by its message."""
        for i, commit in enumerate(self.history(repo)):
            if commit.message == message:
                return i
        ref = by.flavor.ref if by.flavor else ""
        raise _bad(
            self.files.get((by.repo, ref)),
            f"[flavor.{by.repo}.{ref!r}] pins the {repo} commit {message!r}, "
            f"which no [[commit]] of {repo} has",
        )

    def flavors(self) -> List[Flavor]:
        found: Dict[int, Flavor] = {}
        for history in self.histories.values():
            found.update((id(c.flavor), c.flavor) for c in history if c.flavor is not None)
        return list(found.values())


def _bad(path: Optional[Path], problem: str) -> UsageError:
    return UsageError(
        f"sandbox file {path or 'recipes/sandbox/*.toml'}: {problem}.",
        "Fix the file; the shipped recipes/sandbox/*.toml show each key with its source "
        "(a user's cannbuild-recipes/sandbox/*.toml are read after them).",
    )


def _kind(repo: str) -> Type[Flavor]:
    if repo == "opbase":
        return OpbaseFlavor
    return OpsTransformerFlavor if repo == "ops-transformer" else SiblingFlavor


def _flavors(files: Tuple[Tuple[Path, SandboxFile], ...]) -> Dict[Tuple[str, str], Flavor]:
    """(repo, ref) -> flavor: each table with the one it names in `from` under it."""
    tables = {
        (repo, ref): (path, t)
        for path, f in files
        for repo, refs in f.flavor.items()
        for ref, t in refs.items()
    }
    ops = {name: op for _, f in files for name, op in f.sibling_op.items()}

    def merged(key: Tuple[str, str], seen: Tuple[str, ...]) -> JSONObject:
        path, table = tables[key]
        table = dict(table)
        base = table.pop("from", None)
        if base is None:
            return table
        if (key[0], base) not in tables or base in seen:
            raise _bad(
                path,
                f"[flavor.{key[0]}.{key[1]!r}] from = {base!r} names no other flavor of {key[0]}",
            )
        return {**merged((key[0], base), (*seen, key[1])), **table}

    out: Dict[Tuple[str, str], Flavor] = {}
    for (repo, ref), (path, _) in tables.items():
        data = {**merged((repo, ref), ()), "ref": ref}
        if _kind(repo) is SiblingFlavor:
            op = data.get("op")
            if op not in ops:
                raise _bad(path, f"[flavor.{repo}.{ref!r}] op = {op!r} names no [sibling_op] table")
            data.update(repo=repo, op=msgspec.convert({**ops[op], "name": op}, SiblingOp))
        try:
            out[(repo, ref)] = msgspec.convert(data, _kind(repo))
        except msgspec.ValidationError as exc:
            raise _bad(path, f"[flavor.{repo}.{ref!r}]: {exc}") from None
    return out


def standins(cwd: Optional[Path] = None) -> StandIns:
    """The sandbox's data, read (once per process while the files stay the same)."""
    files = facts.read(facts.SANDBOX, SandboxFile, cwd)
    flavors = _flavors(files)
    histories: Dict[str, List[Commit]] = {}
    for path, f in files:
        for number, row in enumerate(f.commit, 1):
            key = f"[[commit]] #{number} ({row.repo} {row.message!r})"
            flavor = None
            if row.repo not in TREE_REPOS:
                flavor = flavors.get((row.repo, row.flavor or ""))
                if flavor is None:
                    known = ", ".join(ref for repo, ref in flavors if repo == row.repo)
                    raise _bad(
                        path,
                        f"{key} flavor = {row.flavor!r} names no [flavor.{row.repo}] table "
                        f"(there are: {known or 'none'})",
                    )
            try:
                datetime.fromisoformat(row.date)
            except ValueError:
                raise _bad(
                    path,
                    f"{key} date = {row.date!r} is not an ISO date such as "
                    "2026-07-09T12:00:00+08:00",
                ) from None
            fields = {**msgspec.structs.asdict(row), "flavor": flavor}
            histories.setdefault(row.repo, []).append(Commit(**fields))
    data = StandIns(
        releases={
            name: replace(rel, version=name) for _, f in files for name, rel in f.release.items()
        },
        histories={
            repo: tuple(sorted(h, key=lambda c: datetime.fromisoformat(c.date)))
            for repo, h in histories.items()
        },
        toolkit_repos=tuple(r for _, f in files for r in f.toolkit_repos),
        files={
            (repo, ref): path
            for path, f in files
            for repo, refs in f.flavor.items()
            for ref in refs
        },
    )
    for commit in (c for h in data.histories.values() for c in h):
        flavor = commit.flavor
        for repo, pin in (
            (("opbase", flavor.opbase_pin), ("ops-tensor", flavor.optensor_pin)) if flavor else ()
        ):
            if pin:  # a pin no commit has: named now, not halfway through making a sandbox
                data.index(repo, pin, commit)
    return data


def release(version: str) -> Release:
    known = standins().releases
    if version not in known:
        raise UsageError(
            f"--cann {version!r} is not a CANN release the sandbox can emulate.",
            f"Use one of {', '.join(known)}, or add it as data (README: Adding a train).",
        )
    return known[version]


def check_refs(
    recipe: Recipe, values: Mapping[str, Any], served: Sequence[str], cwd: Optional[Path] = None
) -> None:
    """Each tag or branch named for a release the sandbox emulates (`v9.2.0`, `9.2.0`) that
    the recipe renders, of a repository the sandbox serves (`served`), is one its stand-in
    carries: a new train's recipe without the sandbox data of its release is exit 2 naming
    both, not a fetch finding no such ref.  A ref of another release (ops 9.1.1, which has
    no branch upstream either) is left to the fetch, as on a real host."""
    data = standins(cwd)
    for repo in (r for r in recipe.repos if r.name in served):
        history = data.history(repo.name)
        ref = render_ref(repo, values)
        kind = "tag" if ref["tag"] else "branch"
        name = ref[kind] or ""
        if not history or ref["commit"] or name.lstrip("v") not in data.releases:
            continue
        names = {n for c in history for n in (c.tags if kind == "tag" else c.branches)}
        if name in names:
            continue
        raise UsageError(
            f"recipe {recipe.path} [repos.{repo.name}] {kind} = {getattr(repo, kind)!r} names "
            f"{kind} {name} of {repo.name}, which the sandbox's stand-in of release "
            f"{name.lstrip('v')} lacks: no [[commit]] "
            f"of {'toolkit' if repo.name in data.toolkit_repos else repo.name} in "
            f"recipes/sandbox/*.toml or {USER_DATA}/sandbox/*.toml has "
            f'{kind}{"s" if kind == "tag" else "es"} = ["{name}"].',
            f"Add one to {USER_DATA}/sandbox/<train>.toml (README: Adding a train), or give a "
            f"--cann whose {kind} it has ({', '.join(sorted(names)) or 'none'}).",
        )
