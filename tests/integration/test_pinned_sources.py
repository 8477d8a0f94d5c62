"""Pinned sources: every git source a checkout's own CMake would clone (opbase, ops-tensor,
the shared cann/cmake repository) is read from the checkout, locked as a commit, fetched
through the mirror map and placed where that ref takes a local copy; so are the archives
its cann/cmake modules declare.  Real local repositories (tests/cann91tree.py), no network.
"""

from pathlib import Path

import pytest

from cannbuild.errors import UsageError
from cannbuild.recipes import load_recipe
from cannbuild.sources.bundle import make_bundle
from cannbuild.sources.fetch import Fetcher
from cannbuild.sources.lock import read_lock
from cannbuild.sources.pinning import sources_from_lock, sync_sources
from cannbuild.sources.request import SourceRequest
from cannbuild.workspace import Workspace

import cann91tree as t

pytestmark = pytest.mark.xdist_group("cann91-tree")  # one xdist worker makes the module's fixture

CC = "ops-transformer:third_party/cann-cmake"


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> t.Tree:
    return t.build(tmp_path_factory.mktemp("cann91"))


def recipe_file(tmp_path: Path, text: str = t.RECIPE) -> Path:
    path = tmp_path / "9.1.toml"
    path.write_text(text)
    return path


def request(tmp_path: Path, tree: t.Tree, recipe: Path, **kw) -> SourceRequest:
    offline = kw.pop("offline", False)
    return SourceRequest(
        recipe=load_recipe(recipe),
        values={},
        toolkit_version="9.1.0",
        soc="ascend910_93",
        sandbox=False,
        ops_release="9.1.0",
        ws=Workspace(root=kw.pop("ws", tmp_path / "ws")),
        # offline: no mirror rule either, so any fetch would have to reach gitcode
        fetcher=Fetcher(mirrors=() if offline else tree.mirrors, offline=offline),
        lock_file=kw.pop("lock_file", tmp_path / "cannbuild.lock"),
        locked=kw.pop("locked", False),
        offline=offline,
        **kw,
    )


def test_a_9_1_lock_pins_each_source_the_cmake_clones_and_each_archive_it_downloads(tree, tmp_path):
    state = sync_sources(request(tmp_path, tree, recipe_file(tmp_path)))
    lock = read_lock(tmp_path / "cannbuild.lock")
    assert lock == state.lock and lock.version == 3
    pins = {r.name: r for r in lock.repos if ":" in r.name}
    assert {n: (r.commit, r.source) for n, r in pins.items()} == {
        "opbase:third_party/cann-cmake": (tree.cmake_tagged, "cann-cmake"),
        "ops-transformer:third_party/opbase": (tree.opbase_pinned, ""),
        "ops-transformer:third_party/ops-tensor": (tree.tensor_pinned, "ops-tensor"),
        CC: (tree.cmake_tagged, "cann-cmake"),
    }
    # the tag name, and the file and line that declare each pin
    assert pins[CC].ref == "tag master-026, pinned by cmake/fetch_cann_cmake.cmake:6"
    assert pins[CC].url == "https://gitcode.com/cann/cmake.git"  # upstream, not the mirror
    assert pins["ops-transformer:third_party/opbase"].ref == (
        "pinned by cmake/third_party/opbase.cmake:1"
    )
    archives = {a.name: a for a in lock.third_party}
    assert sorted(archives) == [
        "abseil-cpp-20230802.1",
        "eigen-5.0.0",
        "json-3.11.3",
        "makeself-release-2.5.0-patch1",
        "protobuf-25.1",
    ]  # gtest: only the unit tests need it (test_canncmake.py)
    json = archives["json-3.11.3"]
    assert json.sha256 == tree.sha256[t.JSON_URL] and json.url == t.JSON_URL
    assert json.repos == ("opbase", "ops-transformer")
    assert json.places == {
        "opbase": "third_party/json-3.11.3.tar.gz",
        "ops-transformer": "third_party/json-3.11.3.tar.gz",
    }
    ot = state.checkouts["ops-transformer"]
    # each pinned source is a clone at its pinned commit, where the ref takes a local copy
    assert (ot / "third_party/cann-cmake/function/prepare.cmake").is_file()
    assert t.git("rev-parse", "HEAD", cwd=ot / "third_party/cann-cmake") == tree.cmake_tagged
    assert t.git("rev-parse", "HEAD", cwd=ot / "third_party/ops-tensor") == tree.tensor_pinned
    assert t.git("rev-parse", "HEAD", cwd=ot / "third_party/opbase") == tree.opbase_pinned
    assert t.git("remote", "get-url", "origin", cwd=ot / "third_party/ops-tensor") == (
        "https://gitcode.com/cann/ops-tensor.git"
    )
    for place in (
        "json-3.11.3.tar.gz",
        "eigen-5.0.0.tar.gz",
        "abseil-cpp/abseil-cpp-20230802.1.tar.gz",
        "protobuf-25.1.tar.gz",
        "makeself-release-2.5.0-patch1.tar.gz",
    ):
        assert (ot / "third_party" / place).is_file(), place
    # `plan` reads the same identities from the lock alone
    planned = sources_from_lock(request(tmp_path, tree, recipe_file(tmp_path)))
    assert planned is not None and planned.identities == state.identities


