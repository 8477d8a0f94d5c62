"""Mechanism: every network access (git and downloads) goes through `Fetcher`.

It rewrites URLs by the mirror map, retries transient failures with backoff, and in
offline mode refuses at once, naming the URL.  Proxies come from the environment and
are never unset; a `user:pass@` in a download URL is sent as basic auth.

Every wait on a remote is bounded (a per-read timeout is not: a mirror that sends one
byte a second never trips it).  A transfer that moves less than LOW_SPEED_BPS for
LOW_SPEED_TIME_S is stalled and stopped (curl's --speed-limit/--speed-time; git over
http gets the same rule as http.lowSpeedLimit/lowSpeedTime); a git command is stopped
after GIT_TIMEOUT_S; and one repository or archive, its retries and their pauses
included, costs at most GIT_BUDGET_S / DOWNLOAD_BUDGET_S.  Then: a FetchError (exit 4)
naming the URL, the bound and the fix.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from msgspec import Struct

from .. import safefs
from ..bounded import ARCHIVE, digest
from ..errors import FREE_SPACE, FetchError, OfflineViolation, StorageError, says_disk_full
from ..lazy import lazy_module
from ..proc import run
from ..redact import redact
from .transfer import Stalled, TransferRule, TransferWatch, secs, stall_rule

if TYPE_CHECKING:
    import base64
    from http import client as http_client
    from urllib import error as urllib_error
    from urllib import request as urllib_request
else:  # only downloads pay for the http stack
    base64 = lazy_module("base64")
    http_client = lazy_module("http.client")
    urllib_error = lazy_module("urllib.error")
    urllib_request = lazy_module("urllib.request")

# one git command: a full clone of ops-transformer over a slow but steady link fits
GIT_TIMEOUT_S = 600
# one repository's clone or fetch, every attempt and backoff pause included: a remote
# that keeps failing or crawling costs this, not (retries + 1) x GIT_TIMEOUT_S
GIT_BUDGET_S = 1200
# a transfer that moves less than LOW_SPEED_BPS on average over the last LOW_SPEED_TIME_S
# is stalled (curl's rule, and git's http.lowSpeedLimit/lowSpeedTime): no total cap on a
# transfer that moves, since archives can be large; a trickle is stopped within a minute
LOW_SPEED_BPS = 1024
LOW_SPEED_TIME_S = 60.0
# one archive, every attempt and backoff pause included: a 100 MB archive at 64 KiB/s fits
DOWNLOAD_BUDGET_S = 1800
# git subcommands that reach a remote: they get the low-speed rule
_NETWORK_GIT = frozenset({"clone", "fetch", "ls-remote", "pull", "push"})
# fetches and clones wait on the network and the disk, not the CPU: a few at once
MAX_PARALLEL_FETCHES = 4

T = TypeVar("T")

# curl's message when git's http.lowSpeedLimit/lowSpeedTime stops a transfer
_TOO_SLOW = re.compile(r"Operation too slow|transfer rate dropped", re.IGNORECASE)
# Failures worth another attempt: name lookup, resets, timeouts, git's `RPC failed` / `early EOF`
# on a dropped connection, HTTP 5xx, TLS hiccups.  A 404 or an auth error is not: retrying cannot
# change it.
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


def git_cause(stderr: str) -> str:
    """The line of git's stderr that says what went wrong: its first `fatal:` (git ends
    with advice, "Please make sure you have the correct access rights / and the
    repository exists."), else the last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    fatal = next((line for line in lines if line.startswith(("fatal:", "error:"))), None)
    return fatal or (lines[-1] if lines else "no message")


