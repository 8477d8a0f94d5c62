"""What the rest of cannbuild sees of the sources: a repo's checkout identity once it is
ready (`Sources`), and the state a finished sync leaves (`SourceState`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Protocol, Sequence, Tuple

from msgspec import Struct, field
from msgspec.structs import replace

from .lock import Lock, LockedArchive, LockedRepo

LOCKED, REFRESH, RESOLVE = "locked", "refresh", "resolve"


class Sources(Protocol):
    """What a step needs of the sources: its repo's checkout identity, once it is ready."""

    def identity_of(self, repo: str) -> Mapping[str, Any]: ...

    def is_ready(self, repo: str, within_s: float = 0.0) -> bool: ...


class SourceState(Struct, frozen=True, kw_only=True):
    lock: Lock
    checkouts: Mapping[str, Path]
    identities: Mapping[str, Mapping[str, Any]]
    changed: Sequence[str]
    lock_written: bool
    notes: Sequence[str] = field(default=())

    def identity_of(self, repo: str) -> Mapping[str, Any]:
        return self.identities[repo]

    def is_ready(self, repo: str, within_s: float = 0.0) -> bool:
        return True


class RepoReady(Struct, frozen=True, kw_only=True):
    """One repository checked out: what the lock says of it, and the checkout's identity."""

    name: str
    path: Path
    identity: Mapping[str, Any]
    changed: bool
    locked: Tuple[LockedRepo, ...]  # the repo, then its nested pin if it has one
    commit_time: int
    moved: Optional[str]  # "<repo>: tag X moved from A to B", when resolving found that
    archives: Tuple[LockedArchive, ...] = ()  # the third-party archives put into it
    notes: Tuple[str, ...] = ()
    # (lock name, where its commit was fetched from): the repo and its nested pins
    origins: Tuple[Tuple[str, str], ...] = ()


def pin_name(repo: str, dest: str) -> str:
    return f"{repo}:{dest}"


def merged_archives(ready: Sequence[RepoReady]) -> Tuple[LockedArchive, ...]:
    """One lock entry per archive URL, naming every checkout it is put into (and where,
    for one placed by its cann/cmake module).

    When one checkout places an archive by a recipe rule and another where its cann/cmake
    module takes it (the 9.1 recipe's makeself: unpacked for ops-transformer, the tarball
    for opbase), the entry keeps the rule's name: reading the lock back
    (`pinning.locked_seeds`) finds a rule's archive by that name, a module's by `places`."""
    merged: Dict[str, LockedArchive] = {}
    for r in ready:
        for a in r.archives:
            old = merged.get(a.url)
            if old is None:
                merged[a.url] = a
            elif r.name not in old.repos:
                by_rule = not a.places and all(repo in old.places for repo in old.repos)
                merged[a.url] = replace(
                    old,
                    name=a.name if by_rule else old.name,
                    repos=(*old.repos, r.name),
                    places={**old.places, **a.places},
                )
    return tuple(merged.values())
