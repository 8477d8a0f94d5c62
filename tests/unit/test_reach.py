"""What a package build of a 9.1 checkout runs, read from its CMake text (sources/reach.py).

The snippets are small, in the shapes of the real files at 9.1.0: ops-math's CMakeLists.txt
(cmake/ut.cmake included by every build, tests/ut added only `if(ENABLE_TEST)`), its
cmake/ut.cmake (gtest asked for at the top, GTest::gtest linked only in the functions
tests/ut calls), ops-nn's `if(ENABLE_TEST) add_cann_third_party(gtest)`, opbase's
`if (ENABLE_UT OR ENABLE_ST)`, ops-transformer's `if(UT_TEST_ALL OR OP_KERNEL_AICPU_UT)`, and
hicann/cmake@master-016's third_party/gtest.cmake (EXCLUDE_FROM_ALL) beside a protobuf.cmake
whose protobuf_src downloads on every build.
"""

from typing import Dict, List, Tuple

import pytest

from cannbuild.sources.reach import Reach, condition, names_any, on_demand, options_off

MATH_CMAKELISTS = """\
add_cann_third_party(eigen)
include(${PROJECT_SOURCE_DIR}/cmake/ut.cmake)
if(ENABLE_TEST)
  if(UT_TEST_ALL OR OP_GRAPH_UT)
    include(cmake/symbol.cmake)
  endif()
  add_subdirectory(tests/ut)
endif()
if(ENABLE_TEST AND (UT_TEST_ALL OR OP_KERNEL_AICPU_UT))
  add_aicpu_op_test_case(lin_space)
endif()
"""

MATH_UT = """\
include_guard(GLOBAL)
add_cann_third_party(gtest)

function(add_optiling_ut_modules OP_TILING_MODULE_NAME)
  add_library(${OP_TILING_MODULE_NAME}_common_obj OBJECT)
  target_link_libraries(${OP_TILING_MODULE_NAME}_common_obj
    PRIVATE $<BUILD_INTERFACE:intf_llt_pub_asan_cxx17> json GTest::gtest c_sec)
endfunction()

macro(add_aicpu_op_test_case name)
  target_link_libraries(${name}_cases PRIVATE GTest::gtest)
endmacro()
"""

TESTS_UT = "add_optiling_ut_modules(${OP_TILING_MODULE_NAME})\n"

GTEST = """\
include_guard(GLOBAL)
if(gtest_FOUND AND NOT FORCE_REBUILD_CANN_3RD)
    message(STATUS "found")
else()
    set(GTEST_PROJECT_URL "https://cann-3rd.obs.cn-north-4.myhuaweicloud.com/googletest/googletest-1.14.0.tar.gz")
    include(ExternalProject)
    ExternalProject_Add(third_party_gtest
        URL ${GTEST_PROJECT_URL}
        TLS_VERIFY OFF
        BUILD_COMMAND $(MAKE)
        EXCLUDE_FROM_ALL TRUE
    )
endif()
add_library(GTest::gtest STATIC IMPORTED)
add_dependencies(GTest::gtest third_party_gtest)
add_library(GTest::gtest_main STATIC IMPORTED GLOBAL)
add_dependencies(GTest::gtest_main third_party_gtest)
"""

PROTOBUF = """\
ExternalProject_Add(protobuf_src
    URL ${PROTOBUF_PATH}
    CONFIGURE_COMMAND ""
)
include(${CMAKE_CURRENT_LIST_DIR}/abseil-cpp.cmake)
add_dependencies(protobuf_src abseil_build)
ExternalProject_Add(protobuf_static_build DEPENDS protobuf_src EXCLUDE_FROM_ALL TRUE)
"""

MAKESELF = """\
FetchContent_Declare(makeself URL ${MAKESELF_URL} URL_HASH SHA256=00)
FetchContent_MakeAvailable(makeself)
ExternalProject_Add(never EXCLUDE_FROM_ALL TRUE)
"""


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("ENABLE_TEST", False),  # nn@9.1.0:CMakeLists.txt:134
        ("NOT ENABLE_TEST", True),
        ("ENABLE_UT OR ENABLE_ST", False),  # opbase@9.1.0:cmake/config.cmake:66
        ("UT_TEST_ALL OR OP_KERNEL_AICPU_UT", False),  # transformer@9.1.0:cmake/ut.cmake:514
        ("ENABLE_TEST AND (UT_TEST_ALL OR OP_KERNEL_AICPU_UT)", False),  # math lin_space:32
        ('"${ENABLE_TEST}"', False),
        ("ENABLE_TEST OR BUILD_OPEN_PROJECT", None),
        ("NOT ENABLE_TEST AND BUILD_OPEN_PROJECT", None),
        ("BUILD_OPEN_PROJECT AND ENABLE_UT", False),
        ("TARGET host_protoc", None),
        ('NOT "${ASCEND_OP_NAME}" STREQUAL "" AND INDEX EQUAL -1', None),
        ("DOWNLOAD_OPS_TEST_KIT", None),  # an option, not a build.sh test switch
        ("(ENABLE_TEST", None),  # unbalanced: not settled
    ],
)
def test_a_condition_is_settled_only_by_the_test_switches(text, value):
    assert condition(text) is value


