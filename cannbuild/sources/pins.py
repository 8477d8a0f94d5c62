"""Pinned sources: the git sources a checkout's own CMake clones at a pin it declares
(ops-transformer 9.0 opbase at OPBASE_TAG_ID; 9.1 also ops-tensor at OPTENSOR_TAG_ID and
the shared cann/cmake repository at the tag CANN_CMAKE_TAG).  cannbuild reads the pin
from the checkout at its locked commit, resolves it in the source's own git cache, and
locks it as a commit under `<repo>:<dest>`, naming the file and line that declared it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..errors import FetchError, UsageError
from ..recipes import Recipe, SourcePin
from ..redact import redact
from .checkout import has_commit, resolve_ref
from .fetch import Fetcher, GitFailed
from .lock import COMMIT, Lock, LockedRepo
from .state import pin_name


def read_pin(
    fetcher: Fetcher, cache: Path, owner: str, commit: str, pin: SourcePin
) -> Tuple[str, int]:
    """(the value `pin_regex` captures in `pin_file` of `owner` at `commit`, its line)."""
    where = f"[repos.{owner}] pin {pin.dest!r}"
    try:
        text = fetcher.git(["show", f"{commit}:{pin.pin_file}"], cwd=cache)
    except GitFailed:
        raise UsageError(
            f"{owner} at {commit[:12]} has no {pin.pin_file}, where the recipe's {where} "
            "reads its pin.",
            "The recipe does not match this ref: check its pins (opbase_source, pinned_sources).",
        ) from None
    match = re.search(pin.pin_regex, text)
    if not match or not match.group(1):
        raise UsageError(
            f"{pin.pin_file} at {owner} {commit[:12]} has no line matching {pin.pin_regex!r}.",
            "The recipe does not match this ref; check [repos.*.opbase_source] or "
            "[[repos.*.pinned_sources]].",
        )
    return match.group(1), text.count("\n", 0, match.start()) + 1


def resolve_pin(
    fetcher: Fetcher,
    owner_cache: Path,
    cache: Path,
    owner: str,
    commit: str,
    pin: SourcePin,
    url: str,
) -> LockedRepo:
    """The lock entry of `pin`: its value read from the checkout (`owner` at `commit`,
    in `owner_cache`), resolved in the pinned source's git `cache` (a tag peeled to the
    commit it tags) and checked to be there, since the build checks it out offline."""
    value, line = read_pin(fetcher, owner_cache, owner, commit, pin)
    declared = f"{pin.pin_file}:{line}"
    if pin.pin == "tag":
        pinned, _ = resolve_ref(fetcher, cache, {"tag": value}, url)
        ref = f"tag {value}, pinned by {declared}"
    else:
        if not COMMIT.fullmatch(value):
            raise UsageError(
                f"{declared} at {owner} {commit[:12]} pins {value!r}, which is not a commit id.",
                'If it is a tag name, set pin = "tag" in the recipe\'s pinned source.',
            )
        pinned = value
        ref = f"pinned by {declared}"
    if not has_commit(fetcher, cache, pinned):
        raise FetchError(
            f"{declared} at {owner} {commit[:12]} pins {pin.source} {pinned[:12]}, "
            f"which no branch or tag of {redact(url)} contains.",
            "Check the mirror serves the whole repository, or pin another commit.",
        )
    return LockedRepo(
        name=pin_name(owner, pin.dest),
        url=redact(url),
        ref=ref,
        commit=pinned,
        source=pin.name or "",
    )


def pin_sharing(recipe: Recipe, lock: Optional[Lock]) -> List[str]:
    """For each source the recipe's repos pin (opbase, ops-tensor, cann-cmake), whether
    the repos that pin it agree (one commit: fetched once, a clone of it in each
    checkout's pin folder) or each builds against its own; from the lock's pins (`<repo>:
    <dest>`).  A source one repo alone pins is not mentioned."""
    lines: List[str] = []
    pinning: Dict[str, List[Tuple[str, str]]] = {}  # source -> (repo, dest)
    for repo in recipe.repos:
        for pin in repo.pins:
            pinning.setdefault(pin.source, []).append((repo.name, pin.dest))
    for source, owners in pinning.items():
        if len(owners) < 2:
            continue
        names = ", ".join(repo for repo, _ in owners)
        entries = [(r, d, lock.repo(pin_name(r, d)) if lock else None) for r, d in owners]
        if any(e is None for _, _, e in entries):
            lines.append(
                f"{source}: pinned by {names}; shared or per repo is known once the pins are "
                "read (cannbuild fetch)"
            )
            continue
        commits = {e.commit for _, _, e in entries if e is not None}
        if len(commits) == 1:
            lines.append(
                f"{source}: shared: {names} pin the same commit {next(iter(commits))[:12]} "
                "(fetched once; each checkout has its clone at its pin folder)"
            )
        else:
            each = "; ".join(f"{r} {e.commit[:12]} in {d}" for r, d, e in entries if e is not None)
            lines.append(
                f"{source}: per repo: the pins differ ({each}); each repo builds against its own"
            )
    return lines
