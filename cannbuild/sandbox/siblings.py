"""Stand-in `ops-math`, `ops-nn` and `ops-cv` repositories (issue 27).

Each carries one commit per real ref that matters: tag v8.5.0, tags v9.0.0 and v9.0.1 (the
same build files), tag v9.1.0 and, a commit later, the head of branch 9.1.0 (the same build
files; the 9.1.0 manifest names the branch).  A commit holds the repository's build.sh (getopts
style, its flavor in recipes/sandbox/*.toml), its CMake (at v8.5.0 opbase found installed in
the toolkit; from v9.0.0 pinned as source at the commit the real repository pins, which
differs from ops-transformer's as upstream's does; cann/cmake and, for ops-nn, ops-tensor
from 9.1), its custom-package installer and one operator with its
example, compiled for real against the sandbox's emulated CANN (kernels/standin/<op>).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Mapping

from ..render.templates import file_env
from ..resources import data_dir
from . import files
from .files import write
from .flavors import SiblingFlavor
from .releases import Commit
from .third_party import standin_archives


def sibling_context(commit: Commit, extra: Mapping[str, Any]) -> Dict[str, Any]:
    """What a sibling commit's templates see: the flavor (as `sib` and, for the templates
    it shares with ops-transformer, `flavor`), its operator, the archives and the pins."""
    archives = {key: a.context() for key, a in standin_archives().items()}
    flavor = commit.flavor
    assert isinstance(flavor, SiblingFlavor), commit.repo
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


def render_sibling(work: Path, commit: Commit, extra: Mapping[str, Any]) -> None:
    """Lay out one sibling commit's files in `work` (emptied by the caller)."""
    templates = data_dir("templates") / "sandbox"
    kernels = data_dir("kernels")
    env = file_env(templates)
    ctx = sibling_context(commit, extra)
    flavor = commit.flavor
    assert isinstance(flavor, SiblingFlavor), commit.repo
    op = flavor.op

    def render(src: str, dst: str, executable: bool = False) -> None:
        write(work / dst, env.get_template(src).render(**ctx), executable=executable)

    def copy(src: Path, dst: str) -> None:
        files.copy(src, work / dst)

    copy(templates / "common" / "gitignore", ".gitignore")
    render("siblings/build.sh.j2", "build.sh", executable=True)
    render("siblings/CMakeLists.txt.j2", "CMakeLists.txt")
    if flavor.opbase_mode == "source":
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
