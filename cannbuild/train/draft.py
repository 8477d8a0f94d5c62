"""`cannbuild recipe draft --ref TAG`: a recipe for a new CANN train, drafted from the
repositories at that ref and the closest existing recipe.

Each repository of the base recipe is fetched through cannbuild's own machinery (the
workspace's git caches, `cannbuild.mirrors`, `--offline`), its ref chosen by the
release's manifest (`--manifest cann.xml`) or found as a tag, else a branch, of that
name, and read at that commit (readout.py): the SoCs, the build.sh flags the recipe's
[vars] switch, what the toolkit must hold, gawk, the pinned sources and the archives.
What is not read from the repositories (steps, validation, toolkit files) is the base
recipe's, and everything the draft could not decide is listed, in the file and to the
caller."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple

from msgspec import Struct
from msgspec.structs import replace

from ..bounded import RECIPE, read_toml
from ..decoded import JSONObject, JSONValue
from ..errors import UsageError
from ..host.socs import families, family_soc
from ..recipes import Recipe, available, load_recipe
from ..recipes.optspec import judge
from ..recipes.reader import BUILDABLE_KEYS
from ..recipes.selection import select_repos
from ..sources.canncmake import FETCH_CANN_CMAKE_FILES
from ..sources.checkout import cache_path, resolve_ref
from ..sources.fetch import Fetcher, GitFailed
from ..workspace import Workspace
from .check import ScriptSpec, check_recipe, rendered_commands, script_index
from .manifest import Manifest, Revision
from .readout import Readout, read_repo
from .thirdparty import cann_cmake_rules, module_rules, recipe_table

# `v9.1.0`, `9.1.0`, `v9.2.0-beta.1`, `v9.1.0.pre`: the release (and its train) a ref names
_RELEASE = re.compile(
    r"^v?(?P<release>(?P<train>\d+\.\d+)\.\d+(?:[-.][0-9A-Za-z][0-9A-Za-z.-]*)?)$"
)
# the template a ref becomes when it spells the release (recipes/9.0.toml `v{{ ops_release }}`,
# recipes/9.1.toml `{{ ops_release }}`), so one recipe serves every release of its train
OPS_RELEASE = "{{ ops_release }}"


class RefChoice(Struct, frozen=True, kw_only=True):
    repo: str
    kind: str  # tag, branch or commit
    value: str  # as resolved: v9.1.0, 9.1.0
    template: str  # as the recipe writes it: v{{ ops_release }}
    commit: str
    cite: str  # why this ref: the manifest's line, or "tag v9.0.1 of <url>"


class Draft(Struct, frozen=True, kw_only=True):
    train: str
    release: str
    ref: str
    base: Path
    refs: Tuple[RefChoice, ...]
    data: JSONObject  # the recipe's tables, as TOML writes them
    read: Tuple[str, ...]  # what was read where, for the header
    undecided: Tuple[str, ...]


def release_of(ref: str) -> Tuple[str, str]:
    """(release, train) of a ref that names a release; exit 2 otherwise."""
    match = _RELEASE.match(ref)
    if match is None:
        raise UsageError(
            f"--ref {ref!r} does not name a CANN release.",
            "Pass the release's tag or branch, e.g. --ref v9.0.1, --ref 9.1.0 or --ref v9.2.0-beta.1.",
        )
    return match.group("release"), match.group("train")


def _train_key(train: str) -> Tuple[int, ...]:
    return tuple(int(p) for p in train.split(".") if p.isdigit())


def closest_recipe(train: str, cwd: Path) -> Recipe:
    """The recipe of the newest train not after `train` (else the oldest there is)."""
    found = available(cwd)
    trains = sorted((t for t in found if re.fullmatch(r"\d+\.\d+", t)), key=_train_key)
    if not trains:
        raise UsageError("there is no recipe to draft from.", "Pass --from RECIPE.")
    older = [t for t in trains if _train_key(t) <= _train_key(train)]
    return load_recipe(found[older[-1] if older else trains[0]])


def _host_side_repo(
    name: str,
    raw: JSONObject,
    refs: Sequence[RefChoice],
    manifest: Optional[Manifest],
    release: str,
    read: List[str],
) -> JSONObject:
    """A repository the sandbox lays its toolkit's host side out from, at the toolkit's
    release: the manifest's revision of it, else the kind of ref the operator repos take
    (`{{ cann.release }}` in place of the release); a ref with no release in it (openEuler's
    libboundscheck) is the base recipe's."""
    table = dict((raw.get("repos") or {}).get(name) or {})
    rule = next((k for k in ("tag", "branch") if k in table), None)
    if rule is None or "{{" not in str(table[rule]):
        return table
    revision = manifest.revision(name) if manifest is not None else None
    if revision is not None:
        kind, value, cite = revision.kind, revision.value, f"{revision.cite} names it"
    elif refs:
        kind, value, cite = refs[0].kind, refs[0].value, f"as {refs[0].repo}'s ({refs[0].cite})"
    else:
        return table
    del table[rule]
    table[kind] = _template(value, release).replace(OPS_RELEASE, "{{ cann.release }}")
    read.append(f"{name}: {kind} {table[kind]}, {cite}")
    return table


