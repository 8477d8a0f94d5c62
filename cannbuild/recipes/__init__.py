"""Recipes: one TOML per CANN release train, read into frozen data and checked.

A recipe names the repositories and how to pin them, the third-party archives,
the steps (each a Jinja template in templates/), what the toolkit must contain
and what validation checks.  Adding a recipe file needs no code: pass
`--recipe path/to/file.toml`, or drop it in `./cannbuild-recipes/`.
"""

from __future__ import annotations

import contextlib
import operator
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from ..bounded import RECIPE, read_toml
from ..errors import UsageError
from ..resources import data_dir
from .model import (
    USER_RECIPE_DIR,
    ArchiveRule,
    HostTool,
    Recipe,
    RepoSpec,
    SourcePin,
    StepSpec,
    ToolkitFile,
    ValidateSpec,
    template_dirs,
)
from .reader import load_recipe


def recipe_dirs(cwd: Path) -> List[Path]:
    dirs = [data_dir("recipes")]
    user = cwd / USER_RECIPE_DIR
    if user.is_dir():
        dirs.insert(0, user)
    return dirs


def available(cwd: Path) -> Dict[str, Path]:
    """train -> recipe file (a user's recipe shadows the shipped one)."""
    found: Dict[str, Path] = {}
    for directory in reversed(recipe_dirs(cwd)):
        for path in sorted(directory.glob("*.toml")):
            found[path.stem] = path
    return found


def known_repos(cwd: Path) -> Set[str]:
    """The repositories the recipes here list (`[repos.X]`; a recipe that cannot be read
    lists none)."""
    names: Set[str] = set()
    for path in available(cwd).values():
        with contextlib.suppress(UsageError):
            names.update(read_toml(path, RECIPE).get("repos") or {})
    return names


def select_recipe(
    choice: Optional[str], train: Optional[str], cwd: Path, origin: Optional[str] = None
) -> Recipe:
    """By --recipe (a train or a file), else by `train`: the toolkit's release train, or
    the one `origin` names (`--ops-release 9.0.1`)."""
    if choice and (choice.endswith(".toml") or "/" in choice):
        path = Path(choice)
        if not path.exists():  # a FIFO or device: load_recipe refuses it by name
            raise UsageError(
                f"--recipe {choice}: no such file.", "Pass a recipe file or a train such as 9.0."
            )
        return load_recipe(path)
    wanted = choice or train
    recipes = available(cwd)
    if wanted is None:
        raise UsageError(
            "no recipe can be chosen: the toolkit version is unknown.",
            f"Pass --recipe with one of {', '.join(recipes)}, or fix the toolkit (cannbuild doctor).",
        )
    if wanted not in recipes:
        raise UsageError(
            f"there is no recipe for CANN {wanted} "
            f"({'--recipe' if choice else origin or 'the toolkit train'}).",
            f"Recipes exist for {', '.join(recipes)}; pass --recipe with the nearest one, or add "
            f"{USER_RECIPE_DIR}/{wanted}.toml.",
        )
    recipe = load_recipe(recipes[wanted])
    if recipe.train != wanted:
        raise UsageError(
            f"recipe {recipes[wanted]} says train = {recipe.train!r}, but its file name says {wanted!r}.",
            "Make the two agree.",
        )
    return recipe


def trains_building(name: str, cwd: Path) -> List[str]:
    """The trains whose recipe builds repository `name` (for an error that names them)."""
    found = []
    for train, path in available(cwd).items():
        try:
            recipe = load_recipe(path)
        except UsageError:  # a broken user recipe is its own error, when it is chosen
            continue
        if any(r.name == name for r in recipe.buildable):
            found.append(train)
    return found


def check_requirements(
    recipe: Recipe, share_info: Mapping[str, str]
) -> List[Tuple[str, str, Optional[str], str]]:
    """Each unmet `share/info` minimum as (package, spec, found version, problem).

    Same rule as the builds' own check_build_dependencies.py: the version is cut
    at the first '-' and compared numerically.
    """
    problems: List[Tuple[str, str, Optional[str], str]] = []
    for pkg, spec in recipe.requires:
        have = share_info.get(pkg)
        if have is None:
            problems.append((pkg, spec, None, "missing"))
            continue
        ok = _satisfies(have.split("-", 1)[0], spec)
        if ok is None:
            problems.append((pkg, spec, have, "not numeric"))
        elif not ok:
            problems.append((pkg, spec, have, "too old"))
    return problems


# the share/info minimum's operators, as check_build_dependencies.py reads them (none: ==)
_COMPARE = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}


def _satisfies(version: str, spec: str) -> Optional[bool]:
    op = next((o for o in _COMPARE if spec.startswith(o)), "")
    try:
        have, need = ([int(p) for p in v.split(".")] for v in (version, spec[len(op) :]))
    except ValueError:
        return None
    width = max(len(have), len(need))
    return _COMPARE[op or "=="](have + [0] * (width - len(have)), need + [0] * (width - len(need)))


def render_ref(repo: RepoSpec, context: Mapping[str, Any]) -> Dict[str, Optional[str]]:
    """The repo's ref fields with templates filled in (e.g. tag = v{{ cann.release }})."""
    from ..render.templates import render_value  # doctor picks a recipe, renders no ref

    out: Dict[str, Optional[str]] = {}
    for key in ("tag", "branch", "until", "commit"):
        value = getattr(repo, key)
        what = f"[repos.{repo.name}] {key}"
        out[key] = render_value(value, context, what) if value else None
    return out


def describe_ref(ref: Mapping[str, Optional[str]]) -> str:
    if ref.get("tag"):
        return f"tag {ref['tag']}"
    if ref.get("commit"):
        return f"commit {ref['commit']}"
    until = f" as of {ref['until']}" if ref.get("until") else ""
    return f"branch {ref['branch']}{until}"


__all__ = [
    "USER_RECIPE_DIR",
    "ArchiveRule",
    "HostTool",
    "Recipe",
    "RepoSpec",
    "SourcePin",
    "StepSpec",
    "ToolkitFile",
    "ValidateSpec",
    "available",
    "check_requirements",
    "describe_ref",
    "load_recipe",
    "recipe_dirs",
    "render_ref",
    "select_recipe",
    "template_dirs",
]
