"""Archive discovery in the 9.1 layout: `add_cann_third_party` names in the checkout, each
module read from the shared cann/cmake repository at the commit the checkout pins.

The git-backed cases use real local repositories made by tests/cann91tree.py; the parse
cases use CMake text in the same shapes.
"""

from pathlib import Path

import pytest

from cannbuild.recipes import ArchiveRule, RepoSpec
from cannbuild.sources.archives import Declared, plan_archives
from cannbuild.sources.canncmake import (
    archive_stem,
    called_modules,
    cann_cmake_archives,
    local_places,
    uses_cann_cmake,
    wrappers,
)
from cannbuild.sources.fetch import Fetcher

import cann91tree as t

pytestmark = pytest.mark.xdist_group("cann91-cmake")  # one xdist worker makes the module's fixture


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> t.Tree:
    return t.build(tmp_path_factory.mktemp("cann91"))


def bare(tree: t.Tree, name: str) -> Path:
    return tree.root / "gitcode" / "cann" / f"{name}.git"


def discovered(tree: t.Tree, memo=None, repo="ops-transformer", commit=None):
    return cann_cmake_archives(
        Fetcher(),
        bare(tree, repo),
        commit or tree.transformer,
        bare(tree, "cmake"),
        tree.cmake_tagged,
        f"cann-cmake@{tree.cmake_tagged[:12]}",
        memo,
    )


def test_a_9_1_checkout_downloads_what_its_add_cann_third_party_modules_declare(tree):
    found, notes, unused = discovered(tree)
    assert notes == ()
    by_module = {d.module: d for d in found}
    # json, eigen, protobuf asked for directly; abseil-cpp through protobuf.cmake's include;
    # makeself-fetch through set_cann_cpack_config; grpc is only commented out; gtest, asked for
    # inside if(ENABLE_TEST) and by cmake/ut.cmake, downloads only for a target that links it,
    # and only the unit tests do
    assert sorted(by_module) == [
        "abseil-cpp",
        "eigen",
        "json",
        "makeself-fetch",
        "protobuf",
    ]
    assert unused == (
        f"gtest: cann-cmake@{tree.cmake_tagged[:12]}:third_party/gtest.cmake downloads only for "
        "a target that needs it (EXCLUDE_FROM_ALL), and nothing a package build runs names one "
        "(GTest::gtest, third_party_gtest); asked for at CMakeLists.txt:8, cmake/ut.cmake:2",
    )
    json = by_module["json"]
    # read at the tag's commit: the newer json 3.12 on the branch is not what the pin names
    assert json.url == t.JSON_URL and json.name == "json-3.11.3"
    assert json.sha256 == tree.sha256[t.JSON_URL]
    # the folder it looks in with find_path before it unpacks there, then the two archives
    assert json.places == (
        "third_party/json/",
        "third_party/json-3.11.3.tar.gz",
        "third_party/json/json-3.11.3.tar.gz",
    )
    assert json.where == f"cann-cmake@{tree.cmake_tagged[:12]}:third_party/json.cmake:10"
    assert json.source.startswith("add_cann_third_party(json) at CMakeLists.txt:6;")
    eigen = by_module["eigen"]
    assert (eigen.name, eigen.sha256) == ("eigen-5.0.0", None)
    assert eigen.places == (
        "third_party/eigen-5.0.0.tar.gz",
        "third_party/eigen-5.0.0/",
        "third_party/eigen/",
    )
    assert by_module["abseil-cpp"].places == (
        "third_party/lib_cache/abseil-cpp/",  # find_path there before it unpacks there
        "third_party/abseil-cpp/abseil-cpp-20230802.1.tar.gz",
        "third_party/abseil-cpp-20230802.1.tar.gz",
    )
    # PROTOBUF_PATH is set three times; `if(NOT EXISTS ${PROTOBUF_PATH})` checks each
    assert by_module["protobuf"].places == (
        "third_party/protobuf-all-25.1.tar.gz",
        "third_party/protobuf-25.1.tar.gz",
        "third_party/protobuf/protobuf-25.1.tar.gz",
    )
    assert by_module["protobuf"].where.endswith("third_party/protobuf.cmake:12")
    makeself = by_module["makeself-fetch"]
    assert makeself.name == "makeself-release-2.5.0-patch1"
    assert makeself.sha256 == tree.sha256[t.MAKESELF_URL]
    # the unpacked folder counts because the module unpacks there (SOURCE_DIR) and checks it
    assert makeself.places == (
        "third_party/makeself-release-2.5.0-patch1.tar.gz",
        "third_party/makeself/",
    )
    assert "cmake/package.cmake:1 (set_cann_cpack_config, function/prepare.cmake:11)" in (
        makeself.source
    )


def test_a_checkout_without_fetch_cann_cmake_is_not_read_this_way(tree):
    cmake = bare(tree, "cmake")
    assert uses_cann_cmake(Fetcher(), bare(tree, "ops-transformer"), tree.transformer)
    assert not uses_cann_cmake(Fetcher(), cmake, tree.cmake_tagged)


def test_a_module_the_pinned_cmake_lacks_is_a_note_not_a_guess(tree, tmp_path):
    work = tmp_path / "ot"
    commit = t.commit_files(
        work,
        {
            "cmake/fetch_cann_cmake.cmake": t.fetch_cann_cmake("master-026"),
            "CMakeLists.txt": "add_cann_third_party(json)\nadd_cann_third_party(zstd)\n",
        },
        "x",
    )
    found, notes, _ = cann_cmake_archives(
        Fetcher(), work, commit, bare(tree, "cmake"), tree.cmake_tagged, "cc", None
    )
    assert [d.module for d in found] == ["json"]
    assert notes == ("CMakeLists.txt:2 asks for zstd, but cc has no third_party/zstd.cmake",)


