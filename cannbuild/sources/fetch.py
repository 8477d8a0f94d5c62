"""Mechanism: every network access (git and downloads) goes through `Fetcher`.

It rewrites URLs by the mirror map, retries transient failures with backoff, and in
offline mode refuses at once, naming the URL.  Proxies come from the environment and
are never unset; a `user:pass@` in a download URL is sent as basic auth.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

from msgspec import Struct

from ..errors import FetchError, OfflineViolation
from ..proc import run
from ..redact import redact

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


class Fetcher(Struct, frozen=True):
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
        proc = run(["git", *args], cwd=cwd, env=env, timeout=GIT_TIMEOUT_S)
        if proc.returncode != 0:
            raise GitFailed(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
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

    def fetch_repo(self, cache: Path, url: str, root: Optional[Path] = None) -> None:
        """Mirror every branch and tag of `url` into the bare `cache`.  The first time
        is a bare clone made beside it and renamed into place: no half-made cache is
        left behind, and it takes half the time of init + fetch.  `root`: the workspace
        the cache is in; nothing below it is written or removed through a link."""
        from .. import safefs

        source = self._source(url, "fetching")
        owner = root if root is not None else cache.parent
        safefs.check_below(owner, cache, "the git cache", folder=True)
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
            safefs.make_dirs(owner, cache.parent, "the git cache")
            tmp = cache.with_name(cache.name + ".tmp")  # one writer: the workspace lock

            def attempt() -> None:
                safefs.remove(owner, tmp, "the git cache", ignore_errors=True)
                try:
                    self.git(["clone", "--quiet", "--bare", source, str(tmp)])
                    # every fetch names its URL; a stored one could hold a credential
                    self.git(["remote", "remove", "origin"], cwd=tmp)
                    safefs.replace(owner, tmp, cache, "the git cache")
                except BaseException:
                    safefs.remove(owner, tmp, "the git cache", ignore_errors=True)
                    raise

        try:
            self._retrying(
                f"git {verb}",
                source,
                attempt,
                lambda e: isinstance(e, GitFailed) and bool(_TRANSIENT.search(e.stderr)),
            )
        except GitFailed as exc:
            raise FetchError(
                f"git {verb} of {redact(source)} failed (exit {exc.code}): {redact(exc.stderr.strip().splitlines()[-1] if exc.stderr.strip() else 'no message')}.",
                _fetch_hint(url, source),
            ) from None

    def download(self, url: str, dest: Path, root: Optional[Path] = None) -> None:
        """`url` into `dest` (through a .part file beside it); `root`: the workspace it
        is in, where nothing is written through a link."""
        from .. import safefs

        source = self._source(url, "downloading")
        owner = root if root is not None else dest.parent
        safefs.make_dirs(owner, dest.parent, "the download cache")
        safefs.remove(owner, dest.with_name(f".{dest.name}.part"), "the download cache")
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
        safefs.replace(owner, tmp, dest, "the download cache")

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


class GitFailed(Exception):
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
