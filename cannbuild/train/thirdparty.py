"""The draft's `[[repos.<name>.third_party]]` rules, from what the repository at its
commit downloads (sources/archives.py up to 9.0, sources/canncmake.py from 9.1).

From 9.1 an archive no rule names is placed where its cann/cmake module takes a local
copy, and a module only test builds download is left out by the lock itself
(sources/reach.py), so the draft writes no rule for either; it lists them.  Up to 9.0
every archive needs a rule saying where that ref takes a copy, which only the base
recipe knows: its rules are kept for the archives still declared, and listed for review."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from msgspec import Struct
from msgspec.structs import fields

from ..decoded import JSONValue, to_plain
from ..recipes import RepoSpec
from ..sources.archives import Declared, declared_archives, preferred_place
from ..sources.canncmake import FETCH_CANN_CMAKE_FILES, cann_cmake_archives, checkout_of
from ..sources.checkout import cache_path
from ..sources.fetch import Fetcher
from ..sources.pins import resolve_pin
from ..workspace import Workspace
from .readout import Readout


class ArchiveRules(Struct, frozen=True, kw_only=True):
    rules: Tuple[Dict[str, JSONValue], ...]  # the TOML tables, in order
    read: Tuple[str, ...]  # what was found, for the draft's header
    undecided: Tuple[str, ...]


def cann_cmake_rules(
    fetcher: Fetcher,
    ws: Workspace,
    readout: Readout,
    cache: Path,
    base_repo: Optional[RepoSpec],
    fetched: Dict[str, Path],
) -> ArchiveRules:
    """9.1 on: the archives of the cann/cmake modules the checkout asks for."""
    pinned = next(p for p in readout.pins if p.pin.pin_file in FETCH_CANN_CMAKE_FILES)
    name = pinned.pin.source
    if name not in fetched:
        fetched[name] = cache_path(ws, name)
        fetcher.fetch_repo(fetched[name], pinned.url, root=ws.root)
    locked = resolve_pin(
        fetcher, cache, fetched[name], readout.repo, readout.commit, pinned.pin, pinned.url
    )
    label = f"{name}@{locked.commit[:12]}"
    declared, missing, unused = cann_cmake_archives(
        fetcher, cache, readout.commit, fetched[name], locked.commit, label, ws.third_party_memo
    )
    rules: List[Dict[str, JSONValue]] = []
    read = [
        f"{item.name} -> {preferred_place(item.url, item.places) or 'no local copy'} "
        f"({item.where}; {item.source})"
        for item in declared
    ]
    read += [f"not downloaded by a package build: {why}" for why in unused]
    undecided = [f"{readout.repo}: {note}" for note in missing]
    # the base recipe's rules carry over where its archives come from cann/cmake too
    kept = base_repo is not None and any(
        p.pin_file in FETCH_CANN_CMAKE_FILES for p in base_repo.pins
    )
    names = {d.module for d in declared} | {d.name for d in declared}
    dropped = []
    for rule in base_repo.third_party if base_repo else ():
        if kept and rule.name in names:
            rules.append(recipe_table(rule))
            undecided.append(
                f"[[repos.{readout.repo}.third_party]] {rule.name!r} is the base recipe's "
                f"({rule.source}): check it still holds at {readout.commit[:12]}."
            )
        elif rule.needed:
            dropped.append(rule.name)
    if dropped:
        undecided.append(
            f"[[repos.{readout.repo}.third_party]] of the base recipe left out "
            f"({', '.join(dropped)}): at this ref the archives come from cann/cmake modules, "
            "each placed where its module takes a copy unless a rule says otherwise; add a "
            "rule where a step needs one elsewhere (ops-transformer 9.1's custom package packs "
            "with makeself from <src>/third_party/makeself, cmake/custom_build.cmake)."
        )
    return ArchiveRules(rules=tuple(rules), read=tuple(read), undecided=tuple(undecided))


def recipe_table(table: Struct) -> Dict[str, JSONValue]:
    """A recipe table as a recipe file writes it: the fields not at their default."""
    plain = to_plain(table)
    return {
        f.encode_name: plain[f.encode_name]
        for f in fields(table)
        if f.required or plain[f.encode_name] != to_plain(f.default)
    }


def module_rules(
    fetcher: Fetcher, ws: Workspace, readout: Readout, cache: Path, base_repo: Optional[RepoSpec]
) -> ArchiveRules:
    """Up to 9.0: what cmake/third_party/*.cmake declares, with the base recipe's rules."""
    declared = declared_archives(fetcher, cache, readout.commit, ws.third_party_memo)
    names = {d.name for d in declared}
    rules: List[Dict[str, JSONValue]] = []
    undecided: List[str] = []
    covered = set()
    for rule in base_repo.third_party if base_repo else ():
        covered.add(rule.name)
        if rule.name in names or not rule.needed:
            rules.append(recipe_table(rule))
            if rule.needed:
                undecided.append(
                    f"[[repos.{readout.repo}.third_party]] {rule.name!r}: its place and source "
                    f"are the base recipe's ({rule.source}); check them at {readout.commit[:12]}."
                )
        else:
            undecided.append(
                f"[[repos.{readout.repo}.third_party]] {rule.name!r} of the base recipe was "
                f"dropped: {_not_declared(rule.name, declared, readout)}."
            )
    unused = _test_only(fetcher, cache, readout, [d for d in declared if d.name not in covered])
    for item in declared:
        if item.name not in covered and item.name not in unused:
            undecided.append(
                f"{readout.repo}: {item.where} downloads {item.url} ({item.name}), which no "
                "rule places: add a [[third_party]] rule with the place this ref takes a copy."
            )
    read = [f"{d.name}: {readout.cite(d.where)}" for d in declared if d.name not in unused]
    read += [f"not downloaded by a package build: {name}: {why}" for name, why in unused.items()]
    return ArchiveRules(rules=tuple(rules), read=tuple(read), undecided=tuple(undecided))


def _not_declared(name: str, declared: Sequence[Declared], readout: Readout) -> str:
    """Why a base rule has no archive here: a 9.1 rule is named after a cann/cmake module
    (`makeself-fetch`), which at an older layout is the checkout's own module file
    downloading an archive of another name (ops-transformer@9.1.0-beta.2:
    cmake/third_party/makeself-fetch.cmake:15, makeself)."""
    own = [d for d in declared if posixpath.basename(d.where.rsplit(":", 1)[0]) == f"{name}.cmake"]
    if own:
        return (
            f"{readout.repo} at {readout.commit[:12]} has no cann/cmake module {name}; its own "
            f"{own[0].where} downloads {own[0].name} (listed below, with no rule)"
        )
    return f"{readout.repo} at {readout.commit[:12]} does not download it"


def _test_only(
    fetcher: Fetcher, cache: Path, readout: Readout, declared: List[Declared]
) -> Dict[str, str]:
    """The archives (name -> why) whose module a package build never includes: included
    only under a test switch (ops-transformer@9.1.0-beta.2:CMakeLists.txt:131-133,
    `if (ENABLE_TEST)` around gtest.cmake), or nowhere (its secure_c.cmake); sources/reach.py."""
    if not declared:
        return {}
    checkout = checkout_of(fetcher, cache, readout.commit)
    unused: Dict[str, str] = {}
    for item in declared:
        module = item.where.rsplit(":", 1)[0]
        sites = checkout.included_at(module)
        if not sites:
            unused[item.name] = f"{module} is included nowhere at {readout.commit[:12]}"
        elif not any(checkout.reach.runs(p, n) for p, n in sites):
            at = ", ".join(f"{p}:{n}" for p, n in sites)
            unused[item.name] = (
                f"{module} is included only at {at}, which a package build does not run"
            )
    return unused
