"""Mechanism: the git caches, checkouts at a commit, and third-party archives in the
download cache.

A checkout is cloned into a temporary folder and renamed into place, so an
interrupted fetch never leaves a half-made tree; archives are verified by sha256 and
unpacked only when every member stays inside its folder.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import zipfile
from pathlib import Path
from typing import (
    IO,
    TYPE_CHECKING,
    Callable,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

from msgspec import Struct

from .. import safefs
from ..bounded import ARCHIVE, CHECKOUT_RECORD, MEMO, open_binary, read_state
from ..errors import FetchError, UsageError
from ..lazy import lazy_module
from ..recipes import describe_ref
from ..redact import redact
from ..workspace import Workspace, write_json_atomic
from .archives import Expected, check_hashes
from .fetch import Fetcher, GitFailed, in_parallel, rewrite, sha256_file
from .lock import SHA256

if TYPE_CHECKING:
    import tarfile
else:  # only unpacking pays for it
    tarfile = lazy_module("tarfile")

# --- git cache queries ---------------------------------------------------------


def cache_path(ws: Workspace, repo: str) -> Path:
    return ws.git_cache / f"{repo.replace('/', '_')}.git"


def git_says_yes(fetcher: Fetcher, cache: Path, args: Sequence[str]) -> bool:
    """Whether a git query (`cat-file -e`, `show-ref --verify`) exits 0 in `cache`."""
    try:
        fetcher.git(args, cwd=cache)
    except GitFailed:
        return False
    return True


def has_commit(fetcher: Fetcher, cache: Path, sha: str) -> bool:
    """The cache holds commit `sha`.  A yes is remembered in the cache (`COMMIT_MEMO`)
    with the mark of the folders the object could leave from, and taken again while
    they are unchanged: a locked no-op asked git once per repo and pin (7 processes)."""
    if not cache.exists():
        return False
    memo = cache / COMMIT_MEMO
    mark = _objects_mark(cache, sha)
    known: Dict[str, str] = {}
    if mark is not None:
        known = read_state(memo, MEMO, Dict[str, str]) or {}
        if known.get(sha) == mark:
            return True
    # `-e <sha>^{commit}` exits 0 only when the object is there and is (or peels to) a commit.
    if not git_says_yes(fetcher, cache, ["cat-file", "-e", f"{sha}^{{commit}}"]):
        return False
    if mark is not None:
        with contextlib.suppress(OSError):  # one not written only costs the next run a git
            write_json_atomic(memo, {**known, sha: mark}, durable=False)
    return True


COMMIT_MEMO = "cannbuild-commits.json"


def _objects_mark(cache: Path, sha: str) -> Optional[str]:
    """What changes when object `sha` leaves the cache: the cache's inode (made again),
    the inode and time of its pack folder (a repack or gc renames packs there) and of the
    loose-object folder `sha` would be in (a prune removes from it).  None where the
    objects may be elsewhere too (alternates): git is asked every time."""
    objects = cache / "objects"
    if (objects / "info" / "alternates").exists():
        return None
    marks = []
    for path in (cache, objects / "pack", objects / sha[:2]):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            marks.append("-")
            continue
        except OSError:
            return None
        # the cache's own time moves with the memo written into it: its inode only
        marks.append(f"{st.st_ino}" if path == cache else f"{st.st_ino}:{st.st_mtime_ns}")
    return " ".join(marks)


def resolve_ref(
    fetcher: Fetcher, cache: Path, ref: Mapping[str, Optional[str]], url: str
) -> Tuple[str, int]:
    """A tag, a branch (optionally as of a date) or a commit -> (full commit id, commit time),
    read in one call to plumbing (`rev-list`, which no user `log.*` setting changes)."""
    if ref.get("tag"):
        # `^{commit}`: a tag object peeled to the commit it tags, which is what gets locked.
        rev = f"refs/tags/{ref['tag']}^{{commit}}"
    elif ref.get("commit"):
        rev = f"{ref['commit']}^{{commit}}"
    else:
        rev = f"refs/heads/{ref['branch']}"
    args = ["rev-list", "-1", "--timestamp"]
    if ref.get("until") and not ref.get("tag") and not ref.get("commit"):
        # `until` on a branch: the last commit before that date, the 8.3 recipe's "master as of
        # 2025-11-16" (a branch moves on; the date pins what the guide built).
        args.append(f"--before={ref['until']}")
    try:
        out = fetcher.git([*args, rev, "--"], cwd=cache).split()
    except GitFailed as exc:
        kind = "tag" if ref.get("tag") else None if ref.get("commit") else "branch"
        if kind and not git_says_yes(
            fetcher, cache, ["show-ref", "--verify", "--quiet", rev.split("^", 1)[0]]
        ):
            # A release the notes announce before upstream makes its ref (9.1.1: no 9.1.1 branch
            # or tag in opbase or ops-transformer, docs/upstream-9.1.md §1).
            raise FetchError(
                f"{describe_ref(ref)} is not in {redact(url)}: the repository has no {kind} of "
                "that name (upstream has not made one for this release yet, or the mirror you "
                "fetch from lags behind).",
                f"Check the refs it has (git ls-remote {redact(url)}) against the recipe's "
                f"{kind} for this CANN release (its header says where its refs come from); "
                "build a release that has one (--ops-release, --recipe), or wait for upstream.",
            ) from None
        raise FetchError(
            f"{describe_ref(ref)} is not in {redact(url)} ({exc.stderr.strip() or 'unknown ref'}).",
            "Check the recipe's tag/branch for this CANN release, or the mirror you fetch from.",
        ) from None
    if len(out) != 2:  # only a date can leave nothing: the branch starts after it
        raise FetchError(
            f"{describe_ref(ref)}: {redact(url)} has no commit that old.",
            "Check the recipe's date for this CANN release, or the mirror you fetch from.",
        )
    return out[1], int(out[0])


# --- checkouts -----------------------------------------------------------------


class Nested(Struct, frozen=True, kw_only=True):
    """A second clone inside a checkout (opbase source inside ops-transformer >= 9.0)."""

    dest: str
    cache: Path
    commit: str
    url: str


class Seed(Struct, frozen=True, kw_only=True):
    """A third-party archive put into a checkout where its ref looks for a local copy:
    copied to `dest`, or unpacked there when `dest` ends with "/"."""

    source: Path
    dest: str
    sha256: str


def checkout_marker(ws: Workspace, repo: str) -> Path:
    return ws.src / f".{repo}.checkout.json"


_MARKER_SUFFIX = ".checkout.json"


class PlacedCopy(Struct, frozen=True, kw_only=True):
    """A third-party archive cannbuild put into a checkout, as the checkout's marker
    records it: what a failed build's hint compares a rejected file with."""

    repo: str
    checkout: Path
    dest: str  # checkout-relative, as the recipe places it ("dir/" = unpacked)
    path: Path
    sha256: str
    cached: Optional[Path]  # the download it came from, while the cache still holds it


