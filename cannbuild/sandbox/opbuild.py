"""The sandbox's op_build, over the release's own OpDef implementation.

The ops repositories compile their operator definitions (`op_host/*_def.cpp`, `OP_ADD`)
into a library and run the toolkit's `tools/opbuild/op_build` on it, which generates the
aclnn sources, the operator prototypes and the ops-info ini the rest of the build compiles
(ops-transformer@v9.0.0 cmake/opbuild.cmake, cmake/custom_build.cmake:814-866).  op_build
is closed source; what it reads is not: the registrations land in libregister, whose OpDef
classes are in the host-side repositories.  So once those are laid out (hostside.py) the
sandbox compiles that implementation, as the release has it, into the toolkit's
libregister, and its own op_build (kernels/opbuild/op_build.cpp) over it.  Where the
checkouts hold no OpDef sources (the stand-in repositories) the wall stays
(toolkit_files.WALLS).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import List, Mapping, Sequence, Tuple, Union

from msgspec import Struct

from ..errors import SandboxError
from ..resources import data_dir

LIBREGISTER = "{arch}-linux/lib64/libregister.so"
OP_BUILD = "tools/opbuild/op_build"


class OpDefSources(Struct, frozen=True, kw_only=True):
    """Where a release keeps the OpDef implementation libregister is built from."""

    repo: str
    sources: Tuple[str, ...]  # globs, relative to the checkout
    includes: Tuple[str, ...]  # the repo's own include folders those sources need
    source: str  # where the rule is


# First match wins: <= 9.0 in ge, from 9.1 in metadef; AscendString in metadef throughout.
OPDEF_SOURCES = (
    OpDefSources(
        repo="ge",
        sources=("graph_metadef/register/opdef/*.cc",),
        includes=("graph_metadef/register/opdef", "inc/graph_metadef", "inc"),
        source="hicann/ge@v9.0.0 graph_metadef/register/CMakeLists.txt:66-74",
    ),
    OpDefSources(
        repo="metadef",
        sources=("base/asc/opdef/*.cc",),
        includes=("pkg_inc/base/asc/opdef", "inc/external/asc", "pkg_inc", "inc"),
        source="hicann/metadef@9.1.0 base/asc/opdef",
    ),
)
ASCEND_STRING = OpDefSources(
    repo="metadef",
    sources=("base/type/ascend_string_impl.cc",),
    includes=(),
    source="hicann/metadef@v9.0.0 base/type/ascend_string_impl.cc",
)


def _sources(spec: OpDefSources, roots: Mapping[str, Path]) -> List[Path]:
    root = roots.get(spec.repo)
    if root is None:
        return []
    return sorted(p for pattern in spec.sources for p in root.glob(pattern) if p.is_file())


def build_op_build(home: Path, arch: str, roots: Mapping[str, Path]) -> Tuple[str, ...]:
    """Compile libregister from the checkouts' OpDef sources and op_build over it, into the
    toolkit at `home`; returns the paths written (relative to `home`), none where the
    checkouts hold no OpDef implementation."""
    opdef = next((s for s in OPDEF_SOURCES if _sources(s, roots)), None)
    strings = _sources(ASCEND_STRING, roots)
    if opdef is None or not strings:
        return ()
    kernels = data_dir("kernels") / "opbuild"
    archdir = home / f"{arch}-linux"
    toolkit_includes = [
        archdir / "include",
        archdir / "pkg_inc",
        archdir / "pkg_inc" / "base",
        archdir / "include" / "external",
    ]
    own = [roots[opdef.repo] / inc for inc in opdef.includes]
    flags = ["-std=c++17", "-O1", "-fPIC", *(f"-I{p}" for p in [*toolkit_includes, *own])]
    cxx = os.environ.get("CXX") or shutil.which("c++") or "c++"
    register = home / LIBREGISTER.format(arch=arch)
    _compile(
        [cxx, *flags, "-shared", "-o", f"{register}.tmp"],
        [*_sources(opdef, roots), *strings, kernels / "dlog_off.cpp"],
        f"{opdef.repo}'s OpDef sources ({opdef.source}) into the sandbox's libregister",
    )
    os.replace(f"{register}.tmp", register)
    tool = home / OP_BUILD
    tool.parent.mkdir(parents=True, exist_ok=True)
    rpath = os.path.relpath(register.parent, tool.parent)
    _compile(
        [cxx, *flags, "-o", f"{tool}.tmp", f"-L{register.parent}"],
        [kernels / "op_build.cpp", "-lregister", "-ldl", f"-Wl,-rpath,$ORIGIN/{rpath}"],
        "the sandbox's op_build (kernels/opbuild/op_build.cpp)",
    )
    os.replace(f"{tool}.tmp", tool)
    return (LIBREGISTER.format(arch=arch), OP_BUILD)


def _compile(command: List[str], inputs: Sequence[Union[str, Path]], what: str) -> None:
    done = subprocess.run(
        [*command, *map(str, inputs)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise SandboxError(
            f"compiling {what} failed (exit {done.returncode}): {done.stderr.strip()[-800:]}",
            "The sources are upstream's at the locked commit, the headers the sandbox toolkit's "
            "host side laid out from the same release: check that the host-side repos are of "
            "one release.",
        )