def _template(value: str, release: str) -> str:
    if value == release:
        return OPS_RELEASE
    if value == f"v{release}":
        return "v" + OPS_RELEASE
    return value


def _has(fetcher: Fetcher, cache: Path, ref: str) -> bool:
    try:
        fetcher.git(["show-ref", "--verify", "--quiet", ref], cwd=cache)
    except GitFailed:
        return False
    return True


def choose_ref(
    fetcher: Fetcher,
    cache: Path,
    name: str,
    url: str,
    ref: str,
    release: str,
    manifest: Optional[Manifest],
) -> RefChoice:
    """The manifest's revision of the repository, else a tag named `ref`, else a branch."""
    revision: Optional[Revision] = None
    if manifest is not None:
        project = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
        revision = manifest.revision(name) or manifest.revision(project)
    if revision is not None:
        kind, value = revision.kind, revision.value
        cite = f"{revision.cite} names {kind} {value}"
    elif _has(fetcher, cache, f"refs/tags/{ref}"):
        kind, value, cite = "tag", ref, f"tag {ref} of {url}"
    elif _has(fetcher, cache, f"refs/heads/{ref}"):
        kind, value, cite = "branch", ref, f"branch {ref} of {url} (no tag of that name)"
    else:
        raise UsageError(
            f"--ref {ref}: {url} has no tag or branch of that name"
            + (" and the manifest names no revision for it" if manifest else "")
            + ".",
            "Pass the release's manifest (--manifest cann.xml, hicann/manifest at the release "
            "tag), or the tag or branch the repository has for it (git ls-remote URL).",
        )
    commit, _ = resolve_ref(fetcher, cache, {kind: value}, url)
    return RefChoice(
        repo=name,
        kind=kind,
        value=value,
        template=_template(value, release),
        commit=commit,
        cite=cite,
    )


class DraftRequest(Struct, frozen=True, kw_only=True):
    ref: str
    base: Recipe
    ws: Workspace
    fetcher: Fetcher
    manifest: Optional[Manifest] = None
    # the buildable repos to draft (`--repos`); empty: every repo of the base recipe
    repos: Tuple[str, ...] = ()