def placed_copies(ws: Workspace) -> Tuple[PlacedCopy, ...]:
    """Every archive copy the checkouts' markers record (ensure_checkout writes them),
    each with its file in the download cache; a marker cannbuild did not write is skipped."""
    copies: List[PlacedCopy] = []
    markers = sorted(ws.src.glob(f".*{_MARKER_SUFFIX}")) if ws.src.is_dir() else []
    for marker in markers:
        repo = marker.name[1 : -len(_MARKER_SUFFIX)]
        data = read_state(marker, CHECKOUT_RECORD)
        seeded = data.get("third_party") if isinstance(data, dict) else None
        if not isinstance(seeded, dict):
            continue
        for dest, sha in sorted(seeded.items()):
            if not isinstance(sha, str) or not SHA256.fullmatch(sha):  # a download cache folder
                continue
            folder = ws.downloads / sha
            files = sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
            name = dest.rstrip("/").rsplit("/", 1)[-1]
            # archive_path keeps the URL's file name: the one named as the copy, else the only one
            cached = next((f for f in files if f.name == name), files[0] if files else None)
            copies.append(
                PlacedCopy(
                    repo=repo,
                    checkout=ws.checkout(repo),
                    dest=dest,
                    path=ws.checkout(repo) / dest,
                    sha256=sha,
                    cached=cached,
                )
            )
    return tuple(copies)