class Fetcher(Struct, frozen=True, kw_only=True):
    mirrors: Tuple[Tuple[str, str], ...] = ()
    offline: bool = False
    retries: int = 3
    base_delay_s: float = 1.0
    sleep: Callable[[float], None] = time.sleep

    def _retrying(
        self,
        attempt: Callable[[], None],
        transient: Callable[[Exception], bool],
        deadline: float = float("inf"),
    ) -> None:
        """`attempt` until it succeeds, a failure is not transient, the retries are used
        up, or the pause before the next one would end past `deadline` (monotonic)."""
        delay = self.base_delay_s
        for i in range(self.retries + 1):
            try:
                attempt()
                return
            except Exception as exc:  # classified below; non-transient errors re-raise
                if i == self.retries or not transient(exc):
                    raise
                if time.monotonic() + delay >= deadline:
                    raise  # the budget is spent: no attempt would have time left
                # Exponential backoff: 1 s, 2 s, 4 s with the defaults.
                self.sleep(delay)
                delay *= 2

    def git(
        self, args: Sequence[str], cwd: Optional[Path] = None, timeout: float = GIT_TIMEOUT_S
    ) -> str:
        """Run git; a command still running after `timeout` s is stopped (with all it
        started) and raises GitTimedOut, a GitFailed."""
        env = dict(os.environ)
        # Never prompt: a credential prompt would hang a build; the URL or the mirror carries one.
        env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="true")
        argv = ["git"]
        if args and args[0] in _NETWORK_GIT:
            argv += [
                "-c",
                f"http.lowSpeedLimit={LOW_SPEED_BPS}",
                "-c",
                f"http.lowSpeedTime={int(LOW_SPEED_TIME_S)}",
            ]
        try:
            proc = run([*argv, *args], cwd=cwd, env=env, timeout=max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            raise GitTimedOut(args, timeout) from None
        if proc.returncode != 0:
            stderr = proc.stderr.decode("utf-8", "replace")
            # `ulimit -f` kills git, or the index-pack that writes a pack of more than 100
            # objects, which leaves git only "invalid index-pack output" to say (the real repos)
            cut = proc.returncode == -signal.SIGXFSZ or (
                "invalid index-pack output" in stderr
                and resource.getrlimit(resource.RLIMIT_FSIZE)[0] != resource.RLIM_INFINITY
            )
            if cut or says_disk_full(stderr.splitlines()):
                # a full disk, a quota or `ulimit -f`: no mirror or retry helps (exit 11)
                said = "the file size limit stopped it" if cut else git_cause(stderr)
                into = cwd or (args[-1] if args and args[0] == "clone" else os.getcwd())
                raise StorageError(
                    f"git {args[0] if args else ''} could not write in {into}: {redact(said)}.",
                    f"{FREE_SPACE}, raise the file size limit (ulimit -f), or pass --workspace "
                    "on a larger disk.",
                )
            raise GitFailed(args, proc.returncode, stderr)
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

    def fetch_repo(
        self, cache: Path, url: str, root: Optional[Path] = None, budget_s: float = GIT_BUDGET_S
    ) -> None:
        """Mirror every branch and tag of `url` into the bare `cache`.  The first time
        is a bare clone made beside it and renamed into place: no half-made cache is
        left behind, and it takes half the time of init + fetch.  `root`: the workspace
        the cache is in; nothing below it is written or removed through a link.
        `budget_s`: what the fetch may take, retries included (each git command also
        stops at GIT_TIMEOUT_S, and a stalled http transfer within LOW_SPEED_TIME_S)."""
        source = self._source(url, "fetching")
        owner = root if root is not None else cache.parent
        safefs.check_below(owner, cache, "the git cache", folder=True)
        deadline = time.monotonic() + budget_s

        def left() -> float:
            return min(float(GIT_TIMEOUT_S), deadline - time.monotonic())

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
                        # Force-update every branch and tag, prune deleted ones: the cache mirrors
                        # upstream.
                        "+refs/heads/*:refs/heads/*",
                        "+refs/tags/*:refs/tags/*",
                    ],
                    cwd=cache,
                    timeout=left(),
                )

        else:
            verb = "clone"
            safefs.make_dirs(owner, cache.parent, "the git cache")
            # named for this run: a run killed with -9 leaves its git clone writing into
            # its own folder (a session of its own), which the next run must not share
            tmp = cache.with_name(f"{cache.name}.tmp-{os.getpid()}")

            def attempt() -> None:
                safefs.remove(owner, tmp, "the git cache", ignore_errors=True)
                try:
                    self.git(["clone", "--quiet", "--bare", source, str(tmp)], timeout=left())
                    # every fetch names its URL; a stored one could hold a credential
                    self.git(["remote", "remove", "origin"], cwd=tmp, timeout=left())
                    safefs.replace(owner, tmp, cache, "the git cache")
                except BaseException:  # a killed git too: its half-written clone goes
                    safefs.remove(owner, tmp, "the git cache", ignore_errors=True)
                    raise

        def transient(exc: Exception) -> bool:
            if isinstance(exc, GitTimedOut):
                return True  # a slow remote: another attempt, while the budget lasts
            return isinstance(exc, GitFailed) and bool(_TRANSIENT.search(exc.stderr))

        try:
            self._retrying(attempt, transient, deadline)
        except GitTimedOut as exc:
            # the limit that stopped it: a command's own, or what was left of the budget (a
            # loaded host starts git a few ms into it: said as the budget, not 0.98 s)
            limit = GIT_TIMEOUT_S if exc.timeout_s >= GIT_TIMEOUT_S else budget_s
            raise FetchError(
                f"git {verb} of {redact(source)} did not finish within {secs(limit)} "
                f"and was stopped (a git command may take {secs(GIT_TIMEOUT_S)}, a fetch with "
                f"its retries {secs(budget_s)}).",
                _slow_hint(url, source),
            ) from None
        except GitFailed as exc:
            stderr = exc.stderr.strip()
            if _TOO_SLOW.search(stderr):
                raise FetchError(
                    f"git {verb} of {redact(source)} stalled: {stall_rule(LOW_SPEED_BPS, LOW_SPEED_TIME_S)}.",
                    _slow_hint(url, source),
                ) from None
            raise FetchError(
                f"git {verb} of {redact(source)} failed (exit {exc.code}): "
                f"{redact(git_cause(stderr)).rstrip('.')}.",
                _fetch_hint(url, source),
            ) from None

    def download(
        self,
        url: str,
        dest: Path,
        root: Optional[Path] = None,
        *,
        low_speed_bps: int = LOW_SPEED_BPS,
        low_speed_time_s: float = LOW_SPEED_TIME_S,
        budget_s: float = DOWNLOAD_BUDGET_S,
    ) -> None:
        """`url` into `dest` (through a .part file beside it); `root`: the workspace it
        is in, where nothing is written through a link.  A transfer under
        `low_speed_bps` on average over the last `low_speed_time_s` is stalled and tried
        again; all attempts and pauses together stop at `budget_s`."""
        source = self._source(url, "downloading")
        owner = root if root is not None else dest.parent
        safefs.make_dirs(owner, dest.parent, "the download cache")
        tmp = dest.with_name(f".{dest.name}.part")
        safefs.remove(owner, tmp, "the download cache")
        try:
            # The sandbox's mirror and a copy on a shared disk are `file://` URLs.
            if source.startswith("file://"):  # a local mirror: a copy, no http stack
                shutil.copyfile(unquote(urlsplit(source).path), tmp)
            else:
                rule = TransferRule(
                    low_speed_bps=low_speed_bps,
                    low_speed_time_s=low_speed_time_s,
                    budget_s=budget_s,
                )
                self._http_get(source, tmp, rule)
        except Stalled as exc:
            safefs.remove(owner, tmp, "the download cache", ignore_errors=True)
            raise FetchError(
                f"downloading {redact(source)} gave up: {exc.reason}.", _slow_hint(url, source)
            ) from None
        except (OSError, http_client.HTTPException) as exc:  # URLError, HTTPError: OSErrors
            safefs.remove(owner, tmp, "the download cache", ignore_errors=True)
            raise FetchError(
                f"downloading {redact(source)} failed: {redact(str(exc) or type(exc).__name__)}.",
                _fetch_hint(url, source),
            ) from None
        safefs.replace(owner, tmp, dest, "the download cache")

    def _http_get(self, source: str, tmp: Path, rule: TransferRule) -> None:
        request = _request(source)
        deadline = time.monotonic() + rule.budget_s

        def attempt() -> None:
            with TransferWatch(rule, deadline) as watch:
                try:
                    resp = watch.opener().open(request, timeout=watch.socket_timeout())
                except urllib_error.HTTPError as exc:
                    exc.close()  # the error holds the open response
                    raise
                with resp, open(tmp, "wb") as out:
                    for block in iter(lambda: resp.read(1 << 16), b""):
                        out.write(block)
                        watch.arrived(len(block))

        def transient(exc: Exception) -> bool:
            if isinstance(exc, Stalled):
                return not exc.budget_spent
            if isinstance(exc, urllib_error.HTTPError):
                # 4xx will not change on a retry; 5xx may.
                return exc.code >= 500
            return isinstance(
                exc,
                (urllib_error.URLError, TimeoutError, ConnectionError, http_client.HTTPException),
            )

        self._retrying(attempt, transient, deadline)


