"""`cannbuild recipe draft`: the 9.1 recipe drafted from the sandbox's 9.1 stand-in
repositories (fetched through mirror rules, as cannbuild.mirrors sends any fetch) and
the 9.0 recipe, compared with the shipped recipes/9.1.toml field by field: every field
is equal but the ones pinned below, each with the reason it differs."""

from __future__ import annotations

from typing import Dict

import pytest
from msgspec.structs import fields, replace

from cannbuild.errors import UsageError
from cannbuild.recipes import load_recipe
from cannbuild.recipes.model import SourcePin
from cannbuild.resources import data_dir
from cannbuild.sandbox.files import CommandLog
from cannbuild.sandbox.repos import build_repos, build_third_party
from cannbuild.sandbox.spec import OBS_FOLDER, OBS_UPSTREAM
from cannbuild.sources.fetch import Fetcher
from cannbuild.train.draft import DraftRequest, closest_recipe, draft_recipe, release_of
from cannbuild.train.drafttoml import draft_text, write_draft
from cannbuild.train.manifest import read_manifest
from cannbuild.workspace import Workspace

import cann91tree
from clirun import cannbuild

# the repos the sandbox lays its toolkit's host side out from (drafted, never fetched)
HOST_SIDE = {"metadef", "runtime", "ge", "asc-devkit", "libboundscheck"}

pytestmark = pytest.mark.xdist_group("recipe-draft")  # one worker builds the stand-ins once

# The shape of hicann/manifest@v9.1.0:cann.xml (a default revision, one project a line;
# there every ops project names revision "9.1.0", a branch), written for the test with the
# projects cannbuild builds and one it does not (at a tag).
MANIFEST = """\
<?xml version="1.0" encoding="UTF-8"?>
<manifest>
    <remote fetch="https://gitcode.com/cann" name="origin"/>
    <default remote="origin" revision="9.1.0" sync-j="4"/>
    <project groups="default,ops" name="opbase" path="opbase" remote="origin"/>
    <project name="ops-transformer" path="ops/ops-transformer" revision="9.1.0"/>
    <project name="ops-math" path="ops/ops-math" revision="9.1.0"/>
    <project name="ops-nn" path="ops/ops-nn"/>
    <project name="ops-cv" path="ops/ops-cv" revision="9.1.0"/>
    <project name="hccl" path="hccl" revision="refs/tags/v9.1.0"/>
</manifest>
"""
# Fields of recipes/9.1.toml the draft from 9.0 does not reproduce, and why.
DIFFERS = {
    # free text: the draft says which refs and which base recipe it came from
    "description",
    # the third-party rules (see test_the_draft_differs_only_in_third_party_rules_...)
    "repos",
    # [[toolkit.files]] are the base recipe's (9.0: acl/acl.h, v9.0.0 citations); the draft
    # lists them as undecided: it reads no Find*.cmake module
    "toolkit_files",
    # [[steps]] are the base recipe's (the draft says so): ops-nn's .run is
    # cann-ops-nn-<vendor>-linux.<arch>.run at 9.0 and cann-ops-nn-<vendor>_linux-<arch>.run
    # at 9.1, which the draft does not read
    "steps",
    # the file itself
    "path",
    "digest",
}


@pytest.fixture(scope="module")
def standins(tmp_path_factory) -> Dict[str, object]:
    """The sandbox's stand-in repositories, built with git as `sandbox create` builds them,
    and the mirror rules that send upstream URLs to them."""
    root = tmp_path_factory.mktemp("standins")
    mirror = root / "mirror"
    build_repos(mirror, root / "build", CommandLog(path=root / "create.log"))
    build_third_party(mirror)
    mirrors = (
        ("https://gitcode.com/", mirror.as_uri() + "/"),
        (OBS_UPSTREAM, (mirror / OBS_FOLDER).as_uri() + "/"),
    )
    (root / "cann.xml").write_text(MANIFEST)
    return {"root": root, "mirrors": mirrors, "manifest": root / "cann.xml"}


@pytest.fixture(scope="module")
def drafted(standins, tmp_path_factory):
    """The 9.1 draft from recipes/9.0.toml, written and read back as a recipe."""
    out = tmp_path_factory.mktemp("draft") / "9.1.toml"
    request = DraftRequest(
        ref="9.1.0",
        base=load_recipe(data_dir("recipes") / "9.0.toml"),
        ws=Workspace(root=standins["root"] / "ws"),
        fetcher=Fetcher(mirrors=standins["mirrors"]),
        manifest=read_manifest(standins["manifest"]),
    )
    draft = draft_recipe(request)
    write_draft(draft, out)
    return draft, load_recipe(out), out


def by_dest(pin: SourcePin) -> str:
    return pin.dest