def test_a_locked_offline_run_needs_nothing_but_the_caches_and_a_bundle_carries_them(
    tree, tmp_path
):
    recipe = recipe_file(tmp_path)
    first = sync_sources(request(tmp_path, tree, recipe))
    again = sync_sources(request(tmp_path, tree, recipe, offline=True, locked=True))
    assert again.identities == first.identities and not again.changed
    out = tmp_path / "b.tar"
    made = make_bundle(Workspace(root=tmp_path / "ws"), tmp_path / "cannbuild.lock", out)
    assert set(made["repos"]) == {"opbase", "ops-transformer", "ops-tensor", "cann-cmake"}
    air = tmp_path / "air"
    air.mkdir()
    fresh = sync_sources(
        request(
            air,
            tree,
            recipe,
            offline=True,
            locked=True,
            bundle=out,
            lock_file=air / "cannbuild.lock",
        )
    )
    assert fresh.identities == first.identities
    assert (fresh.checkouts["ops-transformer"] / "third_party/ops-tensor/include").is_dir()


# the 9.1 recipe's rule: the custom package packs with <src>/third_party/makeself, unpacked
# (cannmirror/ops-transformer@9.1.0:cmake/custom_build.cmake:1219), named by its module
MAKESELF_UNPACKED = """
[[repos.ops-transformer.third_party]]
name = "makeself-fetch"
place = ["third_party/makeself/"]
source = "custom_build.cmake:1219"
"""


def test_an_archive_one_checkout_places_by_rule_and_one_by_module_reads_back_from_the_lock(
    tree, tmp_path
):
    recipe = recipe_file(tmp_path, t.RECIPE + MAKESELF_UNPACKED)
    state = sync_sources(request(tmp_path, tree, recipe))
    ot = state.checkouts["ops-transformer"]
    assert (ot / "third_party/makeself/makeself.sh").is_file()  # unpacked, top folder stripped
    assert not (ot / "third_party/makeself-release-2.5.0-patch1.tar.gz").exists()
    # opbase takes the tarball where cann/cmake's makeself-fetch.cmake looks
    assert (
        state.checkouts["opbase"] / "third_party/makeself-release-2.5.0-patch1.tar.gz"
    ).is_file()
    entry = next(
        a for a in read_lock(tmp_path / "cannbuild.lock").third_party if "makeself" in a.url
    )
    # the rule's name, which finds it again; the module's place is in `places`
    assert entry.name == "makeself-fetch" and entry.repos == ("opbase", "ops-transformer")
    assert entry.places == {"opbase": "third_party/makeself-release-2.5.0-patch1.tar.gz"}
    planned = sources_from_lock(request(tmp_path, tree, recipe))
    assert planned is not None and planned.identities == state.identities


def test_a_9_1_checkout_without_a_pinned_cann_cmake_is_refused_naming_the_fix(tree, tmp_path):
    text = t.RECIPE_HEAD + t.RECIPE_REST  # opbase's cann-cmake pin left out
    with pytest.raises(UsageError) as err:
        sync_sources(request(tmp_path, tree, recipe_file(tmp_path, text)))
    message = err.value.paragraph()
    assert f"opbase at {tree.opbase[:12]} clones the shared cann/cmake repository" in message
    assert 'pin_file = "cmake/fetch_cann_cmake.cmake", pin = "tag"' in message


def test_a_commit_pin_that_reads_a_tag_name_says_to_declare_a_tag(tree, tmp_path):
    text = t.RECIPE_HEAD + t.OPBASE_CMAKE_PIN.replace('pin = "tag"\n', "") + t.RECIPE_REST
    with pytest.raises(UsageError) as err:
        sync_sources(request(tmp_path, tree, recipe_file(tmp_path, text)))
    message = err.value.paragraph()
    assert "cmake/fetch_cann_cmake.cmake:6 at opbase" in message
    assert "'master-026', which is not a commit id" in message and 'pin = "tag"' in message


