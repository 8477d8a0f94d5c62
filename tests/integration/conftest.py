"""Integration tests: the real pipeline on the emulated Ascend host.

Sandboxes are created once per run (one per variant/CANN) and shared, by every xdist
worker too; every test gets its own workspace and lock file (its own tmp_path as cwd).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

import pytest

from cannbuild.sandbox import SandboxSpec, create_sandbox, load_info

SPECS = {
    "A2-8.5.0": ("A2", "8.5.0"),
    "A3-9.0.0": ("A3", "9.0.0"),
    "A2-8.3.RC2": ("A2", "8.3.RC2"),
    "A2-9.0.1": ("A2", "9.0.1"),
    "A3-9.1.0": ("A3", "9.1.0"),
}


def pytest_collection_modifyitems(items):
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where this run keeps what its xdist workers share (sandboxes, the compile cache):
    the folder above each worker's own basetemp, or the basetemp itself without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def one_at_a_time(lock: Path) -> Iterator[None]:
    """An exclusive flock on `lock` for the block: workers making one shared thing take
    turns, and the later ones find it made."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session", autouse=True)
def session_ccache(tmp_path_factory) -> Iterator[Path]:
    """The stand-in build.sh, like the real one, compiles through the ccache PATH finds:
    the run's builds share a cache of their own, not the user's ~/.cache/ccache.  Paths
    under the run's folder are hashed relative to the build's cwd (CCACHE_BASEDIR, no cwd
    in the hash), so a workspace at another path of the same depth takes its compilations
    from the cache; a test that compares builds at two paths turns it off.  The sandboxes'
    emulated runtime is compiled once for the run too, into its own per-user cache
    (XDG_CACHE_HOME, cannbuild/usercache.py), never the user's."""
    root = shared_root(tmp_path_factory)
    folder = root / "ccache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(root / "xdg-cache"))
        patch.setenv("CCACHE_DIR", str(folder))
        patch.setenv("CCACHE_BASEDIR", str(root))
        patch.setenv("CCACHE_NOHASHDIR", "1")
        ccache = _ccache()
        if ccache is not None:  # the sandboxes' emulated runtime too (cmake reads this)
            patch.setenv("CMAKE_CXX_COMPILER_LAUNCHER", ccache)
        yield folder


def _ccache() -> Optional[str]:
    """The ccache binary: the one beside this Python first (a version manager's shim on
    PATH costs a process per compile), else PATH's."""
    beside = Path(sys.executable).parent / "ccache"
    return str(beside) if os.access(beside, os.X_OK) else shutil.which("ccache")


@pytest.fixture(scope="session")
def sandboxes(tmp_path_factory) -> Iterator[Dict[str, Path]]:
    """Lazily created shared sandboxes, keyed 'A2-8.5.0' etc.: made once per run, by the
    first worker that needs one (the others wait for it), and leased for the session."""
    root = shared_root(tmp_path_factory) / "sandboxes"
    leases = []

    class Lazy(dict):
        def __missing__(self, key: str) -> Path:
            variant, cann = SPECS[key]
            directory = root / key
            with one_at_a_time(root / f"{key}.making"):
                leases.append(
                    create_sandbox(SandboxSpec(dir=directory, variant=variant, cann=cann)).lease
                )
            self[key] = directory
            return directory

    yield Lazy()
    for lease in leases:
        lease.close()


def base_env(**extra: str) -> Dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        # TORCH_DEVICE_BACKEND_AUTOLOAD: cannbuild must work in a shell that never set it
        if not k.startswith(("ASCEND_", "CANNBUILD_", "TORCH_DEVICE_BACKEND_"))
    }
    env["CANNBUILD_RETRIES"] = "0"
    env.update(extra)
    return env


