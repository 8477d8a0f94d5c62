"""Container engines: find one that answers, build a rendered context with it, run images.

Every engine call goes through `proc` (its own process group: a Ctrl-C or a timeout stops
the engine and what it started).  A build streams the engine's output to the user's
terminal, which is where BuildKit's progress belongs; `docker run` for this host's NPUs
is interactive, so its terminal is the user's too.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional, Sequence

from msgspec import Struct

from ..errors import NoContainerEngine
from ..proc import run

SECRET_ID = "cannbuild-mirrors"
CACHE_SECRET_ID = "cannbuild-cache-remote"  # the shared ccache remote's URL
# BuildKit's platform names for the two arches CANN ships.
PLATFORMS = {"x86_64": "linux/amd64", "aarch64": "linux/arm64"}


def platform_of(arch: str) -> str:
    """BuildKit's `--platform` for a lock's arch."""
    return PLATFORMS.get(arch, f"linux/{arch}")


def build_command(
    engine: str,
    context: Path,
    arch: str = "x86_64",
    base: Optional[str] = None,
    cache_remote: bool = False,
) -> List[str]:
    """`base` (a digest-pinned reference) overrides the Dockerfile's BASE_IMAGE;
    `cache_remote`: pass CANNBUILD_CACHE_REMOTE from the environment as a secret."""
    dest = str(context / "artifacts")
    head = (
        # `--format docker`: the image format `docker buildx` makes; podman's default is OCI.
        ["podman", "build", "--format", "docker"]
        if engine == "podman"
        else ["docker", "buildx", "build"]
    )
    argv = [
        *head, "--platform", platform_of(arch),
        "--target", "export", "--output", f"type=local,dest={dest}",
        # The mirror map reaches the build as a secret: its URLs may hold credentials, which a
        # build-arg would leave in the image history.
        "--secret", f"id={SECRET_ID},env=CANNBUILD_MIRRORS",
    ]  # fmt: skip
    if cache_remote:
        argv += ["--secret", f"id={CACHE_SECRET_ID},env=CANNBUILD_CACHE_REMOTE"]
    if base:
        argv += ["--build-arg", f"BASE_IMAGE={base}"]
    return [*argv, str(context)]


def _probe(argv: Sequence[str], timeout: float) -> Optional[subprocess.CompletedProcess[bytes]]:
    """Run an engine query; None when the engine cannot be run or does not answer in time."""
    try:
        return run(argv, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _answers(argv: Sequence[str]) -> bool:
    proc = _probe(argv, 15)
    return proc is not None and proc.returncode == 0


def find_engine() -> Optional[str]:
    """A container engine that actually answers: a docker client alone is not enough."""
    if (
        shutil.which("docker")
        # A docker client without a running daemon fails `info`; the build runs `docker buildx
        # build`, so buildx must answer too.
        and _answers(["docker", "buildx", "version"])
        and _answers(["docker", "info"])
    ):
        return "docker"
    if shutil.which("podman") and _answers(["podman", "info"]):
        return "podman"
    return None


def _digest_before_build(engine: str, base: str) -> Optional[str]:
    """Docker: what the registry serves for `base` now (BuildKit pulls bypass the image
    store, so `docker image inspect` would not see them)."""
    if engine != "docker":
        return None
    raw = _probe(["docker", "buildx", "imagetools", "inspect", "--raw", base], 120)
    if raw is None or raw.returncode != 0 or not raw.stdout.strip():
        return None
    # The digest of the manifest bytes the registry serves is the image's `@sha256:` pin.
    return "sha256:" + hashlib.sha256(raw.stdout).hexdigest()


def _digest_after_build(engine: str, base: str) -> Optional[str]:
    """Podman: the digest of the image the build used (it pulls into its store)."""
    if engine != "podman":
        return None
    proc = _probe(["podman", "image", "inspect", "--format", "{{index .RepoDigests 0}}", base], 30)
    if proc is None:
        return None
    out = proc.stdout.decode("utf-8", "replace").strip()
    # `quay.io/ascend/cann@sha256:...`: the digest after the `@`.
    return out.split("@", 1)[1] if "@sha256:" in out else None


class BuildResult(Struct, frozen=True, kw_only=True):
    engine: str
    returncode: int
    base_digest: Optional[str]  # set when the base was not pinned before and now is known


def build(context: Path, base: str, arch: str, cache_remote: Optional[str] = None) -> BuildResult:
    """Build the export stage into context/artifacts; pin the base if it was not yet.
    `cache_remote` reaches the build as a secret (from this process's environment)."""
    engine = find_engine()
    remote = bool(cache_remote)
    env = {**os.environ, **({"CANNBUILD_CACHE_REMOTE": cache_remote} if cache_remote else {})}
    if engine is None:
        command = " ".join(
            shlex.quote(a) for a in build_command("docker", context, arch, cache_remote=remote)
        )
        raise NoContainerEngine(
            "no container engine answers here (docker needs a running daemon with buildx; podman "
            f"needs `podman info` to work). The build command is:\n  {command}",
            "Run it on a machine with Docker (BuildKit) or Podman; the context is self-contained.",
        )
    artifacts = context / "artifacts"
    if artifacts.exists():  # the local exporter adds to what is there
        shutil.rmtree(artifacts)
    pinned = "@sha256:" in base  # already pinned: nothing to learn
    digest = None if pinned else _digest_before_build(engine, base)
    argv = build_command(
        engine, context, arch, f"{base}@{digest}" if digest else None, cache_remote=remote
    )
    proc = run(argv, env=env, capture=False)  # the engine's progress goes to the terminal
    if proc.returncode == 0 and digest is None and not pinned:
        digest = _digest_after_build(engine, base)
    return BuildResult(engine=engine, returncode=proc.returncode, base_digest=digest)
