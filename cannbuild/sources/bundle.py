"""Offline bundles: git bundles of every locked repository, the third-party
archives and the lock, in one tar with a sha256 manifest.

Made on a connected machine (`cannbuild bundle OUT.tar`), read on an
air-gapped one (`cannbuild setup --offline --bundle OUT.tar`): the bundle seeds
the workspace's git and download caches, so nothing is fetched.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Tuple

from ..bounded import (
    ARCHIVE,
    BUNDLE,
    BUNDLE_MANIFEST,
    BUNDLE_MEMBERS,
    decode_json,
    head,
    open_binary,
)
from ..errors import UsageError, write_error
from ..safefs import check_below
from ..workspace import Workspace
from .checkout import archive_path, cache_path, tar_mode
from .fetch import Fetcher, GitFailed, git_cause, sha256_file
from .lock import Lock, read_lock

MANIFEST = "manifest.json"
LOCK_NAME = "cannbuild.lock"


def make_bundle(ws: Workspace, lock_file: Path, out: Path) -> Dict[str, Any]:
    """Pack what the lock pins; everything must already be in the workspace caches.
    Members are streamed from disk into a tar beside `out`, renamed into place when
    complete (bounded memory, never a half-written bundle)."""
    lock, repos = _locked(lock_file)
    fetcher = Fetcher()
    files: Dict[str, Path] = {}
    for repo in repos:  # before anything is made: a workspace never fetched has none
        if not cache_path(ws, repo).exists():
            raise UsageError(
                f"cannot bundle {repo}: it is not in {ws.git_cache}.",
                "Run `cannbuild fetch` first.",
            )
    with tempfile.TemporaryDirectory(dir=str(ws.root)) as tmp:
        for repo in repos:
            cache = cache_path(ws, repo)
            target = Path(tmp) / f"{repo}.bundle"
            # `git bundle --all`: every branch and tag, so a locked tag, branch or nested pin
            # resolves offline exactly as online.
            fetcher.git(["bundle", "create", "--quiet", str(target), "--all"], cwd=cache)
            files[f"git/{repo}.bundle"] = target
        for archive in lock.third_party:
            path = archive_path(ws, archive.sha256, archive.url)
            if not path.is_file() or sha256_file(path) != archive.sha256:
                raise UsageError(
                    f"cannot bundle {archive.url}: sha256 {archive.sha256} is not in {ws.downloads}.",
                    "Run `cannbuild fetch` first.",
                )
            files[f"downloads/{archive.sha256}/{path.name}"] = path
        files[LOCK_NAME] = lock_file
        manifest = {name: sha256_file(path) for name, path in sorted(files.items())}
        text = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
        partial = out.with_name(f".{out.name}.part")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            sink = open(partial, "wb")  # noqa: SIM115 - closed by the tar below
        except OSError as exc:  # read-only, not ours (exit 11); a path refused as spelled (2)
            raise write_error(exc, "OUT", out) from None
        try:
            with sink, tarfile.open(fileobj=sink, mode="w", format=tarfile.GNU_FORMAT) as tar:
                # Sorted names, mtime 0, mode 0644: the tar adds nothing that depends on when or
                # where it was made.
                for name in sorted([*files, MANIFEST]):
                    info = tarfile.TarInfo(name)
                    info.mtime = 0
                    info.mode = 0o644
                    if name == MANIFEST:
                        info.size = len(text)
                        tar.addfile(info, io.BytesIO(text))
                        continue
                    info.size = files[name].stat().st_size
                    with open_binary(files[name], ARCHIVE) as fh:
                        tar.addfile(info, fh)
            refuse_foreign_out(out)  # again: a file may have been put there meanwhile
            os.replace(partial, out)
        finally:
            partial.unlink(missing_ok=True)
    return {"path": str(out), "files": len(files) + 1, "bytes": out.stat().st_size, "repos": repos}


def refuse_foreign_out(out: Path) -> None:
    """`bundle OUT` replaces only a bundle cannbuild made, never a user's file, as `ci
    --out` only replaces a workflow it rendered; a link at OUT is refused whatever it
    points at (writing through it would replace the file it names).  Exit 2, nothing
    touched."""
    try:
        mode = os.lstat(out).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:  # a path the kernel refuses as spelled (2), not ours (11)
        raise write_error(exc, "OUT", out) from None
    hint = "Pass OUT as a new file (or one `cannbuild bundle` wrote), or move that one away first."
    if stat.S_ISLNK(mode):
        raise UsageError(
            f"OUT {out} is a symlink (to {os.readlink(out)}); cannbuild does not write "
            "through a link, so it is left as it is.",
            hint,
        )
    if not stat.S_ISREG(mode) or not _is_bundle(out):
        kind = "a folder" if stat.S_ISDIR(mode) else "a file"
        raise UsageError(
            f"OUT {out} is {kind} cannbuild did not make (not a bundle of its own); "
            "it is left as it is.",
            hint,
        )


def _is_bundle(path: Path) -> bool:
    """Whether `path` starts as `make_bundle` writes a tar: its first member is the lock
    or the manifest, a regular file with mtime 0 and no owner name (what a user's own
    tar of a project holding a cannbuild.lock does not have).  Only the first header
    (512 bytes) is read."""
    try:
        first = head(path, BUNDLE.named("OUT"), tarfile.BLOCKSIZE)
        info = tarfile.TarInfo.frombuf(first, "utf-8", "surrogateescape")
    except (OSError, UsageError, tarfile.TarError):
        return False
    return (
        info.name in (LOCK_NAME, MANIFEST) and info.isfile() and info.mtime == 0 and not info.uname
    )


def _locked(lock_file: Path) -> Tuple[Lock, List[str]]:
    """The lock and the repos whose caches a bundle carries: a nested pin
    (`ops-transformer:third_party/opbase`) is a commit of another repo's cache."""
    lock = read_lock(lock_file)
    if lock is None:
        raise UsageError(
            f"cannot bundle: {lock_file} does not exist.",
            "Run `cannbuild lock` (or `cannbuild fetch`) first.",
        )
    repos = {r.name.split(":")[0] for r in lock.repos} | {
        _pin_repo(lock, r.name) for r in lock.repos
    }
    return lock, sorted(repos)


def bundle_contents(ws: Workspace, lock_file: Path) -> List[str]:
    """What `make_bundle` would pack (for --dry-run): git repos and archives by name."""
    lock, repos = _locked(lock_file)
    return [f"git/{r}.bundle" for r in repos] + [a.name for a in lock.third_party] + [LOCK_NAME]


def _pin_repo(lock: Lock, name: str) -> str:
    """`ops-transformer:third_party/opbase` is a commit of opbase's repository;
    `ops-transformer:third_party/cann-cmake` of the source the lock names (`source`)."""
    if ":" not in name:
        return name
    locked = lock.repo(name)
    assert locked is not None
    if locked.source:
        return locked.source
    for repo in lock.repos:
        if ":" not in repo.name and repo.url == locked.url:
            return repo.name
    return name.split(":")[0]


# The three kinds of member make_bundle writes:
#   git/opbase.bundle
#   downloads/<sha256>/makeself-release-2.5.0-patch1.tar.gz
#   cannbuild.lock
_MEMBER = re.compile(
    r"(?:git/[A-Za-z0-9][A-Za-z0-9._-]*\.bundle"
    r"|downloads/[0-9a-f]{64}/[A-Za-z0-9][A-Za-z0-9._+-]*"
    rf"|{re.escape(LOCK_NAME)})"
)
CHUNK = 1 << 20


_BAD_HINT = (
    "Pass a file made by `cannbuild bundle`; copy it again, or make a new one if it persists."
)


def _bad(bundle: Path, problem: str) -> UsageError:
    return UsageError(f"--bundle {bundle}: {problem}.", _BAD_HINT)


def _manifest(
    tar: tarfile.TarFile, members: Dict[str, tarfile.TarInfo], bundle: Path
) -> Dict[str, str]:
    if MANIFEST not in members or LOCK_NAME not in members:
        raise _bad(bundle, f"it is not a cannbuild bundle (no {MANIFEST} or {LOCK_NAME})")
    # A manifest is one line per member, a few kB; a megabyte is no manifest.
    if members[MANIFEST].size > CHUNK:
        raise _bad(bundle, f"its {MANIFEST} is {members[MANIFEST].size} bytes, not a manifest")
    handle = tar.extractfile(members[MANIFEST])
    assert handle is not None
    where = f"{bundle}:{MANIFEST}"
    kind = BUNDLE_MANIFEST.named(hint=_BAD_HINT)
    manifest: Dict[str, str] = decode_json(handle.read(), where, kind, Dict[str, str])
    for name in manifest:  # a strict grammar: no absolute path, no '..', no empty part
        if not _MEMBER.fullmatch(name):
            raise _bad(bundle, f"member name {name!r} is not one a bundle holds")
    if LOCK_NAME not in manifest:
        raise _bad(bundle, f"its manifest lists no {LOCK_NAME}")
    return manifest


def _stream(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> str:
    """Copy a member to `target` in chunks (bounded memory); returns its sha256."""
    handle = tar.extractfile(member)
    assert handle is not None
    digest = hashlib.sha256()
    target.parent.mkdir(parents=True, exist_ok=True)
    with handle, open(target, "wb") as out:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
            out.write(block)
    return digest.hexdigest()


def seed_from_bundle(ws: Workspace, bundle: Path) -> Lock:
    """Verify the bundle, fill the caches from it, and return the lock it carries.

    Every member is streamed (bounded memory) into a staging folder under the workspace,
    to a path built from a strict name grammar and checked to stay inside (with the
    standard library's tar data filter where this Python has it), and verified against
    the manifest before any cache is touched."""
    fh = open_binary(bundle, BUNDLE)  # a FIFO would block the open, /dev/zero read as an empty tar
    try:
        tar = tarfile.open(fileobj=fh, mode=tar_mode(fh))  # noqa: SIM115 - closed below
    except (OSError, tarfile.TarError) as exc:
        fh.close()
        raise UsageError(
            f"--bundle {bundle} cannot be read ({exc}).", "Pass a file made by `cannbuild bundle`."
        ) from exc
    with fh, tar, tempfile.TemporaryDirectory(dir=str(_ensure(ws.root))) as tmp:
        staged = Path(tmp) / "staged"
        try:
            manifest = _verified(tar, bundle, staged)
        except (tarfile.TarError, EOFError) as exc:  # a bundle cut short while it is read
            raise _bad(bundle, f"it is cut short or damaged ({exc})") from None
        fetcher = Fetcher()
        for name in manifest:
            if name.startswith("git/"):
                repo = name[len("git/") : -len(".bundle")]
                cache = cache_path(ws, repo)
                made = not cache.exists()
                if made:
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    # An empty bare repo to fetch into; the same fetch also tops up an existing
                    # cache.
                    fetcher.git(["init", "--quiet", "--bare", str(cache)])
                try:
                    fetcher.git(
                        # `+refs/*:refs/*`: every branch and tag the bundle carries, forced,
                        # as fetch_repo mirrors.
                        ["fetch", "--quiet", "--force", str(staged / name), "+refs/*:refs/*"],
                        cwd=cache,
                    )
                except GitFailed as exc:  # its sha256 matched a manifest rewritten with it
                    if made:
                        shutil.rmtree(cache, ignore_errors=True)
                    raise _bad(
                        bundle,
                        f"its member {name} is no git bundle git can read ({git_cause(exc.stderr)})",
                    ) from None
            elif name.startswith("downloads/"):
                rel = name[len("downloads/") :]
                target = check_below(ws.downloads, ws.downloads / rel, f"--bundle member {name!r}")
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged / name, target)
        try:
            lock = read_lock(staged / LOCK_NAME)
        except UsageError as exc:  # name the bundle, not the staging folder it came through
            raise _bad(bundle, f"its {LOCK_NAME} is broken ({exc.message.rstrip('.')})") from None
    assert lock is not None
    return lock


def _verified(tar: tarfile.TarFile, bundle: Path, staged: Path) -> Dict[str, str]:
    """The manifest, every member it lists streamed into `staged` and checked against it
    (before any cache is touched)."""
    members = {m.name: m for m in _members(tar, bundle) if m.isfile()}
    manifest = _manifest(tar, members, bundle)
    data_filter = getattr(tarfile, "data_filter", None)
    for name, expected in manifest.items():
        member = members.get(name)
        if member is None:
            raise _bad(bundle, f"{name} is missing")
        if data_filter is not None:
            try:
                data_filter(member, str(staged))
            except tarfile.TarError as exc:
                raise _bad(bundle, f"member {name!r} is refused ({exc})") from None
        target = check_below(staged, staged / name, f"--bundle member {name!r}")
        if _stream(tar, member, target) != expected:
            raise _bad(bundle, f"{name} is corrupt (sha256 mismatch)")
    return manifest


def _members(tar: tarfile.TarFile, bundle: Path) -> List[tarfile.TarInfo]:
    """The members' headers, at most BUNDLE_MEMBERS of them (each is kept in memory)."""
    out: List[tarfile.TarInfo] = []
    for member in tar:
        out.append(member)
        if len(out) > BUNDLE_MEMBERS:
            raise _bad(bundle, f"it holds more than {BUNDLE_MEMBERS} members, not a bundle's few")
    return out


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
