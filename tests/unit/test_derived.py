"""What a checkout needs of the toolkit, derived by reading it (build/derived*.py).

The trees below are small and real-shaped: the find_package calls, module lookups and
include folders of cannmirror/ops-transformer@v9.0.0 (cmake/dependencies.cmake:56-64,
cmake/modules/Finddlog.cmake:47-66, Findsecurec.cmake:16-60, Findmetadef.cmake:17-40,
cmake/obj_func.cmake:287-310, cmake/variables.cmake:107-125, FindOPBASE.cmake:17-48) and
the includes of its flash_attention_score host code (op_host/flash_attention_score_def.cpp:16,
op_host/flash_attention_score_tiling_common.h:19), cut down to what each test reads.
"""

import json
from pathlib import Path

import pytest

from cannbuild.bounded import StateIgnored
from cannbuild.build.derived import (
    SCANNER,
    StepNeeds,
    derive,
    derived_checks,
    memo_path,
)
from cannbuild.build.derived_cmake import scan_cmake
from cannbuild.build.derived_includes import scan_includes
from cannbuild.build.toolkit_packages import shipper_of

from hosttree import files

COMMIT = "a" * 40
OPBASE_COMMIT = "b" * 40

CMAKE = {
    "CMakeLists.txt": """
if(UNIX)
  set(SYSTEM_PREFIX ${CMAKE_SYSTEM_PROCESSOR}-linux)
endif()
set(OPS_TRANSFORMER_DIR ${CMAKE_CURRENT_SOURCE_DIR})
include(cmake/dependencies.cmake)
add_library(x_obj OBJECT)
target_include_directories(x_obj PRIVATE ${OPAPI_INCLUDE}
    $<BUILD_INTERFACE:${ASCEND_CANN_PACKAGE_PATH}/include>
    $<$<BOOL:${BUILD_OPEN_PROJECT}>:$<BUILD_INTERFACE:${ASCEND_CANN_PACKAGE_PATH}/${SYSTEM_PREFIX}/pkg_inc>>
    $<INSTALL_INTERFACE:include/never>
    ${TOP_DIR}/metadef/inc/external  # compile with ci: no such root here
)
target_link_libraries(x_obj PRIVATE $<BUILD_INTERFACE:dlog_headers> c_sec)
""",
    "cmake/dependencies.cmake": """
set(CMAKE_PREFIX_PATH ${ASCEND_DIR}/)
find_package(dlog MODULE REQUIRED)
find_package(securec MODULE)
find_package(OPBASE MODULE REQUIRED)
find_package(Python3 COMPONENTS Interpreter)  # CMake's own module: not the toolkit's
""",
    "cmake/variables.cmake": """
set(OPAPI_INCLUDE
  ${C_SEC_INCLUDE}
  ${OPBASE_INC_DIRS}
  ${OPS_TRANSFORMER_DIR}/common/include
  ${OPS_TRANSFORMER_DIR}/tests/ut/framework_normal/op_api/stub
)
""",
    "cmake/modules/Finddlog.cmake": """
set(DLOG_HEAD_SEARCH_PATHS
  ${ASCEND_DIR}/${SYSTEM_PREFIX}/include/toolchain
  ${ASCEND_DIR}/pkg_inc/base         # new slog directory structure
  ${TOP_DIR}/abl/slog/inc/toolchain  # compile with ci
)
find_path(dlog_TRANSFORMER_INCLUDE_DIR
  NAMES dlog_pub.h
  NO_CMAKE_SYSTEM_PATH
  PATHS ${DLOG_HEAD_SEARCH_PATHS})
find_library(dlog_SHARED_LIBRARY NAMES libascendalog.so PATH_SUFFIXES lib64 NO_CMAKE_SYSTEM_PATH)
find_package_handle_standard_args(dlog FOUND_VAR dlog_FOUND REQUIRED_VARS dlog_TRANSFORMER_INCLUDE_DIR)
if(dlog_FOUND)
  add_library(dlog SHARED IMPORTED)
  set_target_properties(dlog PROPERTIES IMPORTED_LOCATION "${dlog_SHARED_LIBRARY}")
  add_library(dlog_headers INTERFACE IMPORTED)
  set_target_properties(dlog_headers PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${dlog_TRANSFORMER_INCLUDE_DIR};${dlog_TRANSFORMER_INCLUDE_DIR}/..")
endif()
""",
    "cmake/modules/Findsecurec.cmake": """
set(C_SEC_HEAD_SEARCH_PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX}/include)
set(C_SEC_LIB_SEARCH_PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX})
find_path(C_SEC_INCLUDE NAMES securec.h PATHS ${C_SEC_HEAD_SEARCH_PATHS})
if(WIN32)
  find_file(C_SEC_SHARED_DLL NAMES libc_sec.dll PATH_SUFFIXES lib)
else()
  find_library(C_SEC_SHARED_LIBRARY NAMES libc_sec.so PATHS ${C_SEC_LIB_SEARCH_PATHS} PATH_SUFFIXES lib64)
endif()
find_package_handle_standard_args(securec FOUND_VAR securec_FOUND REQUIRED_VARS C_SEC_INCLUDE C_SEC_SHARED_LIBRARY)
add_library(c_sec SHARED IMPORTED)
set_target_properties(c_sec PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${C_SEC_INCLUDE}"
  IMPORTED_LOCATION       "${C_SEC_SHARED_LIBRARY}"
)
""",
    "cmake/modules/FindOPBASE.cmake": """
set(OPBASE_HEAD_SEARCH_PATHS ${OPBASE_SOURCE_PATH}/pkg_inc ${TOP_DIR}/ops-base/pkg_inc)
find_path(OPBASE_INC_DIR NAMES op_common/op_host/util/opbase_export.h PATHS ${OPBASE_HEAD_SEARCH_PATHS}
  NO_CMAKE_SYSTEM_PATH)
find_package_handle_standard_args(OPBASE REQUIRED_VARS OPBASE_INC_DIR)
get_filename_component(OPBASE_INC_DIR ${OPBASE_INC_DIR} REALPATH)
set(OPBASE_INC_DIRS ${OPBASE_INC_DIR} ${OPBASE_INC_DIR}/op_common)
""",
    "cmake/ut.cmake": "target_include_directories(ut PRIVATE ${ASCEND_DIR}/include/only_ut)\n",
    "common/CMakeLists.txt": 'file(GLOB CPP_SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp")\n',
}

