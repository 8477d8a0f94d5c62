"""Small local repositories in the 9.1 layout, for the tests of pinned sources and of
archive discovery through the shared cann/cmake repository.

The CMake text is written for these tests, in the declaration shapes the upstream
files use at 9.1 (hicann/cmake@master-026 `function/prepare.cmake`,
`third_party/{json,eigen,abseil-cpp,protobuf,makeself-fetch,gtest}.cmake`;
cannmirror/ops-transformer@9.1.0 `cmake/fetch_cann_cmake.cmake`,
`cmake/third_party/{opbase,ops-tensor}.cmake`, `CMakeLists.txt`): `set()` of URL and
path variables, `ExternalProject_Add` / `FetchContent_Declare` with `URL` and
`URL_HASH`, `if(EXISTS ...)` / `IS_DIRECTORY` checks for a local copy, an
`include(${CMAKE_CURRENT_LIST_DIR}/...)`.  Everything is served from a folder through
`file://` mirror rules, as `cannbuild.mirrors` would send it to a local mirror.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path
from typing import Dict, Tuple

from msgspec import Struct

OBS = "https://cann-3rd.obs.cn-north-4.myhuaweicloud.com"
GITCODE = "https://gitcode.com"
RELEASES = f"{GITCODE}/cann-src-third-party"
JSON_URL = f"{OBS}/json/json-3.11.3.tar.gz"
EIGEN_URL = f"{RELEASES}/eigen/releases/download/5.0.0-h0.trunk/eigen-5.0.0.tar.gz"
ABSEIL_URL = f"{OBS}/abseil-cpp/abseil-cpp-20230802.1.tar.gz"
PROTOBUF_URL = f"{OBS}/protobuf/protobuf-25.1.tar.gz"
MAKESELF_URL = (
    f"{RELEASES}/makeself/releases/download/release-2.5.0-patch1.0/"
    "makeself-release-2.5.0-patch1.tar.gz"
)
GTEST_URL = f"{OBS}/googletest/googletest-1.14.0.tar.gz"
ARCHIVES = (JSON_URL, EIGEN_URL, ABSEIL_URL, PROTOBUF_URL, MAKESELF_URL, GTEST_URL)


def git(*args: str, cwd: Path | None = None) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "GIT_AUTHOR_DATE": "2026-06-08T00:00:00+08:00",
        "GIT_COMMITTER_DATE": "2026-06-08T00:00:00+08:00",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def commit_files(work: Path, files: Dict[str, str], message: str) -> str:
    """Write `files` into the work tree `work` (made when new), commit, return the id."""
    if not work.exists():
        git("-c", "init.defaultBranch=master", "init", "-q", str(work))
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    git("add", "-A", cwd=work)
    git("commit", "-qm", message, cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


def tarball(members: Dict[str, str]) -> bytes:
    """A .tar.gz holding `members` (name -> text), with fixed times."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in sorted(members.items()):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


PREPARE = """\
get_filename_component(CANN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}" DIRECTORY)

macro(add_cann_third_party name)
    if(TOPLEVEL_PROJECT OR ENABLE_UNIFIED_BUILD)
        include(${CANN_CMAKE_DIR}/third_party/${name}.cmake)
    endif()
endmacro()

function(set_cann_cpack_config component)
    # add_cann_third_party(never-this-one)
    add_cann_third_party(makeself-fetch)
    set(CPACK_PACKAGE_NAME ${component})
endfunction()
"""


def json_module(sha256: str, version: str = "3.11.3") -> str:
    return f"""\
include_guard(GLOBAL)
set(JSON_SOURCE_PATH ${{CANN_3RD_LIB_PATH}}/json)
find_path(JSON_SOURCE NAMES nlohmann/json.hpp PATHS ${{JSON_SOURCE_PATH}}/include NO_DEFAULT_PATH)
if(NOT JSON_SOURCE)
    if(EXISTS "${{CANN_3RD_LIB_PATH}}/json-{version}.tar.gz")
        set(REQ_URL ${{CANN_3RD_LIB_PATH}}/json-{version}.tar.gz)
    elseif(EXISTS "${{CANN_3RD_LIB_PATH}}/json/json-{version}.tar.gz")
        set(REQ_URL ${{CANN_3RD_LIB_PATH}}/json/json-{version}.tar.gz)
    else()
        set(REQ_URL "{OBS}/json/json-{version}.tar.gz")
    endif()
    ExternalProject_Add(third_party_json
        URL ${{REQ_URL}}
        URL_HASH SHA256={sha256}
        SOURCE_DIR ${{JSON_SOURCE_PATH}}
    )
endif()
"""


