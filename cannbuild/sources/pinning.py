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
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import (
    Any,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
)

from ..errors import (
    CannbuildError,
    FetchError,
    LockDrift,
    OfflineViolation,
    SyncStopped,
    UsageError,
)
from ..host.toolkit import host_arch
from ..recipes import RepoSpec, describe_ref, render_ref
from ..redact import redact
from ..session import Session
from .archives import Needed, check_declared, declared_archives, plan_archives
from .checkout import (
    Nested,
    Seed,
    archive_path,
    cache_path,
    checkout_identity,
    ensure_archive,
    ensure_checkout,
    has_commit,
    resolve_ref,
)
from .fetch import rewrite
from .lock import (
    Lock,
    LockedArchive,
    LockedRepo,
    Wanted,
    drift,
    read_lock,
    refuse_drift,
    write_lock,
)

LOCKED, REFRESH, RESOLVE = "locked", "refresh", "resolve"


class Sources(Protocol):
    """What a step needs of the sources: its repo's checkout identity, once it is ready."""

    def identity_of(self, repo: str) -> Mapping[str, Any]: ...

    def is_ready(self, repo: str, within_s: float = 0.0) -> bool: ...


@dataclass(frozen=True)
class SourceState:
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


@dataclass(frozen=True)
class RepoReady:
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


def wanted_for(session: Session) -> Wanted:
    recipe = session.recipe
    repos = []
    for repo in recipe.repos:
        ref = render_ref(repo, session.values)
        repos.append((repo.name, repo.url, describe_ref(ref)))
    archives = recipe.added_archives
    return Wanted(
        recipe.name,
        session.toolkit.version_text or "",
        session.soc,
        tuple(repos),
        archives,
        sandbox=session.sandbox is not None,
    )


def pin_name(repo: str, dest: str) -> str:
    return f"{repo}:{dest}"


def merged_archives(ready: Sequence[RepoReady]) -> Tuple[LockedArchive, ...]:
    """One lock entry per archive URL, naming every checkout it is put into."""
    merged: Dict[str, LockedArchive] = {}
    for r in ready:
        for a in r.archives:
            old = merged.get(a.url)
            if old is None:
                merged[a.url] = a
            elif r.name not in old.repos:
                merged[a.url] = replace(old, repos=(*old.repos, r.name))
    return tuple(merged.values())