SOURCES = {
    "attention/fa/op_host/fa_def.cpp": '#include "register/op_def_registry.h"\n#include <vector>\n',
    "attention/fa/op_host/fa_tiling.cpp": '#include "fa_tiling.h"\n#include "log/log.h"\n',
    "attention/fa/op_host/fa_tiling.h": (
        '#pragma once\n#include <cstdint>\n#include "tiling_base/tiling_base.h"\n'
        '#include "tiling/platform/platform_ascendc.h"\n'
    ),
    "attention/fa/op_api/aclnn_fa.cpp": '#include "opdev/op_errno.h"\n#include "nlohmann/json.hpp"\n',
    "attention/fa/op_kernel/fa.cpp": '#include "kernel_operator.h"\n',  # device side: not read
    "attention/fa/tests/ut/test_fa.cpp": '#include "graph/never.h"\n',  # a test: not read
    "common/include/tiling_base/tiling_base.h": '#include "exe_graph/runtime/tiling_context.h"\n',
    "common/src/tiling_util.cpp": '#include "platform/soc_spec.h"\n',
    "attention/other/op_host/other.cpp": '#include "register/other_only.h"\n',  # not selected
}

OPBASE = {
    "pkg_inc/op_common/op_host/util/opbase_export.h": "",
    "pkg_inc/op_common/log/log.h": '#include "securec.h"\n#include "dlog_pub.h"\n',
}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    repo = files(tmp_path / "ot", {**CMAKE, **SOURCES})
    files(repo / "third_party/opbase", OPBASE)
    return repo