def test_what_git_gave_is_remembered_per_commit_pair(tree, tmp_path):
    memo = tmp_path / "memo"
    first = discovered(tree, memo)
    assert len(list(memo.iterdir())) == 1
    # a rerun reads the memo: with the repositories gone it still answers the same
    moved = tree.root.parent / (tree.root.name + "-moved")
    tree.root.rename(moved)
    try:
        assert discovered(tree, memo) == first
    finally:
        moved.rename(tree.root)


@pytest.mark.parametrize(
    ("url", "stem"),
    [
        (t.EIGEN_URL, "eigen-5.0.0"),
        (t.MAKESELF_URL, "makeself-release-2.5.0-patch1"),
        (t.JSON_URL, "json-3.11.3"),
        ("https://x/y/include.zip", "include"),
    ],
)
def test_an_archive_keeps_its_file_stem_as_name_whichever_host_serves_it(url, stem):
    assert archive_stem(url) == stem


PLACES = {
    "a-file-it-takes": (
        'if(EXISTS "${CANN_3RD_LIB_PATH}/x-1.tar.gz")\n',
        ["x-1.tar.gz"],
    ),
    "a-folder": ('elseif(IS_DIRECTORY "${CANN_3RD_LIB_PATH}/x")\n', ["x/"]),
    "a-variable-set-in-the-module": (
        "set(PKG x-1.tar.gz)\nif(EXISTS ${CANN_3RD_LIB_PATH}/sub/${PKG})\n",
        ["sub/x-1.tar.gz"],
    ),
    "outside-3rd": ('if(EXISTS "${PROJECT_SOURCE_DIR}/../x-1.tar.gz")\n', []),
    "dot-dot": ('if(EXISTS "${CANN_3RD_LIB_PATH}/../llt/x-1.tar.gz")\n', []),
    "unknown-variable": ('if(EXISTS "${CANN_3RD_LIB_PATH}/${ELSEWHERE}")\n', []),
    "a-file-not-in-its-source-dir": ('if(NOT EXISTS "${CANN_3RD_LIB_PATH}/lib/x.h")\n', []),
    "not-a-condition": ('message("${CANN_3RD_LIB_PATH}/x-1.tar.gz EXISTS")\n', []),
}


@pytest.mark.parametrize("case", sorted(PLACES))
def test_local_places_are_the_copies_the_module_checks_for(case):
    text, places = PLACES[case]
    assert [p for p, _ in local_places(text)] == places


def test_functions_of_the_cmake_repo_that_ask_for_a_module_are_followed():
    wrapped = wrappers({"function/prepare.cmake": t.PREPARE})
    # the commented-out call inside the function does not count, nor the macro itself
    assert wrapped == {"set_cann_cpack_config": [("makeself-fetch", "function/prepare.cmake:11")]}
    lines = [
        ("CMakeLists.txt", 3, "add_cann_third_party(json)"),
        ("CMakeLists.txt", 4, "# add_cann_third_party(grpc)"),
        ("cmake/package.cmake", 9, "set_cann_cpack_config(ops COMPUTE_UNIT x)"),
        ("cmake/x.cmake", 2, "my_set_cann_cpack_config(y)"),
    ]
    assert called_modules(lines, wrapped) == {
        "json": [("CMakeLists.txt", 3, "CMakeLists.txt:3")],
        "makeself-fetch": [
            (
                "cmake/package.cmake",
                9,
                "cmake/package.cmake:9 (set_cann_cpack_config, function/prepare.cmake:11)",
            )
        ],
    }


REPO = RepoSpec(
    name="ops-transformer",
    url="u",
    tag="v9.1.0",
    third_party=(
        ArchiveRule(name="gtest", place=(), source="tests only", needed=False),
        ArchiveRule(name="makeself-fetch", place=("third_party/makeself/",), source="recipe"),
    ),
)


def declared(module: str, url: str, places=()) -> Declared:
    return Declared(
        name=archive_stem(url), url=url, where="w", module=module, places=places, source="s"
    )


def test_an_archive_no_rule_covers_goes_where_its_module_takes_a_copy():
    found = [
        declared("json", t.JSON_URL, ("third_party/json/", "third_party/json-3.11.3.tar.gz")),
        declared("eigen", t.EIGEN_URL, ("third_party/eigen/",)),
        declared("gtest", t.GTEST_URL, ("third_party/googletest-1.14.0.tar.gz",)),
        declared("makeself-fetch", t.MAKESELF_URL, ("third_party/x.tar.gz",)),
        declared("zlib", "https://x/zlib-1.tar.gz"),
    ]
    plan = plan_archives(Path("r.toml"), REPO, "c" * 40, found)
    placed = {n.name: (n.place, n.from_cmake) for n in plan.placed}
    assert placed == {
        # a rule, matched by the module's name, wins (and names it); the cmake's own place
        # needs no rule
        "makeself-fetch": ("third_party/makeself/", False),
        # a place named as the archive's file first (a copy), else a folder (unpacked)
        "json-3.11.3": ("third_party/json-3.11.3.tar.gz", True),
        "eigen-5.0.0": ("third_party/eigen/", True),
    }
    # gtest: needed = false; zlib: no place the module takes a copy at, so named, not fetched
    assert [d.name for d in plan.unknown] == ["zlib-1"]