def mirror_commit(sandbox: Path, repo: str, ref: str) -> str:
    """The commit a tag or branch names in the sandbox's stand-in of `repo`."""
    return subprocess.run(
        ["git", "rev-parse", f"{ref}^{{commit}}"],
        cwd=sandbox / "mirror" / "cann" / f"{repo}.git",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def toolkit_env(sandbox: Path, **extra: str) -> Dict[str, str]:
    """The environment after `source set_env.sh` of the sandbox toolkit."""
    info = load_info(sandbox)
    assert info is not None
    out = subprocess.run(
        ["bash", "-c", f'source "{info.set_env}" >/dev/null 2>&1; env -0'],
        env=base_env(),
        capture_output=True,
        check=True,
    ).stdout.decode()
    env = dict(item.split("=", 1) for item in out.split("\0") if "=" in item)
    env.update(extra)
    return env


def processes_under(folder: Path) -> list:
    """(pid, command line) of every process running in `folder` or naming it."""
    alive = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if str(folder) in cmd or cwd.startswith(str(folder)):
            alive.append((pid, cmd))
    return alive


def wait_until_no_process_under(folder: Path, seconds: float = 120) -> None:
    """Until every process in `folder` has ended (e.g. an orphan a killed run left)."""
    deadline = time.monotonic() + seconds
    while processes_under(folder):
        if time.monotonic() > deadline:
            raise AssertionError(f"still running after {seconds} s: {processes_under(folder)}")
        time.sleep(0.05)


class Cli:
    """Runs `python -m cannbuild` in a test's folder against a shared sandbox."""

    def __init__(self, cwd: Path, sandbox: Path, variant: str, cann: str) -> None:
        self.cwd = cwd
        self.sandbox = sandbox
        self.variant = variant
        self.cann = cann

    def env(self, **extra: str) -> Dict[str, str]:
        return base_env(CANNBUILD_SANDBOX_DIR=str(self.sandbox), **extra)

    def __call__(
        self,
        *args: str,
        env: Optional[Dict[str, str]] = None,
        timeout: int = 600,
        sandbox: bool = True,
    ) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "cannbuild", *args]
        if sandbox:
            argv += ["--sandbox", "--variant", self.variant, "--cann", self.cann]
        return subprocess.run(
            argv,
            cwd=self.cwd,
            env=env or self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def popen(
        self,
        *args: str,
        env: Optional[Dict[str, str]] = None,
        preexec_fn: Optional[Callable[[], Any]] = None,
    ) -> subprocess.Popen:
        """`preexec_fn`: run in the child before cannbuild starts (e.g. what nohup does)."""
        argv = [
            sys.executable,
            "-m",
            "cannbuild",
            *args,
            "--sandbox",
            "--variant",
            self.variant,
            "--cann",
            self.cann,
        ]
        return subprocess.Popen(
            argv,
            cwd=self.cwd,
            env=env or self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=preexec_fn,
        )

    def popen_plain(self, *args: str, env: Optional[Dict[str, str]] = None) -> subprocess.Popen:
        """`python -m cannbuild ARGS` without the --sandbox flags, in the background."""
        return subprocess.Popen(
            [sys.executable, "-m", "cannbuild", *args],
            cwd=self.cwd,
            env=env or self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    @property
    def ws(self) -> Path:
        return self.cwd / ".cannbuild"

    @property
    def lock(self) -> Path:
        """Where a --sandbox run keeps its lock (the workspace, never the project)."""
        return self.ws / "cannbuild.lock"

    def report(self) -> dict:
        return json.loads((self.ws / "reports" / "latest" / "report.json").read_text())

    def stamp(self, step: str) -> Optional[dict]:
        path = self.ws / "stamps" / f"{step}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def cmake_cache(self) -> Optional[Tuple[int, int]]:
        """ops-transformer's CMakeCache.txt as it is now (inode, mtime); None: there is none."""
        try:
            st = (self.ws / "src/ops-transformer/build/CMakeCache.txt").stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns)

    def wait_for_cmake(self, proc: subprocess.Popen, before: Optional[Tuple[int, int]]) -> None:
        """Until `proc`'s ops-transformer-build has cmake at work: build.sh removes build/
        and cmake writes a CMakeCache.txt other than `before` (read before `proc` started).
        Not by the log: build.sh pipes stdout through block-buffered gawk, so its
        'cmake config' line reaches the log only when the build ends."""
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            now = self.cmake_cache()
            if now is not None and now != before:
                return
            if proc.poll() is not None:
                raise AssertionError(proc.communicate())
            time.sleep(0.02)
        raise AssertionError("the build never reached cmake")


def air_gapped(tmp_path: Path, cli: Cli, name: str = "air") -> Cli:
    """A fresh workspace whose mirror rule points nowhere."""
    other = Cli(tmp_path / name, cli.sandbox, cli.variant, cli.cann)
    other.cwd.mkdir()
    (other.cwd / "invoke.yaml").write_text(
        'cannbuild:\n  mirrors:\n    "https://gitcode.com/": "https://mirror.invalid/"\n'
    )
    return other


@pytest.fixture
def cli_for(sandboxes, tmp_path):
    def make(key: str = "A2-8.5.0", cwd: Optional[Path] = None) -> Cli:
        variant, cann = SPECS[key]
        folder = cwd or tmp_path
        folder.mkdir(parents=True, exist_ok=True)
        return Cli(folder, sandboxes[key], variant, cann)

    return make


@pytest.fixture
def cli(cli_for) -> Cli:
    return cli_for("A2-8.5.0")


@pytest.fixture(scope="session")
def installed(sandboxes, tmp_path_factory) -> Cli:
    """One A2 / CANN 8.5.0 workspace, built and installed once, for read-only tests."""
    folder = tmp_path_factory.mktemp("installed")
    c = Cli(folder, sandboxes["A2-8.5.0"], "A2", "8.5.0")
    proc = c("install")
    assert proc.returncode == 0, proc.stderr
    return c


# The refs recipes/8.5.toml's toolkit repos take on the 8.5.0 sandbox ({{ cann.release }}).
def host_side_refs(release: str) -> Dict[str, str]:
    """The tag or branch of each host-side repository (`toolkit = true`) the release's recipe
    names, rendered as a build renders it."""
    from cannbuild.recipes import render_ref, select_recipe

    recipe = select_recipe(release.rsplit(".", 1)[0], None, Path(__file__).parent)
    values = {"cann": {"release": release}, "ops_release": release}
    refs: Dict[str, str] = {}
    for repo in (r for r in recipe.repos if r.toolkit):
        ref = render_ref(repo, values)
        refs[repo.name] = ref["tag"] or ref["branch"] or ""
    return refs


def lay_host_side(sandbox: Path, work: Path) -> None:
    """The sandbox toolkit's host side laid out from its stand-in repositories, as a build
    through cannbuild does before its first step (build/steps.host_side), for a test that
    runs a build.sh by hand on a sandbox no build may have used yet (which test runs first
    on a shared sandbox is xdist's choice)."""
    from cannbuild.host.toolkit import host_arch
    from cannbuild.sandbox.hostside import lay_out_host_side

    info = load_info(sandbox)
    assert info is not None
    checkouts = {}
    for repo, ref in host_side_refs(info.cann).items():
        bare = next((sandbox / "mirror").rglob(f"{repo}.git"))
        dest = work / repo
        subprocess.run(["git", "clone", "-q", "--branch", ref, str(bare), str(dest)], check=True)
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
        checkouts[repo] = (dest, head)
    lay_out_host_side(sandbox, Path(info.toolkit).resolve(), host_arch(), info.cann, checkouts)