EIGEN = f"""\
if(EXISTS "${{CANN_3RD_LIB_PATH}}/eigen-5.0.0.tar.gz")
    set(REQ_URL "${{CANN_3RD_LIB_PATH}}/eigen-5.0.0.tar.gz")
elseif(IS_DIRECTORY "${{CANN_3RD_LIB_PATH}}/eigen-5.0.0")
    set(REQ_URL "${{CANN_3RD_LIB_PATH}}/eigen-5.0.0")
elseif(IS_DIRECTORY "${{CANN_3RD_LIB_PATH}}/eigen")
    set(REQ_URL "${{CANN_3RD_LIB_PATH}}/eigen")
else()
    set(REQ_URL "{EIGEN_URL}")
endif()
ExternalProject_Add(external_eigen URL ${{REQ_URL}} DOWNLOAD_DIR download/eigen)
"""

ABSEIL = f"""\
set(ABSEIL_VERSION_PKG abseil-cpp-20230802.1.tar.gz)
set(ABS_INSTALL_DIR ${{CANN_3RD_LIB_PATH}}/lib_cache/abseil-cpp)
find_path(ABSL_SOURCE_DIR NAMES absl/log/absl_log.h PATHS ${{ABS_INSTALL_DIR}} NO_DEFAULT_PATH)
if(EXISTS ${{CANN_3RD_LIB_PATH}}/abseil-cpp/${{ABSEIL_VERSION_PKG}})
    set(REQ_URL ${{CANN_3RD_LIB_PATH}}/abseil-cpp/${{ABSEIL_VERSION_PKG}})
elseif(EXISTS ${{CANN_3RD_LIB_PATH}}/${{ABSEIL_VERSION_PKG}})
    set(REQ_URL ${{CANN_3RD_LIB_PATH}}/${{ABSEIL_VERSION_PKG}})
else()
    set(REQ_URL "{ABSEIL_URL}")
endif()
ExternalProject_Add(abseil_build
    URL ${{REQ_URL}}
    SOURCE_DIR ${{ABS_INSTALL_DIR}}
    PATCH_COMMAND patch -p1 < ${{CMAKE_CURRENT_LIST_DIR}}/abseil.patch
)
"""

PROTOBUF = f"""\
include(ExternalProject)
include(${{CMAKE_CURRENT_LIST_DIR}}/abseil-cpp.cmake)
include(${{CMAKE_CURRENT_LIST_DIR}}/protobuf_sym_rename.cmake)
if (EXISTS ${{CANN_3RD_LIB_PATH}}/protobuf-all-25.1.tar.gz)
    set(PROTOBUF_PATH ${{CANN_3RD_LIB_PATH}}/protobuf-all-25.1.tar.gz)
elseif (EXISTS ${{CANN_3RD_LIB_PATH}}/protobuf-25.1.tar.gz)
    set(PROTOBUF_PATH ${{CANN_3RD_LIB_PATH}}/protobuf-25.1.tar.gz)
else()
    set(PROTOBUF_PATH ${{CANN_3RD_LIB_PATH}}/protobuf/protobuf-25.1.tar.gz)
endif()
if(NOT EXISTS ${{PROTOBUF_PATH}})
    set(PROTOBUF_PATH "{PROTOBUF_URL}")
endif()
ExternalProject_Add(protobuf_src URL ${{PROTOBUF_PATH}} TLS_VERIFY OFF DEPENDS abseil_build)
"""

