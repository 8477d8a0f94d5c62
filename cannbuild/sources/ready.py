"""Making each repository ready in a thread of its own: fetch its cache, resolve its ref
(or take the lock's commit), read the commit it pins for a nested checkout, fetch the
third-party archives its CMake downloads at that commit, and check it out; `finish`
waits for all of them and writes the lock when this run resolved it."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from msgspec.structs import replace

from ..errors import FetchError, LockDrift, OfflineViolation, SyncStopped, UsageError
from ..host.toolkit import host_arch
from ..recipes import RepoSpec, SourcePin, describe_ref, render_ref
from ..redact import redact
from .archives import (
    Declared,
    Expected,
    Needed,
    accept_stand_in,
    check_hashes,
    declared_archives,
    declared_matches,
    expected_hashes,
    plan_archives,
)
from .canncmake import (
    FETCH_CANN_CMAKE,
    FETCH_CANN_CMAKE_FILES,
    cann_cmake_archives,
    uses_cann_cmake,
)
from .checkout import (
    Nested,
    Seed,
    cache_path,
    checkout_identity,
    ensure_archive,
    ensure_checkout,
    has_commit,
    resolve_ref,
)
from .fetch import rewrite
from .lock import Lock, LockedArchive, LockedRepo, origin_of, write_lock
from .pins import resolve_pin
from .request import SourceRequest
from .state import LOCKED, REFRESH, RESOLVE, RepoReady, SourceState, merged_archives, pin_name


class PendingSources:
    """The repos being made ready; `identity_of` waits for one, `finish` for all.

    Each repo's thread is the only one that writes to that repo's cache; a thread that
    needs another repo's cache (a nested pin) waits until that cache is fetched."""

    def __init__(
        self,
        request: SourceRequest,
        pool: ThreadPoolExecutor,
        mode: str,
        existing: Optional[Lock],
        problems: Sequence[str],
        notes: Sequence[str],
        lock_written: bool,
    ) -> None:
        self.request = request
        self.mode = mode
        self.existing = existing
        self.problems = tuple(problems)
        self.notes = tuple(notes)  # known before any fetch
        self._download_locks: Dict[str, threading.Lock] = {}
        self._download_locks_guard = threading.Lock()
        self.lock_written = lock_written
        self.stopping = threading.Event()
        self._state: Optional[SourceState] = None
        self._fetched = {r.name: threading.Event() for r in request.recipe.repos}
        self._fetch_ok: Dict[str, bool] = {}
        # pinned sources of their own (cann-cmake, ops-tensor): fetched once per run, by the first
        # repo's thread that needs one; another waits on its lock
        self._sources_fetched: Set[str] = set()
        self._repos: Dict[str, Future] = {
            r.name: pool.submit(self._make_ready, r) for r in request.recipe.repos
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
        request = self.request
        ready: List[RepoReady] = [self._repos[r.name].result() for r in request.recipe.repos]
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
                recipe=request.recipe.name,
                recipe_digest=request.recipe.digest,
                toolkit_version=request.toolkit_version,
                soc=request.soc,
                arch=host_arch(),
                repos=tuple(entry for r in ready for entry in r.locked),
                third_party=merged_archives(ready),
                source_date_epoch=max((r.commit_time for r in ready), default=0),
                container=dict(previous.container) if previous else {},
                sandbox=request.sandbox,
                ops_release=request.ops_release,
                archives_skipped=tuple(
                    r.name for r in request.recipe.repos if r.name in request.idle
                ),
                build_repos=request.build_repos,
                with_steps=request.with_steps,
                vendor_name=request.vendor_name,
                # where each commit came from, which the header of a sandbox lock says
                origins={n: o for r in ready for n, o in r.origins} if request.sandbox else {},
            )
            # the version it is written as, so the state holds what a reread gives
            lock = replace(lock, version=lock.written_version())
            if previous is not None and self.problems:
                notes.append("lock updated: " + "; ".join(self.problems))
            write_lock(request.lock_file, lock)
            written = True
        else:
            assert self.existing is not None
            lock = self.existing
        self._state = SourceState(
            lock=lock,
            checkouts={r.name: r.path for r in ready},
            identities={r.name: r.identity for r in ready},
            changed=[r.name for r in ready if r.changed],
            lock_written=written,
            notes=tuple(notes),
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
        for owner in self.request.recipe.repos:
            for pin in owner.pins:
                if pin.repo == repo.name:
                    entry = self.existing.repo(pin_name(owner.name, pin.dest))
                    if entry is not None:
                        needed.append(entry.commit)
        return needed

    def _make_ready(self, repo: RepoSpec) -> RepoReady:
        request, ws, fetcher = self.request, self.request.ws, self.request.fetcher
        cache = cache_path(ws, repo.name)
        locked = self.existing.repo(repo.name) if self.existing else None
        try:
            self._stage(repo)
            # A locked run fetches only when the cache lacks a commit the lock names: a no-op rerun
            # touches no network.
            fetched = self.mode != LOCKED or not all(
                has_commit(fetcher, cache, sha) for sha in self._needed_here(repo)
            )
            if fetched:
                fetcher.fetch_repo(cache, repo.url, root=ws.root)
            self._fetch_ok[repo.name] = True
        finally:  # a pin waiting on this cache may look now (or learn that it failed)
            self._fetched[repo.name].set()
        self._stage(repo)
        ref = render_ref(repo, request.values)
        moved = None
        when = 0
        if self.mode == LOCKED:
            assert locked is not None
            commit = locked.commit
            if fetched and not has_commit(fetcher, cache, commit):  # the remote has it not
                raise LockDrift(
                    f"--locked: {request.lock_file} pins {repo.name} at {commit[:12]}, which "
                    f"{redact(repo.url)} does not have (fetched just now).",
                    "Restore the lock from version control, or run `cannbuild lock` to pin "
                    "what the repository has.",
                )
        else:
            commit, when = resolve_ref(fetcher, cache, ref, repo.url)
            # A tag that now names another commit than the lock records is reported, never followed
            # silently: the lock is what keeps builds the same.
            if (
                locked
                and ref.get("tag")
                and locked.ref == describe_ref(ref)
                and locked.commit != commit
            ):
                moved = f"{repo.name}: {describe_ref(ref)} moved from {locked.commit[:12]} to {commit[:12]}"
            # `cannbuild fetch` refreshes the cache to notice a moved tag, but keeps building the
            # locked commit.
            if self.mode == REFRESH:
                assert locked is not None
                if moved and request.locked:
                    raise LockDrift(
                        f"--locked: {moved}; the lock still pins the old commit.",
                        "Check upstream; run `cannbuild lock` to accept the new commit on purpose.",
                    )
                commit = locked.commit
        entries = [
            LockedRepo(name=repo.name, url=redact(repo.url), ref=describe_ref(ref), commit=commit)
        ]
        origins = [(repo.name, self._origin(repo.url))]
        nested: List[Nested] = []
        for pin in repo.pins:
            self._stage(repo)
            entry = self._pin(repo, pin, commit, cache)
            entries.append(entry)
            origins.append((entry.name, self._origin(self._pin_url(pin))))
            nested.append(
                Nested(
                    dest=pin.dest,
                    cache=cache_path(ws, pin.source),
                    commit=entry.commit,
                    url=self._pin_url(pin),
                )
            )
        self._stage(repo)
        seeds, archives, notes = self._archives(repo, commit, cache, nested)
        self._stage(repo)
        path, changed = ensure_checkout(
            fetcher, ws, repo.name, cache, commit, repo.url, nested, seeds
        )
        return RepoReady(
            name=repo.name,
            path=path,
            identity=checkout_identity(commit, nested, seeds),
            changed=changed,
            locked=tuple(entries),
            commit_time=when,
            moved=moved,
            archives=tuple(archives),
            notes=tuple(notes),
            origins=tuple(origins),
        )

    def _origin(self, url: str) -> str:
        """Where a fetch of `url` goes after the mirror rules: the URL, or the sandbox's
        stand-in repositories (lock.origin_of)."""
        return origin_of(redact(rewrite(url, self.request.fetcher.mirrors)), self.request.stand_ins)

    def _declared(
        self, repo: RepoSpec, commit: str, cache: Path, nested: List[Nested]
    ) -> Tuple[Tuple[Declared, ...], Tuple[str, ...]]:
        """What `repo` downloads at `commit`, read where that ref declares it: its own
        cmake/third_party/*.cmake, or (with cmake/fetch_cann_cmake.cmake, 9.1 on) the
        `add_cann_third_party` modules of the cann/cmake source it pins."""
        request, ws, fetcher = self.request, self.request.ws, self.request.fetcher
        if not uses_cann_cmake(fetcher, cache, commit, ws.third_party_memo):
            return declared_archives(fetcher, cache, commit, ws.third_party_memo), ()
        shared = next(
            (
                (pin, item)
                for pin, item in zip(repo.pins, nested)
                if pin.pin_file in FETCH_CANN_CMAKE_FILES
            ),
            None,
        )
        if shared is None:
            raise UsageError(
                f"recipe {request.recipe.path}: {repo.name} at {commit[:12]} clones the shared "
                f"cann/cmake repository itself ({FETCH_CANN_CMAKE}), and its third-party archives "
                "are declared there, but the recipe pins no source from that file.",
                f"Add a [[repos.{repo.name}.pinned_sources]] with pin_file = "
                f'"{FETCH_CANN_CMAKE}", pin = "tag" and dest = "third_party/cann-cmake".',
            )
        pin, item = shared
        label = f"{pin.source}@{item.commit[:12]}"
        memo = ws.third_party_memo
        found = cann_cmake_archives(fetcher, cache, commit, item.cache, item.commit, label, memo)
        return found[0], found[1]

    def _archives(
        self, repo: RepoSpec, commit: str, cache: Path, nested: List[Nested]
    ) -> Tuple[List[Seed], List[LockedArchive], List[str]]:
        """The archives `repo`'s CMake downloads at `commit`, fetched (through the mirror
        map, verified) and ready to be put where that ref looks for them."""
        request, ws, fetcher = self.request, self.request.ws, self.request.fetcher
        if repo.toolkit and not any(s.repo == repo.name for s in request.recipe.steps):
            return [], [], []  # a toolkit repo is laid out, never built: its archives are moot
        idle = request.idle.get(repo.name)
        if idle is not None:
            # Only what will run is checked: not even read, so an unreachable archive (or a
            # cann/cmake source it would need) of a step not selected stops nothing.
            named = [r.name for r in repo.third_party if r.needed]
            which = f" ({', '.join(named)})" if named else ""
            return (
                [],
                [],
                [
                    f"{repo.name}: its third-party archives{which} were skipped, neither fetched "
                    f"nor checked nor locked: {idle}"
                ],
            )
        declared, missing = self._declared(repo, commit, cache, nested)
        plan = plan_archives(request.recipe.path, repo, commit, declared)
        notes = [f"{repo.name}: {note}" for note in missing]
        notes += [
            f"{repo.name}: {d.where} downloads {redact(d.url)}, of which recipe "
            f"{request.recipe.name} says nothing (not fetched; if the build needs it, add it to "
            f"[[repos.{repo.name}.third_party]] with the place this ref takes a copy)"
            for d in plan.unknown
        ]
        # Offline, an archive the ref downloads with no local-copy spot (an empty `place`) would
        # make the build reach the network; refused before anything runs.
        if request.offline and plan.unplaceable:
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
            # The lock's hash, and those the ref's CMake declares, or the build itself would
            # refuse the file; a stand-in accepted by name is checked against the lock only.
            expects = self._expected(repo, commit, item)
            stand_in = self._stand_in_sha256(item)
            pinned = tuple(e for e in expects if e.by in ("lock", "kept"))
            # Two repos may need one archive (makeself): one download, the other thread waits.
            with self._download_lock(item.url):
                self._stage(repo)
                path, sha = ensure_archive(
                    fetcher, ws, item.url, pinned if stand_in else expects, request.stand_ins
                )
            accepted = ""
            if stand_in and sha == stand_in and not declared_matches(path, item):
                item, accepted = accept_stand_in(item, repo.name, sha)
            elif stand_in:
                via = rewrite(item.url, fetcher.mirrors)
                served = any(via.startswith(prefix) for prefix in request.stand_ins)
                check_hashes(path, sha, item.url, via, expects, served)
            seeds.append(Seed(source=path, dest=item.place, sha256=sha))
            archives.append(
                LockedArchive(
                    name=item.name,
                    url=redact(item.url),
                    sha256=sha,
                    repos=(repo.name,),
                    # where the cann/cmake module took it (or an accepted stand-in went); a
                    # recipe rule's place is the recipe's
                    places={repo.name: item.place} if item.from_cmake or accepted else {},
                    stand_in=accepted,
                )
            )
        return seeds, archives, notes

    def _stand_in_sha256(self, item: Needed) -> Optional[str]:
        """The sha256 of the sandbox's stand-in for this archive where it may be taken in
        place of the file the checkout declares: accepted by name (--accept-stand-in) or
        by an earlier run, as the lock records."""
        if not (item.sha256 or item.md5):
            return None  # nothing declared, nothing to accept: the build checks no hash
        locked = self.existing.archive(item.url) if self.existing else None
        if locked is not None and locked.stand_in and self.mode != RESOLVE:
            return locked.sha256
        names = self.request.accept_stand_ins
        if item.name in names or "all" in names:
            return self.request.stand_in_sha256.get(redact(item.url))
        return None

    def _expected(self, repo: RepoSpec, commit: str, item: Needed) -> Tuple[Expected, ...]:
        locked = self.existing.archive(item.url) if self.existing else None
        # Locked or refreshing: the lock must pin it.  Resolving: the lock's pin holds only
        # where neither the ref's CMake nor the recipe declares a sha256.
        if self.mode != RESOLVE and locked is None:
            raise LockDrift(
                f"{repo.name} at {commit[:12]} downloads {redact(item.url)} ({item.where}), "
                f"which {self.request.lock_file} does not pin.",
                "Run `cannbuild lock` to pin it (and commit the new lock).",
            )
        resolving = self.mode == RESOLVE
        pinned = locked.sha256 if locked and not (resolving and item.sha256) else None
        return expected_hashes(item, pinned, self.request.lock_file, resolving)

    def _download_lock(self, url: str) -> threading.Lock:
        with self._download_locks_guard:
            return self._download_locks.setdefault(url, threading.Lock())

    def _pin_url(self, pin: SourcePin) -> str:
        if pin.repo is not None:
            return self.request.recipe.repo(pin.repo).url
        assert pin.url is not None  # the reader requires name and url together
        return pin.url

    def _pin(self, repo: RepoSpec, pin: SourcePin, commit: str, cache: Path) -> LockedRepo:
        """The commit of a nested checkout: read from the repo's pin file when resolving,
        from the lock otherwise.  A pin of another recipe repo is read from that repo's
        cache, which its own thread fetches; a source of its own is fetched here."""
        request, fetcher = self.request, self.request.fetcher
        url = self._pin_url(pin)
        locked = None
        if self.mode != RESOLVE:
            assert self.existing is not None
            locked = self.existing.repo(pin_name(repo.name, pin.dest))
            assert locked is not None  # drift() names a pin the lock lacks
        if pin.repo is None:
            source = self._source_cache(pin, locked.commit if locked else None)
        else:
            # The pinned repo's cache is filled by that repo's own thread; wait for it.
            self._fetched[pin.repo].wait()
            if not self._fetch_ok.get(pin.repo):
                raise FetchError(
                    f"{repo.name} pins {pin.repo} (by {pin.pin_file}), but fetching {pin.repo} "
                    "failed.",
                    f"See the error for {pin.repo}.",
                )
            source = cache_path(request.ws, pin.repo)
        if locked is not None:
            # The build runs `git checkout <pin>` in its clone offline: the commit must be there.
            if not has_commit(fetcher, source, locked.commit):
                raise FetchError(
                    f"the lock pins {pin.source} {locked.commit[:12]} for {repo.name} "
                    f"({locked.ref}), which no branch or tag of {redact(url)} contains.",
                    "Check the mirror serves the whole repository, or run `cannbuild lock`.",
                )
            return locked
        return resolve_pin(fetcher, cache, source, repo.name, commit, pin, url)

    def _source_cache(self, pin: SourcePin, needed: Optional[str]) -> Path:
        """The git cache of a pinned source of its own, holding `needed` (the locked
        commit, None when resolving): fetched through the mirror map at most once per
        run, and not at all when a locked run finds the commit there already."""
        request, fetcher = self.request, self.request.fetcher
        assert pin.name is not None and pin.url is not None
        cache = cache_path(request.ws, pin.name)
        with self._download_lock(f"git:{pin.name}"):
            if needed is not None and has_commit(fetcher, cache, needed):
                return cache
            if pin.name not in self._sources_fetched:
                fetcher.fetch_repo(cache, pin.url, root=request.ws.root)
                self._sources_fetched.add(pin.name)
        return cache
