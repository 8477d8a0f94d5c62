"""What a recipe says, as frozen data (reader.py reads and checks the TOML)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Literal, Optional, Sequence, Tuple

from msgspec import Struct, field

from ..decoded import JSONValue
from ..resources import USER_DATA, data_dir

USER_RECIPE_DIR = USER_DATA
# The words a recipe may write for these keys (msgspec refuses any other, naming them).
Phase = Literal["build", "install"]
Action = Literal["overlay", "vendor"]
PinKind = Literal["commit", "tag"]
# The run's values a step may declare as inputs: each one joins the step's input hash
# (build/plan.py), so changing it reruns the step.
StepInput = Literal["soc", "ops", "vendor_name"]
# Where a repo's example looks for the custom package: ops-transformer 8.3's build.sh only in
# `${ASCEND_OPP_PATH}/vendors/<vendor>_<repo>` (build.sh:391-392), v8.5.0 (:450) and v9.0.0
# (:504) also in ASCEND_CUSTOM_OPP_PATH; ops-math, ops-nn and ops-cv at v9.0.0 only in
# `${ASCEND_HOME_PATH}/opp/vendors/<vendor>_<repo>` ("home-opp", ops-math@v9.0.0:build.sh:1526).
ExampleLookup = Literal["custom-opp", "opp", "home-opp"]


class RecipeTable(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A table of a recipe file, read by msgspec (reader.py): an unknown key is refused."""


class SourcePin(RecipeTable, frozen=True, kw_only=True):
    """A git source a repo's own CMake clones at a pin it declares, which cannbuild
    locks, fetches (through cannbuild.mirrors) and places into the checkout instead.

    Recipe syntax, both forms in one `[repos.<name>]`:

    - `[repos.X.opbase_source]` (the 9.0 form, one pin): `repo`, `pin_file`,
      `pin_regex`, `dest`; `repo` names another `[repos.*]` whose cache holds the commit.
    - `[[repos.X.pinned_sources]]` (any number): the same keys, where instead of `repo`
      a source of its own gives `name` (its cache, and its name in bundles) and `url`;
      `pin = "tag"` when the value the regex captures is a tag name of that source
      (ops-transformer 9.1 `set(CANN_CMAKE_TAG "master-026")`), resolved to the commit
      it tags and locked as that commit; `pin = "commit"` (default) for a commit id.

    `pin_regex`'s group 1 is the pin, searched in `pin_file` of the checkout at its
    locked commit; `dest` is where the clone goes in the checkout, the local-copy place
    that ref's CMake takes (`third_party/opbase`, `third_party/ops-tensor`,
    `third_party/cann-cmake`).  The lock records each pin as `<repo>:<dest>`, with the
    file and line that declared it."""

    pin_file: str
    pin_regex: str
    dest: str
    repo: Optional[str] = None
    name: Optional[str] = None
    url: Optional[str] = None
    pin: PinKind = "commit"

    @property
    def source(self) -> str:
        """The repository whose git cache holds the pinned commit."""
        return self.repo or self.name or ""


class ArchiveRule(RecipeTable, frozen=True, kw_only=True):
    """What the recipe says of one third-party archive of a repo at its pinned ref.

    `place`: where that ref's CMake accepts a local copy, in the order cannbuild
    prefers, relative to the checkout ("dir/" = unpacked there); empty when the ref
    downloads it on every build.  `source` cites the upstream lines that say so.
    `needed = false`: only other build modes (tests) download it.  `url`, `sha256`,
    `md5` add the archive or override what the repo's CMake declares."""

    name: str
    source: str
    place: Tuple[str, ...] = ()
    needed: bool = True
    url: Optional[str] = None
    sha256: Optional[str] = None
    md5: Optional[str] = None


class ValidateSpec(RecipeTable, frozen=True, kw_only=True):
    """`[repos.X.validate]`: what proves one repository's installed package works.

    `library` is relative to the workspace's opp; `check` names a numeric check
    registered in cannbuild/validate/ (registry.py); `why` says why that operator was
    picked; `example` is the step template of the repo's own `--run_example`, run for
    `example_op`."""

    library: str
    symbols: Tuple[str, ...] = ()
    example: Optional[str] = None
    # where the ref's build.sh --run_example looks for the custom package: "custom-opp"
    # (ASCEND_CUSTOM_OPP_PATH, then ASCEND_OPP_PATH/vendors) or "opp" (ASCEND_OPP_PATH only)
    example_lookup: ExampleLookup = "custom-opp"
    check: Optional[str] = None
    why: str = ""
    example_op: Optional[str] = None