def checkout_identity(
    commit: str, nested: Sequence[Nested], seeds: Sequence[Seed]
) -> Dict[str, object]:
    return {
        "commit": commit,
        # The identity a step's input hash takes: commit, nested pins and the archives put in.
        "nested": {n.dest: n.commit for n in nested},
        "third_party": {s.dest: s.sha256 for s in seeds},
    }


def _clone_at(fetcher: Fetcher, cache: Path, dest: Path, commit: str, url: str) -> None:
    """A clone of `cache` at `commit` whose origin is the (redacted) upstream URL, into
    the new folder `dest` (its caller removed any old one, through safefs)."""
    # From the local cache, never the network: the fetch stage already filled it.
    fetcher.git(["clone", "--quiet", "--no-checkout", str(cache), str(dest)])
    fetcher.git(
        ["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit], cwd=dest
    )
    # The clone's origin names upstream (without credentials), not the local cache path, so a
    # build's own `git` calls see the real remote.
    fetcher.git(["remote", "set-url", "origin", redact(url)], cwd=dest)


def ensure_checkout(
    fetcher: Fetcher,
    ws: Workspace,
    repo: str,
    cache: Path,
    commit: str,
    url: str,
    nested: Sequence[Nested] = (),
    seeds: Sequence[Seed] = (),
) -> Tuple[Path, bool]:
    """The checkout at `commit` with its nested clones and seeds; (path, changed).
    Nothing below the workspace is removed, replaced or written through a link: a
    linked `src/` (or a link a checkout holds where a nested clone or seed goes) is
    refused with exit 2; a link at `src/<repo>` itself is replaced, never followed."""
    dest = ws.checkout(repo)
    identity = checkout_identity(commit, nested, seeds)
    marker = checkout_marker(ws, repo)
    what = f"the {repo} checkout"
    safefs.make_dirs(ws.root, ws.src, what)
    # Same commit, same nested pins, same archives as the marker records: nothing to do.
    if not dest.is_symlink() and dest.is_dir() and read_state(marker, CHECKOUT_RECORD) == identity:
        # A build's own CMake may consume an archive put in: ops-transformer v9.0.0 unpacks
        # abseil-cpp into the folder its copy was put in (cmake/third_party/abseil-cpp.cmake),
        # so the configure of a resumed build would download it again. Put back what is gone.
        for seed in seeds:
            if not (dest / seed.dest).exists():
                _put(ws, dest, seed, what)
        return dest, False
    _keep_edits(fetcher, dest, repo, commit)
    tmp = ws.src / f".{repo}.tmp-{os.getpid()}"
    # the nested clones go to folders of their own, so they run beside the main clone
    parked = [ws.src / f".{repo}.nested{i}-{os.getpid()}" for i in range(len(nested))]
    for folder in (tmp, *parked):
        safefs.remove(ws.root, folder, what)
    try:
        clones: List[Callable[[], None]] = [lambda: _clone_at(fetcher, cache, tmp, commit, url)]
        clones += [
            functools.partial(_clone_at, fetcher, item.cache, where, item.commit, item.url)
            for item, where in zip(nested, parked)
        ]
        in_parallel(clones)
        for item, where in zip(nested, parked):
            target = tmp / item.dest
            safefs.make_dirs(ws.root, target.parent, what)
            if not target.is_symlink() and target.is_dir() and not any(target.iterdir()):
                # An empty folder there (a placeholder a checkout may carry) is accepted, as `git
                # clone` accepts an empty target; anything else is refused.
                target.rmdir()  # an empty placeholder, as `git clone` would accept
            elif os.path.lexists(target):
                raise GitFailed(
                    ["clone"], 128, f"destination path '{item.dest}' already exists in {repo}"
                )
            safefs.replace(ws.root, where, target, what)
        for seed in seeds:
            _put(ws, tmp, seed, what)
    except BaseException as exc:  # a timeout or Ctrl-C too: no half-made folder stays
        for folder in (tmp, *parked):
            with contextlib.suppress(UsageError):  # already refused: that error is raised
                safefs.remove(ws.root, folder, what, ignore_errors=True)
        if not isinstance(exc, GitFailed):
            raise
        raise FetchError(
            f"checking out {repo} at {commit[:12]} failed: {exc.stderr.strip()}",
            "Run cannbuild fetch again; if it persists, delete the workspace's cache/git folder.",
        ) from None
    trash = ws.src / f".{repo}.old-{os.getpid()}"
    safefs.remove(ws.root, trash, what)
    if os.path.lexists(dest):
        safefs.replace(ws.root, dest, trash, what)  # a link goes itself, never followed
    safefs.replace(ws.root, tmp, dest, what)
    write_json_atomic(marker, identity)
    safefs.remove(ws.root, trash, what, ignore_errors=True)
    return dest, True


def _keep_edits(fetcher: Fetcher, dest: Path, repo: str, commit: str) -> None:
    """A checkout is replaced whole when its commit changes (another --cann, a new lock):
    files a user edited in it (builds leave tracked files alone) would go without a word,
    so that is refused (exit 2) until they are saved or discarded."""
    if dest.is_symlink() or not (dest / ".git").is_dir():
        return
    try:
        changed = fetcher.git(["status", "--porcelain", "--untracked-files=no"], cwd=dest)
    except GitFailed:  # not a checkout git can read: it is replaced, as before
        return
    files = [line[2:].strip() for line in changed.splitlines() if line.strip()]
    if files:
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        raise UsageError(
            f"the {repo} checkout {dest} has local changes ({shown}), which checking it out "
            f"at {commit[:12]} would delete.",
            f"Save them (git -C {dest} diff > {repo}.patch), discard them "
            f"(git -C {dest} checkout -- .) and run the same command again.",
        )


def _put(ws: Workspace, top: Path, seed: Seed, what: str) -> None:
    target = top / seed.dest
    safefs.make_dirs(ws.root, target.parent, what)
    if seed.dest.endswith("/"):
        unpack_archive(seed.source, target, ws.root)
    else:
        safefs.remove(ws.root, target, what)  # a link there is never written through
        shutil.copy2(seed.source, target)


# --- third-party archives --------------------------------------------------------


def archive_path(ws: Workspace, sha256: str, url: str) -> Path:
    # Content-addressed by sha256, under the URL's file name the build expects.
    return ws.downloads / sha256 / url.rsplit("/", 1)[-1]


def unpack_archive(archive: Path, dest: Path, root: Optional[Path] = None) -> None:
    """Unpack as CMake's ExternalProject does: a single top-level folder is stripped.
    Members that would land outside `dest` (absolute, `..`, links) refuse the archive.
    `root`: the workspace `dest` is in (default its folder), where nothing is removed
    or replaced through a link."""
    owner = root if root is not None else dest.parent
    what = f"unpacking {archive.name}"
    work = dest.with_name(f".{dest.name}.unpack")
    safefs.remove(owner, work, what)
    safefs.make_dirs(owner, work, what)
    try:
        with open_binary(archive, ARCHIVE) as raw:
            _unpack(archive, raw, work)
        entries = list(work.iterdir())
        # CMake's ExternalProject strips a single top folder (`protobuf-25.1/`); a flat archive
        # (json's include.zip holds `include/` and `single_include/`) is kept as it is.
        top = entries[0] if len(entries) == 1 and entries[0].is_dir() else work
        safefs.remove(owner, dest, what)
        safefs.replace(owner, top, dest, what)
    except (OSError, EOFError, ValueError, tarfile.TarError, zipfile.BadZipFile) as exc:
        raise FetchError(
            f"cannot unpack {archive.name} into {dest}: {exc}.",
            "The cached file is damaged: delete it from the workspace's cache/downloads and fetch again.",
        ) from None
    finally:
        safefs.remove(owner, work, what, ignore_errors=True)


def _unpack(archive: Path, raw: IO[bytes], work: Path) -> None:
    """Unpack the zip or tar `raw` (the file `archive`) into `work`."""
    if zipfile.is_zipfile(raw):
        with zipfile.ZipFile(raw) as zf:
            for name in zf.namelist():
                _inside(archive, name)
            zf.extractall(work)
        return
    raw.seek(0)
    with tarfile.open(fileobj=raw, mode=tar_mode(raw)) as tar:
        for member in tar.getmembers():
            _inside(archive, member.name)
            # A link member is checked by where it points, relative to its own folder.
            if member.issym() or member.islnk():
                _inside(archive, str(Path(member.name).parent / member.linkname))
        # Python >= 3.12 (and security releases before it) has the `data` filter, which
        # also refuses device files and strips set-uid bits.
        if hasattr(tarfile, "data_filter"):
            tar.extractall(work, filter="data")
        else:  # pragma: no cover - a Python without the filter
            tar.extractall(work)


def tar_mode(raw: IO[bytes]) -> Literal["r:gz", "r:bz2", "r:xz", "r:"]:
    """tarfile's mode for `raw` by its magic bytes: tarfile's own guess tries lzma too,
    which reads zero bytes as empty streams (300 MB of zeros: 38 s)."""
    magic = raw.read(6)
    raw.seek(0)
    if magic.startswith(b"\x1f\x8b"):
        return "r:gz"
    if magic.startswith(b"BZh"):
        return "r:bz2"
    return "r:xz" if magic.startswith(b"\xfd7zXZ\x00") else "r:"


def _inside(archive: Path, name: str) -> None:
    path = Path(name)
    if path.is_absolute() or ".." in path.parts:
        raise ValueError(f"member {name!r} of {archive.name} points outside the folder")


def ensure_archive(
    fetcher: Fetcher,
    ws: Workspace,
    url: str,
    expects: Sequence[Expected] = (),
    stand_ins: Sequence[str] = (),
) -> Tuple[Path, str]:
    """The archive from the download cache, fetched when missing; either way refused
    unless it has every hash `expects` (archives.check_hashes names who declares it).
    `stand_ins`: the URL prefixes of the sandbox's stand-ins, which the refusal names."""
    via = rewrite(url, fetcher.mirrors)
    stand_in = any(via.startswith(prefix) for prefix in stand_ins)
    expected = next((e.value for e in expects if e.algo == "sha256"), None)
    if expected:
        cached = archive_path(ws, expected, url)
        if cached.is_file() and sha256_file(cached) == expected:
            check_hashes(cached, expected, url, via, expects, stand_in)
            return cached, expected
    # per URL: two repos' threads may fetch archives of the same file name at once
    tag = hashlib.sha256(redact(url).encode()).hexdigest()[:12]
    tmp = ws.downloads / ".incoming" / f"{tag}-{url.rsplit('/', 1)[-1]}"
    fetcher.download(url, tmp, ws.root)
    actual = sha256_file(tmp)
    try:
        check_hashes(tmp, actual, url, via, expects, stand_in)
    except FetchError:
        tmp.unlink(missing_ok=True)
        raise
    final = archive_path(ws, actual, url)
    safefs.make_dirs(ws.root, final.parent, "the download cache")
    safefs.replace(ws.root, tmp, final, "the download cache")
    return final, actual