MAKESELF = f"""\
set(MAKESELF_NAME "makeself")
set(MAKESELF_PATH "${{CANN_3RD_LIB_PATH}}/${{MAKESELF_NAME}}")
set(MAKESELF_TAR_PATH "${{CANN_3RD_LIB_PATH}}/makeself-release-2.5.0-patch1.tar.gz")
if (EXISTS "${{MAKESELF_TAR_PATH}}")
    execute_process(COMMAND tar xzf "${{MAKESELF_TAR_PATH}}" -C "${{MAKESELF_PATH}}")
elseif (NOT EXISTS "${{MAKESELF_PATH}}/makeself-header.sh" OR NOT EXISTS "${{MAKESELF_PATH}}/makeself.sh")
    set(MAKESELF_URL "{MAKESELF_URL}")
    FetchContent_Declare(
        ${{MAKESELF_NAME}}
        URL ${{MAKESELF_URL}}
        URL_HASH SHA256={{sha256}}
        SOURCE_DIR "${{MAKESELF_PATH}}"
    )
    FetchContent_MakeAvailable(${{MAKESELF_NAME}})
endif()
"""

# downloaded only for a target that needs it (hicann/cmake@master-016:third_party/gtest.cmake:
# 111-127 EXCLUDE_FROM_ALL, :136-137 the imported target depending on it)
GTEST = f"""\
set(GTEST_ARCHIVE ${{CANN_3RD_LIB_PATH}}/gtest/googletest-1.14.0.tar.gz)
if(EXISTS "${{GTEST_ARCHIVE}}")
    set(GTEST_PROJECT_URL ${{GTEST_ARCHIVE}})
else()
    set(GTEST_PROJECT_URL "{GTEST_URL}")
endif()
ExternalProject_Add(third_party_gtest
    URL ${{GTEST_PROJECT_URL}}
    EXCLUDE_FROM_ALL TRUE
)
add_library(GTest::gtest STATIC IMPORTED)
add_dependencies(GTest::gtest third_party_gtest)
"""

# ops-math@9.1.0:cmake/ut.cmake, included by every build (CMakeLists.txt:110): it asks for
# gtest, and only the unit tests' functions link it (called from tests/ut)
UT_CMAKE = """\
include_guard(GLOBAL)
add_cann_third_party(gtest)
function(add_optiling_ut_modules name)
  add_library(${name}_cases_obj OBJECT)
  target_link_libraries(${name}_cases_obj PRIVATE GTest::gtest)
endfunction()
"""

# a module no checkout asks for: never discovered
GRPC = """\
ExternalProject_Add(grpc_build URL "https://cann-3rd.obs.cn-north-4.myhuaweicloud.com/grpc/grpc-1.60.0.tar.gz")
"""


def fetch_cann_cmake(tag: str) -> str:
    """The checkout's own file that clones the shared repository (the OT/OB 9.1 shape)."""
    return f"""\
if(NOT PROJECT_SOURCE_DIR)
    if(CANN_3RD_LIB_PATH AND IS_DIRECTORY "${{CANN_3RD_LIB_PATH}}/cann-cmake")
        include("${{CANN_3RD_LIB_PATH}}/cann-cmake/function/prepare.cmake")
    else()
        include(FetchContent)
        set(CANN_CMAKE_TAG "{tag}")
        FetchContent_Declare(
            cann-cmake
            GIT_REPOSITORY https://gitcode.com/cann/cmake.git
            GIT_TAG        ${{CANN_CMAKE_TAG}}
            GIT_SHALLOW    TRUE
        )
        FetchContent_Populate(cann-cmake)
        include("${{cann-cmake_SOURCE_DIR}}/function/prepare.cmake")
    endif()
endif()
"""


def pin_module(var: str, commit: str, name: str) -> str:
    """cmake/third_party/<name>.cmake: the pin, then the local places, then a clone."""
    return f"""\
set({var} {commit})
if(EXISTS "${{CANN_3RD_LIB_PATH}}/{name}")
  execute_process(COMMAND git checkout ${{{var}}} WORKING_DIRECTORY ${{CANN_3RD_LIB_PATH}}/{name})
else()
  FetchContent_Declare({name} GIT_REPOSITORY https://gitcode.com/cann/{name}.git GIT_TAG ${{{var}}}
    SOURCE_DIR ${{CANN_3RD_LIB_PATH}}/{name})
endif()
"""