class RepoSpec(RecipeTable, frozen=True, kw_only=True):
    """`[repos.<name>]`: a ref is a tag, a branch (`until` bounds it) or a commit id; the
    pins its CMake declares; what makes it buildable (checked in reader.py)."""

    url: str
    name: str = ""  # the table's name, set by the reader
    tag: Optional[str] = None
    branch: Optional[str] = None
    until: Optional[str] = None
    commit: Optional[str] = None
    opbase_source: Optional[SourcePin] = None  # the 9.0 form, one pin
    pinned_sources: Tuple[SourcePin, ...] = ()
    third_party: Tuple[ArchiveRule, ...] = ()
    # a buildable repo (selectable with --repos) installs vendors/<vendor_name>_<suffix>;
    # a source (opbase, ops-tensor) has none
    vendor_suffix: Optional[str] = None
    ops: Tuple[str, ...] = ()  # its default --ops
    validate: Optional[ValidateSpec] = None
    # how its build.sh takes a ccache launcher: "--ccache" (two words, `--ccache <path>`),
    # "--ccache=" (glued); None: it takes none (ccache reaches it through PATH only)
    ccache_option: Optional[str] = None
    # its packages are part of the toolkit's host side (headers, CMake packages, scripts): a
    # real host has them installed, the sandbox lays them out from the checkout
    # (sandbox/hostside.py); only fetched on the sandbox
    toolkit: bool = False

    @property
    def pins(self) -> Tuple[SourcePin, ...]:
        """`opbase_source` first, then `pinned_sources`."""
        return (
            (self.opbase_source, *self.pinned_sources)
            if self.opbase_source
            else self.pinned_sources
        )

    @property
    def buildable(self) -> bool:
        return self.vendor_suffix is not None

    def vendor_folder(self, vendor_name: str) -> str:
        """`<vendor_name>_<vendor_suffix>`, the folder its package installs under vendors/."""
        return f"{vendor_name}_{self.vendor_suffix}"

    def ccache_words(self, path: str) -> Tuple[str, ...]:
        """The build.sh words that hand it the ccache at `path` (none if it takes none)."""
        if not self.ccache_option:
            return ()
        if self.ccache_option.endswith("="):
            return (f"{self.ccache_option}{path}",)
        return (self.ccache_option, path)


class ToolkitFile(RecipeTable, frozen=True, kw_only=True):
    """A file the builds read from the toolkit, found by any one of `paths` (relative to
    ASCEND_HOME_PATH, `{{ arch }}` filled in); `source` is the upstream file that looks,
    `reason` why it is listed by hand: what a checkout's cmake looks for with find_* and
    its host code includes is derived from it (build/derived.py)."""

    component: str
    package: str
    step: str
    paths: Tuple[str, ...] = ()
    source: str = ""
    reason: str = ""
    # a word of the checkout's cmake that says the build runs it (`add_es_library` for
    # gen_esb); default the file's own name (`op_build`): a checkout without it never does
    used_by: str = ""

    @property
    def used_by_word(self) -> str:
        return self.used_by or self.paths[0].rstrip("/").rsplit("/", 1)[-1]


class StepSpec(RecipeTable, frozen=True, kw_only=True):
    name: str
    command: str
    repo: Optional[str] = None
    after: Tuple[str, ...] = ()
    inputs: Tuple[StepInput, ...] = ()
    produces: Tuple[str, ...] = ()
    # folders the command removes and makes again by name in its cwd (build.sh's clean:
    # build/, output/; build_out/): a link there is refused before the step runs, or the
    # build would run, and delete, where it leads
    scratch: Tuple[str, ...] = ()
    phase: Phase = "build"
    action: Optional[Action] = None
    env: Dict[str, str] = field(default_factory=dict)
    cwd: Optional[str] = None
    # runs only when asked for (--with-step NAME, CANNBUILD_OPTIONAL_STEPS, or --force NAME);
    # shown in the plan either way
    optional: bool = False


