"""Sources: pin every repo (from the lock, or by resolving its ref) and check it out.

Each repository is made ready in a thread of its own: fetch its cache, resolve its
ref, read the commit it pins for a nested checkout, read the third-party archives its
CMake downloads at that commit (archives.py) and fetch them, check it out with each
archive where that ref looks for a local copy.  A step waits only
for its own repo, so opbase builds while ops-transformer is still being fetched (on a
real network, minutes of a cold build).  The lock is written once every repo is
ready, even if a step then fails or is interrupted; a failed or interrupted fetch
writes none, and the steps that finished keep their stamps, so the next run resumes.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple

from msgspec.structs import replace

from ..errors import CannbuildError
from ..lazy import lazy_module
from ..recipes import RepoSpec, describe_ref, render_ref
from .checkout import Nested, Seed, archive_path, checkout_identity
from .lock import Lock, Wanted, drift, read_lock, refuse_drift, write_lock
from .ready import PendingSources
from .request import SourceRequest
from .state import LOCKED, REFRESH, RESOLVE, SourceState, pin_name

if TYPE_CHECKING:
    from . import bundle
else:  # only --bundle pays for it
    bundle = lazy_module("cannbuild.sources.bundle")


def wanted_for(request: SourceRequest) -> Wanted:
    recipe = request.recipe
    repos = []
    for repo in recipe.repos:
        ref = render_ref(repo, request.values)
        repos.append((repo.name, repo.url, describe_ref(ref)))
    # Archives the recipe names by URL itself are part of what the lock must match.
    archives = recipe.added_archives
    pins = tuple(
        (pin_name(repo.name, pin.dest), pin.url or recipe.repo(pin.repo or "").url)
        for repo in recipe.repos
        for pin in repo.pins
    )
    return Wanted(
        recipe=recipe.name,
        recipe_digest=recipe.digest,
        toolkit_version=request.toolkit_version,
        soc=request.soc,
        repos=tuple(repos),
        archives=archives,
        sandbox=request.sandbox,
        pins=pins,
        ops_release=request.ops_release,
        archives_skipped=tuple(r.name for r in recipe.repos if r.name in request.idle),
        unselected=recipe.unselected,
        build_repos=request.build_repos,
        vendor_name=request.vendor_name,
    )


@contextlib.contextmanager
def syncing_sources(
    request: SourceRequest, *, update_lock: bool = False, refresh: bool = False
) -> Iterator[PendingSources]:
    """Start making every source ready in the background.

    `update_lock` re-resolves even when the lock matches (`cannbuild lock`);
    `refresh` fetches the caches to notice moved tags (`cannbuild fetch`).
    Leaving the block waits for every fetch still running.
    """
    ws, recipe = request.ws, request.recipe
    notes: List[str] = []
    bundled: Optional[Lock] = None
    if request.bundle is not None:
        bundled = bundle.seed_from_bundle(ws, request.bundle)
        notes.append(f"seeded caches from {request.bundle}")
    existing = read_lock(request.lock_file) or bundled
    # Drift = the lock was written for another recipe, ref or archive set than this run asks for.
    problems = drift(existing, wanted_for(request)) if existing else ["there is no lock file"]
    if request.locked and problems:
        # the lock that differs: this workspace's, else the bundle's (not yet written here)
        in_bundle = bundled is not None and existing is bundled
        differs = f"the lock in {request.bundle}" if in_bundle else request.lock_file
        raise refuse_drift(differs, problems)
    written = False
    if existing is not None and not problems and not update_lock:
        mode = REFRESH if refresh and not request.offline else LOCKED
        # A bundle's lock becomes this workspace's lock the first time it is used.
        if existing is bundled and not request.lock_file.exists():
            write_lock(request.lock_file, existing)
            written = True
    else:
        mode = RESOLVE
    # a thread per repo, not a capped pool: a pin waits for another repo's thread
    pool = ThreadPoolExecutor(max_workers=max(1, len(recipe.repos)), thread_name_prefix="source")
    pending = PendingSources(
        request,
        pool,
        mode,
        existing,
        # These become the "lock updated: ..." note, which reports changes to this workspace's own
        # lock; a bundle's lock never was one, so its drift goes unlisted.
        [] if mode != RESOLVE or existing is bundled else problems,
        notes,
        written,
    )
    try:
        yield pending
    finally:
        pending.stopping.set()  # threads still working stop at their next stage
        pool.shutdown(wait=True, cancel_futures=True)
        if pending.all_ready():  # a failed step or Ctrl-C still keeps the lock it resolved
            with contextlib.suppress(CannbuildError, OSError):
                pending.finish()


def sync_sources(
    request: SourceRequest, *, update_lock: bool = False, refresh: bool = False
) -> SourceState:
    """Every source pinned and checked out (writing or honouring the lock)."""
    with syncing_sources(request, update_lock=update_lock, refresh=refresh) as pending:
        return pending.finish()


def unlocked_reason(request: SourceRequest) -> str:
    """Why `sources_from_lock` found no sources, in a plan's words: no lock yet, or one
    made for something else (a recipe an upgrade changed, other repos)."""
    lock = read_lock(request.lock_file)
    wanted = wanted_for(request)
    changes = (
        drift(lock, replace(wanted, soc=lock.soc, toolkit_version=lock.toolkit_version))
        if lock is not None
        else []
    )
    if not changes:
        return "sources not fetched or not locked yet (cannbuild fetch)"
    return (
        f"the lock does not hold this run's sources ({changes[0]}); the next fetch or setup "
        "locks them again"
    )


def sources_from_lock(request: SourceRequest) -> Optional[SourceState]:
    """The pinned sources without touching the network (for `plan`); None if not fetched yet."""
    lock = read_lock(request.lock_file)
    if lock is None:
        return None
    wanted = wanted_for(request)
    # a different SoC or toolkit does not change the sources, only the lock's header
    if drift(lock, replace(wanted, soc=lock.soc, toolkit_version=lock.toolkit_version)):
        return None
    identities: Dict[str, Mapping[str, Any]] = {}
    for repo in request.recipe.repos:
        locked = lock.repo(repo.name)
        if locked is None:
            return None
        nested = []
        for pin in repo.pins:
            # A nested checkout (ops-transformer v9.0's `third_party/opbase` at OPBASE_TAG_ID) is
            # locked under its own pin name.
            pinned = lock.repo(pin_name(repo.name, pin.dest))
            if pinned is None:
                return None
            nested.append(Nested(dest=pin.dest, cache=Path(), commit=pinned.commit, url=""))
        seeds = locked_seeds(request, repo, lock)
        if seeds is None:
            return None
        identities[repo.name] = checkout_identity(locked.commit, nested, seeds)
    checkouts = {r.name: request.ws.checkout(r.name) for r in request.recipe.repos}
    return SourceState(
        lock=lock, checkouts=checkouts, identities=identities, changed=(), lock_written=False
    )


def locked_seeds(request: SourceRequest, repo: RepoSpec, lock: Lock) -> Optional[List[Seed]]:
    """The seeds a checkout gets from the archives the lock puts into it, in the order the
    recipe lists them (as `_archives` makes them), then those placed where their cann/cmake
    module takes a copy (the lock records where); None if neither places one."""
    ordered: List[Tuple[int, Seed]] = []
    if repo.name in request.idle:  # none of its steps runs: nothing put in (ready._archives)
        return []
    rules = [r for r in repo.third_party if r.needed and r.place]
    for archive in lock.third_party:
        if repo.name not in archive.repos:
            continue
        path = archive_path(request.ws, archive.sha256, archive.url)
        place = archive.places.get(repo.name)
        if place is not None:
            ordered.append((len(rules), Seed(source=path, dest=place, sha256=archive.sha256)))
            continue
        index = next((i for i, r in enumerate(rules) if r.name == archive.name), None)
        # A locked archive the recipe no longer places makes the lock stale for this recipe.
        if index is None:
            return None
        ordered.append(
            (index, Seed(source=path, dest=rules[index].place[0], sha256=archive.sha256))
        )
    return [seed for _, seed in sorted(ordered, key=lambda pair: pair[0])]