OT_CMAKELISTS = """\
cmake_minimum_required(VERSION 3.16)
include(cmake/fetch_cann_cmake.cmake)
project(ops-transformer)
include(cmake/third_party/opbase.cmake)
include(cmake/third_party/ops-tensor.cmake)
add_cann_third_party(json)
if(ENABLE_TEST)
    add_cann_third_party(gtest)
endif()
# add_cann_third_party(grpc)
add_cann_third_party(eigen)
add_cann_third_party(protobuf)
include(cmake/ut.cmake)
if(ENABLE_TEST)
    add_subdirectory(tests/ut)
endif()
"""

OPBASE_CMAKELISTS = """\
include(cmake/fetch_cann_cmake.cmake)
project(opbase)
add_cann_third_party(json)
"""


class Tree(Struct, frozen=True, kw_only=True):
    """Where the repositories and archives are, and the commits that matter."""

    root: Path
    mirrors: Tuple[Tuple[str, str], ...]  # cannbuild.mirrors rules to the local copies
    transformer: str  # ops-transformer at tag v9.1.0
    opbase: str  # opbase at tag v9.1.0
    opbase_pinned: str  # the opbase commit ops-transformer pins (an older one)
    tensor_pinned: str  # the ops-tensor commit ops-transformer pins (not its newest)
    cmake_tagged: str  # the cann/cmake commit tag master-026 names (not its newest)
    sha256: Dict[str, str]  # archive URL -> sha256 of the file served


def build(root: Path) -> Tree:
    """Bare repositories under `root/gitcode/cann/` and archives under `root/obs/` and
    `root/gitcode/cann-src-third-party/`, as the mirror rules of `Tree.mirrors` see them."""
    work = root / "work"
    served: Dict[str, bytes] = {}
    for url in ARCHIVES:
        stem = url.rsplit("/", 1)[-1][: -len(".tar.gz")]
        served[url] = tarball({f"{stem}/README": f"{stem}\n", f"{stem}/makeself.sh": "#!/bin/sh\n"})
    sha = {url: hashlib.sha256(data).hexdigest() for url, data in served.items()}
    for url, data in served.items():
        local = root / ("obs" if url.startswith(OBS) else "gitcode") / url.split("/", 3)[3]
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(data)

    modules = {
        "function/prepare.cmake": PREPARE,
        "third_party/json.cmake": json_module(sha[JSON_URL]),
        "third_party/eigen.cmake": EIGEN,
        "third_party/abseil-cpp.cmake": ABSEIL,
        "third_party/protobuf.cmake": PROTOBUF,
        "third_party/protobuf_sym_rename.cmake": "set(PROTOBUF_SYM_RENAME -Dgoogle=ascend_private)\n",
        "third_party/makeself-fetch.cmake": MAKESELF.replace("{sha256}", sha[MAKESELF_URL]),
        "third_party/gtest.cmake": GTEST,
        "third_party/grpc.cmake": GRPC,
    }
    cmake_tagged = commit_files(work / "cmake", modules, "master-026")
    git("tag", "-a", "master-026", "-m", "master-026", cwd=work / "cmake")
    # upstream moves on after the tag: what the pin names is the tagged commit, not the newest
    commit_files(
        work / "cmake", {"third_party/json.cmake": json_module("0" * 64, "3.12.0")}, "json 3.12"
    )

    tensor_pinned = commit_files(work / "ops-tensor", {"include/tensor_api/t.h": "// 1\n"}, "one")
    commit_files(work / "ops-tensor", {"include/tensor_api/t.h": "// 2\n"}, "two")

    opbase_pinned = commit_files(work / "opbase", {"README": "opbase 1\n"}, "old")
    opbase = commit_files(
        work / "opbase",
        {
            "README": "opbase 2\n",
            "CMakeLists.txt": OPBASE_CMAKELISTS,
            "cmake/fetch_cann_cmake.cmake": fetch_cann_cmake("master-026"),
            "cmake/package.cmake": "set_cann_cpack_config(opbase)\n",
        },
        "9.1",
    )
    git("tag", "v9.1.0", cwd=work / "opbase")

    transformer = commit_files(
        work / "ops-transformer",
        {
            "CMakeLists.txt": OT_CMAKELISTS,
            "cmake/fetch_cann_cmake.cmake": fetch_cann_cmake("master-026"),
            "cmake/third_party/opbase.cmake": pin_module("OPBASE_TAG_ID", opbase_pinned, "opbase"),
            "cmake/third_party/ops-tensor.cmake": pin_module(
                "OPTENSOR_TAG_ID", tensor_pinned, "ops-tensor"
            ),
            "cmake/third_party/.gitkeep": "",
            "cmake/package.cmake": "  set_cann_cpack_config(ops-transformer COMPUTE_UNIT ${SOC})\n",
            "cmake/ut.cmake": UT_CMAKE,
            "tests/ut/CMakeLists.txt": "add_optiling_ut_modules(op_tiling_ut)\n",
        },
        "9.1",
    )
    git("tag", "v9.1.0", cwd=work / "ops-transformer")

    bare = root / "gitcode" / "cann"
    bare.mkdir(parents=True, exist_ok=True)
    for name in ("cmake", "ops-tensor", "opbase", "ops-transformer"):
        git("clone", "-q", "--bare", str(work / name), str(bare / f"{name}.git"))
    return Tree(
        root=root,
        mirrors=(
            (f"{GITCODE}/", (root / "gitcode").as_uri() + "/"),
            (f"{OBS}/", (root / "obs").as_uri() + "/"),
        ),
        transformer=transformer,
        opbase=opbase,
        opbase_pinned=opbase_pinned,
        tensor_pinned=tensor_pinned,
        cmake_tagged=cmake_tagged,
        sha256=sha,
    )