def draft_recipe(req: DraftRequest) -> Draft:
    release, train = release_of(req.ref)
    ws, fetcher = req.ws, req.fetcher
    # a subset drafts those repos, the sources they take, and their steps and tools
    base = select_repos(req.base, req.repos) if req.repos else req.base
    # the repos that only make the sandbox's toolkit host side have no build to read: kept as
    # the base recipe names them (their refs follow {{ cann.release }})
    used = {s.repo for s in base.steps} | {p.repo for r in base.repos for p in r.pins}
    host_side = [r.name for r in base.repos if r.toolkit and r.name not in used]
    base = replace(base, repos=tuple(r for r in base.repos if r.name not in host_side))
    urls = {r.name: r.url for r in base.repos}
    refs: List[RefChoice] = []
    readouts: Dict[str, Readout] = {}
    caches: Dict[str, Path] = {}
    for repo in base.repos:
        caches[repo.name] = cache_path(ws, repo.name)
        fetcher.fetch_repo(caches[repo.name], repo.url, root=ws.root)
        choice = choose_ref(
            fetcher, caches[repo.name], repo.name, repo.url, req.ref, release, req.manifest
        )
        refs.append(choice)
        readouts[repo.name] = read_repo(fetcher, caches[repo.name], repo.name, choice.commit, urls)
    read: List[str] = []
    undecided: List[str] = []
    for readout in readouts.values():
        if readout.spec_problem:
            undecided.append(f"{readout.spec_problem}: its flags are not checked.")
        read += [f"pin: {readout.repo}: {why}" for why in readout.unused_pins]
    head = _head(base, train, release, refs, readouts, read, undecided)
    vars_ = _vars(base, ws, readouts, read, undecided)
    toolkit = _toolkit(base, readouts, read, undecided)
    tools = _tools(base, readouts, read, undecided)
    fetched: Dict[str, Path] = {}
    repos: JSONObject = {}
    for repo, choice in zip(base.repos, refs):
        readout = readouts[repo.name]
        table: JSONObject = {"url": repo.url, choice.kind: choice.template}
        table.update(_pins(readout, read))
        if any(p.pin.pin_file in FETCH_CANN_CMAKE_FILES for p in readout.pins):
            rules = cann_cmake_rules(fetcher, ws, readout, caches[repo.name], repo, fetched)
        else:
            rules = module_rules(fetcher, ws, readout, caches[repo.name], repo)
        if rules.rules:
            table["third_party"] = list(rules.rules)
        read += [f"archives {repo.name}: {line}" for line in rules.read]
        undecided += rules.undecided
        repos[repo.name] = table
    raw = read_toml(base.path, RECIPE)
    # what makes a repo buildable (vendor suffix, ops, ccache option, its validation) and the
    # default selection are the base recipe's, as its steps are
    for name, table in repos.items():
        kept = (raw.get("repos") or {}).get(name) or {}
        table.update({k: kept[k] for k in (*BUILDABLE_KEYS, "toolkit") if k in kept})
    for name in host_side:
        repos[name] = _host_side_repo(name, raw, refs, req.manifest, release, read)
    if host_side:
        undecided.append(
            f"[repos] {', '.join(host_side)}: the toolkit's host side the sandbox lays out, not "
            "fetched; check each ref against the release's cann.xml."
        )
    if base.default_repos:
        head["default_repos"] = [n for n in base.default_repos if n in repos] or list(req.repos)
    if base.unselected:
        undecided.append(
            f"--repos {','.join(req.repos)}: {', '.join(base.unselected)} of {base.path.name} "
            "left out, with their steps and tools; draft again with them to add them."
        )
    data: JSONObject = {"recipe": head, "vars": vars_, "toolkit": toolkit}
    if tools:
        data["host"] = {"tools": tools}
    data["repos"] = repos
    step_names = {s.name for s in base.steps}
    data["steps"] = [s for s in raw.get("steps", []) if s.get("name") in step_names]
    if raw.get("validate"):  # a base recipe of the old form
        data["validate"] = raw["validate"]
    files = [f for f in raw.get("toolkit", {}).get("files", []) if f.get("step") in step_names]
    if files:
        toolkit["files"] = files
        undecided.append(
            f"[[toolkit.files]] are {base.path.name}'s: check each reason against cmake/config.cmake "
            "and the hcc toolchain at these refs (what the Find*.cmake modules and the host code "
            "need, doctor derives from the checkout)."
        )
    undecided.append(
        f"[[steps]] and each repo's [repos.X.validate] are {base.path.name}'s: check their "
        "templates and comments "
        "against build.sh at these refs."
    )
    _check_flags(replace(base, vars=tuple(sorted(vars_.items()))), ws, readouts, undecided)
    return Draft(
        train=train,
        release=release,
        ref=req.ref,
        base=base.path,
        refs=tuple(refs),
        data=data,
        read=tuple(read),
        undecided=tuple(undecided),
    )