def reach_of(files: Dict[str, str]) -> Reach:
    """A Reach over in-memory files, callers found as git grep would find them."""

    def callers(name: str) -> List[Tuple[str, int]]:
        return [
            (path, number)
            for path, text in files.items()
            for number, line in enumerate(text.splitlines(), 1)
            if f"{name}(" in line.split("#", 1)[0]
            and not line.lstrip().startswith(("function", "macro"))
        ]

    return Reach(lambda path: files.get(path, ""), callers)


MATH = {
    "CMakeLists.txt": MATH_CMAKELISTS,
    "cmake/ut.cmake": MATH_UT,
    "tests/ut/op_host/CMakeLists.txt": TESTS_UT,
}


def test_ut_cmake_asks_for_gtest_on_every_build_but_only_the_unit_tests_link_it():
    reach = reach_of(MATH)
    assert reach.runs("CMakeLists.txt", 1)  # add_cann_third_party(eigen)
    assert reach.runs("cmake/ut.cmake", 2)  # add_cann_third_party(gtest): configure reaches it
    assert not reach.runs("CMakeLists.txt", 7)  # add_subdirectory(tests/ut) inside ENABLE_TEST
    assert not reach.runs("CMakeLists.txt", 10)  # ENABLE_TEST AND (...)
    # GTest::gtest in a function called only from tests/ut, in a macro called only under a switch
    assert not reach.runs("cmake/ut.cmake", 7)
    assert not reach.runs("cmake/ut.cmake", 11)
    assert not reach.runs("tests/ut/op_host/CMakeLists.txt", 1)


def test_a_package_target_calling_the_function_makes_its_links_run():
    # the check can say "needed": the same function called outside any test switch
    broken = {**MATH, "CMakeLists.txt": MATH_CMAKELISTS + "add_optiling_ut_modules(pkg)\n"}
    reach = reach_of(broken)
    assert reach.runs("cmake/ut.cmake", 7)
    assert not reach.runs("cmake/ut.cmake", 11)  # the macro still is not


def test_else_branches_and_recursion_are_followed():
    files = {
        "CMakeLists.txt": (
            "if(ENABLE_TEST)\n  a()\nelseif(NOT ENABLE_UT)\n  b()\nelse()\n  c()\nendif()\n"
            "if(ENABLE_TEST)\nelse()\n  d()\nendif()\n"
        ),
        "cmake/f.cmake": "function(loop)\n  loop()\n  x(GTest::gtest)\nendfunction()\n",
    }
    reach = reach_of(files)
    assert [reach.runs("CMakeLists.txt", n) for n in (2, 4, 6, 10)] == [False, True, False, True]
    assert not reach.runs("cmake/f.cmake", 3)  # a function only it calls never runs


def test_a_module_downloading_only_on_demand_names_the_targets_that_pull_it():
    assert on_demand("third_party/gtest.cmake", GTEST) == (
        "GTest::gtest",
        "GTest::gtest_main",
        "third_party_gtest",
    )
    # protobuf_src downloads on every build; makeself while configuring
    assert on_demand("third_party/protobuf.cmake", PROTOBUF) == ()
    assert on_demand("third_party/makeself-fetch.cmake", MAKESELF) == ()
    assert names_any("target_link_libraries(x PRIVATE GTest::gtest c_sec)", ["GTest::gtest"])
    assert not names_any("target_link_libraries(x GTest::gtest_main)", ["GTest::gtest"])
    assert names_any(PROTOBUF, ["abseil_build"])  # abseil-cpp is pulled by protobuf


def test_an_option_off_unless_set_counts_off_only_where_build_sh_never_sets_it():
    # ops-math@9.1.0:CMakeLists.txt:59 and :94-95
    lines = [
        (
            "CMakeLists.txt",
            59,
            'option(DOWNLOAD_OPS_TEST_KIT "Download ops-test-kit repository" OFF)',
        ),
        ("CMakeLists.txt", 60, 'option(ENABLE_CCACHE "Enable ccache" TRUE)'),
        ("CMakeLists.txt", 61, 'option(BUILD_WITH_INSTALLED_DEPENDENCY_CANN_PKG "x" FALSE)'),
        ("CMakeLists.txt", 62, '# option(OLD_ONE "gone" OFF)'),
    ]
    script = "cmake .. -DBUILD_WITH_INSTALLED_DEPENDENCY_CANN_PKG=ON -DENABLE_TEST=${ENABLE_TEST}"
    off = options_off(lines, script)
    assert off == {"DOWNLOAD_OPS_TEST_KIT"}
    files = {
        "CMakeLists.txt": "if(DOWNLOAD_OPS_TEST_KIT)\n  include(cmake/third_party/ops_test_kit.cmake)\nendif()\n"
    }
    assert not Reach(files.get, lambda name: [], off).runs("CMakeLists.txt", 2)
    # a build.sh that sets it: the include may run
    on = options_off(lines, script + " -DDOWNLOAD_OPS_TEST_KIT=ON")
    assert Reach(files.get, lambda name: [], on).runs("CMakeLists.txt", 2)