def test_the_draft_equals_the_shipped_9_1_recipe_in_every_field_but_the_pinned_ones(drafted):
    _, recipe, _ = drafted
    shipped = load_recipe(data_dir("recipes") / "9.1.toml")
    differ = {f.name for f in fields(recipe) if getattr(recipe, f.name) != getattr(shipped, f.name)}
    assert differ == DIFFERS
    changed = {a.name for a, b in zip(recipe.steps, shipped.steps) if a != b}
    assert changed == {"ops-nn-build"}
    mine = next(s for s in recipe.steps if s.name == "ops-nn-build")
    theirs = next(s for s in shipped.steps if s.name == "ops-nn-build")
    assert replace(mine, produces=theirs.produces) == theirs
    # within repos: url, branch {{ ops_release }} and every pin are equal
    for mine, theirs in zip(recipe.repos, shipped.repos):
        assert (mine.name, mine.url, mine.branch, mine.tag) == (
            theirs.name,
            theirs.url,
            theirs.branch,
            theirs.tag,
        )
        # the draft lists pins in its listing order (cmake/third_party/*.cmake sorted), the
        # shipped recipe as written; each is fetched on its own
        assert sorted(mine.pins, key=by_dest) == sorted(theirs.pins, key=by_dest)


def test_a_source_only_unit_tests_clone_is_left_out_saying_why(drafted):
    """The siblings at 9.1 clone ops-test-kit at branch master only
    `if(DOWNLOAD_OPS_TEST_KIT)`, an option OFF that their build.sh never sets
    (ops-math@9.1.0:CMakeLists.txt:59,94-95): no pinned source of the draft, each listed."""
    draft, recipe, _ = drafted
    assert not [p for r in recipe.repos for p in r.pins if "ops-test-kit" in p.dest]
    left = [line for line in draft.read if "ops-test-kit" in line]
    assert [line.split(":", 2)[1].strip() for line in left] == ["ops-math", "ops-nn", "ops-cv"]
    for line in left:
        assert "cmake/third_party/ops_test_kit.cmake:4 pins master) left out" in line
        assert "cmake/third_party/ops_test_kit.cmake is included only at " in line
        assert "an option OFF that build.sh never sets" in line
    assert not any("ops-test-kit" in item for item in draft.undecided)


def test_the_draft_differs_only_in_third_party_rules_the_stand_ins_cannot_show(drafted):
    """The shipped makeself-fetch place comes from cmake/custom_build.cmake's hard-wired
    makeself path, which the draft does not read (it says so); what only test builds
    download needs no rule in either (the lock leaves it out by itself)."""
    draft, recipe, _ = drafted
    shipped = load_recipe(data_dir("recipes") / "9.1.toml")
    # (and the five repos of the toolkit's host side, which no build downloads for)
    assert [r.third_party for r in recipe.repos] == [()] * 10
    assert {(r.name, rule.name, rule.needed) for r in shipped.repos for rule in r.third_party} == {
        ("ops-transformer", "makeself-fetch", True),
    }
    assert any("third_party/makeself" in item for item in draft.undecided)


def test_the_draft_cites_where_it_read_each_value_and_lists_what_it_could_not_decide(drafted):
    draft, _, out = drafted
    text = out.read_text()
    assert [(r.repo, r.kind, r.value, r.template) for r in draft.refs] == [
        ("opbase", "branch", "9.1.0", "{{ ops_release }}"),
        ("ops-transformer", "branch", "9.1.0", "{{ ops_release }}"),
        ("ops-math", "branch", "9.1.0", "{{ ops_release }}"),
        ("ops-nn", "branch", "9.1.0", "{{ ops_release }}"),
        ("ops-cv", "branch", "9.1.0", "{{ ops_release }}"),
    ]
    assert "cann.xml:5 (default cann.xml:4) names branch 9.1.0" in draft.refs[0].cite
    assert draft.refs[1].cite == "cann.xml:6 names branch 9.1.0"
    assert "cann.xml:8 (default cann.xml:4) names branch 9.1.0" in draft.refs[3].cite
    undecided = "\n".join(draft.undecided)
    for item in (
        "kirinx90, kirin9030, mc62",
        "image_cann = '9.1.0'",
        "[[toolkit.files]] are 9.0.toml's",
    ):
        assert item in undecided
    assert any(line.startswith("socs: ops-transformer@") for line in draft.read)
    assert any(line.startswith("vars: third_party_flag = true") for line in draft.read)
    # the file says it all too, at the top, as comments
    head = text.split("\n[recipe]", 1)[0]
    assert head.startswith("# DRAFT of the CANN 9.1 recipe")
    assert "# Could not decide" in head
    assert all(line.startswith("#") or not line for line in head.splitlines())
    assert "pin_regex = 'set\\(OPBASE_TAG_ID\\s+([0-9a-f]{40})\\)'" in text
    assert draft_text(draft) == text