def _head(
    base: Recipe,
    train: str,
    release: str,
    refs: Sequence[RefChoice],
    readouts: Mapping[str, Readout],
    read: List[str],
    undecided: List[str],
) -> JSONObject:
    described = ", ".join(f"{c.repo} {c.kind} {c.template}" for c in refs)
    head: JSONObject = {
        "name": f"cann-{train}",
        "train": train,
        "description": f"{described}; drafted from {base.name} (cannbuild recipe draft)",
    }
    soc_repos = [s.repo for s in base.steps if "soc" in s.inputs and s.repo]
    readout = readouts.get(soc_repos[0]) if soc_repos else None
    known = {f.soc for f in families()}
    if readout is not None and readout.socs:
        said = [family_soc(s) for s in readout.socs]  # v8.5.0's ascend910_95: the ascend950
        head["socs"] = [s for s in said if s in known]
        other = [s for s in said if s not in known]
        read.append(
            f"socs: {readout.cite('build.sh', readout.socs_line)} SUPPORT_COMPUTE_UNIT_SHORT"
        )
        if other:
            undecided.append(
                f"socs: build.sh also builds for {', '.join(other)}, which cannbuild knows no "
                "hardware of (recipes/facts/hosts.toml); left out."
            )
    else:
        head["socs"] = list(base.socs)
        undecided.append(f"socs: no SUPPORT_COMPUTE_UNIT_SHORT read; {base.path.name}'s kept.")
    head["image_cann"] = release
    undecided.append(
        f"image_cann = {release!r}: check that quay.io/ascend/cann publishes {release} images."
    )
    pinned = {p.pin.repo for r in readouts.values() for p in r.pins if p.pin.repo}
    # no checkout pins opbase (no OPBASE_TAG_ID): their builds take it from the toolkit, as
    # ops-transformer and the siblings do at v8.5.0 (cmake/modules/FindOPBASE.cmake), whatever
    # the base recipe's train did
    head["opbase"] = "source" if pinned else "toolkit"
    if head["opbase"] != base.opbase:
        undecided.append(
            f"opbase = {head['opbase']!r}, {base.path.name} says {base.opbase!r}: its steps "
            "(overlay, install) need changing too."
        )
    if base.opbase_headers != "pkg_inc":
        head["opbase_headers"] = base.opbase_headers
        undecided.append(f"opbase_headers = {base.opbase_headers!r} is {base.path.name}'s.")
    for choice in refs:
        read.append(
            f"{choice.repo}: {choice.kind} {choice.value} = {choice.commit} ({choice.cite})"
        )
    return head


def _vars(
    base: Recipe,
    ws: Workspace,
    readouts: Mapping[str, Readout],
    read: List[str],
    undecided: List[str],
) -> JSONObject:
    """A boolean [vars] entry is true when every build.sh flag it adds to a step is one
    that repository's build.sh accepts at its commit (`pkg_flag` -> opbase `--pkg`,
    `third_party_flag` -> ops-transformer `--cann_3rd_lib_path=...`)."""
    values: JSONObject = dict(base.vars)
    for key, value in base.vars:
        if not isinstance(value, bool):
            undecided.append(f"[vars] {key} = {value!r} is {base.path.name}'s.")
            continue
        on = _words(replace(base, vars=tuple(sorted({**values, key: True}.items()))), ws)
        off = _words(replace(base, vars=tuple(sorted({**values, key: False}.items()))), ws)
        added = sorted(on - off)
        if not added:
            undecided.append(f"[vars] {key}: it adds no build.sh flag; {base.path.name}'s kept.")
            continue
        verdicts = []
        for repo, word in added:
            readout = readouts.get(repo)
            if readout is None or readout.spec is None:
                continue
            verdict = judge(readout.spec, [word])[0]
            option = verdict.option
            where = readout.cite(*readout.spec.located(option.line)) if option else ""
            verdicts.append((verdict.accepted, f"{repo} {word.split('=', 1)[0]} {where}".strip()))
        if not verdicts:
            undecided.append(f"[vars] {key}: no build.sh read for its flags; kept.")
            continue
        values[key] = all(ok for ok, _ in verdicts)
        read.append(
            f"vars: {key} = {str(values[key]).lower()}: "
            + "; ".join(f"{what} {'accepted' if ok else 'not accepted'}" for ok, what in verdicts)
        )
    return values


