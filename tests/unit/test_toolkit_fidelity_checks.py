"""Checks that tell a toolkit that has a header from one that has what the sources use:
the host-source compile (build/derived_compile.py), the sandbox's named walls
(host/contents.py), the stand-in archives accepted by name (sources/archives.py), the
local copies a cann/cmake module takes (sources/canncmake.py) and the repos a host fetches
(recipes/selection.py).  Small real-shaped trees: an operator folder as
cannmirror/ops-transformer@v9.0.0 attention/flash_attention_score/op_host, a module as
hicann/cmake@master-026 third_party/json.cmake:26-58.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cannbuild.build.derived_cmake import scan_cmake
from cannbuild.build.derived_compile import CompileTarget, compile_row
from cannbuild.errors import FetchError
from cannbuild.host.check import FAIL, PASS
from cannbuild.host.contents import wall_of, wall_rows
from cannbuild.recipes import load_recipe
from cannbuild.recipes.model import ToolkitFile
from cannbuild.recipes.selection import for_host
from cannbuild.sandbox.toolkit_files import wall_script, walls
from cannbuild.sources.archives import Needed, accept_stand_in
from cannbuild.sources.canncmake import local_places

ROOT = Path(__file__).resolve().parents[2]
CXX = shutil.which("c++") or shutil.which("g++")

REGISTRY = "namespace ops { class OpDef { public: explicit OpDef(const char *) {} }; }\n"
DEF_CPP = '#include "register/op_def_registry.h"\nclass MyOp : public ops::OpDef {\n' + (
    ' public: MyOp() : ops::OpDef("MyOp") {} };\n'
)


def target(tmp_path: Path) -> CompileTarget:
    checkout = tmp_path / "repo"
    (checkout / "math/my_op/op_host").mkdir(parents=True)
    (checkout / "math/my_op/op_host/my_op_def.cpp").write_text(DEF_CPP)
    cmake = scan_cmake(
        {
            "CMakeLists.txt": "add_library(x OBJECT)\n"
            "target_include_directories(x PRIVATE ${ASCEND_CANN_PACKAGE_PATH}/include)\n"
        }
    )
    return CompileTarget(
        step="ops-math-build",
        commit="c" * 40,
        ops=("my_op",),
        checkout=checkout,
        opbase=None,
        cmake=cmake,
    )


def toolkit(tmp_path: Path, text: str) -> Path:
    home = tmp_path / "tk"
    header = home / "include/register/op_def_registry.h"
    header.parent.mkdir(parents=True, exist_ok=True)
    header.write_text(text)
    return home


@pytest.mark.skipif(CXX is None, reason="no C++ compiler on this machine")
def test_a_stub_header_fails_the_host_compile_the_real_one_passes_and_the_memo_sees_a_change(
    tmp_path,
):
    t = target(tmp_path)
    memo = tmp_path / "memo"
    memo.mkdir()
    home = toolkit(tmp_path, REGISTRY)
    row = compile_row(t, home, "x86_64", memo, CXX)
    assert row.status == PASS and "1 host sources of my_op" in row.detail, row.detail
    again = compile_row(t, home, "x86_64", memo, CXX)
    assert "memo" in again.detail  # nothing the compile read changed: not compiled again
    # the header is there, but a stub: presence passes, the compile names the real error
    toolkit(tmp_path, "/* cannbuild sandbox stub of register/op_def_registry.h */\n")
    stub = compile_row(t, home, "x86_64", memo, CXX)
    assert stub.status == FAIL and stub.blocking
    assert "my_op_def.cpp" in stub.detail and "error:" in stub.detail, stub.detail


def wall_toolkit(tmp_path: Path) -> Path:
    home = tmp_path / "tk"
    for wall in walls():
        path = home / wall.path.format(arch="x86_64")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(wall_script(wall, "x86_64"))
    (home / "tools/real_tool").write_text("#!/bin/sh\necho a real program\n")
    return home


def test_a_wall_is_named_where_the_checkout_runs_it_and_only_there(tmp_path):
    home = wall_toolkit(tmp_path)
    assert wall_of(home / "tools/opbuild/op_build")[0] == "op_build"
    assert wall_of(home / "tools/real_tool") is None
    files = [
        ToolkitFile(
            component="gen_esb",
            package="ge-compiler",
            step="ops-nn-build",
            paths=("{{ arch }}-linux/bin/gen_esb",),
            source="cmake/symbol.cmake:98",
            reason="r",
            used_by="add_es_library",
        ),
        ToolkitFile(
            component="opbuild",
            package="asc-devkit",
            step="ops-nn-build",
            paths=("tools/opbuild/op_build",),
            source="cmake/variables.cmake:109",
            reason="r",
        ),
    ]
    # in the order a build meets them, failing but not blocking: the build runs up to it
    rows = wall_rows(files, ["ops-nn-build"], home, "x86_64", lambda f: True)
    assert [r.id for r in rows] == ["recipe.wall.gen_esb", "recipe.wall.op_build"]
    assert all(r.status == FAIL and not r.blocking for r in rows)
    assert "cmake/symbol.cmake:98" in rows[0].detail
    # a stand-in checkout runs neither: no row
    assert wall_rows(files, ["ops-nn-build"], home, "x86_64", lambda f: False) == []
    assert files[0].used_by_word == "add_es_library" and files[1].used_by_word == "op_build"


def needed(places):
    return Needed(
        name="makeself",
        url="https://gitcode.com/cann-src-third-party/makeself/releases/download/x/m.tar.gz",
        place=places[0],
        places=tuple(places),
        source="cmake/third_party/makeself-fetch.cmake:14-36",
        where="cmake/third_party/makeself-fetch.cmake:15",
        sha256="b" * 64,
    )


def test_an_accepted_stand_in_goes_unpacked_where_no_hash_is_checked_and_says_why():
    item = needed(["third_party/pkg/m.tar.gz", "third_party/makeself/"])
    placed, why = accept_stand_in(item, "ops-transformer", "f" * 64)
    assert placed.place == "third_party/makeself/"
    assert "--accept-stand-in" in why and "b" * 64 in why and "makeself-fetch.cmake:15" in why
    # a ref that checks the hash of every copy it takes cannot take a stand-in
    with pytest.raises(FetchError) as err:
        accept_stand_in(needed(["third_party/pkg/m.tar.gz"]), "ops-transformer", "f" * 64)
    assert "no stand-in can be accepted" in str(err.value)


def test_a_module_that_looks_in_its_unpack_folder_first_takes_an_unpacked_copy():
    text = """set(JSON_SOURCE_PATH ${CANN_3RD_LIB_PATH}/json)
