"""`recipe draft` of a checkout whose archives come from its own cmake/third_party/*.cmake
(train/thirdparty.py module_rules), drafted from a base recipe with no rule for them.

The tree is in the shape of cannmirror/ops-transformer@9.1.0-beta.2 (the manifest's
v9.1.0-beta.2 names that branch; drafted from 9.1.toml, whose rules are of the cann/cmake
layout): CMakeLists.txt:128-152 includes json.cmake always and gtest.cmake only
`if (ENABLE_TEST)`, and nothing includes cmake/third_party/secure_c.cmake.
"""

from __future__ import annotations

from pathlib import Path

from cannbuild.host.socs import family_soc
from cannbuild.recipes import load_recipe
from cannbuild.resources import data_dir
from cannbuild.sources.fetch import Fetcher
from cannbuild.train.readout import Readout, read_repo
from cannbuild.train.thirdparty import module_rules
from cannbuild.workspace import Workspace

from cann91tree import commit_files

JSON = "https://gitcode.com/cann-src-third-party/json/releases/download/v3.11.3/include.zip"
GTEST = (
    "https://gitcode.com/cann-src-third-party/googletest/releases/download/v1.14.0/"
    "googletest-1.14.0.tar.gz"
)
MAKESELF = (
    "https://gitcode.com/cann-src-third-party/makeself/releases/download/release-2.5.0-patch1.0/"
    "makeself-release-2.5.0-patch1.tar.gz"
)
SECUREC = "https://gitee.com/openeuler/libboundscheck/repository/archive/v1.1.16.tar.gz"
TREE = {
    "CMakeLists.txt": (
        "include(cmake/third_party/json.cmake)\n"
        "include(cmake/third_party/makeself-fetch.cmake)\n"
        "if (ENABLE_TEST)\n"
        "    include(${PROJECT_SOURCE_DIR}/cmake/third_party/gtest.cmake)\n"
        "endif()\n"
    ),
    "cmake/third_party/json.cmake": f'set(REQ_URL "{JSON}")\nExternalProject_Add(json URL ${{REQ_URL}})\n',
    "cmake/third_party/gtest.cmake": f'set(REQ_URL "{GTEST}")\nExternalProject_Add(gtest URL ${{REQ_URL}})\n',
    "cmake/third_party/makeself-fetch.cmake": f"FetchContent_Declare(makeself URL {MAKESELF})\n",
    "cmake/third_party/secure_c.cmake": f"ExternalProject_Add(secure_c\n  URL {SECUREC}\n)\n",
}


def test_a_module_only_test_builds_include_or_none_includes_asks_for_no_rule(tmp_path: Path):
    work = tmp_path / "ops-transformer"
    commit = commit_files(work, TREE, "9.1.0-beta.2 layout")
    readout = Readout(repo="ops-transformer", commit=commit, spec=None)
    ws = Workspace(root=tmp_path / "ws")
    rules = module_rules(Fetcher(), ws, readout, work, None)
    undecided = "\n".join(rules.undecided)
    assert "(json), which no rule places" in undecided
    assert "googletest" not in undecided and "libboundscheck" not in undecided
    read = "\n".join(rules.read)
    assert (
        "not downloaded by a package build: googletest: cmake/third_party/gtest.cmake is "
        "included only at CMakeLists.txt:4, which a package build does not run"
    ) in read
    assert "libboundscheck: cmake/third_party/secure_c.cmake is included nowhere" in read


def test_a_base_rule_named_after_a_cann_cmake_module_is_not_said_to_be_undownloaded(
    tmp_path: Path,
):
    """9.1.toml's ops-transformer rule is `makeself-fetch`, a cann/cmake module; at
    9.1.0-beta.2 the checkout's own makeself-fetch.cmake downloads makeself."""
    work = tmp_path / "ops-transformer"
    commit = commit_files(work, TREE, "9.1.0-beta.2 layout")
    readout = Readout(repo="ops-transformer", commit=commit, spec=None)
    base = load_recipe(data_dir("recipes") / "9.1.toml").repo("ops-transformer")
    rules = module_rules(Fetcher(), Workspace(root=tmp_path / "ws"), readout, work, base)
    undecided = "\n".join(rules.undecided)
    assert "does not download it" not in undecided
    assert (
        f"'makeself-fetch' of the base recipe was dropped: ops-transformer at {commit[:12]} "
        "has no cann/cmake module makeself-fetch; its own "
        "cmake/third_party/makeself-fetch.cmake:1 downloads makeself"
    ) in undecided
    assert "(makeself), which no rule places" in undecided


def test_the_socs_of_build_sh_are_read_from_an_array_on_two_lines(tmp_path: Path):
    """hicann/ops-cv@9.1.0:build.sh:15-16 spreads SUPPORT_COMPUTE_UNIT_SHORT over two lines:
    `recipe draft --ref 9.1.0 --repos ops-cv` said "no SUPPORT_COMPUTE_UNIT_SHORT read" and
    kept the base recipe's SoCs.  v8.5.0's own spelling of the 950 is ascend910_95
    (cannmirror/ops-transformer@v8.5.0:build.sh:44), the ascend950 family."""
    script = (
        "#!/bin/bash\n"
        'UT_TARGETS=("ophost_test")\n'
        'SUPPORT_COMPUTE_UNIT_SHORT=("ascend031" "ascend310p"\n'
        '                            "ascend910_93" "ascend950" "ascend910b" "kirinx90")\n'
        'SUPPORT_COMPUTE_UNIT_SHORT_PRINT=("ascend910b")\n'
    )
    work = tmp_path / "ops-cv"
    commit = commit_files(work, {"build.sh": script}, "ops-cv layout")
    readout = read_repo(Fetcher(), work, "ops-cv", commit, {})
    assert readout.socs == (
        "ascend031",
        "ascend310p",
        "ascend910_93",
        "ascend950",
        "ascend910b",
        "kirinx90",
    )
    assert readout.socs_line == 3
    assert [family_soc(s) for s in ("ascend910_95", "ascend910b", "kirinx90")] == [
        "ascend950",
        "ascend910b",
        "kirinx90",
    ]


def test_a_draft_whose_checkouts_pin_no_opbase_takes_it_from_the_toolkit(tmp_path: Path):
    """`recipe draft --ref v8.5.0 --from 9.0 --repos ops-math,ops-nn,ops-cv`: at v8.5.0 no
    sibling has cmake/third_party/opbase.cmake (their FindOPBASE reads the toolkit's pkg_inc),
    so no pin is read; the draft kept 9.0's `opbase = "source"` without a word.  It says
    "toolkit" and that the base's steps need changing (a draft whose checkouts pin opbase
    says "source": tests/integration/test_recipe_draft.py)."""
    from cannbuild.train.draft import _head

    base = load_recipe(data_dir("recipes") / "9.0.toml")
    read: list = []
    undecided: list = []
    head = _head(base, "8.5", "8.5.0", [], {}, read, undecided)
    assert head["opbase"] == "toolkit"
    assert any(
        u.startswith("opbase = 'toolkit', 9.0.toml says 'source'") and "overlay, install" in u
        for u in undecided
    ), undecided
    undecided.clear()
    head = _head(
        load_recipe(data_dir("recipes") / "8.5.toml"), "8.5", "8.5.0", [], {}, [], undecided
    )
    assert head["opbase"] == "toolkit" and not any(u.startswith("opbase =") for u in undecided)
