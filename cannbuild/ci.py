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
import re
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from msgspec import Struct

from . import __version__
from .bounded import ARCHIVE, RENDERED_FILE, Absent, head, read_bytes
from .errors import DryRun, UsageError
from .host.versions import parse_cann_version
from .ownership import check_writable
from .proc import run
from .recipes import Recipe, available, load_recipe
from .render.grammars import check_cann, check_requirement
from .render.templates import ci_env
from .resources import data_dir
from .sandbox.releases import standins
from .self_install import build_own_wheel, install_requirement, installed_wheel, source_files
from .signals import deferred
from .sources.lock import read_lock
from .workspace import write_atomic, write_together

PROVIDERS = {
    "github": ("github.yml.j2", ".github/workflows/cannbuild.yml"),
    "gitlab": ("gitlab-ci.yml.j2", ".gitlab-ci.yml"),
}
# where the wheel goes, relative to the repository's top level
WHEEL_DIRS = {"github": ".github/cannbuild", "gitlab": ".gitlab/cannbuild"}
# where the validate job finds the package job's .run files (shell words)
SHIPPED = {"github": "shipped/out/packages", "gitlab": 'out/"$VARIANT-$CANN"/packages'}
# a runner label (GitHub runs-on, GitLab tags, actionlint's list): one word
RUNNER_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def matrix_recipes(cwd: Path) -> List[Recipe]:
    """The recipes in use that name a container image version: the matrix's."""
    recipes = [load_recipe(path) for path in available(cwd).values()]
    for recipe in recipes:
        if recipe.image_cann:  # whole: no space or newline
            check_cann(recipe.image_cann, f"{recipe.path}: image_cann")
    return [r for r in recipes if r.image_cann]


def image_versions(recipes: Sequence[Recipe]) -> List[str]:
    versions = {r.image_cann: parse_cann_version(r.image_cann) for r in recipes if r.image_cann}
    return sorted(versions, key=versions.__getitem__)


# a recipe variable in a package name ({{ vendor_name }}, {{ arch }}): any value matches
RECIPE_VARIABLE = re.compile(r"\{\{.*?\}\}")


def package_globs(recipes: Sequence[Recipe]) -> List[Tuple[str, str]]:
    """(repo, shell glob) for each operator package a matrix entry can ship: the file
    names the build steps of the recipes' buildable repos produce, whatever the vendor
    name and arch.  A lock builds some of those repos (--repos), so the validate job
    takes the packages it finds, each with the repo whose validation applies to it."""
    found: Dict[Tuple[str, str], None] = {}
    for recipe in recipes:
        buildable = {r.name for r in recipe.buildable}
        for step in recipe.steps:
            repo = recipe.step_owner(step)
            if repo not in buildable:
                continue
            for pattern in step.produces:
                name = RECIPE_VARIABLE.sub("*", pattern.rsplit("/", 1)[-1])
                glob = "*".join(shlex.quote(part) if part else "" for part in name.split("*"))
                found[(str(repo), glob)] = None
    return list(found)


def validate_script(folder: str, globs: Sequence[Tuple[str, str]]) -> str:
    """The NPU job's shell (POSIX sh): `validate --require-device --package` of each
    operator package in `folder` (shell words), with --repos of the repo that built it,
    as `cannbuild validate` judges each repo of a build; fails when any fails, or when
    the folder holds none."""
    lines = [
        "status=0 seen=''",
        "check() {  # the repo, then the files its package names matched",
        "  repo=$1; shift",
        '  for package in "$@"; do',
        '    [ -f "$package" ] || continue  # a glob that matched nothing',
        '    case " $seen " in *" $package "*) continue ;; esac',
        '    seen="$seen $package"',
        '    cannbuild validate --require-device --repos "$repo" --package "$package" || status=1',
        "  done",
        "}",
        *(f"check {shlex.quote(repo)} {folder}/{glob}" for repo, glob in globs),
        'if [ -z "$seen" ]; then',
        f'  echo "no operator package in {folder} (looked for:'
        f' {" ".join(g for _, g in globs)})" >&2',
        "  exit 1",
        "fi",
        'exit "$status"',
    ]
    return "\n".join(lines) + "\n"


