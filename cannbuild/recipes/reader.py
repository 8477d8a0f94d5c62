"""Reading a recipe file: msgspec decodes the TOML into the recipe's Structs (every key
checked for its kind, an unknown one refused, decoded.convert naming the file and the
key); the checks no type can say follow, each a paragraph naming the file and the table:
the refs, the pins (model.SourcePin says what they mean), what makes a repo buildable,
the steps, the host tools, the toolkit files, and an old recipe's top-level [validate]."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Dict, List, Literal, Optional, Sequence, Set, Tuple

from msgspec import field
from msgspec.structs import replace

from ..bounded import RECIPE, read_text
from ..decoded import JSONValue, convert
from ..errors import UsageError
from ..lazy import lazy_module
from .model import (
    ArchiveRule,
    HostTool,
    Recipe,
    RecipeTable,
    RepoSpec,
    SourcePin,
    StepSpec,
    ToolkitFile,
    ValidateSpec,
    step_owner,
    template_dirs,
)

if TYPE_CHECKING:
    from .. import usercache
else:  # its imports (the fetch module's) are paid when a recipe is read
    usercache = lazy_module("cannbuild.usercache")

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
    data = usercache.parsed_toml(text, path, RECIPE.named(hint=hint))
    doc = convert(data, RecipeFile, f"recipe {path}", hint)
    head = doc.recipe
    repos = [_repo(path, name, spec) for name, spec in doc.repos.items()]
    _check_pins(path, repos)
    repos = _add_recipe_archives(path, doc.third_party, repos)
    steps = _steps(path, doc.steps, template_dirs(path), {repo.name for repo in repos})
    repos, notes = _attach_legacy_validate(path, doc.validate, repos, steps)
    order = _default_order(path, head.default_repos, repos)
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
        raise _fail(
            path, where, "has an unknown key 'name'.", f"Its name is {name!r}, the table's."
        )
    if sum(ref is not None for ref in (spec.tag, spec.branch, spec.commit)) != 1:
        raise _fail(path, where, "needs exactly one of tag, branch or commit.")
    if spec.until is not None and spec.branch is None:
        raise _fail(path, where, "has 'until', which only applies to a branch.")
    spec = replace(spec, name=name)
    _check_buildable(path, spec)
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
            place=(_relative(path, f"third_party/{table.dest}", where),),
            source=f"the recipe's {where}",
            url=table.url,
            sha256=table.sha256,
        )
        _archive_rule(path, rule, where)
        for repo in table.repos:
            if repo not in {r.name for r in repos}:
                raise _fail(path, where, f"names repo {repo!r}, which [repos] does not define.")
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
            _relative(path, place, f"[[steps]] #{i + 1}", "scratch")
        # `after` may only name earlier steps: the file order is then already a valid run order,
        # and a cycle cannot be written.
        if step.name in [s.name for s in earlier]:
            raise _fail(path, where, "is defined twice.")
        if step.repo is not None and step.repo not in names:
            raise _fail(path, where, f"names repo {step.repo!r}, which [repos] does not define.")
        for dep in step.after:
            if dep not in [s.name for s in earlier]:
                raise _fail(path, where, f"runs after {dep!r}, which is not an earlier step.")
            if not step.optional and any(s.name == dep and s.optional for s in earlier):
                raise _fail(
                    path,
                    where,
                    f"runs after {dep!r}, which is optional and may not run.",
                    "Make this step optional too, or drop the dependency.",
                )
        # The template must exist under one of the recipe's template folders now, not when the
        # step runs.
        if not any(os.path.lexists(d / step.command) for d in search):  # a FIFO: the loader says
            shown = ", ".join(str(d) for d in search)
            raise _fail(path, where, f"uses template {step.command!r}, which is not in {shown}.")
    return steps


def _host_tools(path: Path, tools: Tuple[HostTool, ...], names: Set[str]) -> Tuple[HostTool, ...]:
    for i, tool in enumerate(tools, 1):
        unknown = next((repo for repo in tool.repos if repo not in names), None)
        if unknown is not None:
            raise _fail(
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
            raise _fail(
                path,
                where,
                "has no 'reason': a file is listed by hand only when it cannot be derived from "
                "the checkout (doctor derives every find_path/find_library and included header).",
                "Drop the entry if the checkout's cmake finds the file with find_path or "
                'find_library, else add reason = "<how the build reads it>".',
            )
        if not entry.paths:
            raise _fail(path, where, "needs at least one path in 'paths'.")
        # A toolkit file is checked only when its step will run; the step must exist to tell.
        if entry.step not in step_names:
            raise _fail(path, where, f"names step {entry.step!r}, which [[steps]] does not define.")
    return files


def _archive_rule(path: Path, rule: ArchiveRule, where: str) -> None:
    for place in rule.place:
        _relative(path, place, where)
    for key in ("sha256", "md5"):
        value = getattr(rule, key)
        # Lower case only, the form hashlib's hexdigest() compares against.
        if value is not None and not re.fullmatch(f"[0-9a-f]{{{_HEX[key]}}}", value):
            raise _fail(path, where, f"{key} = {value!r} is not {_HEX[key]} lower-case hex digits.")


def _fail(path: Path, where: str, problem: str, hint: Optional[str] = None) -> UsageError:
    return UsageError(f"recipe {path}: {where} {problem}", hint)


def _relative(path: Path, place: str, where: str, key: str = "place") -> str:
    """A place inside the checkout: relative, without `..`."""
    parts = PurePosixPath(place).parts
    # A place is joined to the checkout: an absolute path, `..` or a backslash could put a file
    # outside it.
    if not place or place.startswith("/") or ".." in parts or "\\" in place:
        raise _fail(
            path,
            where,
            f"{key} {place!r} is not a path inside the checkout.",
            "Write it relative to the repository root, e.g. 'third_party/pkg/x.tar.gz' "
            "(a trailing '/' means: unpacked there).",
        )
    return place


def _check_pins(path: Path, repos: List[RepoSpec]) -> None:
    """Each pin is whole and names a repo the recipe has, two pins of one name agree on
    the URL, and no two pins of a repo share a dest."""
    names = {repo.name for repo in repos}
    urls: Dict[str, str] = {}
    for repo in repos:
        wheres = [f"[repos.{repo.name}].opbase_source"] if repo.opbase_source else []
        wheres += [
            f"[[repos.{repo.name}.pinned_sources]] #{i}"
            for i in range(1, 1 + len(repo.pinned_sources))
        ]
        for where, pin in zip(wheres, repo.pins):
            _check_pin(path, pin, where)
        dests: Set[str] = set()
        for pin in repo.pins:
            where = f"[repos.{repo.name}] pin {pin.dest!r}"
            if pin.repo is not None and (pin.repo not in names or pin.repo == repo.name):
                raise _fail(
                    path, where, f"names repo {pin.repo!r}, which is not another [repos.*]."
                )
            if pin.name is not None:
                if pin.name in names:
                    raise _fail(
                        path,
                        where,
                        f"has name {pin.name!r}, which is a [repos.*] of this recipe.",
                        f"Write repo = {pin.name!r} instead of name and url.",
                    )
                if urls.setdefault(pin.name, pin.url or "") != pin.url:
                    raise _fail(path, where, f"gives source {pin.name!r} another url than before.")
            if pin.dest.rstrip("/") in dests:
                raise _fail(path, where, "has the dest of another pin of this repo.")
            dests.add(pin.dest.rstrip("/"))


def _check_pin(path: Path, pin: SourcePin, where: str) -> None:
    """A recipe repo (`repo`) or a source of its own (`name` + `url`), its regex compiled
    now so a bad pattern fails at load with the recipe's name, not mid-fetch:
    pin_regex = 'set\\(OPBASE_TAG_ID\\s+([0-9a-f]{40})\\)'."""
    own = pin.name is not None or pin.url is not None
    if (pin.repo is None) == (not own) or (own and None in (pin.name, pin.url)):
        raise _fail(
            path,
            where,
            "needs either 'repo' (a [repos.*] whose repository holds the pinned commit) or "
            "both 'name' and 'url' (a source of its own), not both.",
        )
    try:
        groups = re.compile(pin.pin_regex).groups
    except re.error as exc:
        raise _fail(path, where, f"pin_regex is not a valid regex: {exc}.") from exc
    if groups < 1:
        raise _fail(path, where, "pin_regex has no group: its group 1 must capture the pin.")
    if pin.name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", pin.name):
        # it names the source's git cache and its member of an offline bundle
        raise _fail(
            path, where, f"name = {pin.name!r} is not a plain name (letters, digits, . _ -)."
        )
    _relative(path, pin.pin_file, where, "pin_file")
    _relative(path, pin.dest, where, "dest")


def _check_buildable(path: Path, repo: RepoSpec) -> None:
    """The keys of `[repos.<name>]` that make it buildable, each in its grammar."""
    where = f"[repos.{repo.name}]"
    suffix = repo.vendor_suffix
    if suffix is not None and not _SUFFIX.fullmatch(suffix):
        raise _fail(
            path,
            where,
            f"vendor_suffix = {suffix!r} is not a folder word.",
            "Write the suffix build.sh appends to the vendor name, e.g. 'math' for "
            "vendors/<vendor>_math (lower-case letters, digits, '_').",
        )
    bad = next((op for op in repo.ops if not _OP.fullmatch(op)), None)
    if bad is not None:
        raise _fail(path, where, f"ops lists {bad!r}, which is not an operator name.")
    if repo.ops and suffix is None:
        raise _fail(
            path, where, "lists ops but has no vendor_suffix: only a buildable repo has ops."
        )
    ccache = repo.ccache_option
    if ccache is not None and not _CCACHE.fullmatch(ccache):
        raise _fail(
            path,
            where,
            f"ccache_option = {ccache!r} is not a build.sh option.",
            "Write '--ccache' (build.sh takes `--ccache <path>`) or '--ccache=' (glued).",
        )


def _attach_legacy_validate(
    path: Path, validate: Optional[ValidateSpec], repos: List[RepoSpec], steps: Sequence[StepSpec]
) -> Tuple[List[RepoSpec], Tuple[str, ...]]:
    """An old recipe's top-level `[validate]`, read as the `[repos.X.validate]` of the repo
    its package installer builds (the repo of the step the `vendor` step runs after),
    and that repo made buildable by the suffix its library path names; with a note."""
    if validate is None:
        return repos, ()
    owner = _legacy_owner(repos, steps)
    if owner is None:
        raise _fail(path, "[validate]", "has no repository to belong to: the recipe defines none.")
    if any(repo.validate is not None for repo in repos):
        raise _fail(
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
    owners = (step_owner(s, steps) for s in steps if s.action == "vendor")
    owner = next((o for o in owners if o), None)
    if owner is not None:
        return owner
    built = [s.repo for s in steps if s.repo]
    if built:
        return built[-1]  # the last repo built: what the steps lead up to
    return repos[-1].name if repos else None


def _default_order(
    path: Path, given: Optional[Tuple[str, ...]], repos: Sequence[RepoSpec]
) -> Tuple[str, ...]:
    """`[recipe] default_repos`, each a buildable repo; absent: every buildable repo."""
    buildable = [repo.name for repo in repos if repo.buildable]
    if given is None:
        return tuple(buildable)
    for name in given:
        if name not in buildable:
            raise _fail(
                path,
                "[recipe]",
                f"default_repos names {name!r}, which is not a buildable repo of the recipe.",
                f"Buildable repos (with a vendor_suffix): {', '.join(buildable) or 'none'}.",
            )
    if len(set(given)) != len(given):
        raise _fail(path, "[recipe]", "default_repos names a repo twice.")
    return tuple(given)
