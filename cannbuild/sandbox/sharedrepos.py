"""Stand-ins for the two repositories the 9.1 builds fetch while they configure.

From 9.1 opbase and ops-transformer take their third-party modules from the shared
`cann/cmake` repository (`cmake/fetch_cann_cmake.cmake`, pinned by the annotated tag
master-026: a local `third_party/cann-cmake/`, else `third_party/cmake-master-026.tar.gz`,
else a git clone), and ops-transformer its headers from `cann/ops-tensor`, pinned by
commit (`cmake/third_party/ops-tensor.cmake`).  The sandbox serves stand-ins of both
beside opbase and ops-transformer, with histories whose pinned commits are not the
tips (docs/upstream-9.1.md §3c-§3e; the commits are data, recipes/sandbox/9.1.toml), and
the tarball of each pinned tag on the OBS host.
"""

from __future__ import annotations

import hashlib
from typing import Any, Dict, Mapping

from ..bounded import DATA_FILE, read_text
from ..render.templates import file_env
from ..resources import data_dir
from .spec import GITEE_UPSTREAM, OBS_UPSTREAM
from .third_party import source_tree


def cmake_tarball_url(tag: str) -> str:
    """Where ops-transformer's docs fetch a tag's tarball (OT@9.1.0:docs/zh/install/compile.md:21)."""
    return f"{OBS_UPSTREAM}cmake/cmake-{tag}.tar.gz"


# openEuler's libboundscheck (securec.h), one of the toolkit's host-side repositories
# (recipes/sandbox/8.5.toml `toolkit_repos`), served from gitee, not gitcode.
LIBBOUNDSCHECK_URL = GITEE_UPSTREAM + "openeuler/libboundscheck.git"


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


def cmake_tarball(files: Mapping[str, str], tag: str) -> bytes:
    """cmake-<tag>.tar.gz: the tag's tree under one top folder, fixed bytes."""
    return source_tree(f"cmake-{tag}", files)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
