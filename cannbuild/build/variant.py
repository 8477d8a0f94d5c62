"""A build variant as a plan: the steps of one repo, and the steps after them, walked
again over a copy of its checkout into a prefix of their own, with the variant's compile
definitions and patch among their inputs; the steps before them (opbase) are the
session's, taken as built.

The variant's folder (`<workspace>/variants/<name>`) is laid out as a workspace of its
own: stamps/, logs/<run>/, src/<repo> (the copy), opp/ (the prefix) and tmp/.  So the
plan walk, the step runner and the stamps are the baseline's, and a variant whose
inputs did not change is up to date as any step is.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, TextIO, Tuple

from msgspec import Struct
from msgspec.structs import replace

from .. import safefs
from ..proc import run
from ..recipes import Recipe
from ..workspace import Workspace
from .plan import StepContext
from .session import BuildContext

GIT_TIMEOUT_S = 3600


class Variant(Struct, frozen=True, kw_only=True):
    root: Path  # <workspace>/variants/<name>
    repo: str  # the repo it builds again (the one that ships the benchmarked operator)
    vendor_folder: str = ""  # where that repo's package installs: <vendor_name>_<suffix>
    patch: Optional[Path] = None
    patch_sha256: Optional[str] = None  # in the checkout's identity: a new patch rebuilds
    defines: Tuple[Tuple[str, str], ...] = ()  # appended to CXXFLAGS (a hashed variable)

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def ws(self) -> Workspace:
        return Workspace(root=self.root)

    @property
    def checkout(self) -> Path:
        return self.ws.checkout(self.repo)

    @property
    def vendor_dir(self) -> Path:
        return self.ws.opp / "vendors" / self.vendor_folder

    def identity(self, of_checkout: Mapping[str, Any]) -> Dict[str, Any]:
        """The copy's identity: the checkout it is made from, and the patch on top."""
        found = dict(of_checkout)
        if self.patch_sha256 is not None:
            found["patch"] = self.patch_sha256
        return found


def walked_steps(recipe: Recipe, repo: str) -> Tuple[str, ...]:
    """The steps a variant of `repo` runs again: that repo's, and every step after one."""
    names: List[str] = []
    for spec in recipe.steps:
        if spec.repo == repo or any(dep in names for dep in spec.after):
            names.append(spec.name)
    return tuple(names)


def _with_defines(env: Mapping[str, str], flags: str) -> Dict[str, str]:
    if not flags:
        return dict(env)
    return {**env, "CXXFLAGS": f"{env.get('CXXFLAGS', '')} {flags}".strip()}


def variant_context(
    ctx: StepContext, context: BuildContext, variant: Variant, recipe: Recipe, given: Workspace
) -> StepContext:
    """The session's step context pointed at the variant: its copy and prefix in the
    template values, its definitions in CXXFLAGS (cmake reads it at the first configure,
    and build.sh configures afresh every time), its own TMPDIR; only the steps it runs
    again are walked, the others' stamps are read in `given` (the session's workspace)."""
    repo, ws = variant.repo, variant.ws
    values = replace(
        context,
        src={**context.src, repo: variant.checkout},
        third_party={**context.third_party, repo: variant.checkout / "third_party"},
        opp=ws.opp,
    ).as_jinja()
    flags = " ".join(f"-D{k}={v}" for k, v in variant.defines)
    over = ctx.overlay_env
    return replace(
        ctx,
        values=values,
        base_env=_with_defines(ctx.base_env, flags),
        overlay_env=None if over is None else _with_defines(over, flags),
        hashed_env=_with_defines(ctx.hashed_env, flags),
        extra_env={**ctx.extra_env, "TMPDIR": str(ws.tmp)},
        walked=walked_steps(recipe, repo),
        given=given,
    )


def _git(argv: List[str], cwd: Path, env: Mapping[str, str], log: TextIO) -> Optional[str]:
    log.write(f"$ {shlex.join(argv)}  (in {cwd})\n")
    log.flush()
    try:
        proc = run(argv, cwd=cwd, env=env, timeout=GIT_TIMEOUT_S, merge_stderr=True)
    except subprocess.TimeoutExpired:
        return f"{' '.join(argv[:3])} timed out after {GIT_TIMEOUT_S} s"
    text = proc.stdout.decode("utf-8", "replace")
    log.write(text)
    if proc.returncode == 0:
        return None
    last = next((ln for ln in reversed(text.splitlines()) if ln.strip()), "")
    return f"`{' '.join(argv[:3])}` exited with {proc.returncode}: {last.strip()}"


def make_copy(
    variant: Variant,
    checkout: Path,
    commit: str,
    env: Mapping[str, str],
    log: Path,
    workspace: Path,
) -> Optional[str]:
    """A fresh copy of `checkout` at `commit` for the variant's build (its third_party
    folder too: the nested clones and archives the sources put there), with the patch
    applied; None when it is made, else why not (git's output is in `log`).  The
    checkout itself is never touched; nothing is removed or made through a link."""
    what = f"the build folder of variant {variant.name}"
    dest = variant.checkout
    safefs.remove(workspace, dest, what)
    safefs.make_dirs(workspace, dest.parent, what)
    # a local clone: the mirror map and offline proxies (GIT_CONFIG_*) are no business of it
    git_env = {k: v for k, v in env.items() if not k.startswith("GIT_")}
    with open(log, "w", encoding="utf-8") as out:
        failure = _git(
            ["git", "clone", "-q", "--shared", "--no-checkout", str(checkout), str(dest)],
            variant.root,
            git_env,
            out,
        ) or _git(
            ["git", "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", commit],
            dest,
            git_env,
            out,
        )
        if failure:
            return failure
        if (checkout / "third_party").is_dir():
            shutil.copytree(
                checkout / "third_party", dest / "third_party", symlinks=True, dirs_exist_ok=True
            )
        if variant.patch is None:
            return None
        failure = _git(["git", "apply", "--verbose", str(variant.patch)], dest, git_env, out)
    if failure:
        return (
            f"the patch {variant.patch} does not apply to {variant.repo} {commit[:12]}: {failure}"
        )
    return None
