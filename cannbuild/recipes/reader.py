"""Reading a recipe file: msgspec decodes the TOML into the recipe's Structs (every key
checked for its kind, an unknown one refused, decoded.convert naming the file and the
key); the checks no type can say follow, each naming the table."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Dict, List, Literal, Optional, Set, Tuple

from msgspec import field
from msgspec.structs import replace

from ..bounded import RECIPE, parse_toml, read_text
from ..decoded import JSONValue, convert
from .fields import fail, relative
from .model import (
    ArchiveRule,
    HostTool,
    Recipe,
    RecipeTable,
    RepoSpec,
    StepSpec,
    ToolkitFile,
    ValidateSpec,
    template_dirs,
)
from .pins import check_pins
from .repodata import attach_legacy_validate, check_buildable, default_order

# Lengths of a sha256 and an md5 digest in hex.
_HEX = {"sha256": 64, "md5": 32}


class RecipeHead(RecipeTable, frozen=True, kw_only=True):
    """`[recipe]`."""

    name: str
    train: str
    opbase: Literal["toolkit", "source"]
    description: str = ""
    socs: Tuple[str, ...] = ()
    image_cann: Optional[str] = None
    # where ops-transformer looks for opbase's op_common headers in the toolkit: <arch>-linux/...
    # The 8.3 pair disagrees: opbase 868d751 installs op_common under `<arch>-linux/pkg_inc`
    # (upstream commit 32b4a5c), while ops-transformer c29bc10's FindOPBASE.cmake:19 searches
    # `<arch>-linux/include`; recipes/8.3.toml says `include` (reference real-host-findings.md §1).
    opbase_headers: Literal["pkg_inc", "include"] = "pkg_inc"
    default_repos: Optional[Tuple[str, ...]] = None  # None: every buildable repo


class RecipeArchive(RecipeTable, frozen=True, kw_only=True):
    """The older, recipe-wide `[[third_party]]`: an archive added to the repos it names."""

    name: str
    url: str
    dest: str
    repos: Tuple[str, ...] = ()
    sha256: Optional[str] = None


class ToolkitTable(RecipeTable, frozen=True, kw_only=True):
    # share/info package -> its minimum (runtime = ">=9.0.0")
    requires: Dict[str, str] = field(default_factory=dict)
    files: Tuple[ToolkitFile, ...] = ()


class HostTable(RecipeTable, frozen=True, kw_only=True):
    tools: Tuple[HostTool, ...] = ()


class RecipeFile(RecipeTable, frozen=True, kw_only=True):
    """A recipe file as written: the tables in the order reader.py checks them."""

    recipe: RecipeHead
    repos: Dict[str, RepoSpec]
    steps: Tuple[StepSpec, ...]
    vars: Dict[str, JSONValue] = field(default_factory=dict)
    toolkit: ToolkitTable = field(default_factory=ToolkitTable)
    host: HostTable = field(default_factory=HostTable)
    third_party: Tuple[RecipeArchive, ...] = ()
    validate: Optional[ValidateSpec] = None  # the old form of [repos.X.validate]


def load_recipe(path: Path) -> Recipe:
    """The recipe at `path`: decoded (the first mistake msgspec meets is reported), then
    checked table by table."""
    text = read_text(path, RECIPE)
    hint = "Fix the file; see recipes/*.toml."
    data = parse_toml(text, path, RECIPE.named(hint=hint))
    doc = convert(data, RecipeFile, f"recipe {path}", hint)
    head = doc.recipe
    repos = [_repo(path, name, spec) for name, spec in doc.repos.items()]
    check_pins(path, repos)
    repos = _add_recipe_archives(path, doc.third_party, repos)
    steps = _steps(path, doc.steps, template_dirs(path), {repo.name for repo in repos})
    repos, notes = attach_legacy_validate(path, doc.validate, repos, steps)
    order = default_order(path, head.default_repos, repos)
    return Recipe(
        path=path,
        # The digest of the bytes as read, which the lock and the run report record: it tells two
        # recipes of one name apart.
        digest=hashlib.sha256(text.encode()).hexdigest(),
        name=head.name,
        train=head.train,
        description=head.description,
        socs=head.socs,
        opbase=head.opbase,
        vars=tuple(sorted(doc.vars.items())),
        requires=tuple(sorted(doc.toolkit.requires.items())),
        repos=tuple(repos),
        steps=steps,
        image_cann=head.image_cann,
        tools=_host_tools(path, doc.host.tools, {repo.name for repo in repos}),
        toolkit_files=_toolkit_files(path, doc.toolkit.files, {step.name for step in steps}),
        opbase_headers=head.opbase_headers,
        default_repos=order,
        order=order,
        notes=notes,
    )


def _repo(path: Path, name: str, spec: RepoSpec) -> RepoSpec:
    where = f"[repos.{name}]"
    if spec.name:  # the table's name is the repo's
        raise fail(path, where, "has an unknown key 'name'.", f"Its name is {name!r}, the table's.")
    if sum(ref is not None for ref in (spec.tag, spec.branch, spec.commit)) != 1:
        raise fail(path, where, "needs exactly one of tag, branch or commit.")
    if spec.until is not None and spec.branch is None:
        raise fail(path, where, "has 'until', which only applies to a branch.")
    spec = replace(spec, name=name)
    check_buildable(path, spec)
    for i, rule in enumerate(spec.third_party, 1):
        _archive_rule(path, rule, f"[[repos.{name}.third_party]] #{i}")
    return spec


def _add_recipe_archives(
    path: Path, archives: Tuple[RecipeArchive, ...], repos: List[RepoSpec]
) -> List[RepoSpec]:
    """The older, recipe-wide form: an archive the recipe adds to the repos it names."""
    added: Dict[str, List[ArchiveRule]] = {}
    for i, table in enumerate(archives, 1):
        where = f"[[third_party]] #{i}"
        rule = ArchiveRule(
            name=table.name,
            place=(relative(path, f"third_party/{table.dest}", where),),
            source=f"the recipe's {where}",
            url=table.url,
            sha256=table.sha256,
        )
        _archive_rule(path, rule, where)
        for repo in table.repos:
            if repo not in {r.name for r in repos}:
                raise fail(path, where, f"names repo {repo!r}, which [repos] does not define.")
            added.setdefault(repo, []).append(rule)
    return [
        replace(repo, third_party=repo.third_party + tuple(added.get(repo.name, ())))
        for repo in repos
    ]


def _steps(
    path: Path, steps: Tuple[StepSpec, ...], search: List[Path], names: Set[str]
) -> Tuple[StepSpec, ...]:
    """Each step against the steps before it, the repos and the templates."""
    for i, step in enumerate(steps):
        where = f"step {step.name!r}"
        earlier = steps[:i]
        for place in step.scratch:
            relative(path, place, f"[[steps]] #{i + 1}", "scratch")
        # `after` may only name earlier steps: the file order is then already a valid run order,
        # and a cycle cannot be written.
        if step.name in [s.name for s in earlier]:
            raise fail(path, where, "is defined twice.")
        if step.repo is not None and step.repo not in names:
            raise fail(path, where, f"names repo {step.repo!r}, which [repos] does not define.")
        for dep in step.after:
            if dep not in [s.name for s in earlier]:
                raise fail(path, where, f"runs after {dep!r}, which is not an earlier step.")
            if not step.optional and any(s.name == dep and s.optional for s in earlier):
                raise fail(
                    path,
                    where,
                    f"runs after {dep!r}, which is optional and may not run.",
                    "Make this step optional too, or drop the dependency.",
                )
        # The template must exist under one of the recipe's template folders now, not when the
        # step runs.
        if not any(os.path.lexists(d / step.command) for d in search):  # a FIFO: the loader says
            shown = ", ".join(str(d) for d in search)
            raise fail(path, where, f"uses template {step.command!r}, which is not in {shown}.")
    return steps


def _host_tools(path: Path, tools: Tuple[HostTool, ...], names: Set[str]) -> Tuple[HostTool, ...]:
    for i, tool in enumerate(tools, 1):
        unknown = next((repo for repo in tool.repos if repo not in names), None)
        if unknown is not None:
            raise fail(
                path,
                f"[[host.tools]] #{i}",
                f"names repo {unknown!r}, which [repos] does not define.",
            )
    default = "apt install {0} (Debian/Ubuntu) or yum install {0}"
    return tuple(replace(t, install=t.install or default.format(t.name)) for t in tools)


def _toolkit_files(
    path: Path, files: Tuple[ToolkitFile, ...], step_names: Set[str]
) -> Tuple[ToolkitFile, ...]:
    for i, entry in enumerate(files, 1):
        where = f"[[toolkit.files]] #{i}"
        if not entry.reason.strip():
            # what the checkout's cmake looks for and its code includes is derived
            # (build/derived.py): a file listed by hand says why it cannot be
            raise fail(
                path,
                where,
                "has no 'reason': a file is listed by hand only when it cannot be derived from "
                "the checkout (doctor derives every find_path/find_library and included header).",
                "Drop the entry if the checkout's cmake finds the file with find_path or "
                'find_library, else add reason = "<how the build reads it>".',
            )
        if not entry.paths:
            raise fail(path, where, "needs at least one path in 'paths'.")
        # A toolkit file is checked only when its step will run; the step must exist to tell.
        if entry.step not in step_names:
            raise fail(path, where, f"names step {entry.step!r}, which [[steps]] does not define.")
    return files


def _archive_rule(path: Path, rule: ArchiveRule, where: str) -> None:
    for place in rule.place:
        relative(path, place, where)
    for key in ("sha256", "md5"):
        value = getattr(rule, key)
        # Lower case only, the form hashlib's hexdigest() compares against.
        if value is not None and not re.fullmatch(f"[0-9a-f]{{{_HEX[key]}}}", value):
            raise fail(path, where, f"{key} = {value!r} is not {_HEX[key]} lower-case hex digits.")