def _request(source: str) -> Any:
    """A request for `source`; a `user:pass@` in it is sent as HTTP basic auth, as git
    does, never as part of the host name (and never to where a redirect points)."""
    parts = urlsplit(source)
    if parts.username is None and parts.password is None:
        return urllib_request.Request(source)
    request = urllib_request.Request(urlunsplit(parts._replace(netloc=host_port(parts))))
    # `add_unredirected_header`: a redirect to another host does not carry the credential.
    request.add_unredirected_header("Authorization", basic_auth(parts))
    return request


def host_port(parts: SplitResult) -> str:
    """A URL's host (an IPv6 literal keeps its brackets) and port, without credentials."""
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return host if parts.port is None else f"{host}:{parts.port}"


def basic_auth(parts: SplitResult) -> str:
    """The Authorization a URL's `user:pass@` becomes, as git and ccache send it."""
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


class GitFailed(Exception):
    def __init__(self, args: Sequence[str], code: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args)} exited {code}")
        self.code = code
        self.stderr = stderr


class GitTimedOut(GitFailed, FetchError):
    """A git command stopped at its timeout (it and all it started were killed).  A
    GitFailed to the callers that handle those, and a FetchError (exit 4, one paragraph)
    wherever it is not caught: never a raw TimeoutExpired."""

    def __init__(self, args: Sequence[str], timeout_s: float) -> None:
        verb = args[0] if args else ""
        said = f"git {verb} did not finish within {secs(timeout_s)} and was stopped"
        super().__init__(args, 124, said)
        self.timeout_s = max(timeout_s, 0.0)
        self.message = f"{said}."
        self.hint = (
            "Retry; if it happens again, check the disk the workspace is on and, for a "
            "remote, the network (a mirror rule in cannbuild.mirrors for a slow one)."
        )


def _slow_hint(url: str, source: str) -> str:
    """What to do about a remote that is too slow or stalls."""
    if source != url:
        where = (
            f"The mirror map rewrote {redact(url)}: check that mirror (cannbuild.mirrors in "
            "invoke.yaml) or point the rule at a faster one"
        )
    else:
        where = (
            "Add a mirror rule for it (cannbuild.mirrors in invoke.yaml: "
            "{'https://gitcode.com/': 'https://your-mirror/'})"
        )
    return (
        f"{where}, build offline from a bundle (`cannbuild bundle OUT.tar` on a connected "
        "machine, then --offline --bundle OUT.tar), or retry when the remote is faster."
    )


def _fetch_hint(url: str, source: str) -> str:
    if source != url:
        return f"The mirror map rewrote {redact(url)}; check the mirror (cannbuild.mirrors) or your proxy settings."
    return (
        "Check the network and proxy (http_proxy/https_proxy are honoured), add a mirror rule "
        "(cannbuild.mirrors: {'https://gitcode.com/': 'https://your-mirror/'}), or build offline "
        "from a bundle (cannbuild bundle on a connected machine, then --offline --bundle)."
    )


def sha256_file(path: Path) -> str:
    return digest(path, ARCHIVE)