def emulated_versions(canns: Sequence[str], cwd: Path) -> List[str]:
    """The CANN versions of a --sandbox matrix: each image version the sandbox emulates,
    else the sandbox's releases of its train (8.3.rc1 -> 8.3.RC2), since no sandbox lock
    can be made for a version it does not emulate."""
    releases = list(standins(cwd).releases)
    chosen: List[str] = []
    for cann in canns:
        same = [r for r in releases if r.lower() == cann.lower()]
        train = parse_cann_version(cann).train
        chosen += same or [r for r in releases if parse_cann_version(r).train == train]
    return list(dict.fromkeys(chosen))


def git_toplevel(folder: Path) -> Optional[Path]:
    """The top level of the git work tree holding `folder` (or its nearest existing parent)."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        proc = run(["git", "rev-parse", "--show-toplevel"], cwd=folder, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    top = proc.stdout.decode("utf-8", "replace").strip()
    return Path(top) if proc.returncode == 0 and top else None


# --- the exact cannbuild -------------------------------------------------------


class Install(Struct, frozen=True, kw_only=True):
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
    """The workflow's text, and companion files (path -> text) it needs (`provider` and
    `npu_label` checked by write_ci)."""
    template = PROVIDERS[provider][0]
    recipes = matrix_recipes(cwd)
    canns = image_versions(recipes)
    if not canns:
        raise UsageError(
            "no recipe in use names a container image version (image_cann).",
            "Add image_cann to [recipe].",
        )
    if sandbox:
        canns = emulated_versions(canns, cwd)
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
            validate=validate_script(SHIPPED[provider], package_globs(recipes)),
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
    return {"text": text, "extras": extras}


def sandbox_locks(root: Path) -> List[Path]:
    """The locks under locks/ that were made on the emulated host."""
    found = []
    for path in sorted((root / "locks").glob("*.lock")):
        try:
            lock = read_lock(path)
        except UsageError:
            continue  # the container step names a broken lock when it reads it
        if lock is not None and lock.sandbox:
            found.append(path)
    return found


# --- the ci task ------------------------------------------------------------------

RENDERED_HEADER = "# Rendered by cannbuild"


class CiRequest(Struct, frozen=True, kw_only=True):
    """What `cannbuild ci` was asked for."""

    provider: str = "github"
    out: Optional[Path] = None
    npu_label: str = "ascend-npu"
    sandbox: bool = False
    cannbuild_spec: Optional[str] = None
    dry_run: bool = False


def write_ci(request: CiRequest, cwd: Path, note: Callable[[str], None]) -> Path:
    """Write the workflow at the top level of the git repository `cwd` is in (or at
    --out), with the wheel of this cannbuild beside it; returns its path (a dry run ends
    in DryRun).  `note` hears what was written and what was left alone."""
    provider, out = request.provider, request.out
    if provider not in PROVIDERS:
        raise UsageError(
            f"--provider {provider!r} is not supported.", f"Use one of {', '.join(PROVIDERS)}."
        )
    check_label(request.npu_label)
    if request.cannbuild_spec is not None:
        check_requirement(request.cannbuild_spec)
    if out is not None:
        target = Path(os.path.abspath(out))  # not resolved: a link at --out is refused
        root = git_toplevel(target.parent) or target.parent
    else:
        found = git_toplevel(cwd)
        if found is None:
            raise UsageError(
                f"{cwd} is not inside a git repository, so there is no top level to "
                f"write {PROVIDERS[provider][1]} at.",
                "Run it inside the repository the workflow is for, or pass --out FILE.",
            )
        root = found
        target = root / PROVIDERS[provider][1]
    made_on_sandbox = sandbox_locks(root)
    if made_on_sandbox and not request.sandbox:
        raise UsageError(
            f"{made_on_sandbox[0]} was made on cannbuild's emulated Ascend host (--sandbox): "
            "its commits are the stand-in repositories', which no real image can build.",
            "Replace it with a lock of the real sources (cannbuild lock --cann <version> --soc "
            "<soc> --lock-file ..., no CANN needed), or pass --sandbox for a workflow that "
            "builds images of the emulated host.",
        )
    install = chosen_install(request.cannbuild_spec, provider)
    wheel_dir = root / WHEEL_DIRS[provider]

    def rendered_with(install: Install) -> Dict[str, Any]:
        return render_ci(
            provider, cwd, install, npu_label=request.npu_label, sandbox=request.sandbox
        )

    if request.dry_run:
        extras = (
            ""
            if out
            else " and " + ", ".join(str(root / e) for e in rendered_with(install)["extras"])
        )
        also = f", cannbuild's wheel into {wheel_dir}" if install.wheel else ""
        raise DryRun(f"would write {target}{extras}{also}")
    what = "--out" if out else "the workflow path"
    if target.is_dir():
        raise UsageError(
            f"{what} {target} is a folder; it names the workflow file to write.",
            f"Pass a file path, e.g. --out {target / Path(PROVIDERS[provider][1]).name}.",
        )
    refuse_foreign_file(target, what)
    check_writable(target, what)
    # rendered once before the wheel is replaced: a recipe it refuses must leave the
    # committed workflow and the wheel its sha256 names as they were
    rendered_with(install)
    wheel: Optional[Path] = None
    data = b""
    if install.wheel:
        check_writable(wheel_dir, "the wheel folder")
        name, data = own_wheel()
        wheel = wheel_dir / name
        install = Install(
            wheel=wheel.relative_to(root).as_posix() if wheel.is_relative_to(root) else str(wheel),
            sha256=hashlib.sha256(data).hexdigest(),
        )
    rendered = rendered_with(install)
    # the workflow checks the wheel by sha256: a signal waits until both are written
    # (and a full disk leaves both as they were)
    with deferred():
        write_together([*([(wheel, data)] if wheel else []), (target, rendered["text"].encode())])
        for old in wheel_dir.glob("cannbuild-*.whl") if wheel else ():  # an older render's
            if old != wheel:
                old.unlink()
    if wheel is not None:
        note(f"cannbuild's wheel written to {wheel} (commit it with the workflow)")
    note(f"{provider} workflow written to {target}")
    for name, text in rendered["extras"].items():
        if out is not None:
            note(f"with --out, {name} is not written; for actionlint it should say:\n{text}")
        elif (root / name).exists():
            note(
                f"{name} exists, left as it is; it should list the runner label {request.npu_label}"
            )
        else:
            write_atomic(root / name, text.encode())
            note(f"{root / name} written")
    return target


def check_label(label: str) -> None:
    """A runner label is one word: it lands in runs-on/tags and actionlint's list."""
    if not RUNNER_LABEL.fullmatch(label):
        raise UsageError(
            f"--npu-label {label!r} is not a runner label.",
            "Use one word of letters, digits, '.', '_' or '-' (100 at most), e.g. ascend-npu.",
        )