def test_the_modules_configure_runs_give_their_lookups_and_what_stops_without_them():
    facts = scan_cmake(CMAKE)
    modules = {m.name: m for m in facts.modules}
    assert set(modules) == {"dlog", "securec", "OPBASE"}  # Python3 is CMake's own
    assert modules["dlog"].required and not modules["securec"].required
    assert modules["dlog"].source == "cmake/dependencies.cmake:3"
    dlog = {lk.var: lk for lk in modules["dlog"].lookups}
    header = dlog["dlog_TRANSFORMER_INCLUDE_DIR"]
    # CMAKE_PREFIX_PATH's include first, then PATHS; the "compile with ci" path has no root here
    assert header.dirs == ("include", "{arch}-linux/include/toolchain", "pkg_inc/base")
    assert header.blocking.startswith("configure stops") and header.names == ("dlog_pub.h",)
    # the library makes imported target dlog, which nothing links: the build goes on without it
    assert dlog["dlog_SHARED_LIBRARY"].blocking == ""
    assert "lib64" in dlog["dlog_SHARED_LIBRARY"].dirs
    securec = {lk.var: lk for lk in modules["securec"].lookups}
    assert "C_SEC_SHARED_DLL" not in securec  # if(WIN32) only
    assert securec["C_SEC_SHARED_LIBRARY"].blocking.startswith(
        "the link of what uses imported target c_sec"
    )
    # CMAKE_PREFIX_PATH's lib and lib64 first, then PATHS with each PATH_SUFFIXES
    assert securec["C_SEC_SHARED_LIBRARY"].dirs[-2:] == ("{arch}-linux/lib64", "{arch}-linux")
    assert securec["C_SEC_INCLUDE"].blocking == ""  # securec is not REQUIRED
    opbase = modules["OPBASE"].lookups[0]
    assert opbase.opbase_dirs == ("pkg_inc",) and opbase.dirs == ("include",)


def test_include_folders_follow_variables_lists_and_generator_expressions():
    facts = scan_cmake(CMAKE)
    assert "include" in facts.toolkit_dirs
    assert "{arch}-linux/pkg_inc" in facts.toolkit_dirs  # $<$<BOOL:..>:$<BUILD_INTERFACE:..>>
    assert "{arch}-linux/include" in facts.toolkit_dirs  # ${C_SEC_INCLUDE}
    # dlog_headers' "${DIR};${DIR}/..": both items, normalised
    assert {"{arch}-linux/include/toolchain", "pkg_inc/base", "pkg_inc"} <= set(facts.toolkit_dirs)
    assert not any("never" in d or "only_ut" in d for d in facts.toolkit_dirs)
    assert facts.opbase_dirs == ("pkg_inc", "pkg_inc/op_common")
    assert "common/include" in facts.repo_dirs
    assert not any(d.startswith("tests/") for d in facts.repo_dirs)
    assert facts.repo_sources == ("common/src/*.cpp",)
    assert facts.files == 7  # ut.cmake is a test build's


def test_the_host_code_of_the_selected_ops_names_the_toolkit_headers_it_includes(checkout):
    facts = scan_cmake(CMAKE)
    scan = scan_includes(
        repo=checkout,
        repo_dirs=facts.repo_dirs,
        ops=["fa", "nope"],
        repo_sources=facts.repo_sources,
        opbase=checkout / "third_party/opbase",
        opbase_dirs=facts.opbase_dirs,
    )
    needs = {h.header: h for h in scan.headers}
    assert set(needs) == {
        "register/op_def_registry.h",  # op_host
        "tiling/platform/platform_ascendc.h",  # through the op's own header
        "exe_graph/runtime/tiling_context.h",  # through common/include (a repo include folder)
        "opdev/op_errno.h",  # op_api
        "platform/soc_spec.h",  # the common code (common/CMakeLists.txt's glob)
        "securec.h",  # through opbase's log/log.h (the opbase include folders)
        "dlog_pub.h",
    }
    assert needs["register/op_def_registry.h"].package == "metadef"
    assert needs["register/op_def_registry.h"].sources == ("attention/fa/op_host/fa_def.cpp:1",)
    assert needs["exe_graph/runtime/tiling_context.h"].sources == (
        "common/include/tiling_base/tiling_base.h:1",
    )
    assert needs["securec.h"].sources == ("opbase:pkg_inc/op_common/log/log.h:1",)
    assert needs["securec.h"].package.startswith("libboundscheck")
    # <vector>, <cstdint>, nlohmann/json.hpp: no toolkit package, counted only
    assert scan.unclassified == 3
    # op_kernel, tests and the op not selected are not read
    assert scan.files == 7


