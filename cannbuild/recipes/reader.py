"""Reading a recipe file: every key checked for its kind, every error naming the file
and the key."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Set, Tuple

from msgspec.structs import replace

from ..bounded import RECIPE, parse_toml, read_text
from ..decoded import JSONValue
from .fields import Reader, relative
from .model import (
    ACTIONS,
    OPBASE_MODES,
    PHASES,
    ArchiveRule,
    HostTool,
    Recipe,
    RepoSpec,
    StepSpec,
    ToolkitFile,
    template_dirs,
)
from .pins import check_pins, read_pins
from .repodata import REPO_KEYS, attach_legacy_validate, buildable_fields, default_order

_TOP_KEYS = {"recipe", "vars", "toolkit", "host", "repos", "third_party", "steps", "validate"}
_TOOL_KEYS = {"name", "why", "install", "repos"}
_RECIPE_KEYS = {
    "name",
    "train",
    "description",
    "socs",
    "opbase",
    "image_cann",
    "opbase_headers",
    "default_repos",
}
# The 8.3 pair disagrees: opbase 868d751 installs op_common under `<arch>-linux/pkg_inc` (upstream
# commit 32b4a5c), while ops-transformer c29bc10's FindOPBASE.cmake:19 searches
# `<arch>-linux/include`; recipes/8.3.toml says `include` (reference real-host-findings.md §1).
# where ops-transformer looks for opbase's op_common headers in the toolkit: <arch>-linux/...
OPBASE_HEADERS = ("pkg_inc", "include")
# `until` bounds a branch; `opbase_source` is the nested pin (ops-transformer v9.0 pins opbase by
# OPBASE_TAG_ID in cmake/third_party/opbase.cmake); `pinned_sources` any number of them
# (ops-transformer 9.1 also pins ops-tensor and the shared cann/cmake repository); the rest
# makes it buildable (repodata.py).
_REPO_KEYS = {
    "url",
    "tag",
    "branch",
    "until",
    "commit",
    "opbase_source",
    "pinned_sources",
    "third_party",
    "toolkit",
} | REPO_KEYS
# The older recipe-wide `[[third_party]]` form, still read below.
_THIRD_KEYS = {"name", "url", "dest", "repos", "sha256"}
_RULE_KEYS = {"name", "place", "source", "needed", "url", "sha256", "md5"}
# Lengths of a sha256 and an md5 digest in hex.
_HEX = {"sha256": 64, "md5": 32}
_STEP_KEYS = {
    "name",
    "command",
    "repo",
    "after",
    "inputs",
    "produces",
    "scratch",
    "phase",
    "action",
    "env",
    "cwd",
    "optional",
}
_FILE_KEYS = {"component", "package", "step", "paths", "source", "reason", "used_by"}
# The run's values a step may declare as inputs: each one joins the step's input hash
# (build/plan.py), so changing it reruns the step.
_STEP_INPUTS = {"soc", "ops", "vendor_name"}


def load_recipe(path: Path) -> Recipe:
    """The recipe at `path`, every table checked in the file's order (the first mistake is
    the one reported)."""
    text = read_text(path, RECIPE)
    data = parse_toml(text, path, RECIPE.named(hint="Fix the file; see recipes/*.toml."))
    r = Reader(path)
    r.keys(data, _TOP_KEYS, "the top level")
    head = r.get(data, "recipe", dict, "the file")
    r.keys(head, _RECIPE_KEYS, "[recipe]")
    opbase, opbase_headers = _opbase(r, head)
    repos = [
        _repo(r, name, table) for name, table in r.get(data, "repos", dict, "the file").items()
    ]
    names = {repo.name for repo in repos}
    check_pins(r, repos, names)
    repos = _add_recipe_archives(r, data, repos, names)
    steps = _steps(r, data, template_dirs(path), names)
    repos, notes = attach_legacy_validate(r, data, repos, steps)
    order = default_order(r, head, repos)
    toolkit = r.get(data, "toolkit", dict, "the file", required=False) or {}
    r.keys(toolkit, {"requires", "files"}, "[toolkit]")
    requires = r.get(toolkit, "requires", dict, "[toolkit]", required=False) or {}
    tools = _host_tools(r, data, names)
    files = _toolkit_files(r, toolkit, {step.name for step in steps})
    return Recipe(
        path=path,
        # The digest of the bytes as read, which the lock and the run report record: it tells two
        # recipes of one name apart.
        digest=hashlib.sha256(text.encode()).hexdigest(),
        name=r.get(head, "name", str, "[recipe]"),
        train=r.get(head, "train", str, "[recipe]"),
        description=r.get(head, "description", str, "[recipe]", required=False) or "",
        socs=r.strings(head, "socs", "[recipe]"),
        opbase=opbase,
        vars=tuple(sorted((r.get(data, "vars", dict, "the file", required=False) or {}).items())),
        requires=tuple(sorted((str(k), str(v)) for k, v in requires.items())),
        repos=tuple(repos),
        steps=tuple(steps),
        image_cann=r.get(head, "image_cann", str, "[recipe]", required=False),
        tools=tuple(tools),
        toolkit_files=tuple(files),
        opbase_headers=opbase_headers,
        default_repos=order,
        order=order,
        notes=notes,
    )


def _opbase(r: Reader, head: Mapping[str, JSONValue]) -> Tuple[str, str]:
    """[recipe]'s opbase mode and where its headers are (`opbase`, `opbase_headers`)."""
    opbase = r.get(head, "opbase", str, "[recipe]")
    if opbase not in OPBASE_MODES:
        raise r.fail("[recipe]", f"opbase = {opbase!r} is not one of {', '.join(OPBASE_MODES)}.")
    opbase_headers = r.get(head, "opbase_headers", str, "[recipe]", required=False) or "pkg_inc"
    if opbase_headers not in OPBASE_HEADERS:
        raise r.fail(
            "[recipe]",
            f"opbase_headers = {opbase_headers!r} is not one of {', '.join(OPBASE_HEADERS)}.",
        )
    return opbase, opbase_headers