def chosen_install(spec: Optional[str], provider: str) -> Install:
    """--cannbuild-spec; else this checkout's wheel (built when written), or the wheel
    this cannbuild was installed from (as the container context takes it); else the VCS
    requirement pip recorded; else no way that resolves: refused."""
    if spec is None and source_files(data_dir("templates").parent) is not None:
        return Install(wheel=f"{WHEEL_DIRS[provider]}/cannbuild-<built on render>.whl")
    installed = installed_wheel() if spec is None else None
    if installed is not None:
        return Install(wheel=f"{WHEEL_DIRS[provider]}/{installed.name}")
    return Install(spec=install_requirement(spec))


def own_wheel() -> Tuple[str, bytes]:
    """The name and bytes of this cannbuild's wheel: built from the checkout it runs
    from, else the wheel pip installed it from (still those bytes: installed_wheel)."""
    root = data_dir("templates").parent
    if source_files(root) is not None:
        with tempfile.TemporaryDirectory(prefix="cannbuild-ci.") as tmp:
            built = build_own_wheel(root, Path(tmp))
            return built.name, read_bytes(built, ARCHIVE)
    installed = installed_wheel()
    if installed is None:  # removed or replaced since chosen_install found it
        raise UsageError(
            "the wheel cannbuild was installed from is gone or was replaced since this run "
            "started.",
            "Render again, or pass --cannbuild-spec with a requirement your runners can install.",
        )
    return installed.name, read_bytes(installed, ARCHIVE)


def refuse_foreign_file(target: Path, what: str) -> None:
    """A file cannbuild renders replaces only a file it rendered before (its first line
    says so), never one a user wrote."""
    try:
        first = head(target, RENDERED_FILE.named(what), 4096).decode("utf-8", "replace")
    except Absent:
        return
    if not first.startswith(RENDERED_HEADER):
        raise UsageError(
            f"{what} {target} exists and was not rendered by cannbuild (its first line is not "
            f"'{RENDERED_HEADER} ...'); it is left as it is.",
            "Pass --out with another file, or move that file away first.",
        )
