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
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Dict, List

from .errors import UsageError
from .lockfile import Lock, read_lock
from .sources import Fetcher, archive_path, cache_path, sha256_file
from .workspace import Workspace, write_atomic

MANIFEST = "manifest.json"
LOCK_NAME = "cannbuild.lock"


def make_bundle(ws: Workspace, lock_file: Path, out: Path) -> Dict[str, Any]:
    """Pack what the lock pins; everything must already be in the workspace caches."""
    lock = read_lock(lock_file)
    if lock is None:
        raise UsageError(
            f"cannot bundle: {lock_file} does not exist.",
            "Run `cannbuild lock` (or `cannbuild fetch`) first.",
        )
    fetcher = Fetcher()
    files: Dict[str, bytes] = {}
    repos = sorted(
        {r.name.split(":")[0] for r in lock.repos} | {_pin_repo(lock, r.name) for r in lock.repos}
    )
    with tempfile.TemporaryDirectory(dir=str(ws.root)) as tmp:
        for repo in repos:
            cache = cache_path(ws, repo)
            if not cache.exists():
                raise UsageError(
                    f"cannot bundle {repo}: it is not in {ws.git_cache}.",
                    "Run `cannbuild fetch` first.",
                )
            target = Path(tmp) / f"{repo}.bundle"
            fetcher.git(["bundle", "create", "--quiet", str(target), "--all"], cwd=cache)
            files[f"git/{repo}.bundle"] = target.read_bytes()
        for archive in lock.third_party:
            path = archive_path(ws, archive.sha256, archive.url)
            if not path.is_file() or sha256_file(path) != archive.sha256:
                raise UsageError(
                    f"cannot bundle {archive.url}: sha256 {archive.sha256} is not in {ws.downloads}.",
                    "Run `cannbuild fetch` first.",
                )
            files[f"downloads/{archive.sha256}/{path.name}"] = path.read_bytes()
    files[LOCK_NAME] = lock_file.read_bytes()
    manifest = {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}
    files[MANIFEST] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(files[name]))
    write_atomic(out, raw.getvalue())
    return {"path": str(out), "files": len(files), "bytes": out.stat().st_size, "repos": repos}


def bundle_contents(ws: Workspace, lock_file: Path) -> List[str]:
    """What `make_bundle` would pack (for --dry-run): git repos and archives by name."""
    lock = read_lock(lock_file)
    if lock is None:
        raise UsageError(
            f"cannot bundle: {lock_file} does not exist.",
            "Run `cannbuild lock` (or `cannbuild fetch`) first.",
        )
    repos = sorted(
        {r.name.split(":")[0] for r in lock.repos} | {_pin_repo(lock, r.name) for r in lock.repos}
    )
    return [f"git/{r}.bundle" for r in repos] + [a.name for a in lock.third_party] + [LOCK_NAME]


def _pin_repo(lock: Lock, name: str) -> str:
    """`ops-transformer:third_party/opbase` is a commit of opbase's repository."""
    if ":" not in name:
        return name
    locked = lock.repo(name)
    assert locked is not None
    for repo in lock.repos:
        if ":" not in repo.name and repo.url == locked.url:
            return repo.name
    return name.split(":")[0]


def seed_from_bundle(ws: Workspace, bundle: Path) -> Lock:
    """Verify the bundle, fill the caches from it, and return the lock it carries."""
    try:
        tar = tarfile.open(bundle, mode="r")  # noqa: SIM115 - closed by the with below
    except (OSError, tarfile.TarError) as exc:
        raise UsageError(
            f"--bundle {bundle} cannot be read ({exc}).", "Pass a file made by `cannbuild bundle`."
        ) from exc
    with tar, tempfile.TemporaryDirectory(dir=str(_ensure(ws.root))) as tmp:
        members = {m.name: m for m in tar.getmembers() if m.isfile()}
        if MANIFEST not in members or LOCK_NAME not in members:
            raise UsageError(
                f"--bundle {bundle} is not a cannbuild bundle (no {MANIFEST}).",
                "Pass a file made by `cannbuild bundle`.",
            )
        manifest = json.loads(_read(tar, members[MANIFEST]))
        staged = Path(tmp) / "staged"
        for name, expected in manifest.items():  # verify everything before touching a cache
            safe = not name.startswith("/") and ".." not in Path(name).parts
            data = _read(tar, members[name]) if safe and name in members else None
            if data is None or hashlib.sha256(data).hexdigest() != expected:
                raise UsageError(
                    f"--bundle {bundle}: {name} is missing or corrupt (sha256 mismatch).",
                    "Copy the bundle again; make a new one with `cannbuild bundle` if it persists.",
                )
            (staged / name).parent.mkdir(parents=True, exist_ok=True)
            (staged / name).write_bytes(data)
        fetcher = Fetcher()
        for name in manifest:
            if name.startswith("git/"):
                repo = name[len("git/") : -len(".bundle")]
                cache = cache_path(ws, repo)
                if not cache.exists():
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    fetcher.git(["init", "--quiet", "--bare", str(cache)])
                fetcher.git(
                    ["fetch", "--quiet", "--force", str(staged / name), "+refs/*:refs/*"],
                    cwd=cache,
                )
            elif name.startswith("downloads/"):
                write_atomic(ws.downloads / name[len("downloads/") :], (staged / name).read_bytes())
        if LOCK_NAME not in manifest:
            raise UsageError(
                f"--bundle {bundle} is not a cannbuild bundle (its manifest lists no {LOCK_NAME}).",
                "Pass a file made by `cannbuild bundle`.",
            )
        lock = read_lock(staged / LOCK_NAME)
    assert lock is not None
    return lock


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = tar.extractfile(member)
    assert handle is not None
    return handle.read()


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


__all__ = ["make_bundle", "seed_from_bundle"]