def _repo(r: Reader, name: str, table: Mapping[str, JSONValue]) -> RepoSpec:
    where = f"[repos.{name}]"
    r.keys(table, _REPO_KEYS, where)
    # A ref is a tag, a branch (with an optional `until` commit bound) or a commit id, one of
    # them.
    refs = [k for k in ("tag", "branch", "commit") if k in table]
    if len(refs) != 1:
        raise r.fail(where, "needs exactly one of tag, branch or commit.")
    if "until" in table and "branch" not in table:
        raise r.fail(where, "has 'until', which only applies to a branch.")
    pins = read_pins(r, table, where, name)
    rules = [
        _archive_rule(r, rule, f"[[repos.{name}.third_party]] #{i}")
        for i, rule in enumerate(r.get(table, "third_party", list, where, required=False) or [], 1)
    ]
    return RepoSpec(
        name=name,
        url=r.get(table, "url", str, where),
        tag=r.get(table, "tag", str, where, required=False),
        branch=r.get(table, "branch", str, where, required=False),
        until=r.get(table, "until", str, where, required=False),
        commit=r.get(table, "commit", str, where, required=False),
        pins=tuple(pins),
        third_party=tuple(rules),
        toolkit=bool(r.get(table, "toolkit", bool, where, required=False)),
        **buildable_fields(r, table, name),  # type: ignore[arg-type]
    )