class PendingSources:
    """The repos being made ready; `identity_of` waits for one, `finish` for all.

    Each repo's thread is the only one that writes to that repo's cache; a thread that
    needs another repo's cache (a nested pin) waits until that cache is fetched."""

    def __init__(
        self,
        session: Session,
        pool: ThreadPoolExecutor,
        mode: str,
        existing: Optional[Lock],
        problems: Sequence[str],
        notes: Sequence[str],
        lock_written: bool,
    ) -> None:
        self.session = session
        self.mode = mode
        self.existing = existing
        self.problems = tuple(problems)
        self.notes = tuple(notes)  # known before any fetch
        self._download_locks: Dict[str, threading.Lock] = {}
        self._download_locks_guard = threading.Lock()
        self.lock_written = lock_written
        self.stopping = threading.Event()
        self._state: Optional[SourceState] = None
        self._fetched = {r.name: threading.Event() for r in session.recipe.repos}
        self._fetch_ok: Dict[str, bool] = {}
        self._repos: Dict[str, Future] = {
            r.name: pool.submit(self._make_ready, r) for r in session.recipe.repos
        }

    def identity_of(self, repo: str) -> Mapping[str, Any]:
        return self._repos[repo].result().identity

    def is_ready(self, repo: str, within_s: float = 0.0) -> bool:
        """Whether the repo is ready (or has failed), waiting up to `within_s` for it."""
        future = self._repos[repo]
        wait([future], timeout=within_s)
        return future.done()

    def all_ready(self) -> bool:
        return all(
            f.done() and not f.cancelled() and f.exception() is None for f in self._repos.values()
        )

    def finish(self) -> SourceState:
        """Wait for every repo (the first failure in recipe order is raised), then write
        the lock if this run resolved it.  Called again, returns the same state."""
        if self._state is not None:
            return self._state
        session = self.session
        ready: List[RepoReady] = [self._repos[r.name].result() for r in session.recipe.repos]
        notes = list(self.notes)
        notes += [
            f"{r.moved} (keeping the locked commit)" if self.mode == REFRESH else r.moved
            for r in ready
            if r.moved
        ]
        notes += [n for r in ready for n in r.notes]
        written = self.lock_written
        if self.mode == RESOLVE:
            previous = self.existing
            lock = Lock(
                recipe=session.recipe.name,
                recipe_digest=session.recipe.digest,
                toolkit_version=session.toolkit.version_text or "",
                soc=session.soc,
                arch=host_arch(),
                repos=tuple(entry for r in ready for entry in r.locked),
                third_party=merged_archives(ready),
                source_date_epoch=max((r.commit_time for r in ready), default=0),
                container=dict(previous.container) if previous else {},
                sandbox=session.sandbox is not None,
            )
            if previous is not None and self.problems:
                notes.append("lock updated: " + "; ".join(self.problems))
            write_lock(session.options.lock_file, lock)
            written = True
        else:
            assert self.existing is not None
            lock = self.existing
        self._state = SourceState(
            lock,
            {r.name: r.path for r in ready},
            {r.name: r.identity for r in ready},
            [r.name for r in ready if r.changed],
            written,
            tuple(notes),
        )
        return self._state

    # --- one repo, in its own thread ------------------------------------------------

    def _stage(self, repo: RepoSpec) -> None:
        if self.stopping.is_set():
            raise SyncStopped(f"{repo.name}: stopped before it was ready (the run is ending).")

    def _needed_here(self, repo: RepoSpec) -> List[str]:
        """The locked commits this repo's cache must hold: its own, and those of the
        nested pins that are clones of it."""
        assert self.existing is not None
        needed = [self.existing.repo(repo.name).commit]  # type: ignore[union-attr]
        for owner in self.session.recipe.repos:
            pin = owner.source_pin
            if pin is not None and pin.repo == repo.name:
                entry = self.existing.repo(pin_name(owner.name, pin.dest))
                if entry is not None:
                    needed.append(entry.commit)
        return needed

    def _make_ready(self, repo: RepoSpec) -> RepoReady:
        session, ws, fetcher = self.session, self.session.ws, self.session.fetcher
        cache = cache_path(ws, repo.name)
        locked = self.existing.repo(repo.name) if self.existing else None
        try:
            self._stage(repo)
            if self.mode != LOCKED or not all(
                has_commit(fetcher, cache, sha) for sha in self._needed_here(repo)
            ):
                fetcher.fetch_repo(cache, repo.url)
            self._fetch_ok[repo.name] = True
        finally:  # a pin waiting on this cache may look now (or learn that it failed)
            self._fetched[repo.name].set()
        self._stage(repo)
        ref = render_ref(repo, session.values)
        moved = None
        when = 0
        if self.mode == LOCKED:
            assert locked is not None
            commit = locked.commit
        else:
            commit, when = resolve_ref(fetcher, cache, ref, repo.url)
            if (
                locked
                and ref.get("tag")
                and locked.ref == describe_ref(ref)
                and locked.commit != commit
            ):
                moved = f"{repo.name}: {describe_ref(ref)} moved from {locked.commit[:12]} to {commit[:12]}"
            if self.mode == REFRESH:
                assert locked is not None
                if moved and session.options.locked:
                    raise LockDrift(
                        f"--locked: {moved}; the lock still pins the old commit.",
                        "Check upstream; run `cannbuild lock` to accept the new commit on purpose.",
                    )
                commit = locked.commit
        entries = [LockedRepo(repo.name, redact(repo.url), describe_ref(ref), commit)]
        nested: List[Nested] = []
        if repo.source_pin:
            entry = self._pin(repo, commit, cache)
            entries.append(entry)
            pin = repo.source_pin
            nested.append(
                Nested(
                    pin.dest,
                    cache_path(ws, pin.repo),
                    entry.commit,
                    session.recipe.repo(pin.repo).url,
                )
            )
        self._stage(repo)
        seeds, archives, notes = self._archives(repo, commit, cache)
        self._stage(repo)
        path, changed = ensure_checkout(
            fetcher, ws, repo.name, cache, commit, repo.url, nested, seeds
        )
        return RepoReady(
            repo.name,
            path,
            checkout_identity(commit, nested, seeds),
            changed,
            tuple(entries),
            when,
            moved,
            tuple(archives),
            tuple(notes),
        )

    def _archives(
        self, repo: RepoSpec, commit: str, cache: Path
    ) -> Tuple[List[Seed], List[LockedArchive], List[str]]:
        """The archives `repo`'s CMake downloads at `commit`, fetched (through the mirror
        map, verified) and ready to be put where that ref looks for them."""
        session, ws, fetcher = self.session, self.session.ws, self.session.fetcher
        plan = plan_archives(
            session.recipe.path, repo, commit, declared_archives(fetcher, cache, commit)
        )
        notes = [
            f"{repo.name}: {d.where} downloads {redact(d.url)}, of which recipe "
            f"{session.recipe.name} says nothing (not fetched; if the build needs it, add it to "
            f"[[repos.{repo.name}.third_party]] with the place this ref takes a copy)"
            for d in plan.unknown
        ]
        if session.options.offline and plan.unplaceable:
            listed = "; ".join(
                f"{i.name} ({redact(i.url)}, {i.where}; {i.source})" for i in plan.unplaceable
            )
            raise OfflineViolation(
                f"offline mode: {repo.name} at {commit[:12]} downloads during its build, and takes "
                f"no local copy of: {listed}.",
                "This recipe cannot build without the network: build where the host reaches those "
                "URLs (directly or through https_proxy), or use a recipe whose refs take local "
                "copies (CANN 8.5 and later).",
            )
        seeds: List[Seed] = []
        archives: List[LockedArchive] = []
        for item in plan.placed:
            expected = self._expected_sha256(repo, commit, item)
            with self._download_lock(item.url):
                self._stage(repo)
                path, sha = ensure_archive(fetcher, ws, item.url, expected)
            check_declared(path, item, repo.name, rewrite(item.url, fetcher.mirrors))
            seeds.append(Seed(path, item.place, sha))
            archives.append(LockedArchive(item.name, redact(item.url), sha, (repo.name,)))
        return seeds, archives, notes

    def _expected_sha256(self, repo: RepoSpec, commit: str, item: Needed) -> Optional[str]:
        locked = self.existing.archive(item.url) if self.existing else None
        if self.mode != RESOLVE:
            if locked is None:
                raise LockDrift(
                    f"{repo.name} at {commit[:12]} downloads {redact(item.url)} ({item.where}), "
                    f"which {self.session.options.lock_file} does not pin.",
                    "Run `cannbuild lock` to pin it (and commit the new lock).",
                )
            return locked.sha256
        return item.sha256 or (locked.sha256 if locked else None)

    def _download_lock(self, url: str) -> threading.Lock:
        with self._download_locks_guard:
            return self._download_locks.setdefault(url, threading.Lock())

    def _pin(self, repo: RepoSpec, commit: str, cache: Path) -> LockedRepo:
        """The commit of the nested checkout: read from the repo's pin file when resolving,
        from the lock otherwise.  Only read from the pinned repo's cache: its own thread
        fetched what it needs."""
        session, fetcher = self.session, self.session.fetcher
        pin = repo.source_pin
        assert pin is not None
        source = session.recipe.repo(pin.repo)
        if self.mode == RESOLVE:
            text = fetcher.git(["show", f"{commit}:{pin.pin_file}"], cwd=cache)
            match = re.search(pin.pin_regex, text)
            if not match:
                raise UsageError(
                    f"{pin.pin_file} at {repo.name} {commit[:12]} has no line matching {pin.pin_regex!r}.",
                    "The recipe does not match this ref; check [repos.*.opbase_source].",
                )
            pinned = match.group(1)
        else:
            assert self.existing is not None
            entry = self.existing.repo(pin_name(repo.name, pin.dest))
            assert entry is not None
            pinned = entry.commit
        self._fetched[pin.repo].wait()
        if not self._fetch_ok.get(pin.repo):
            raise FetchError(
                f"{repo.name} pins {pin.repo} {pinned[:12]}, but fetching {pin.repo} failed.",
                f"See the error for {pin.repo}.",
            )
        if not has_commit(fetcher, cache_path(session.ws, pin.repo), pinned):
            raise FetchError(
                f"{pin.pin_file} at {repo.name} {commit[:12]} pins {pin.repo} {pinned[:12]}, "
                f"which no branch or tag of {redact(source.url)} contains.",
                "Check the mirror serves the whole repository, or pin another commit.",
            )
        return LockedRepo(
            pin_name(repo.name, pin.dest), redact(source.url), f"pinned by {pin.pin_file}", pinned
        )