def test_an_include_the_checkout_provides_on_its_include_path_is_no_toolkit_need(checkout):
    files(checkout, {"common/include/register/op_def_registry.h": "/* the repo's own */\n"})
    facts = scan_cmake(CMAKE)
    scan = scan_includes(repo=checkout, repo_dirs=facts.repo_dirs, ops=["fa"])
    assert "register/op_def_registry.h" not in {h.header for h in scan.headers}


def test_the_package_table_takes_the_specific_prefix_first():
    assert shipper_of("base/alog_pub.h").package == "runtime (dlog)"
    assert shipper_of("base/err_msg.h").package == "metadef"
    assert shipper_of("securec.h").package.startswith("libboundscheck")
    assert shipper_of("securecX.h") is None and shipper_of("vector") is None


def toolkit(root: Path, arch: str = "x86_64") -> Path:
    texts = {
        "include/dlog_pub.h": "",
        "x86_64-linux/include/toolchain/dlog_pub.h": "",
        "x86_64-linux/lib64/libc_sec.so": "",
        "lib64/libascendalog.so": "",
        "x86_64-linux/include/securec.h": "",
        "include/register/op_def_registry.h": "",
        "include/tiling/platform/platform_ascendc.h": "",
        "include/exe_graph/runtime/tiling_context.h": "",
        "include/opdev/op_errno.h": "",
        "include/platform/soc_spec.h": "",
    }
    return files(root, texts)


def needs_of(
    checkout: Path, memo: Path, step: str = "ops-transformer-build", ops=("fa",)
) -> StepNeeds:
    derived, cached = derive(
        repo="ops-transformer",
        checkout=checkout,
        commit=COMMIT,
        ops=list(ops),
        opbase=checkout / "third_party/opbase",
        opbase_commit=OPBASE_COMMIT,
        memo=memo,
    )
    return StepNeeds(
        step=step,
        derived=derived,
        cached=cached,
        opbase_from="",
        checkout=checkout,
        opbase=checkout / "third_party/opbase",
    )


def test_a_toolkit_with_everything_passes_with_one_summary_row(checkout, tmp_path):
    home = toolkit(tmp_path / "cann")
    rows = derived_checks([needs_of(checkout, tmp_path / "memo")], [], home, "x86_64")
    assert [(r.id, r.status) for r in rows] == [("recipe.derived.ops-transformer-build", "pass")]
    assert "7 toolkit headers fa and the common code include" in rows[0].detail
    assert "the 5 lookups of 3 find_package modules" in rows[0].detail


def test_an_operator_the_checkout_has_no_folder_for_fails_with_the_close_names(checkout, tmp_path):
    home = toolkit(tmp_path / "cann")
    needs = needs_of(checkout, tmp_path / "memo", ops=("fa", "faa", "nosuchop"))
    rows = [r for r in derived_checks([needs], [], home, "x86_64") if ".ops." in r.id]
    assert [r.status for r in rows] == ["fail", "fail"] and all(r.blocking for r in rows)
    assert "no operator folder <category>/faa" in rows[0].detail
    assert "Did you mean fa?" in rows[0].hint
    assert "'nosuchop'" in rows[1].detail and "Did you mean" not in rows[1].hint
    # the example is an operator of this checkout, not ops-transformer's in every repo's row
    assert rows[1].hint.endswith("by their folder name in ops-transformer, e.g. fa.")


