"""The draft's `[[repos.<name>.third_party]]` rules, from what the repository at its
commit downloads (sources/archives.py up to 9.0, sources/canncmake.py from 9.1).

From 9.1 an archive no rule names is placed where its cann/cmake module takes a local
copy, so the draft writes a rule only for a module the checkout asks for in test builds
alone (`needed = false`: ops-transformer@9.1.0:CMakeLists.txt:137-140 `if (ENABLE_TEST)`,
opbase@9.1.0:cmake/config.cmake:66-69 `if (ENABLE_UT OR ENABLE_ST)`).  Up to 9.0 every
archive needs a rule saying where that ref takes a copy, which only the base recipe
knows: its rules are kept for the archives still declared, and listed for review."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from msgspec import Struct

from ..decoded import JSONValue
from ..recipes import ArchiveRule, RepoSpec
from ..recipes.optspec import code_of
from ..sources.archives import Declared, declared_archives, preferred_place
from ..sources.canncmake import FETCH_CANN_CMAKE_FILES, cann_cmake_archives
from ..sources.checkout import cache_path
from ..sources.fetch import Fetcher
from ..sources.pins import resolve_pin
from ..workspace import Workspace
from .readout import Readout, show

# A condition only a test build sets: ENABLE_TEST, ENABLE_UT, ENABLE_ST, UT_TEST_ALL,
# OP_KERNEL_AICPU_UT (ops-transformer@9.1.0:cmake/ut.cmake:514), BUILD_TESTING.
_TEST = re.compile(
    r"(?<![A-Za-z0-9])(?:[A-Z0-9]+_)*(?:TEST|TESTING|UT|ST|LLT)(?:_[A-Z0-9]+)*(?![A-Za-z0-9])"
)
_BLOCK = re.compile(
    r"^\s*(if|elseif|else|endif|function|endfunction|macro|endmacro)\s*\((.*)\)\s*$", re.IGNORECASE
)
_SITE = re.compile(r"([^\s,()]+):(\d+)")


class ArchiveRules(Struct, frozen=True, kw_only=True):
    rules: Tuple[Dict[str, JSONValue], ...]  # the TOML tables, in order
    read: Tuple[str, ...]  # what was found, for the draft's header
    undecided: Tuple[str, ...]


def enclosing(text: str, line: int) -> List[str]:
    """The conditions of the `if` blocks around `line` of a CMake file, innermost last;
    an `else` branch or a function body counts as no test condition."""
    stack: List[str] = []
    for raw in text.splitlines()[: max(line - 1, 0)]:
        match = _BLOCK.match(code_of(raw))
        if not match:
            continue
        word, cond = match.group(1).lower(), match.group(2).strip()
        if word in ("if", "function", "macro"):
            stack.append(cond if word == "if" else "")
        elif word == "elseif" and stack:
            stack[-1] = cond
        elif word == "else" and stack:
            stack[-1] = ""
        elif stack:
            stack.pop()
    return stack


def _sites(source: str) -> List[Tuple[str, int]]:
    """(path, line) of each place the checkout asks for a module, from the `source` of a
    canncmake.Declared ("add_cann_third_party(x) at A:1, B:2 (fn, ...); ...")."""
    asked = source.split(";", 1)[0].split(" at ", 1)[-1]
    return [(p, int(n)) for p, n in _SITE.findall(re.sub(r"\([^)]*\)", "", asked))]


def test_only(
    fetcher: Fetcher, cache: Path, commit: str, item: Declared
) -> Optional[Tuple[str, int, str]]:
    """(path, line, condition) of a call when every call of the module is inside a test
    condition; None otherwise."""
    first: Optional[Tuple[str, int, str]] = None
    sites = _sites(item.source)
    for path, line in sites:
        text = show(fetcher, cache, commit, path) or ""
        conds = [c for c in enclosing(text, line) if _TEST.search(c)]
        if not conds:
            return None
        first = first or (path, line, conds[-1])
    return first


def _rule(rule_name: str, **values: JSONValue) -> Dict[str, JSONValue]:
    return {"name": rule_name, **values}


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
    declared, missing = cann_cmake_archives(
        fetcher, cache, readout.commit, fetched[name], locked.commit, label, ws.third_party_memo
    )
    rules: List[Dict[str, JSONValue]] = []
    read: List[str] = []
    undecided = [f"{readout.repo}: {note}" for note in missing]
    ruled = set()
    for item in declared:
        only = test_only(fetcher, cache, readout.commit, item)
        if only is not None and item.module not in ruled:
            path, line, cond = only
            ruled.add(item.module)
            cite = readout.cite(path, line)
            rules.append(_rule(item.module, needed=False, source=f"{cite}: only with {cond}"))
            read.append(f"{item.module}: needed = false, {cite} inside if({cond})")
        elif only is None:
            place = preferred_place(item.url, item.places) or "no local copy"
            asked = ", ".join(f"{p}:{n}" for p, n in _sites(item.source)[:2])
            read.append(f"{item.name} -> {place} ({item.where}; asked for at {asked})")
    kept = _same_layout(base_repo)
    names = {d.module for d in declared} | {d.name for d in declared}
    dropped = []
    for rule in base_repo.third_party if base_repo else ():
        if rule.name in ruled:
            continue
        if kept and rule.name in names:
            rules.append(_table(rule))
            undecided.append(
                f"[[repos.{readout.repo}.third_party]] {rule.name!r} is the base recipe's "
                f"({rule.source}): check it still holds at {readout.commit[:12]}."
            )
        else:
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


def _same_layout(base_repo: Optional[RepoSpec]) -> bool:
    return base_repo is not None and any(
        p.pin_file in FETCH_CANN_CMAKE_FILES for p in base_repo.pins
    )


def _table(rule: ArchiveRule) -> Dict[str, JSONValue]:
    """An ArchiveRule as its TOML table (defaults left out)."""
    out: Dict[str, JSONValue] = {"name": rule.name}
    if not rule.needed:
        out["needed"] = False
    if rule.place:
        out["place"] = list(rule.place)
    out["source"] = rule.source
    for key, value in (("url", rule.url), ("sha256", rule.sha256), ("md5", rule.md5)):
        if value:
            out[key] = value
    return out


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
            rules.append(_table(rule))
            if rule.needed:
                undecided.append(
                    f"[[repos.{readout.repo}.third_party]] {rule.name!r}: its place and source "
                    f"are the base recipe's ({rule.source}); check them at {readout.commit[:12]}."
                )
        else:
            undecided.append(
                f"[[repos.{readout.repo}.third_party]] {rule.name!r} of the base recipe was "
                f"dropped: {readout.repo} at {readout.commit[:12]} does not download it."
            )
    for item in declared:
        if item.name not in covered:
            undecided.append(
                f"{readout.repo}: {item.where} downloads {item.url} ({item.name}), which no "
                "rule places: add a [[third_party]] rule with the place this ref takes a copy."
            )
    read = [f"{d.name}: {readout.cite(d.where)}" for d in declared]
    return ArchiveRules(rules=tuple(rules), read=tuple(read), undecided=tuple(undecided))


__all__ = ["ArchiveRules", "cann_cmake_rules", "enclosing", "module_rules", "test_only"]
