"""Git sources and third-party archives: mirrors, retries, offline, atomic checkouts.

Every network access goes through `Fetcher`, which rewrites URLs by the
mirror map, retries transient failures with backoff, and in offline mode
refuses at once, naming the URL.  Proxies come from the environment and are
never unset.  A checkout is cloned into a temporary folder and renamed into
place, so an interrupted fetch never leaves a half-made tree.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar

from .errors import CannbuildError, OfflineViolation
from .redact import redact
from .workspace import Workspace, read_json, write_json_atomic

GIT_TIMEOUT_S = 600
DOWNLOAD_TIMEOUT_S = 60
# fetches and clones wait on the network and the disk, not the CPU: a few at once
MAX_PARALLEL_FETCHES = 4

T = TypeVar("T")

_TRANSIENT = re.compile(
    r"Could not resolve host|Connection timed out|Connection reset|Operation timed out|"
    r"RPC failed|early EOF|remote end hung up|unable to access|Failed to connect|"
    r"The requested URL returned error: 5\d\d|TLS|gnutls|SSL",
    re.IGNORECASE,
)


class FetchError(CannbuildError):
    exit_code = 4


def in_parallel(calls: Sequence[Callable[[], T]]) -> List[T]:
    """Run independent fetches or clones side by side; results in order, and the first
    failure in that order is raised once every call has ended (none is left running)."""
    if len(calls) < 2:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=min(len(calls), MAX_PARALLEL_FETCHES)) as pool:
        futures = [pool.submit(call) for call in calls]
        wait(futures)
    return [f.result() for f in futures]


def rewrite(url: str, mirrors: Sequence[Tuple[str, str]]) -> str:
    """Apply the longest matching mirror prefix (mirrors come sorted longest first)."""
    for prefix, replacement in sorted(mirrors, key=lambda kv: -len(kv[0])):
        if url.startswith(prefix):
            return replacement + url[len(prefix) :]
    return url


def is_remote(url: str) -> bool:
    return not (url.startswith("file://") or url.startswith("/") or os.path.exists(url))


def mirror_git_env(mirrors: Sequence[Tuple[str, str]], offline: bool) -> Dict[str, str]:
    """Environment that makes git inside a build honour the mirror map (and offline mode)."""
    env: Dict[str, str] = {}
    for i, (prefix, replacement) in enumerate(mirrors):
        env[f"GIT_CONFIG_KEY_{i}"] = f"url.{replacement}.insteadOf"
        env[f"GIT_CONFIG_VALUE_{i}"] = prefix
    if mirrors:
        env["GIT_CONFIG_COUNT"] = str(len(mirrors))
    if offline:
        dead = "http://127.0.0.1:9"  # the discard port: any download fails at once
        env.update(
            GIT_ALLOW_PROTOCOL="file",
            http_proxy=dead,
            https_proxy=dead,
            HTTP_PROXY=dead,
            HTTPS_PROXY=dead,
            ALL_PROXY=dead,
            no_proxy="",
            NO_PROXY="",
        )
    return env


@dataclass(frozen=True)
class Fetcher:
    mirrors: Tuple[Tuple[str, str], ...] = ()
    offline: bool = False
    retries: int = 3
    base_delay_s: float = 1.0
    sleep: Callable[[float], None] = time.sleep

    def _retrying(
        self,
        what: str,
        url: str,
        attempt: Callable[[], None],
        transient: Callable[[Exception], bool],
    ) -> None:
        delay = self.base_delay_s
        for i in range(self.retries + 1):
            try:
                attempt()
                return
            except Exception as exc:  # classified below; non-transient errors re-raise
                if i == self.retries or not transient(exc):
                    raise
                self.sleep(delay)
                delay *= 2

    def git(self, args: Sequence[str], cwd: Optional[Path] = None) -> str:
        env = dict(os.environ)
        env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="true")
        proc = subprocess.run(
            ["git", *args],
            cwd=str(cwd) if cwd else None,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
        if proc.returncode != 0:
            raise _GitFailed(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
        return proc.stdout.decode("utf-8", "replace")

    def _source(self, url: str, doing: str) -> str:
        """`url` after the mirror rules; refused in offline mode when it needs the network."""
        source = rewrite(url, self.mirrors)
        if self.offline and is_remote(source):
            raise OfflineViolation(
                f"offline mode: {doing} {redact(source)} would need the network.",
                "Seed the workspace with --bundle OUT.tar (made by `cannbuild bundle` on a connected "
                "machine), or drop --offline.",
            )
        return source

    def fetch_repo(self, cache: Path, url: str) -> None:
        """Mirror every branch and tag of `url` into the bare `cache`.  The first time
        is a bare clone made beside it and renamed into place: no half-made cache is
        left behind, and it takes half the time of init + fetch."""
        source = self._source(url, "fetching")
        if cache.exists():
            verb = "fetch"

            def attempt() -> None:
                self.git(
                    [
                        "fetch",
                        "--quiet",
                        "--prune",
                        "--force",
                        source,
                        "+refs/heads/*:refs/heads/*",
                        "+refs/tags/*:refs/tags/*",
                    ],
                    cwd=cache,
                )

        else:
            verb = "clone"
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_name(cache.name + ".tmp")  # one writer: the workspace lock

            def attempt() -> None:
                shutil.rmtree(tmp, ignore_errors=True)
                try:
                    self.git(["clone", "--quiet", "--bare", source, str(tmp)])
                    # every fetch names its URL; a stored one could hold a credential
                    self.git(["remote", "remove", "origin"], cwd=tmp)
                    os.replace(tmp, cache)
                except BaseException:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise

        try:
            self._retrying(
                f"git {verb}",
                source,
                attempt,
                lambda e: isinstance(e, _GitFailed) and bool(_TRANSIENT.search(e.stderr)),
            )
        except _GitFailed as exc:
            raise FetchError(
                f"git {verb} of {redact(source)} failed (exit {exc.code}): {redact(exc.stderr.strip().splitlines()[-1] if exc.stderr.strip() else 'no message')}.",
                _fetch_hint(url, source),
            ) from None

    def download(self, url: str, dest: Path) -> None:
        source = self._source(url, "downloading")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.part")
        try:
            if source.startswith("file://"):  # a local mirror: a copy, no http stack
                from urllib.parse import unquote, urlsplit

                shutil.copyfile(unquote(urlsplit(source).path), tmp)
            else:
                self._http_get(source, tmp)
        except OSError as exc:  # urllib's URLError and HTTPError are OSErrors too
            tmp.unlink(missing_ok=True)
            raise FetchError(
                f"downloading {redact(source)} failed: {redact(str(exc))}.",
                _fetch_hint(url, source),
            ) from None
        os.replace(tmp, dest)

    def _http_get(self, source: str, tmp: Path) -> None:
        import urllib.error  # only downloads pay for the http stack
        import urllib.request

        request = _request(source)

        def attempt() -> None:
            try:
                resp = urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_S)
            except urllib.error.HTTPError as exc:
                exc.close()  # the error holds the open response
                raise
            with resp, open(tmp, "wb") as out:
                shutil.copyfileobj(resp, out)

        def transient(exc: Exception) -> bool:
            if isinstance(exc, urllib.error.HTTPError):
                return exc.code >= 500
            return isinstance(exc, (urllib.error.URLError, TimeoutError, ConnectionError))

        self._retrying("download", source, attempt, transient)


def _request(source: str) -> Any:
    """A request for `source`; a `user:pass@` in it is sent as HTTP basic auth, as git
    does, never as part of the host name (and never to where a redirect points)."""
    import base64
    import urllib.request
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(source)
    if parts.username is None and parts.password is None:
        return urllib.request.Request(source)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    request = urllib.request.Request(urlunsplit(parts._replace(netloc=netloc)))
    user = unquote(parts.username or "")
    password = unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    request.add_unredirected_header("Authorization", f"Basic {token}")
    return request


class _GitFailed(Exception):
    def __init__(self, args: Sequence[str], code: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args)} exited {code}")
        self.code = code
        self.stderr = stderr


def _fetch_hint(url: str, source: str) -> str:
    if source != url:
        return f"The mirror map rewrote {redact(url)}; check the mirror (cannbuild.mirrors) or your proxy settings."
    return (
        "Check the network and proxy (http_proxy/https_proxy are honoured), add a mirror rule "
        "(cannbuild.mirrors: {'https://gitcode.com/': 'https://your-mirror/'}), or build offline "
        "from a bundle (cannbuild bundle on a connected machine, then --offline --bundle)."
    )


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- git cache queries ---------------------------------------------------------


def cache_path(ws: Workspace, repo: str) -> Path:
    return ws.git_cache / f"{repo.replace('/', '_')}.git"


def has_commit(fetcher: Fetcher, cache: Path, sha: str) -> bool:
    if not cache.exists():
        return False
    try:
        fetcher.git(["cat-file", "-e", f"{sha}^{{commit}}"], cwd=cache)
    except _GitFailed:
        return False
    return True


def resolve_ref(
    fetcher: Fetcher, cache: Path, ref: Mapping[str, Optional[str]], url: str
) -> Tuple[str, int]:
    """A tag, a branch (optionally as of a date) or a commit -> (full commit id, commit time),
    read in one call to plumbing (`rev-list`, which no user `log.*` setting changes)."""
    from .recipes import describe_ref

    if ref.get("tag"):
        rev = f"refs/tags/{ref['tag']}^{{commit}}"
    elif ref.get("commit"):
        rev = f"{ref['commit']}^{{commit}}"
    else:
        rev = f"refs/heads/{ref['branch']}"
    args = ["rev-list", "-1", "--timestamp"]
    if ref.get("until") and not ref.get("tag") and not ref.get("commit"):
        args.append(f"--before={ref['until']}")
    try:
        out = fetcher.git([*args, rev, "--"], cwd=cache).split()
    except _GitFailed as exc:
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


@dataclass(frozen=True)
class Nested:
    """A second clone inside a checkout (opbase source inside ops-transformer >= 9.0)."""

    dest: str
    cache: Path
    commit: str
    url: str


@dataclass(frozen=True)
class Seed:
    """A third-party archive put into a checkout where its ref looks for a local copy:
    copied to `dest`, or unpacked there when `dest` ends with "/"."""

    source: Path
    dest: str
    sha256: str


def checkout_marker(ws: Workspace, repo: str) -> Path:
    return ws.src / f".{repo}.checkout.json"


def checkout_identity(
    commit: str, nested: Sequence[Nested], seeds: Sequence[Seed]
) -> Dict[str, object]:
    return {
        "commit": commit,
        "nested": {n.dest: n.commit for n in nested},
        "third_party": {s.dest: s.sha256 for s in seeds},
    }


def _clone_at(fetcher: Fetcher, cache: Path, dest: Path, commit: str, url: str) -> None:
    """A clone of `cache` at `commit` whose origin is the (redacted) upstream URL."""
    if dest.exists():
        shutil.rmtree(dest)
    fetcher.git(["clone", "--quiet", "--no-checkout", str(cache), str(dest)])
    fetcher.git(
        ["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit], cwd=dest
    )
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
    """The checkout at `commit` with its nested clones and seeds; (path, changed)."""
    dest = ws.checkout(repo)
    identity = checkout_identity(commit, nested, seeds)
    marker = checkout_marker(ws, repo)
    if dest.is_dir() and read_json(marker) == identity:
        return dest, False
    ws.src.mkdir(parents=True, exist_ok=True)
    tmp = ws.src / f".{repo}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    # the nested clones go to folders of their own, so they run beside the main clone
    parked = [ws.src / f".{repo}.nested{i}-{os.getpid()}" for i in range(len(nested))]
    try:
        in_parallel(
            [lambda: _clone_at(fetcher, cache, tmp, commit, url)]
            + [
                (
                    lambda item=item, where=where: _clone_at(
                        fetcher, item.cache, where, item.commit, item.url
                    )
                )
                for item, where in zip(nested, parked)
            ]
        )
        for item, where in zip(nested, parked):
            target = tmp / item.dest
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_dir() and not any(target.iterdir()):
                target.rmdir()  # an empty placeholder, as `git clone` would accept
            elif target.exists():
                raise _GitFailed(
                    ["clone"], 128, f"destination path '{item.dest}' already exists in {repo}"
                )
            os.replace(where, target)
        for seed in seeds:
            target = tmp / seed.dest
            target.parent.mkdir(parents=True, exist_ok=True)
            if seed.dest.endswith("/"):
                unpack_archive(seed.source, target)
            else:
                shutil.copy2(seed.source, target)
    except BaseException as exc:  # a timeout or Ctrl-C too: no half-made folder stays
        for folder in (tmp, *parked):
            shutil.rmtree(folder, ignore_errors=True)
        if not isinstance(exc, _GitFailed):
            raise
        raise FetchError(
            f"checking out {repo} at {commit[:12]} failed: {exc.stderr.strip()}",
            "Run cannbuild fetch again; if it persists, delete the workspace's cache/git folder.",
        ) from None
    trash = ws.src / f".{repo}.old-{os.getpid()}"
    if dest.exists():
        os.replace(dest, trash)
    os.replace(tmp, dest)
    write_json_atomic(marker, identity)
    if trash.exists():
        shutil.rmtree(trash, ignore_errors=True)
    return dest, True


# --- third-party archives --------------------------------------------------------


def archive_path(ws: Workspace, sha256: str, url: str) -> Path:
    return ws.downloads / sha256 / url.rsplit("/", 1)[-1]


def unpack_archive(archive: Path, dest: Path) -> None:
    """Unpack as CMake's ExternalProject does: a single top-level folder is stripped.
    Members that would land outside `dest` (absolute, `..`, links) refuse the archive."""
    import tarfile  # only unpacking pays for them
    import zipfile

    work = dest.with_name(f".{dest.name}.unpack")
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                for name in zf.namelist():
                    _inside(archive, name)
                zf.extractall(work)
        else:
            with tarfile.open(archive) as tar:
                for member in tar.getmembers():
                    _inside(archive, member.name)
                    if member.issym() or member.islnk():
                        _inside(archive, str(Path(member.name).parent / member.linkname))
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(work, filter="data")
                else:  # pragma: no cover - a Python without the filter
                    tar.extractall(work)
        entries = list(work.iterdir())
        top = entries[0] if len(entries) == 1 and entries[0].is_dir() else work
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(top, dest)
    except (OSError, EOFError, ValueError, tarfile.TarError, zipfile.BadZipFile) as exc:
        raise FetchError(
            f"cannot unpack {archive.name} into {dest}: {exc}.",
            "The cached file is damaged: delete it from the workspace's cache/downloads and fetch again.",
        ) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _inside(archive: Path, name: str) -> None:
    path = Path(name)
    if path.is_absolute() or ".." in path.parts:
        raise ValueError(f"member {name!r} of {archive.name} points outside the folder")


def ensure_archive(
    fetcher: Fetcher, ws: Workspace, url: str, expected: Optional[str]
) -> Tuple[Path, str]:
    """The archive from the download cache, fetched (and verified) when missing."""
    if expected:
        cached = archive_path(ws, expected, url)
        if cached.is_file() and sha256_file(cached) == expected:
            return cached, expected
    # per URL: two repos' threads may fetch archives of the same file name at once
    tag = hashlib.sha256(redact(url).encode()).hexdigest()[:12]
    tmp = ws.downloads / ".incoming" / f"{tag}-{url.rsplit('/', 1)[-1]}"
    fetcher.download(url, tmp)
    actual = sha256_file(tmp)
    if expected and actual != expected:
        tmp.unlink(missing_ok=True)
        raise FetchError(
            f"{redact(url)} has sha256 {actual}, but {expected} was expected (recipe or lock).",
            "The file changed upstream or the mirror serves another file; check it, then run "
            "`cannbuild lock` to re-pin deliberately.",
        )
    final = archive_path(ws, actual, url)
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, final)
    return final, actual