def test_a_category_or_shared_code_folder_is_no_operator(checkout, tmp_path):
    """ops-transformer@v9.0.0 has experimental/attention (a category of experimental ops)
    and mc2/common (inc/, src/) beside the operator folders: build.sh --ops=attention builds
    no operator, so neither is taken for one, nor offered as a close name."""
    files(checkout, {"experimental/attention/CMakeLists.txt": "", "mc2/common/src/a.cpp": ""})
    home = toolkit(tmp_path / "cann")
    needs = needs_of(checkout, tmp_path / "memo", ops=("fa", "attention", "common"))
    rows = [r for r in derived_checks([needs], [], home, "x86_64") if ".ops." in r.id]
    assert [r.status for r in rows] == ["fail", "fail"]
    assert "<category>/attention" in rows[0].detail and "<category>/common" in rows[1].detail
    assert "Did you mean" not in rows[1].hint


def test_shared_code_tests_and_the_torch_extension_hold_no_operator(checkout, tmp_path):
    """ops-math@v9.0.0 has common/inc/op_api and tests/ut/op_host, ops-transformer@v9.0.0
    torch_extension/npu_ops_transformer/op_host and common/include/...: op_* folders outside
    an operator category (ops-math cmake/variables.cmake:213 OPS_CATEGORY_LIST), so
    build.sh --ops=inc stops at "Specified ops(inc) not found in this depository"
    (cmake/func.cmake:772-779).  They were taken for operators, and offered as close names."""
    files(
        checkout,
        {
            "common/inc/op_api/level0/x.h": "",
            "tests/ut/op_host/test_op_host_main.cpp": "",
            "torch_extension/npu_ops_transformer/op_host/x.cpp": "",
        },
    )
    home = toolkit(tmp_path / "cann")
    needs = needs_of(checkout, tmp_path / "memo", ops=("fa", "inc", "ut", "npu_ops_transformer"))
    rows = [r for r in derived_checks([needs], [], home, "x86_64") if ".ops." in r.id]
    assert [(r.status, r.blocking) for r in rows] == [("fail", True)] * 3
    assert "<category>/inc" in rows[0].detail and "<category>/ut" in rows[1].detail
    assert "Did you mean" not in rows[0].hint + rows[1].hint
    needs = needs_of(checkout, tmp_path / "memo", ops=("fa", "inx"))
    (row,) = [r for r in derived_checks([needs], [], home, "x86_64") if ".ops." in r.id]
    assert "Did you mean" not in row.hint  # not inc


def test_an_operator_whose_def_adds_no_config_for_the_soc_is_a_warning_before_the_build(
    checkout, tmp_path
):
    """ops-math@9.1.0 math/segsum/op_host/segsum_def.cpp adds AI Core configs for ascend910b,
    ascend910_93, kirinx90 and kirin9030 only, and ops-transformer@v9.0.0's
    flash_attention_score_def.cpp none for ascend310p: the build compiles no kernel for such
    a SoC (cmake/gen_ops_info.cmake:104-110 "not supported") and packs the host code alone,
    which recipes 9.0 and 9.1 (socs: ascend950, ascend310p) built and validated on without a
    word (validation then judges the toolkit's built-in kernel, where there is one: ops-nn's
    gelu def adds only ascend950, its README lists A2 and A3, so no refusal).
    v8.5.0 spells the 950 ascend910_95 (flash_attention_score_def.cpp:177)."""
    files(
        checkout,
        {
            "attention/fa/op_host/fa_def.cpp": (
                'this->AICore().AddConfig("ascend910_95", config95);\n'
                'this->AICore().AddConfig("ascend910b");\n'
                'this->AICore().AddConfig(\n    "ascend910_93", config);\n'
            ),
            "attention/fb/op_host/fb_def.cpp": "this->AICore().AddConfig(version, config);\n",
            "attention/fc/op_host/fc_def.cpp": "OP_ADD(Fc);\n",  # names no SoC: no row
        },
    )
    home = toolkit(tmp_path / "cann")
    needs = needs_of(checkout, tmp_path / "memo", ops=("fa", "fb", "fc"))

    def soc_rows(soc: str):
        rows = derived_checks([needs], [], home, "x86_64", soc=soc)
        return [r for r in rows if ".soc." in r.id]

    assert soc_rows("ascend910b") == [] and soc_rows("ascend950") == [] and soc_rows("") == []
    (row,) = soc_rows("ascend310p")
    assert row.status == "warn" and not row.blocking
    assert "has no ascend310p kernel of fa (attention/fa/op_host/fa_def.cpp adds" in row.detail
    assert "ascend910b, ascend950" in row.detail and "fb" not in row.detail
    assert "--soc ascend910_93" in row.hint