def test_a_module_only_test_builds_download_gets_no_rule_and_is_listed(tmp_path):
    """tests/cann91tree.py: ops-transformer asks for gtest `if(ENABLE_TEST)` and through
    cmake/ut.cmake (an on-demand download only the unit tests link), json, eigen, protobuf
    always; drafted from the shipped 9.1 recipe at tag v9.1.0."""
    tree = cann91tree.build(tmp_path / "tree")
    request = DraftRequest(
        ref="v9.1.0",
        base=load_recipe(data_dir("recipes") / "9.1.toml"),
        ws=Workspace(root=tmp_path / "ws"),
        fetcher=Fetcher(mirrors=tree.mirrors),
        repos=("ops-transformer",),  # the tree has no sibling repos
    )
    draft = draft_recipe(request)
    assert set(draft.data["repos"]) == {"opbase", "ops-transformer"} | HOST_SIDE
    steps = {s["name"] for s in draft.data["steps"]}
    assert steps and not any(name.startswith(("ops-math", "ops-nn", "ops-cv")) for name in steps)
    assert draft.data["recipe"]["default_repos"] == ["ops-transformer"]
    assert "host" not in draft.data  # pigz and dos2unix are ops-nn's
    ot = draft.data["repos"]["ops-transformer"]
    assert ot["tag"] == "v{{ ops_release }}"
    rules = {rule["name"]: rule for rule in ot["third_party"]}
    assert set(rules) == {"makeself-fetch"}  # kept from the base recipe (same layout), for review
    assert any(
        line.startswith("archives ops-transformer: not downloaded by a package build: gtest: ")
        and "asked for at CMakeLists.txt:8, cmake/ut.cmake:2" in line
        for line in draft.read
    )
    undecided = "\n".join(draft.undecided)
    assert "ops-transformer has no build.sh" in undecided  # the test tree has none
    assert "--repos ops-transformer: ops-math, ops-nn, ops-cv of 9.1.toml left out" in undecided
    assert "gtest" not in undecided


def test_a_ref_must_name_a_release_and_the_closest_recipe_is_the_newest_not_after_it(tmp_path):
    assert release_of("v9.2.0-beta.1") == ("9.2.0-beta.1", "9.2")
    assert release_of("9.1.0") == ("9.1.0", "9.1")
    with pytest.raises(UsageError, match="does not name a CANN release"):
        release_of("master")
    assert closest_recipe("9.2", tmp_path).train == "9.1"
    assert closest_recipe("9.0", tmp_path).train == "9.0"
    assert closest_recipe("8.0", tmp_path).train == "8.3"


def test_recipe_draft_from_the_command_line_writes_once_and_never_over_a_file(standins, tmp_path):
    env = {"CANNBUILD_MIRRORS": ",".join(f"{a}={b}" for a, b in standins["mirrors"])}
    args = [
        "recipe",
        "draft",
        "--ref",
        "9.1.0",
        "--from",
        "9.0",
        "--manifest",
        str(standins["manifest"]),
        "--repos",
        "ops-transformer",
    ]
    args += ["-w", str(tmp_path / "ws")]
    first = cannbuild(*args, cwd=tmp_path, **env)
    assert first.returncode == 0, first.stderr
    out = tmp_path / "cannbuild-recipes" / "9.1.toml"
    assert f"written to {out}" in first.stdout and "could not decide" in first.stdout
    assert load_recipe(out).train == "9.1"
    assert [r.name for r in load_recipe(out).repos if r.name not in HOST_SIDE] == [
        "opbase",
        "ops-transformer",
    ]
    # checked right away against the build.sh of the refs it names, in the caches it fetched
    check = cannbuild("recipe", "check", str(out), "-w", str(tmp_path / "ws"), cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert "all 15 flags accepted" in check.stdout and "ops-transformer.git:" in check.stdout
    again = cannbuild(*args, cwd=tmp_path, **env)
    assert again.returncode == 2
    assert f"{out} exists: a draft is never written over a recipe" in again.stderr


def test_a_ref_no_repository_has_is_refused_naming_it(standins, tmp_path):
    request = DraftRequest(
        ref="9.1.7",
        base=load_recipe(data_dir("recipes") / "9.1.toml"),
        ws=Workspace(root=standins["root"] / "ws"),
        fetcher=Fetcher(mirrors=standins["mirrors"]),
    )
    with pytest.raises(UsageError) as err:
        draft_recipe(request)
    text = err.value.paragraph()
    assert "--ref 9.1.7: https://gitcode.com/cann/opbase.git has no tag or branch" in text
    assert "--manifest cann.xml" in text
