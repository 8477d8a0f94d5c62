"""Stand-in `ops-math`, `ops-nn` and `ops-cv` repositories (issue 27).

Each carries one commit per real ref that matters: tags v9.0.0 and v9.0.1 (the same build
files), tag v9.1.0 and, a commit later, the head of branch 9.1.0 (the same build files;
the 9.1.0 manifest names the branch).  A commit holds the repository's build.sh (getopts
style, sibling_flavors.py), its CMake (opbase pinned as source at the commit the real
repository pins, which differs from ops-transformer's as upstream's does; cann/cmake and,
for ops-nn, ops-tensor from 9.1), its custom-package installer and one operator with its
example, compiled for real against the sandbox's emulated CANN (kernels/standin/<op>).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Dict, List, Mapping, Tuple

from msgspec import Struct

from ..render.templates import file_env
from ..resources import data_dir
from .files import write
from .sibling_flavors import (
    CV_V900,
    CV_V910,
    MATH_V900,
    MATH_V910,
    NN_V900,
    NN_V910,
    SiblingFlavor,
)
from .third_party import standin_archives

SIBLING_REPOS = ("ops-math", "ops-nn", "ops-cv")


class SiblingCommit(Struct, frozen=True, kw_only=True):
    repo: str
    flavor: SiblingFlavor
    date: str
    message: str
    tags: Tuple[str, ...] = ()
    branches: Tuple[str, ...] = ()
    note: str = ""


def _history(
    repo: str,
    v90: SiblingFlavor,
    v91: SiblingFlavor,
    dates: Tuple[str, str, str, str],
    messages: Tuple[str, str, str, str],
) -> Tuple[SiblingCommit, ...]:
    return (
        SiblingCommit(repo=repo, flavor=v90, date=dates[0], message=messages[0], tags=("v9.0.0",)),
        SiblingCommit(
            repo=repo,
            flavor=v90,
            date=dates[1],
            message=messages[1],
            tags=("v9.0.1",),
            note="Release 9.0.1.",
        ),
        SiblingCommit(repo=repo, flavor=v91, date=dates[2], message=messages[2], tags=("v9.1.0",)),
        SiblingCommit(
            repo=repo,
            flavor=v91,
            date=dates[3],
            message=messages[3],
            branches=("9.1.0",),
            note="Branch 9.1.0, the revision of the 9.1.0 manifest.",
        ),
    )


# The real refs' commit dates (siblings-facts §0: v9.0.0, v9.0.1, tag v9.1.0, branch 9.1.0).
SIBLING_HISTORY: Dict[str, Tuple[SiblingCommit, ...]] = {
    "ops-math": _history(
        "ops-math",
        MATH_V900,
        MATH_V910,
        (
            "2026-04-28T12:40:29+08:00",
            "2026-06-15T14:46:15+08:00",
            "2026-07-24T18:08:44+08:00",
            "2026-08-18T10:53:34+08:00",
        ),
        (
            "docs: low-level errors the tools found",
            "opgraph built into the library again",
            "random ops: broadcasting in the compatible case",
            "AdaCast: GE IR prototype registered",
        ),
    ),
    "ops-nn": _history(
        "ops-nn",
        NN_V900,
        NN_V910,
        (
            "2026-04-28T12:40:21+08:00",
            "2026-06-11T15:05:41+08:00",
            "2026-07-30T09:57:47+08:00",
            "2026-08-21T10:30:42+08:00",
        ),
        (
            "docs: low-level errors the tools found",
            "fix bug of mergebatch",
            "aclnnTopKTopPSampleV2 docs",
            "#4709 docs: a redundant step removed",
        ),
    ),
    "ops-cv": _history(
        "ops-cv",
        CV_V900,
        CV_V910,
        (
            "2026-04-28T09:11:11+08:00",
            "2026-06-10T10:19:02+08:00",
            "2026-07-18T18:39:06+08:00",
            "2026-08-13T16:41:27+08:00",
        ),
        (
            "docs: readability",
            "fix: cust mode with proto headers only",
            "proto migration",
            "AnchorResponseFlags prototype moved to ops-cv",
        ),
    ),
}

# Which stand-in opbase commit (by message, releases.OPBASE_HISTORY) each state pins in
# cmake/third_party/opbase.cmake:10 (siblings-facts §2): at v9.0.0 only ops-nn differs from
# ops-transformer; at 9.1 all three differ from it, ops-nn from the other two as well.
OPBASE_PINS: Mapping[Tuple[str, str], str] = {
    ("ops-math", "v9.0.0"): "log reporting changes",  # 929902e5, as ops-transformer
    ("ops-cv", "v9.0.0"): "log reporting changes",
    ("ops-nn", "v9.0.0"): "fix: broadcast compile warning",  # ec88904b
    ("ops-math", "v9.1.0"): "rename the tiling files",  # ee5334d1
    ("ops-cv", "v9.1.0"): "rename the tiling files",
    ("ops-nn", "v9.1.0"): "error codes EZ0035 and EZ0036",  # b8bd9e66
}
# the cann/cmake tag each 9.1 state pins (fetch_cann_cmake.cmake:17)
CMAKE_TAGS: Mapping[str, str] = {
    "ops-math": "master-016",
    "ops-cv": "master-016",
    "ops-nn": "master-015",
}
# ops-nn 9.1 pins an ops-tensor commit (92fab6e0 upstream) that is not ops-transformer's
# (b24535e3): the stand-in's first commit (sharedrepos.OPTENSOR_HISTORY).
NN_OPTENSOR_PIN_INDEX = 0


def sibling_context(commit: SiblingCommit, extra: Mapping[str, Any]) -> Dict[str, Any]:
    """What a sibling commit's templates see: the flavor (as `sib` and, for the templates
    it shares with ops-transformer, `flavor`), its operator, the archives and the pins."""
    archives = {key: a.context() for key, a in standin_archives().items()}
    flavor = commit.flavor
    return {
        "sib": flavor,
        "flavor": flavor,
        "op": flavor.op,
        "repo": commit.repo,
        "ref": flavor.ref,
        "tp": archives,
        "modules": flavor.modules,
        **extra,
    }


def render_sibling(work: Path, commit: SiblingCommit, extra: Mapping[str, Any]) -> None:
    """Lay out one sibling commit's files in `work` (emptied by the caller)."""
    templates = data_dir("templates") / "sandbox"
    kernels = data_dir("kernels")
    env = file_env(templates)
    ctx = sibling_context(commit, extra)
    flavor = commit.flavor
    op = flavor.op

    def render(src: str, dst: str, executable: bool = False) -> None:
        write(work / dst, env.get_template(src).render(**ctx), executable=executable)

    def copy(src: Path, dst: str) -> None:
        target = work / dst
        if src.is_dir():
            shutil.copytree(src, target, dirs_exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)

    copy(templates / "common" / "gitignore", ".gitignore")
    render("siblings/build.sh.j2", "build.sh", executable=True)
    render("siblings/CMakeLists.txt.j2", "CMakeLists.txt")
    render("siblings/cmake/third_party/opbase.cmake.j2", "cmake/third_party/opbase.cmake")
    render("siblings/scripts/custom/install.sh.j2", "scripts/custom/install.sh", executable=True)
    if flavor.install_deps:
        copy(templates / "siblings" / "install_deps.sh", "install_deps.sh")
    if flavor.cann_cmake:
        folder = str(Path(flavor.cann_cmake_file).parent)
        render("common/fetch_cann_cmake.cmake.j2", flavor.cann_cmake_file)
        copy(templates / "common" / "sandbox_network.cmake", f"{folder}/sandbox_network.cmake")
        render("siblings/version.cmake.j2", "version.cmake")
        render(
            "siblings/cmake/third_party/ops_test_kit.cmake.j2",
            "cmake/third_party/ops_test_kit.cmake",
        )
        if flavor.gtest == "cmake/ut.cmake":
            render("siblings/cmake/ut.cmake.j2", "cmake/ut.cmake")
            render("siblings/tests/ut/CMakeLists.txt.j2", "tests/ut/CMakeLists.txt")
        if flavor.ops_tensor:
            render(
                "ops-transformer/cmake/third_party/ops-tensor.cmake.j2",
                "cmake/third_party/ops-tensor.cmake",
            )
    else:
        render("common/third_party.cmake.j2", "cmake/third_party/third_party.cmake")
        for module in (*flavor.modules, "gtest"):
            render(
                f"siblings/cmake/third_party/{module}.cmake.j2", f"cmake/third_party/{module}.cmake"
            )
        copy(
            templates / "common" / "check_build_dependencies.py",
            "scripts/check_build_dependencies.py",
        )
    copy(kernels / "standin" / "common" / "standin_op.h", "common/stand_in/standin_op.h")
    source = kernels / "standin" / op.name
    target = f"{op.category}/{op.name}"
    for part in ("op_host", "op_kernel"):
        copy(source / part, f"{target}/{part}")
    copy(source / "examples" / op.example, f"{target}/examples/{op.example}")
    readme = [
        f"# {commit.repo} (cannbuild sandbox stand-in)",
        "",
        f"Emulates {commit.repo} at {flavor.label}: the same build.sh options, messages and",
        f"artifacts, compiling one CPU operator ({op.category}/{op.name}) against the sandbox's",
        "emulated CANN.",
    ]
    if commit.note:
        readme += ["", commit.note]
    write(work / "README.md", "\n".join(readme) + "\n")


def sibling_extra(
    commit: SiblingCommit,
    opbase: Mapping[str, str],
    cmake_sha256: Mapping[str, str],
    optensor: List[str],
    optensor_api: str,
) -> Dict[str, Any]:
    """The pins a commit's CMake declares: `opbase` maps OPBASE_HISTORY messages to commit
    ids, `cmake_sha256` cann/cmake tags to their tarball's sha256."""
    flavor = commit.flavor
    extra: Dict[str, Any] = {"opbase_tag_id": opbase[OPBASE_PINS[(commit.repo, flavor.ref)]]}
    if flavor.cann_cmake:
        tag = CMAKE_TAGS[commit.repo]
        extra["cann_cmake_tag"] = tag
        extra["cann_cmake_sha256"] = cmake_sha256[tag] if flavor.cann_cmake_hash else ""
        extra["cann_cmake_in_3rd"] = not flavor.cann_cmake_hash
    if flavor.ops_tensor:
        extra["optensor_tag_id"] = optensor[NN_OPTENSOR_PIN_INDEX]
        extra["optensor_api"] = optensor_api
    return extra