def test_a_lock_without_a_pinned_source_the_recipe_declares_is_drift(tree, tmp_path):
    recipe = recipe_file(tmp_path)
    sync_sources(request(tmp_path, tree, recipe))
    lock_file = tmp_path / "cannbuild.lock"
    text = lock_file.read_text()
    start = text.index('name = "ops-transformer:third_party/ops-tensor"')
    head = text.rindex("[[repos]]", 0, start)
    end = text.index("[[", start)
    lock_file.write_text(text[:head] + text[end:])
    from cannbuild.errors import LockDrift

    with pytest.raises(LockDrift) as err:
        sync_sources(request(tmp_path, tree, recipe, locked=True))
    assert "pinned source ops-transformer:third_party/ops-tensor: not in the lock" in (
        err.value.paragraph()
    )


PIN = """
[recipe]
name = "x"
train = "9.9"
opbase = "source"
[repos.opbase]
url = "https://example.invalid/opbase.git"
tag = "v1"
[repos.ops-transformer]
url = "https://example.invalid/ot.git"
tag = "v1"
{pins}
[[steps]]
name = "opbase-build"
repo = "opbase"
command = "steps/opbase-build.j2"
[validate]
library = "lib.so"
symbols = ["a"]
"""
ENTRY = """[[repos.ops-transformer.pinned_sources]]
pin_file = "cmake/x.cmake"
pin_regex = 'set\\(X\\s+(\\S+)\\)'
dest = "{dest}"
{extra}
"""
OWN = 'name = "ops-tensor"\nurl = "https://example.invalid/ops-tensor.git"'

BAD_PINS = {
    "neither-repo-nor-name": (ENTRY.format(dest="a", extra=""), "needs either 'repo'"),
    "both-repo-and-name": (
        ENTRY.format(dest="a", extra=f'repo = "opbase"\n{OWN}'),
        "needs either 'repo'",
    ),
    "name-without-url": (
        ENTRY.format(dest="a", extra='name = "ops-tensor"'),
        "needs either 'repo'",
    ),
    "unknown-repo": (ENTRY.format(dest="a", extra='repo = "opbse"'), "names repo 'opbse'"),
    "itself": (
        ENTRY.format(dest="a", extra='repo = "ops-transformer"'),
        "names repo 'ops-transformer', which is not another",
    ),
    "a-recipe-repo-by-name": (
        ENTRY.format(dest="a", extra='name = "opbase"\nurl = "https://e/o.git"'),
        "Write repo = 'opbase'",
    ),
    "pin-kind": (ENTRY.format(dest="a", extra=f'{OWN}\npin = "branch"'), "pin = 'branch'"),
    "no-group": (
        ENTRY.format(dest="a", extra=OWN).replace("(\\S+)", "\\S+"),
        "pin_regex has no group",
    ),
    "dest-outside": (ENTRY.format(dest="../x", extra=OWN), "dest '../x' is not a path inside"),
    "two-on-one-dest": (
        ENTRY.format(dest="a", extra=OWN) + ENTRY.format(dest="a/", extra='repo = "opbase"'),
        "has the dest of another pin",
    ),
    "one-name-two-urls": (
        ENTRY.format(dest="a", extra=OWN)
        + ENTRY.format(dest="b", extra='name = "ops-tensor"\nurl = "https://e/other.git"'),
        "another url than before",
    ),
    "unknown-key": (ENTRY.format(dest="a", extra=f"{OWN}\npin_fil = 'x'"), "Did you mean"),
}


@pytest.mark.parametrize("case", sorted(BAD_PINS))
def test_a_bad_pinned_source_is_named_at_load(case, tmp_path):
    entry, says = BAD_PINS[case]
    path = recipe_file(tmp_path, PIN.format(pins=entry))
    with pytest.raises(UsageError) as err:
        load_recipe(path)
    assert says in err.value.paragraph() and str(path) in err.value.paragraph()


def test_both_pin_forms_load_in_recipe_order(tmp_path):
    legacy = """[repos.ops-transformer.opbase_source]
repo = "opbase"
pin_file = "cmake/third_party/opbase.cmake"
pin_regex = 'set\\(OPBASE_TAG_ID\\s+([0-9a-f]{40})\\)'
dest = "third_party/opbase"
"""
    recipe = load_recipe(
        recipe_file(
            tmp_path,
            PIN.format(pins=legacy + ENTRY.format(dest="third_party/ops-tensor", extra=OWN)),
        )
    )
    pins = recipe.repo("ops-transformer").pins
    assert [(p.dest, p.source, p.pin) for p in pins] == [
        ("third_party/opbase", "opbase", "commit"),
        ("third_party/ops-tensor", "ops-tensor", "commit"),
    ]
    assert recipe.repo("ops-transformer").pins[0] == pins[0]
