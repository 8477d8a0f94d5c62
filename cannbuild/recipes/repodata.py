"""Checking what a recipe says of each repository as a buildable one (its vendor suffix,
default ops and ccache option); an old top-level `[validate]` read as one repo's; and the
default selection (`[recipe] default_repos`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from msgspec.structs import replace

from .fields import fail
from .model import RepoSpec, StepSpec, ValidateSpec

# the keys of [repos.X] that make it buildable, in the order a drafted recipe writes them
BUILDABLE_KEYS = ("vendor_suffix", "ops", "ccache_option", "validate")
# the suffix build.sh appends to the vendor name (REPOSITORY_NAME: `transformer`, `math`):
# a folder name, one word
_SUFFIX = re.compile(r"[a-z0-9][a-z0-9_]{0,31}")
# an op name as --ops takes it (`flash_attention_score`, `segsum`)
_OP = re.compile(r"[A-Za-z0-9_]+")
# the legacy library path names the vendor folder: vendors/{{ vendor_name }}_<suffix>/...
_LEGACY_SUFFIX = re.compile(r"vendors/\{\{\s*vendor_name\s*\}\}_([a-z0-9_]+)/")
# what --ops meant when a recipe named no repo's ops (its default before issue 27): the
# operators an old recipe's one buildable repo builds
LEGACY_OPS = ("flash_attention_score",)
# the build.sh ccache option as a recipe writes it: `--ccache` (its value the next word)
# or `--ccache=` (glued)
_CCACHE = re.compile(r"--[A-Za-z0-9_-]+=?")


def check_buildable(path: Path, repo: RepoSpec) -> None:
    """The keys of `[repos.<name>]` that make it buildable, each in its grammar."""
    where = f"[repos.{repo.name}]"
    suffix = repo.vendor_suffix
    if suffix is not None and not _SUFFIX.fullmatch(suffix):
        raise fail(
            path,
            where,
            f"vendor_suffix = {suffix!r} is not a folder word.",
            "Write the suffix build.sh appends to the vendor name, e.g. 'math' for "
            "vendors/<vendor>_math (lower-case letters, digits, '_').",
        )
    bad = next((op for op in repo.ops if not _OP.fullmatch(op)), None)
    if bad is not None:
        raise fail(path, where, f"ops lists {bad!r}, which is not an operator name.")
    if repo.ops and suffix is None:
        raise fail(
            path, where, "lists ops but has no vendor_suffix: only a buildable repo has ops."
        )
    ccache = repo.ccache_option
    if ccache is not None and not _CCACHE.fullmatch(ccache):
        raise fail(
            path,
            where,
            f"ccache_option = {ccache!r} is not a build.sh option.",
            "Write '--ccache' (build.sh takes `--ccache <path>`) or '--ccache=' (glued).",
        )


def attach_legacy_validate(
    path: Path, validate: Optional[ValidateSpec], repos: List[RepoSpec], steps: Sequence[StepSpec]
) -> Tuple[List[RepoSpec], Tuple[str, ...]]:
    """An old recipe's top-level `[validate]`, read as the `[repos.X.validate]` of the repo
    its package installer builds (the repo of the step the `vendor` step runs after),
    and that repo made buildable by the suffix its library path names; with a note."""
    if validate is None:
        return repos, ()
    owner = _legacy_owner(repos, steps)
    if owner is None:
        raise fail(path, "[validate]", "has no repository to belong to: the recipe defines none.")
    if any(repo.validate is not None for repo in repos):
        raise fail(
            path,
            "[validate]",
            "is the old, recipe-wide form, and the recipe also has a [repos.X.validate].",
            f"Move it to [repos.{owner}.validate].",
        )
    match = _LEGACY_SUFFIX.search(validate.library)
    out = []
    for repo in repos:
        if repo.name == owner:
            suffix = repo.vendor_suffix or (match.group(1) if match else None)
            ops = repo.ops or (LEGACY_OPS if suffix else ())
            repo = replace(repo, validate=validate, vendor_suffix=suffix, ops=ops)
        out.append(repo)
    note = (
        f"recipe {path}: the top-level [validate] is the old form, read as "
        f"[repos.{owner}.validate]; move it there (see recipes/*.toml)"
    )
    return out, (note,)


def _legacy_owner(repos: Sequence[RepoSpec], steps: Sequence[StepSpec]) -> Optional[str]:
    by_name = {s.name: s for s in steps}
    for step in steps:
        if step.action != "vendor":
            continue
        todo = [step]
        while todo:
            current = todo.pop(0)
            if current.repo:
                return current.repo
            todo += [by_name[d] for d in current.after if d in by_name]
    built = [s.repo for s in steps if s.repo]
    if built:
        return built[-1]  # the last repo built: what the steps lead up to
    return repos[-1].name if repos else None


def default_order(
    path: Path, given: Optional[Tuple[str, ...]], repos: Sequence[RepoSpec]
) -> Tuple[str, ...]:
    """`[recipe] default_repos`, each a buildable repo; absent: every buildable repo."""
    buildable = [repo.name for repo in repos if repo.buildable]
    if given is None:
        return tuple(buildable)
    for name in given:
        if name not in buildable:
            raise fail(
                path,
                "[recipe]",
                f"default_repos names {name!r}, which is not a buildable repo of the recipe.",
                f"Buildable repos (with a vendor_suffix): {', '.join(buildable) or 'none'}.",
            )
    if len(set(given)) != len(given):
        raise fail(path, "[recipe]", "default_repos names a repo twice.")
    return tuple(given)