def _words(recipe: Recipe, ws: Workspace) -> Set[Tuple[str, str]]:
    """(repo, flag) of every build.sh flag the recipe's steps render (one SoC)."""
    out: Set[Tuple[str, str]] = set()
    for cmd in rendered_commands(replace(recipe, socs=recipe.socs[:1]), ws):
        at = script_index(cmd.argv)
        if at is not None and cmd.repo and not cmd.note:
            out.update((cmd.repo, word) for word in cmd.argv[at + 1 :])
    return out


def _toolkit(
    base: Recipe, readouts: Mapping[str, Readout], read: List[str], undecided: List[str]
) -> JSONObject:
    """[toolkit.requires]: the build dependencies version.cmake declares in the repos a
    run always builds (ops-transformer@9.1.0:version.cmake:13-20)."""
    requires: Dict[str, JSONValue] = {}
    for name in _always_built(base):
        readout = readouts.get(name)
        if readout is None or not readout.deps:
            continue
        read.append(
            "toolkit.requires: "
            + readout.cite(readout.deps_file)
            + f":{readout.deps_lines[0]}-{readout.deps_lines[-1]} (build dependencies)"
        )
        for pkg, spec in readout.deps:
            if requires.setdefault(pkg, spec) != spec:
                undecided.append(f"[toolkit.requires] {pkg}: {requires[pkg]} or {spec}?")
    if not requires:
        requires = dict(base.requires)
        undecided.append(f"[toolkit.requires]: no version.cmake read; {base.path.name}'s kept.")
    return {"requires": requires}


def _always_built(base: Recipe) -> List[str]:
    return list(dict.fromkeys(s.repo for s in base.steps if s.repo and not s.optional))


def _tools(
    base: Recipe, readouts: Mapping[str, Readout], read: List[str], undecided: List[str]
) -> List[JSONObject]:
    tools: List[JSONObject] = []
    gawk = next((t for t in base.tools if t.name == "gawk"), None)
    for name in _always_built(base):
        readout = readouts.get(name)
        if readout is not None and readout.gawk_lines and not tools:
            cite = readout.cite("build.sh", *readout.gawk_lines[:3])
            tools.append(
                {
                    "name": "gawk",
                    "why": f"{name}'s build.sh calls gawk ({cite}) and exits 127 without it",
                    "install": gawk.install
                    if gawk
                    else "apt install gawk (Debian and Ubuntu ship mawk), or yum install gawk",
                }
            )
            read.append(f"host.tools: gawk at {cite}")
    for tool in base.tools:
        if tool.name != "gawk":
            tools.append(recipe_table(tool))
            undecided.append(f"[[host.tools]] {tool.name} is {base.path.name}'s: still needed?")
    if gawk and not tools:
        read.append("host.tools: no gawk call in the build.sh of a repo every run builds")
    return tools


def _pins(readout: Readout, read: List[str]) -> JSONObject:
    out: JSONObject = {}
    pinned: List[JSONObject] = []
    # a pin of another recipe repo first (`opbase_source`), the rest in file order
    for item in sorted(readout.pins, key=lambda p: p.pin.repo is None):
        pin = item.pin
        table = recipe_table(pin)
        if pin.repo and "opbase_source" not in out:
            out["opbase_source"] = table
        else:
            pinned.append(table)
        read.append(f"pin: {readout.cite(item.where)} {item.value} -> {pin.dest} ({item.url})")
    if pinned:
        out["pinned_sources"] = pinned
    return out


def _check_flags(
    recipe: Recipe, ws: Workspace, readouts: Mapping[str, Readout], undecided: List[str]
) -> None:
    """`recipe check` of the draft against the scripts it was read from."""
    scripts = {
        name: ScriptSpec(repo=name, path=r.cite("build.sh"), ref=r.commit, spec=r.spec)
        for name, r in readouts.items()
        if r.spec is not None
    }
    for row in check_recipe(recipe, ws, scripts).unknown:
        near = f" (closest: {row.closest})" if row.closest else ""
        note = f"step {row.step!r} renders {row.word}, which {row.repo}'s build.sh does not accept{near}."
        if note not in undecided:
            undecided.append(note)
