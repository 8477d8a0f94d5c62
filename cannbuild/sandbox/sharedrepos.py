"""Stand-ins for the two repositories the 9.1 builds fetch while they configure.

From 9.1 opbase and ops-transformer take their third-party modules from the shared
`cann/cmake` repository (`cmake/fetch_cann_cmake.cmake`, pinned by the annotated tag
master-026: a local `third_party/cann-cmake/`, else `third_party/cmake-master-026.tar.gz`,
else a git clone), and ops-transformer its headers from `cann/ops-tensor`, pinned by
commit (`cmake/third_party/ops-tensor.cmake`).  The sandbox serves stand-ins of both
beside opbase and ops-transformer, with histories whose pinned commits are not the
tips (docs/upstream-9.1.md §3c-§3e), and the tarball of the tag on the OBS host.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Dict, Mapping, Tuple

from msgspec import Struct

from ..bounded import DATA_FILE, read_text
from ..render.templates import file_env
from ..resources import data_dir
from .files import write
from .spec import GITEE_UPSTREAM, OBS_UPSTREAM
from .third_party import source_tree

CANN_CMAKE_TAG = "master-026"


def cmake_tarball_url(tag: str) -> str:
    """Where ops-transformer's docs fetch a tag's tarball (OT@9.1.0:docs/zh/install/compile.md:21)."""
    return f"{OBS_UPSTREAM}cmake/cmake-{tag}.tar.gz"


CMAKE_TARBALL_URL = cmake_tarball_url(CANN_CMAKE_TAG)


class TreeCommit(Struct, frozen=True, kw_only=True):
    """One commit of a stand-in repository that holds plain files."""

    date: str
    message: str
    state: str  # what its files say they are (a cmake series, an ops-tensor API level)
    tags: Tuple[str, ...] = ()
    branches: Tuple[str, ...] = ()


# master-026 (7e5691ce, 2026-06-08) is what both 9.1 repos pin; v9.1.0 = branch 9.1.0 (001e4513,
# 2026-07-09) is 8 commits on, and neither uses it (§3c).  The sibling repositories pin older
# tags: ops-math and ops-cv 9.1 master-016, ops-nn 9.1 master-015 (siblings-facts §2; their dates
# are sandbox values).
CMAKE_HISTORY: Tuple[TreeCommit, ...] = (
    TreeCommit(
        date="2026-04-16T10:00:00+08:00",
        message="third_party: json from the OBS host",
        state="master-015",
        tags=("master-015",),
    ),
    TreeCommit(
        date="2026-04-24T10:00:00+08:00",
        message="prepare: check_cann_pkg_build_deps",
        state="master-016",
        tags=("master-016",),
    ),
    TreeCommit(
        date="2026-06-08T17:36:44+08:00",
        message="fix the install lib path in grpc",
        state=CANN_CMAKE_TAG,
        tags=(CANN_CMAKE_TAG,),
    ),
    TreeCommit(
        date="2026-07-09T14:16:49+08:00",
        message="autofuse: remove non-existent paths",
        state="v9.1.0",
        tags=("v9.1.0",),
        branches=("9.1.0",),
    ),
)
CMAKE_PIN_INDEX = next(i for i, c in enumerate(CMAKE_HISTORY) if c.state == CANN_CMAKE_TAG)
# every tag a stand-in pins, whose tarball the OBS host serves
CMAKE_TAGS_PINNED = ("master-015", "master-016", CANN_CMAKE_TAG)

# ops-transformer 9.1 pins b24535e3, which is not the tip of ops-tensor's master (§3e).
OPTENSOR_HISTORY: Tuple[TreeCommit, ...] = (
    TreeCommit(date="2026-04-20T10:00:00+08:00", message="tensor_api: first headers", state="1"),
    TreeCommit(date="2026-06-05T10:00:00+08:00", message="blaze: stream-k templates", state="2"),
    TreeCommit(date="2026-07-20T10:00:00+08:00", message="tensor_api: mmad routing", state="3"),
)
OPTENSOR_PIN_INDEX = 1


# The repositories whose packages make the toolkit's host side (recipes: `toolkit = true`),
# as stand-ins holding the sandbox's own headers at the repositories' paths
# (toolkit_files.stand_in_repo_files); the refs are those hicann/manifest names: branch 8.5.0
# (cann.xml@v8.5.0:4-25), tags v9.0.0 and v9.0.1, branch 9.1.0 (cann.xml@v9.1.0).
# libboundscheck is openEuler's (v1.1.16, runtime@v9.0.0 cmake/third_party/csec.cmake:27-31).
TOOLKIT_REPOS = ("ge", "metadef", "runtime", "asc-devkit", "libboundscheck")
LIBBOUNDSCHECK_URL = GITEE_UPSTREAM + "openeuler/libboundscheck.git"
TOOLKIT_HISTORY: Tuple[TreeCommit, ...] = (
    TreeCommit(
        date="2025-12-26T12:00:00+08:00",
        message="release 8.5.0",
        state="8.5",
        tags=("v8.5.0", "v1.1.16"),
        branches=("8.5.0",),
    ),
    TreeCommit(
        date="2026-03-20T12:00:00+08:00", message="release 9.0.0", state="9.0", tags=("v9.0.0",)
    ),
    TreeCommit(
        date="2026-05-14T12:00:00+08:00", message="release 9.0.1", state="9.0", tags=("v9.0.1",)
    ),
    TreeCommit(
        date="2026-07-09T12:00:00+08:00",
        message="release 9.1.0",
        state="9.1",
        tags=("v9.1.0",),
        branches=("9.1.0",),
    ),
)


def _tree(folder: str, context: Mapping[str, Any]) -> Dict[str, str]:
    """The files of templates/sandbox/<folder>: `.j2` rendered, the rest as they are."""
    templates = data_dir("templates") / "sandbox"
    env = file_env(templates)
    files: Dict[str, str] = {}
    for path in sorted((templates / folder).rglob("*")):
        if not path.is_file():
            continue
        name = path.relative_to(templates / folder).as_posix()
        if name.endswith(".j2"):
            template = path.relative_to(templates).as_posix()
            files[name[: -len(".j2")]] = env.get_template(template).render(**context)
        else:
            files[name] = read_text(path, DATA_FILE)
    return files


def cann_cmake_files(state: str, archives: Mapping[str, Mapping[str, str]]) -> Dict[str, str]:
    """The stand-in cann/cmake at one state; `archives` as standin_archives() contexts."""
    files = _tree("cann-cmake", {"state": state, "tp": archives})
    common = data_dir("templates") / "sandbox" / "common"
    files["function/sandbox_network.cmake"] = read_text(common / "sandbox_network.cmake", DATA_FILE)
    # what check_cann_pkg_build_deps runs (CC prepare.cmake:348-359)
    files["scripts/version/check_build_dependencies.py"] = read_text(
        common / "check_build_dependencies.py", DATA_FILE
    )
    return files


def ops_tensor_files(state: str) -> Dict[str, str]:
    return _tree("ops-tensor", {"api": state})


def cmake_tarball(files: Mapping[str, str], tag: str = CANN_CMAKE_TAG) -> bytes:
    """cmake-<tag>.tar.gz: the tag's tree under one top folder, fixed bytes."""
    return source_tree(f"cmake-{tag}", files)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_tree(work: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        write(work / name, text)