def _add_recipe_archives(
    r: Reader, data: Mapping[str, JSONValue], repos: List[RepoSpec], names: Set[str]
) -> List[RepoSpec]:
    """The older, recipe-wide form: an archive the recipe adds to the repos it names."""
    added: Dict[str, List[ArchiveRule]] = {}
    for i, table in enumerate(
        r.get(data, "third_party", list, "the file", required=False) or [], 1
    ):
        where = f"[[third_party]] #{i}"
        r.keys(table, _THIRD_KEYS, where)
        dest = relative(r, f"third_party/{r.get(table, 'dest', str, where)}", where)
        rule = ArchiveRule(
            name=r.get(table, "name", str, where),
            place=(dest,),
            source=f"the recipe's {where}",
            url=r.get(table, "url", str, where),
            sha256=_hex(r, table, "sha256", where),
        )
        for repo in r.strings(table, "repos", where):
            if repo not in names:
                raise r.fail(where, f"names repo {repo!r}, which [repos] does not define.")
            added.setdefault(repo, []).append(rule)
    return [
        replace(repo, third_party=repo.third_party + tuple(added.get(repo.name, ())))
        for repo in repos
    ]


def _steps(
    r: Reader, data: Mapping[str, JSONValue], search: List[Path], names: Set[str]
) -> List[StepSpec]:
    steps: List[StepSpec] = []
    for i, table in enumerate(r.get(data, "steps", list, "the file"), 1):
        step = _step(r, table, f"[[steps]] #{i}")
        _check_step(r, step, steps, search, names)
        steps.append(step)
    return steps


def _step(r: Reader, table: Mapping[str, JSONValue], where: str) -> StepSpec:
    r.keys(table, _STEP_KEYS, where)
    return StepSpec(
        name=r.get(table, "name", str, where),
        command=r.get(table, "command", str, where),
        repo=r.get(table, "repo", str, where, required=False),
        after=r.strings(table, "after", where),
        inputs=r.strings(table, "inputs", where),
        produces=r.strings(table, "produces", where),
        scratch=tuple(relative(r, p, where, "scratch") for p in r.strings(table, "scratch", where)),
        phase=r.get(table, "phase", str, where, required=False) or "build",
        action=r.get(table, "action", str, where, required=False),
        env=tuple(sorted((r.get(table, "env", dict, where, required=False) or {}).items())),
        cwd=r.get(table, "cwd", str, where, required=False),
        optional=bool(r.get(table, "optional", bool, where, required=False)),
    )


def _check_step(
    r: Reader, step: StepSpec, earlier: List[StepSpec], search: List[Path], names: Set[str]
) -> None:
    """A step against the steps before it, the repos and the templates."""
    where = f"step {step.name!r}"
    seen = [s.name for s in earlier]
    # `after` may only name earlier steps: the file order is then already a valid run order,
    # and a cycle cannot be written.
    if step.name in seen:
        raise r.fail(where, "is defined twice.")
    if step.repo is not None and step.repo not in names:
        raise r.fail(where, f"names repo {step.repo!r}, which [repos] does not define.")
    for dep in step.after:
        if dep not in seen:
            raise r.fail(where, f"runs after {dep!r}, which is not an earlier step.")
        if not step.optional and any(s.name == dep and s.optional for s in earlier):
            raise r.fail(
                where,
                f"runs after {dep!r}, which is optional and may not run.",
                "Make this step optional too, or drop the dependency.",
            )
    for inp in step.inputs:
        if inp not in _STEP_INPUTS:
            raise r.fail(where, f"input {inp!r} is not one of {', '.join(sorted(_STEP_INPUTS))}.")
    if step.phase not in PHASES:
        raise r.fail(where, f"phase {step.phase!r} is not one of {', '.join(PHASES)}.")
    if step.action is not None and step.action not in ACTIONS:
        raise r.fail(where, f"action {step.action!r} is not one of {', '.join(ACTIONS)}.")
    # The template must exist under one of the recipe's template folders now, not when the step
    # runs.
    if not any(os.path.lexists(d / step.command) for d in search):  # a FIFO: the loader says
        shown = ", ".join(str(d) for d in search)
        raise r.fail(where, f"uses template {step.command!r}, which is not in {shown}.")