def test_an_operator_only_under_experimental_is_named_as_one_with_the_flag_it_needs(
    checkout, tmp_path
):
    """ops-nn@v9.0.0 has silu_mul only as experimental/activation/silu_mul: build.sh builds
    that tree only under --experimental (ops-nn@v9.0.0:build.sh:828, cmake/func.cmake:359),
    which cannbuild never passes; it was called a misspelt op ("Did you mean gelu_mul?")."""
    files(checkout, {"experimental/activation/silu_mul/op_host/silu_mul_def.cpp": ""})
    files(checkout, {"activation/gelu_mul/op_host/gelu_mul_def.cpp": ""})
    home = toolkit(tmp_path / "cann")
    needs = needs_of(checkout, tmp_path / "memo", ops=("fa", "silu_mul"))
    rows = [r for r in derived_checks([needs], [], home, "x86_64") if ".ops." in r.id]
    assert [(r.status, r.blocking) for r in rows] == [("fail", True)]
    assert "'silu_mul' (--ops) is an experimental operator" in rows[0].detail
    assert "in experimental/activation/silu_mul" in rows[0].detail
    assert "only when given --experimental" in rows[0].detail
    assert "bash build.sh --pkg --experimental" in rows[0].hint
    assert "Did you mean" not in rows[0].hint


def test_a_missing_header_fails_naming_it_its_package_and_the_file_that_includes_it(
    checkout, tmp_path
):
    home = toolkit(tmp_path / "cann")
    (home / "include/register/op_def_registry.h").unlink()
    rows = derived_checks([needs_of(checkout, tmp_path / "memo")], [], home, "x86_64")
    row = next(r for r in rows if r.id == "recipe.derived.header.register/op_def_registry.h")
    assert row.status == "fail" and row.blocking
    assert "CANN package metadef" in row.detail
    assert "included by attention/fa/op_host/fa_def.cpp:1" in row.detail
    assert "Install the CANN package metadef" in row.hint
    assert not any(r.status == "pass" for r in rows)  # no summary beside a failure


def test_a_missing_lookup_that_stops_configure_fails_per_module_and_a_harmless_one_warns(
    checkout, tmp_path
):
    home = toolkit(tmp_path / "cann")
    (home / "include/dlog_pub.h").unlink()
    (home / "x86_64-linux/include/toolchain/dlog_pub.h").unlink()
    (home / "lib64/libascendalog.so").unlink()
    rows = {
        r.id: r for r in derived_checks([needs_of(checkout, tmp_path / "memo")], [], home, "x86_64")
    }
    row = rows["recipe.derived.module.dlog"]
    assert row.status == "fail" and row.blocking
    assert "find_package(dlog) (cmake/dependencies.cmake:3)" in row.detail
    assert (
        "x86_64-linux/include/toolchain" in row.detail
        and "CANN package runtime (dlog)" in row.detail
    )
    # libascendalog.so is missing too, but nothing links imported target dlog: a warning
    warn = rows["recipe.derived.optional.ops-transformer-build"]
    assert warn.status == "warn" and "libascendalog.so (dlog" in warn.detail
    # the opbase source holds what FindOPBASE looks for: found there, not in the toolkit
    assert "recipe.derived.module.OPBASE" not in rows