class HostTool(RecipeTable, frozen=True, kw_only=True):
    """A program the recipe's builds call that doctor must find on PATH."""

    name: str
    why: str
    install: str = ""  # "": the reader writes the apt/yum line
    # only the builds of these repos call it (ops-nn's install_deps.sh wants pigz, dos2unix):
    # checked when one of them is selected; empty: always
    repos: Tuple[str, ...] = ()


class Recipe(Struct, frozen=True, kw_only=True):
    path: Path
    digest: str
    name: str
    train: str
    description: str
    socs: Tuple[str, ...]
    opbase: str
    vars: Tuple[Tuple[str, JSONValue], ...]  # [vars], as TOML has them
    requires: Tuple[Tuple[str, str], ...]
    repos: Tuple[RepoSpec, ...]
    steps: Tuple[StepSpec, ...]
    image_cann: Optional[str] = None  # the CANN version of this train's container images
    tools: Tuple[HostTool, ...] = ()
    toolkit_files: Tuple[ToolkitFile, ...] = ()
    # where ops-transformer looks for opbase's op_common headers: <arch>-linux/<this>; opbase
    # itself installs them under pkg_inc (since 2025-11-05)
    opbase_headers: str = "pkg_inc"
    # the buildable repos built when --repos is not given ([recipe] default_repos)
    default_repos: Tuple[str, ...] = ()
    # the buildable repos this recipe builds, in the order asked for (--repos, else
    # default_repos): the ASCEND_CUSTOM_OPP_PATH order, first wins.  A recipe narrowed by
    # recipes.selection.select_repos holds only these (and the sources), with their steps.
    order: Tuple[str, ...] = ()
    # buildable repos the recipe defines but this selection leaves out
    unselected: Tuple[str, ...] = ()
    # their default ops, (name, ops): what a run that needs an op names as the repo to add
    unselected_ops: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    # what reading it noticed (an old top-level [validate], read as one repo's)
    notes: Tuple[str, ...] = ()

    def repo(self, name: str) -> RepoSpec:
        for repo in self.repos:
            if repo.name == name:
                return repo
        raise KeyError(name)

    @property
    def buildable(self) -> Tuple[RepoSpec, ...]:
        """The repos that install a vendor package (selectable with --repos), file order."""
        return tuple(r for r in self.repos if r.buildable)

    @property
    def selected(self) -> Tuple[RepoSpec, ...]:
        """The buildable repos this recipe builds, in the --repos order."""
        return tuple(self.repo(name) for name in self.order)

    def step_owner(self, step: StepSpec) -> Optional[str]:
        return step_owner(step, self.steps)

    @property
    def validated(self) -> Tuple[RepoSpec, ...]:
        """The repos whose installed package validation judges, in the --repos order (a
        recipe of no buildable repo: each repo with a [validate] of its own)."""
        if not self.buildable:
            return tuple(r for r in self.repos if r.validate is not None)
        return tuple(r for r in self.selected if r.validate is not None)

    def repo_for_op(self, op: str) -> Optional[RepoSpec]:
        """The selected repo whose default ops list `op` (the one that ships it)."""
        return next((r for r in self.selected if op in r.ops), None)

    @property
    def added_archives(self) -> Tuple[Tuple[str, str, Optional[str]], ...]:
        """(name, url, sha256) of the archives the recipe itself names by URL and places."""
        seen: Dict[str, Tuple[str, str, Optional[str]]] = {}
        for repo in self.repos:
            for rule in repo.third_party:
                if rule.url and rule.needed and rule.place:
                    seen.setdefault(rule.url, (rule.name, rule.url, rule.sha256))
        return tuple(seen.values())


def step_owner(step: StepSpec, steps: Sequence[StepSpec]) -> Optional[str]:
    """The repo a step belongs to: its `repo`, else that of the first step it runs after
    that has one (an install step runs after its repo's build)."""
    seen = {s.name: s for s in steps}
    todo = [step]
    while todo:
        current = todo.pop(0)
        if current.repo:
            return current.repo
        todo += [seen[d] for d in current.after if d in seen]
    return None


def template_dirs(recipe_path: Path) -> List[Path]:
    """Where a recipe's step templates are looked up: beside the recipe first (a user's
    recipe brings its own, or overrides a shipped one by name), then cannbuild's."""
    here = recipe_path.resolve().parent
    return [here, here / "templates", data_dir("templates")]