RECIPE_HEAD = """\
[recipe]
name = "cann-9.1-test"
train = "9.1"
opbase = "source"

[repos.opbase]
url = "https://gitcode.com/cann/opbase.git"
tag = "v9.1.0"
"""


def cann_cmake_pin(repo: str) -> str:
    """The pin of the shared cann/cmake in `repo`: a tag name, in fetch_cann_cmake.cmake."""
    return f"""
[[repos.{repo}.pinned_sources]]
name = "cann-cmake"
url = "https://gitcode.com/cann/cmake.git"
pin_file = "cmake/fetch_cann_cmake.cmake"
pin_regex = 'set\\(CANN_CMAKE_TAG\\s+"([^"]+)"\\)'
pin = "tag"
dest = "third_party/cann-cmake"
"""


OPBASE_CMAKE_PIN = cann_cmake_pin("opbase")

_OT_PINS = """
[repos.ops-transformer]
url = "https://gitcode.com/cann/ops-transformer.git"
tag = "v9.1.0"

[repos.ops-transformer.opbase_source]
repo = "opbase"
pin_file = "cmake/third_party/opbase.cmake"
pin_regex = 'set\\(OPBASE_TAG_ID\\s+([0-9a-f]{40})\\)'
dest = "third_party/opbase"

[[repos.ops-transformer.pinned_sources]]
name = "ops-tensor"
url = "https://gitcode.com/cann/ops-tensor.git"
pin_file = "cmake/third_party/ops-tensor.cmake"
pin_regex = 'set\\(OPTENSOR_TAG_ID\\s+([0-9a-f]{40})\\)'
dest = "third_party/ops-tensor"
"""

_OT_REST = """
[[steps]]
name = "opbase-build"
repo = "opbase"
command = "steps/opbase-build.j2"

[validate]
library = "lib.so"
symbols = []
"""

RECIPE_REST = _OT_PINS + cann_cmake_pin("ops-transformer") + _OT_REST

RECIPE = RECIPE_HEAD + OPBASE_CMAKE_PIN + RECIPE_REST