def test_a_header_only_where_this_ref_does_not_look_is_a_warning(checkout, tmp_path):
    home = toolkit(tmp_path / "cann")
    (home / "include/platform/soc_spec.h").unlink()
    files(home, {"x86_64-linux/pkg_inc/platform/soc_spec.h": ""})
    facts = needs_of(checkout, tmp_path / "memo")
    assert "{arch}-linux/pkg_inc" in facts.derived.cmake.toolkit_dirs  # it looks there: pass
    rows = derived_checks([facts], [], home, "x86_64")
    assert [r.status for r in rows] == ["pass"]
    # somewhere the cmake (as read) does not look: a folder from elsewhere may; a warning
    (home / "x86_64-linux/pkg_inc/platform/soc_spec.h").unlink()
    files(home, {"x86_64-linux/include/experiment/platform/soc_spec.h": ""})
    rows = derived_checks([facts], [], home, "x86_64")
    assert [r.status for r in rows] == ["warn", "pass"]
    assert "platform/soc_spec.h (at x86_64-linux/include/experiment/platform/soc_spec.h" in (
        rows[0].detail
    )
    # nowhere in the toolkit: the failure
    (home / "x86_64-linux/include/experiment/platform/soc_spec.h").unlink()
    rows = derived_checks([facts], [], home, "x86_64")
    assert [r.id for r in rows] == ["recipe.derived.header.platform/soc_spec.h"]


def test_without_a_checkout_the_derived_check_is_a_skip_that_says_what_to_run(tmp_path):
    rows = derived_checks([], ["ops-transformer"], tmp_path, "x86_64")
    assert [(r.id, r.status) for r in rows] == [("recipe.derived", "skip")]
    assert "cannbuild fetch" in rows[0].hint


def test_the_derivation_is_kept_per_commit_and_a_rerun_does_not_read_the_checkout(
    checkout, tmp_path
):
    memo = tmp_path / "memo"
    first, cached = derive(
        repo="ops-transformer", checkout=checkout, commit=COMMIT, ops=["fa"], memo=memo
    )
    assert not cached
    path = memo_path(memo, COMMIT, "", ["fa"])
    assert path is not None and path.is_file()
    # the checkout changes under the same commit (it cannot, for a real one): a rerun does not
    # read it again, it reads the memo
    (checkout / "attention/fa/op_host/fa_def.cpp").write_text('#include "graph/new.h"\n')
    again, cached = derive(
        repo="ops-transformer", checkout=checkout, commit=COMMIT, ops=["fa"], memo=memo
    )
    assert cached and again == first
    assert "graph/new.h" not in {h.header for h in again.includes.headers}
    # another commit, other operators, or a memo another scanner wrote: read again
    other, cached = derive(
        repo="ops-transformer", checkout=checkout, commit="c" * 40, ops=["fa"], memo=memo
    )
    assert not cached and "graph/new.h" in {h.header for h in other.includes.headers}
    path.write_text(json.dumps({**json.loads(path.read_text()), "scanner": SCANNER + 1}))
    assert not derive(
        repo="ops-transformer", checkout=checkout, commit=COMMIT, ops=["fa"], memo=memo
    )[1]
    path.write_text("{not json")
    with pytest.warns(StateIgnored, match=f"memo {path} is not valid JSON"):
        assert not derive(
            repo="ops-transformer", checkout=checkout, commit=COMMIT, ops=["fa"], memo=memo
        )[1]
    # doctor and plan read the memo, never write it
    fresh = tmp_path / "fresh"
    derive(
        repo="ops-transformer", checkout=checkout, commit=COMMIT, ops=["fa"], memo=fresh, keep=False
    )
    assert not fresh.exists()
    # only full object ids name a memo
    assert memo_path(memo, "HEAD", "", ["fa"]) is None