@contextlib.contextmanager
def syncing_sources(
    session: Session, *, update_lock: bool = False, refresh: bool = False
) -> Iterator[PendingSources]:
    """Start making every source ready in the background.

    `update_lock` re-resolves even when the lock matches (`cannbuild lock`);
    `refresh` fetches the caches to notice moved tags (`cannbuild fetch`).
    Leaving the block waits for every fetch still running.
    """
    options, ws, recipe = session.options, session.ws, session.recipe
    notes: List[str] = []
    bundled: Optional[Lock] = None
    if options.bundle is not None:
        from .bundle import seed_from_bundle

        bundled = seed_from_bundle(ws, options.bundle)
        notes.append(f"seeded caches from {options.bundle}")
    existing = read_lock(options.lock_file) or bundled
    problems = drift(existing, wanted_for(session)) if existing else ["there is no lock file"]
    if options.locked and problems:
        raise refuse_drift(options.lock_file, problems)
    written = False
    if existing is not None and not problems and not update_lock:
        mode = REFRESH if refresh and not options.offline else LOCKED
        if existing is bundled and not options.lock_file.exists():
            write_lock(options.lock_file, existing)
            written = True
    else:
        mode = RESOLVE
    # a thread per repo, not a capped pool: a pin waits for another repo's thread
    pool = ThreadPoolExecutor(max_workers=max(1, len(recipe.repos)), thread_name_prefix="source")
    pending = PendingSources(
        session,
        pool,
        mode,
        existing,
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
    session: Session, *, update_lock: bool = False, refresh: bool = False
) -> SourceState:
    """Every source pinned and checked out (writing or honouring the lock)."""
    with syncing_sources(session, update_lock=update_lock, refresh=refresh) as pending:
        return pending.finish()


