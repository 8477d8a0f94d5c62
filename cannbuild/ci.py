"""CI workflows rendered from the recipes in use: a matrix over variants and CANN versions.

Each entry renders its container from its own lock (locks/<variant>-<cann>.lock),
builds it with a build cache (and the shared ccache remote, when the secret is set),
uploads the packages and the report; a validation job on self-hosted NPU runners
downloads that very package and runs `validate --package --require-device`, so what is
validated is what is shipped.  Both jobs install the exact cannbuild that rendered
the workflow: its wheel, written beside the workflow and checked by sha256, or a
requirement the user gives (--cannbuild-spec); never a name that does not resolve.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from . import __version__
from .errors import UsageError
from .host.versions import parse_cann_version
from .recipes import available, load_recipe
from .render import ci_env
from .resources import data_dir

PROVIDERS = {
    "github": ("github.yml.j2", ".github/workflows/cannbuild.yml"),
    "gitlab": ("gitlab-ci.yml.j2", ".gitlab-ci.yml"),
}
# where the wheel goes, relative to the repository's top level
WHEEL_DIRS = {"github": ".github/cannbuild", "gitlab": ".gitlab/cannbuild"}


def image_versions(cwd: Path) -> List[str]:
    versions = {}
    for path in available(cwd).values():
        recipe = load_recipe(path)
        if recipe.image_cann:
            try:
                versions[recipe.image_cann] = parse_cann_version(recipe.image_cann)
            except ValueError:
                raise UsageError(
                    f"{path}: image_cann {recipe.image_cann!r} is not a CANN version.",
                    "Use the image's version as its tag spells it, e.g. 8.5.0 or 8.3.rc1.",
                ) from None
    return sorted(versions, key=versions.__getitem__)


def git_toplevel(folder: Path) -> Optional[Path]:
    """The top level of the git work tree holding `folder` (or its nearest existing parent)."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return Path(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else None


# --- the exact cannbuild -------------------------------------------------------


@dataclass(frozen=True)
class Install:
    """How a job installs cannbuild: a wheel in the repository (path relative to its top
    level, with its sha256) or a pip requirement the user gave."""

    wheel: Optional[str] = None
    sha256: Optional[str] = None
    spec: Optional[str] = None

    def commands(self, python: str) -> List[str]:
        if self.wheel:
            return [
                f"echo {shlex.quote(f'{self.sha256}  {self.wheel}')} | sha256sum -c -",
                f"{python} -m pip install {shlex.quote(self.wheel)}",
            ]
        assert self.spec
        return [f"{python} -m pip install {shlex.quote(self.spec)}"]

    def describe(self) -> str:
        return f"{self.wheel} (sha256 {self.sha256})" if self.wheel else repr(self.spec)


def installed_spec() -> Optional[str]:
    """A requirement for the installed cannbuild that resolves elsewhere: the VCS URL and
    commit pip recorded when it was installed from one (PEP 610 direct_url.json)."""
    from importlib import metadata

    try:
        text = metadata.distribution("cannbuild").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    vcs = data.get("vcs_info") or {}
    url = str(data.get("url", ""))
    if vcs.get("vcs") == "git" and vcs.get("commit_id") and not url.startswith("file:"):
        return f"cannbuild @ git+{url}@{vcs['commit_id']}"
    return None


def build_own_wheel(root: Path, into: Path, epoch: Optional[int] = None) -> Path:
    """cannbuild's wheel from its tracked sources (an untracked local recipe, perhaps
    holding a token, stays out), built reproducibly: the same checkout, the same bytes."""
    from .container import source_files

    files = source_files(root)
    if files is None:
        raise UsageError(f"{root} is not a checkout of cannbuild.")
    into.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cannbuild-wheel.") as tmp:
        staging = Path(tmp) / "src"
        for path in files:
            target = staging / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
        out = Path(tmp) / "out"
        env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        env.pop("SOURCE_DATE_EPOCH", None)
        if epoch is not None:
            env["SOURCE_DATE_EPOCH"] = str(epoch)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
             str(out), str(staging)],
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        wheels = sorted(out.glob("cannbuild-*.whl")) if out.is_dir() else []
        if proc.returncode != 0 or len(wheels) != 1:
            tail = " ".join(proc.stderr.strip().splitlines()[-2:])
            raise UsageError(
                f"could not build cannbuild's wheel from {root} ({tail or 'no wheel made'}).",
                "Check that pip can fetch the build backend (hatchling), or pass "
                "--cannbuild-spec with a requirement your runners can install.",
            )
        final = into / wheels[0].name
        shutil.copyfile(wheels[0], final)
    return final


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def no_install_source() -> UsageError:
    return UsageError(
        f"cannbuild {__version__} is not running from a checkout, and no package index serves "
        "it: the rendered files would install a cannbuild that does not resolve.",
        "Pass --cannbuild-spec with a requirement your runners can install (e.g. 'cannbuild "
        "@ git+https://git.example.com/cannbuild.git@<commit>' or a wheel URL), or render from "
        "a git checkout of cannbuild (its wheel is then written beside the files).",
    )


# --- the workflow ----------------------------------------------------------------


def render_ci(
    provider: str,
    cwd: Path,
    install: Install,
    variants: Sequence[str] = ("A2", "A3"),
    npu_label: str = "ascend-npu",
    python: str = "3.11",
    sandbox: bool = False,
) -> Dict[str, Any]:
    """The workflow's text and default path, and companion files (path -> text) it needs."""
    if provider not in PROVIDERS:
        raise UsageError(
            f"--provider {provider!r} is not supported.", f"Use one of {', '.join(PROVIDERS)}."
        )
    template, default_out = PROVIDERS[provider]
    canns = image_versions(cwd)
    if not canns:
        raise UsageError(
            "no recipe in use names a container image version (image_cann).",
            "Add image_cann to [recipe].",
        )
    text = (
        ci_env(data_dir("templates") / "ci")
        .get_template(template)
        .render(
            version=__version__,
            variants=list(variants),
            canns=canns,
            npu_label=npu_label,
            python=python,
            install=install.commands("python"),
            install3=install.commands("python3"),
            installs_from=install.describe(),
            sandbox=sandbox,
        )
    )
    extras: Dict[str, str] = {}
    if provider == "github":
        # actionlint rejects runner labels it does not know unless its config names them
        labels = [npu_label, *variants, *(f"cann-{v}" for v in canns)]
        extras[".github/actionlint.yaml"] = (
            f"# Rendered by cannbuild {__version__}: the self-hosted NPU runners' labels.\n"
            f"self-hosted-runner:\n  labels: {json.dumps(labels)}\n"
        )
    return {"path": default_out, "text": text, "extras": extras, "canns": canns}


def sandbox_locks(root: Path) -> List[Path]:
    """The locks under locks/ that were made on the emulated host."""
    from .sources.lock import read_lock

    found = []
    for path in sorted((root / "locks").glob("*.lock")):
        try:
            lock = read_lock(path)
        except UsageError:
            continue  # the container step names a broken lock when it reads it
        if lock is not None and lock.sandbox:
            found.append(path)
    return found
