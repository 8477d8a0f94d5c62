"""What a recipe says, as frozen data (reader.py reads and checks the TOML)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Tuple

from msgspec import Struct

from ..decoded import JSONValue
from ..resources import data_dir

USER_RECIPE_DIR = "cannbuild-recipes"
OPBASE_MODES = ("toolkit", "source")
PHASES = ("build", "install")
ACTIONS = ("overlay", "vendor")


PIN_KINDS = ("commit", "tag")


class SourcePin(Struct, frozen=True, kw_only=True):
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
    pin: str = "commit"

    @property
    def source(self) -> str:
        """The repository whose git cache holds the pinned commit."""
        return self.repo or self.name or ""


class ArchiveRule(Struct, frozen=True, kw_only=True):
    """What the recipe says of one third-party archive of a repo at its pinned ref.

    `place`: where that ref's CMake accepts a local copy, in the order cannbuild
    prefers, relative to the checkout ("dir/" = unpacked there); empty when the ref
    downloads it on every build.  `source` cites the upstream lines that say so.
    `needed = false`: only other build modes (tests) download it.  `url`, `sha256`,
    `md5` add the archive or override what the repo's CMake declares."""

    name: str
    place: Tuple[str, ...]
    source: str
    needed: bool = True
    url: Optional[str] = None
    sha256: Optional[str] = None
    md5: Optional[str] = None


class RepoSpec(Struct, frozen=True, kw_only=True):
    name: str
    url: str
    tag: Optional[str] = None
    branch: Optional[str] = None
    until: Optional[str] = None
    commit: Optional[str] = None
    pins: Tuple[SourcePin, ...] = ()  # `opbase_source` first, then `pinned_sources`
    third_party: Tuple[ArchiveRule, ...] = ()

    @property
    def source_pin(self) -> Optional[SourcePin]:
        """The first pin (the one a 9.0 recipe's `opbase_source` declares)."""
        return self.pins[0] if self.pins else None


class ToolkitFile(Struct, frozen=True, kw_only=True):
    """A file the builds read from the toolkit, found by any one of `paths` (relative to
    ASCEND_HOME_PATH, `{{ arch }}` filled in); `source` is the upstream file that looks,
    `reason` why it is listed by hand: what a checkout's cmake looks for with find_* and
    its host code includes is derived from it (build/derived.py)."""

    component: str
    package: str
    step: str
    paths: Tuple[str, ...]
    source: str = ""
    reason: str = ""


class StepSpec(Struct, frozen=True, kw_only=True):
    name: str
    command: str
    repo: Optional[str] = None
    after: Tuple[str, ...] = ()
    inputs: Tuple[str, ...] = ()
    produces: Tuple[str, ...] = ()
    # folders the command removes and makes again by name in its cwd (build.sh's clean:
    # build/, output/; build_out/): a link there is refused before the step runs, or the
    # build would run, and delete, where it leads
    scratch: Tuple[str, ...] = ()
    phase: str = "build"
    action: Optional[str] = None
    env: Tuple[Tuple[str, str], ...] = ()
    cwd: Optional[str] = None
    # runs only when asked for (--with-step NAME, CANNBUILD_OPTIONAL_STEPS, or --force NAME);
    # shown in the plan either way
    optional: bool = False


class HostTool(Struct, frozen=True, kw_only=True):
    """A program the recipe's builds call that doctor must find on PATH."""

    name: str
    why: str
    install: str


class ValidateSpec(Struct, frozen=True, kw_only=True):
    library: str
    symbols: Tuple[str, ...]
    example: Optional[str] = None
    # where the ref's build.sh --run_example looks for the custom package: "custom-opp"
    # (ASCEND_CUSTOM_OPP_PATH, then ASCEND_OPP_PATH/vendors) or "opp" (ASCEND_OPP_PATH only)
    example_lookup: str = "custom-opp"


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
    validate: ValidateSpec
    image_cann: Optional[str] = None  # the CANN version of this train's container images
    tools: Tuple[HostTool, ...] = ()
    toolkit_files: Tuple[ToolkitFile, ...] = ()
    # where ops-transformer looks for opbase's op_common headers: <arch>-linux/<this>; opbase
    # itself installs them under pkg_inc (since 2025-11-05)
    opbase_headers: str = "pkg_inc"

    def repo(self, name: str) -> RepoSpec:
        for repo in self.repos:
            if repo.name == name:
                return repo
        raise KeyError(name)

    @property
    def added_archives(self) -> Tuple[Tuple[str, str, Optional[str]], ...]:
        """(name, url, sha256) of the archives the recipe itself names by URL and places."""
        seen: Dict[str, Tuple[str, str, Optional[str]]] = {}
        for repo in self.repos:
            for rule in repo.third_party:
                if rule.url and rule.needed and rule.place:
                    seen.setdefault(rule.url, (rule.name, rule.url, rule.sha256))
        return tuple(seen.values())


def template_dirs(recipe_path: Path) -> List[Path]:
    """Where a recipe's step templates are looked up: beside the recipe first (a user's
    recipe brings its own, or overrides a shipped one by name), then cannbuild's."""
    here = recipe_path.resolve().parent
    return [here, here / "templates", data_dir("templates")]