def _host_tools(r: Reader, data: Mapping[str, JSONValue], names: Set[str]) -> List[HostTool]:
    host = r.get(data, "host", dict, "the file", required=False) or {}
    r.keys(host, {"tools"}, "[host]")
    tools: List[HostTool] = []
    for i, table in enumerate(r.get(host, "tools", list, "[host]", required=False) or [], 1):
        where = f"[[host.tools]] #{i}"
        if not isinstance(table, dict):
            raise r.fail(where, "should be a table with name, why and install.")
        r.keys(table, _TOOL_KEYS, where)
        name = r.get(table, "name", str, where)
        repos = r.strings(table, "repos", where)
        unknown = next((repo for repo in repos if repo not in names), None)
        if unknown is not None:
            raise r.fail(where, f"names repo {unknown!r}, which [repos] does not define.")
        tools.append(
            HostTool(
                name=name,
                why=r.get(table, "why", str, where),
                install=r.get(table, "install", str, where, required=False)
                or f"apt install {name} (Debian/Ubuntu) or yum install {name}",
                repos=repos,
            )
        )
    return tools


def _toolkit_files(
    r: Reader, toolkit: Mapping[str, JSONValue], step_names: Set[str]
) -> List[ToolkitFile]:
    files: List[ToolkitFile] = []
    for i, table in enumerate(r.get(toolkit, "files", list, "[toolkit]", required=False) or [], 1):
        where = f"[[toolkit.files]] #{i}"
        r.keys(table, _FILE_KEYS, where)
        entry = ToolkitFile(
            component=r.get(table, "component", str, where),
            package=r.get(table, "package", str, where),
            step=r.get(table, "step", str, where),
            paths=r.strings(table, "paths", where),
            source=r.get(table, "source", str, where, required=False) or "",
            reason=r.get(table, "reason", str, where, required=False) or "",
            used_by=r.get(table, "used_by", str, where, required=False) or "",
        )
        if not entry.reason.strip():
            # what the checkout's cmake looks for and its code includes is derived
            # (build/derived.py): a file listed by hand says why it cannot be
            raise r.fail(
                where,
                "has no 'reason': a file is listed by hand only when it cannot be derived from "
                "the checkout (doctor derives every find_path/find_library and included header).",
                "Drop the entry if the checkout's cmake finds the file with find_path or "
                'find_library, else add reason = "<how the build reads it>".',
            )
        if not entry.paths:
            raise r.fail(where, "needs at least one path in 'paths'.")
        # A toolkit file is checked only when its step will run; the step must exist to tell.
        if entry.step not in step_names:
            raise r.fail(where, f"names step {entry.step!r}, which [[steps]] does not define.")
        files.append(entry)
    return files


def _archive_rule(r: Reader, table: JSONValue, where: str) -> ArchiveRule:
    if not isinstance(table, dict):
        raise r.fail(where, f"should be a table, got {type(table).__name__}.")
    r.keys(table, _RULE_KEYS, where)
    needed = r.get(table, "needed", bool, where, required=False)
    return ArchiveRule(
        name=r.get(table, "name", str, where),
        place=tuple(relative(r, p, where) for p in r.strings(table, "place", where)),
        source=r.get(table, "source", str, where),
        needed=True if needed is None else needed,
        url=r.get(table, "url", str, where, required=False),
        sha256=_hex(r, table, "sha256", where),
        md5=_hex(r, table, "md5", where),
    )


def _hex(r: Reader, table: Mapping[str, JSONValue], key: str, where: str) -> Optional[str]:
    value = r.get(table, key, str, where, required=False)
    # Lower case only, the form hashlib's hexdigest() compares against.
    if value is not None and not re.fullmatch(f"[0-9a-f]{{{_HEX[key]}}}", value):
        raise r.fail(where, f"{key} = {value!r} is not {_HEX[key]} lower-case hex digits.")
    return value
