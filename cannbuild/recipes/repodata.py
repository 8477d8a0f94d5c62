"""Reading what a recipe says of each repository as a buildable one: its vendor suffix,
default ops, ccache option and `[repos.X.validate]`; an old top-level `[validate]`
read as one repo's; and the default selection (`[recipe] default_repos`)."""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from msgspec.structs import replace

from ..decoded import JSONValue
from .fields import Reader
from .model import RepoSpec, StepSpec, ValidateSpec

# the keys of [repos.X] that make it buildable, in the order a drafted recipe writes them
BUILDABLE_KEYS = ("vendor_suffix", "ops", "ccache_option", "validate")
REPO_KEYS = set(BUILDABLE_KEYS)
_VALIDATE_KEYS = {"library", "symbols", "example", "example_lookup", "check", "why", "example_op"}
# Where a repo's example looks for the custom package: ops-transformer 8.3's build.sh only in
# `${ASCEND_OPP_PATH}/vendors/<vendor>_<repo>` (build.sh:391-392), v8.5.0 (:450) and v9.0.0
# (:504) also in ASCEND_CUSTOM_OPP_PATH; ops-math, ops-nn and ops-cv at v9.0.0 only in
# `${ASCEND_HOME_PATH}/opp/vendors/<vendor>_<repo>` ("home-opp", ops-math@v9.0.0:build.sh:1526).
EXAMPLE_LOOKUPS = ("custom-opp", "opp", "home-opp")
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


def buildable_fields(r: Reader, table: Mapping[str, JSONValue], name: str) -> Dict[str, object]:
    """The RepoSpec fields of `[repos.<name>]` that make it buildable (all optional)."""
    where = f"[repos.{name}]"
    suffix = r.get(table, "vendor_suffix", str, where, required=False)
    if suffix is not None and not _SUFFIX.fullmatch(suffix):
        raise r.fail(
            where,
            f"vendor_suffix = {suffix!r} is not a folder word.",
            "Write the suffix build.sh appends to the vendor name, e.g. 'math' for "
            "vendors/<vendor>_math (lower-case letters, digits, '_').",
        )
    ops = r.strings(table, "ops", where)
    bad = next((op for op in ops if not _OP.fullmatch(op)), None)
    if bad is not None:
        raise r.fail(where, f"ops lists {bad!r}, which is not an operator name.")
    if ops and suffix is None:
        raise r.fail(where, "lists ops but has no vendor_suffix: only a buildable repo has ops.")
    ccache = r.get(table, "ccache_option", str, where, required=False)
    if ccache is not None and not _CCACHE.fullmatch(ccache):
        raise r.fail(
            where,
            f"ccache_option = {ccache!r} is not a build.sh option.",
            "Write '--ccache' (build.sh takes `--ccache <path>`) or '--ccache=' (glued).",
        )
    validate = None
    if "validate" in table:
        validate = read_validate(
            r, r.get(table, "validate", dict, where), f"[repos.{name}.validate]"
        )
    return {"vendor_suffix": suffix, "ops": ops, "ccache_option": ccache, "validate": validate}


def read_validate(r: Reader, vtable: Mapping[str, JSONValue], where: str) -> ValidateSpec:
    r.keys(vtable, _VALIDATE_KEYS, where)
    validate = ValidateSpec(
        library=r.get(vtable, "library", str, where),
        symbols=r.strings(vtable, "symbols", where),
        example=r.get(vtable, "example", str, where, required=False),
        example_lookup=r.get(vtable, "example_lookup", str, where, required=False) or "custom-opp",
        check=r.get(vtable, "check", str, where, required=False),
        why=r.get(vtable, "why", str, where, required=False) or "",
        example_op=r.get(vtable, "example_op", str, where, required=False),
    )
    if validate.example_lookup not in EXAMPLE_LOOKUPS:
        raise r.fail(
            where,
            f"example_lookup = {validate.example_lookup!r} is not one of {', '.join(EXAMPLE_LOOKUPS)}.",
        )
    return validate


def attach_legacy_validate(
    r: Reader,
    data: Mapping[str, JSONValue],
    repos: List[RepoSpec],
    steps: Sequence[StepSpec],
) -> Tuple[List[RepoSpec], Tuple[str, ...]]:
    """An old recipe's top-level `[validate]`, read as the `[repos.X.validate]` of the repo
    its package installer builds (the repo of the step the `vendor` step runs after),
    and that repo made buildable by the suffix its library path names; with a note."""
    if "validate" not in data:
        return repos, ()
    validate = read_validate(r, r.get(data, "validate", dict, "the file"), "[validate]")
    owner = _legacy_owner(repos, steps)
    if owner is None:
        raise r.fail("[validate]", "has no repository to belong to: the recipe defines none.")
    if any(repo.validate is not None for repo in repos):
        raise r.fail(
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
        f"recipe {r.path}: the top-level [validate] is the old form, read as "
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
    r: Reader, head: Mapping[str, JSONValue], repos: Sequence[RepoSpec]
) -> Tuple[str, ...]:
    """`[recipe] default_repos`, each a buildable repo; absent: every buildable repo."""
    buildable = [repo.name for repo in repos if repo.buildable]
    given = r.strings(head, "default_repos", "[recipe]")
    if "default_repos" not in head:
        return tuple(buildable)
    for name in given:
        if name not in buildable:
            raise r.fail(
                "[recipe]",
                f"default_repos names {name!r}, which is not a buildable repo of the recipe.",
                f"Buildable repos (with a vendor_suffix): {', '.join(buildable) or 'none'}.",
            )
    if len(set(given)) != len(given):
        raise r.fail("[recipe]", "default_repos names a repo twice.")
    return tuple(given)