def sources_from_lock(session: Session) -> Optional[SourceState]:
    """The pinned sources without touching the network (for `plan`); None if not fetched yet."""
    lock = read_lock(session.options.lock_file)
    if lock is None:
        return None
    wanted = wanted_for(session)
    # a different SoC or toolkit does not change the sources, only the lock's header
    if drift(lock, replace(wanted, soc=lock.soc, toolkit_version=lock.toolkit_version)):
        return None
    identities: Dict[str, Mapping[str, Any]] = {}
    for repo in session.recipe.repos:
        locked = lock.repo(repo.name)
        if locked is None:
            return None
        nested = []
        if repo.source_pin:
            pinned = lock.repo(pin_name(repo.name, repo.source_pin.dest))
            if pinned is None:
                return None
            nested.append(Nested(repo.source_pin.dest, Path(), pinned.commit, ""))
        seeds = locked_seeds(session, repo, lock)
        if seeds is None:
            return None
        identities[repo.name] = checkout_identity(locked.commit, nested, seeds)
    checkouts = {r.name: session.ws.checkout(r.name) for r in session.recipe.repos}
    return SourceState(lock, checkouts, identities, (), False)


def locked_seeds(session: Session, repo: RepoSpec, lock: Lock) -> Optional[List[Seed]]:
    """The seeds a checkout gets from the archives the lock puts into it, in the order the
    recipe lists them (as `_archives` makes them); None if the recipe does not place one."""
    ordered: List[Tuple[int, Seed]] = []
    rules = [r for r in repo.third_party if r.needed and r.place]
    for archive in lock.third_party:
        if repo.name not in archive.repos:
            continue
        index = next((i for i, r in enumerate(rules) if r.name == archive.name), None)
        if index is None:
            return None
        path = archive_path(session.ws, archive.sha256, archive.url)
        ordered.append((index, Seed(path, rules[index].place[0], archive.sha256)))
    return [seed for _, seed in sorted(ordered, key=lambda pair: pair[0])]