find_path(JSON_SOURCE
    NAMES nlohmann/json.hpp
    PATHS ${JSON_SOURCE_PATH}/include
    NO_DEFAULT_PATH
)
if(NOT json_FOUND)
    if(EXISTS "${CANN_3RD_LIB_PATH}/json-3.11.3.tar.gz")
        set(REQ_URL ${CANN_3RD_LIB_PATH}/json-3.11.3.tar.gz)
    endif()
    ExternalProject_Add(third_party_json URL ${REQ_URL} SOURCE_DIR ${JSON_SOURCE_PATH})
endif()
"""
    assert local_places(text) == [("json/", 2), ("json-3.11.3.tar.gz", 8)]


def test_a_real_host_never_fetches_the_repos_that_only_make_the_toolkit_host_side():
    recipe = load_recipe(ROOT / "recipes" / "9.0.toml")
    toolkit_only = {"ge", "metadef", "runtime", "asc-devkit", "libboundscheck"}
    assert toolkit_only <= {r.name for r in recipe.repos if r.toolkit}
    real = {r.name for r in for_host(recipe, sandbox=False).repos}
    assert not real & toolkit_only
    # opbase is both: its package is the toolkit's, and ops-transformer pins it as source
    assert "opbase" in real and recipe.repo("opbase").toolkit
    assert {r.name for r in for_host(recipe, sandbox=True).repos} >= toolkit_only
