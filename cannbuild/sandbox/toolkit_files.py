"""Every header and library the sandbox toolkit holds for the builds, in one list.

The stand-in repositories' host code includes the real header names and their cmake
modules look for the real files (templates/sandbox/ops-transformer/cmake/modules, in the
shape of cannmirror/ops-transformer@v9.0.0 cmake/modules), so the derived check
(build/derived.py) passes on the sandbox because these files are there and are found.

From 8.5 the headers an open-source CANN repository ships (`repo`) are not laid out
here: the sandbox fetches that repository like any source and lays its packages out
(sandbox/hostside.py), the real one through a mirror rule, else the stand-in
repository the sandbox serves, which holds these same files at the repository's paths
with a packaging XML (stand_in_repo_files).  8.3 was released before the host side
was (hicann/manifest starts at v8.5.0): there the toolkit keeps them as emulations.
Each is one of:

  DECLARED  real declarations, written from the public API (kernels/emu/include: the ACL and
            aclnn subset, reference acl-api.md; kernels/toolkit/include: libboundscheck's
            securec.h, a subset of metadef's graph/types.h);
  STUB      presence only: an empty header, an empty shared library, an ar archive with no
            member (the stand-ins include them and link none of them);
  EMULATED  the CPU emulation compiled from kernels/emu (libraries), or its own headers;
            op_build, compiled with libregister from the release's OpDef sources once the
            host side is laid out (`host_side`: sandbox/opbuild.py), else its wall stays.
"""

from __future__ import annotations

import posixpath
import shutil
from pathlib import Path
from typing import Dict, List, Tuple

from msgspec import Struct

from ..bounded import DATA_FILE, read_bytes
from ..host.contents import WALL_MARKER
from ..resources import data_dir
from .files import write

DECLARED, STUB, EMULATED = "declared", "stub", "emulated"
INCLUDE = "{arch}-linux/include/"
LIB64 = "{arch}-linux/lib64/"
_METADEF = "hicann/metadef inc/external/"
# package -> the repository that ships its headers, and where under it they are
# (hicann/opbase@v9.0.0 include/nnopbase/, hicann/metadef inc/external/, hicann/runtime
# include/external/, cannmirror/asc-devkit include/, openeuler-mirror/libboundscheck include/)
REPO_OF = {
    "opbase": "opbase",
    "metadef": "metadef",
    "runtime": "runtime",
    "asc-devkit": "asc-devkit",
    "libboundscheck": "libboundscheck",
}
REPO_FOLDER = {
    "opbase": "include/nnopbase/",
    "metadef": "inc/external/",
    "runtime": "include/external/",
    "asc-devkit": "include/",
    "libboundscheck": "include/",
}
# ge ships the operator definition headers up to 9.0, metadef from 9.1
# (hicann/ge@v9.0.0 inc/graph_metadef/external/register/; metadef@9.1.0 inc/external/asc/register/)
GE_REGISTER = ("register/op_def_registry.h", "register/op_def.h")


class StandIn(Struct, frozen=True, kw_only=True):
    path: str  # under the toolkit's install folder, {arch} the machine's
    kind: str  # DECLARED, STUB or EMULATED
    package: str  # the CANN package that ships the real one
    what: str  # where the declarations come from, or what the real file is
    copy: str = ""  # DECLARED/EMULATED headers: a file or folder under kernels/
    opbase_in_toolkit: bool = False  # only where the toolkit holds opbase (<= 8.5)
    host_side: bool = False  # made with the host side (sandbox/opbuild.py), not laid here

    @property
    def repo(self) -> str:
        """The open-source repository that ships it (none: the sandbox's own)."""
        return REPO_OF.get(self.package, "") if self.path.startswith(INCLUDE) else ""


def _h(path: str, kind: str, package: str, what: str, copy: str = "") -> StandIn:
    return StandIn(path=INCLUDE + path, kind=kind, package=package, what=what, copy=copy)


def _lib(name: str, kind: str, package: str, what: str, opbase: bool = False) -> StandIn:
    return StandIn(
        path=LIB64 + name, kind=kind, package=package, what=what, opbase_in_toolkit=opbase
    )


TOOLKIT_FILES: Tuple[StandIn, ...] = (
    # headers
    _h(
        "acl", DECLARED, "runtime", "the ACL C API subset (reference acl-api.md)", "emu/include/acl"
    ),
    _h(
        "aclnn",
        DECLARED,
        "opbase",
        "aclnn_base.h, acl_meta.h, opdev/op_errno.h",
        "emu/include/aclnn",
    ),
    _h("emu", EMULATED, "(sandbox)", "the emulation's own interface", "emu/pkg_inc/emu"),
    _h(
        "securec.h",
        DECLARED,
        "libboundscheck",
        "openeuler-mirror/libboundscheck include/securec.h",
        "toolkit/include/securec.h",
    ),
    _h(
        "graph/types.h",
        DECLARED,
        "metadef",
        _METADEF + "graph/types.h (DataType, Format)",
        "toolkit/include/graph/types.h",
    ),
    _h("graph/operator_reg.h", STUB, "metadef", "REG_OP, the operator prototype macros"),
    _h(
        "register/register.h", STUB, "metadef", _METADEF + "register/register.h (Findmetadef.cmake)"
    ),
    _h(
        "register/op_def_registry.h",
        STUB,
        "metadef",
        _METADEF + "asc/register/op_def_registry.h (OpDef, OP_ADD)",
    ),
    _h("register/op_impl_registry.h", STUB, "metadef", _METADEF + "register/op_impl_registry.h"),
    _h("register/tilingdata_base.h", STUB, "metadef", _METADEF + "register/tilingdata_base.h"),
    _h(
        "exe_graph/runtime/tiling_context.h",
        STUB,
        "metadef",
        _METADEF + "exe_graph/runtime/tiling_context.h",
    ),
    _h(
        "platform/platform_info.h", STUB, "metadef", "Findplatform.cmake's platform/platform_info.h"
    ),
    _h("tiling/tiling_api.h", STUB, "asc-devkit", "Findtilingapi.cmake's tiling/tiling_api.h"),
    _h(
        "tiling/platform/platform_ascendc.h",
        STUB,
        "asc-devkit",
        "PlatformAscendC, the SoC facts a tiling reads",
    ),
    _h("toolchain/dlog_pub.h", STUB, "runtime", "Finddlog.cmake's dlog_pub.h"),
    _h("experiment/runtime/runtime/rt.h", STUB, "runtime", "Findruntime.cmake's runtime/rt.h"),
    # the rest of what the real v9.0.0 flash_attention_score host code and the common code include
    # (tests/fixtures/derived/ops-transformer-v9.0.0-fa-headers.tsv), where its cmake looks
    _h("toolchain/alog_pub.h", STUB, "runtime", "dlog's alog interface"),
    _h(
        "experiment/runtime/runtime/base.h",
        STUB,
        "runtime",
        "rtError_t and the runtime's base types",
    ),
    _h(
        "experiment/runtime/runtime/rt_external_base.h",
        STUB,
        "runtime",
        "the runtime's external base",
    ),
    _h("base/err_msg.h", STUB, "metadef", _METADEF + "base/err_msg.h"),
    _h("exe_graph/runtime/op_execute_context.h", STUB, "metadef", _METADEF + "exe_graph/runtime/"),
    _h(
        "exe_graph/runtime/op_execute_launch_context.h",
        STUB,
        "metadef",
        _METADEF + "exe_graph/runtime/",
    ),
    _h(
        "exe_graph/runtime/op_execute_prepare_context.h",
        STUB,
        "metadef",
        _METADEF + "exe_graph/runtime/",
    ),
    _h("exe_graph/runtime/shape.h", STUB, "metadef", _METADEF + "exe_graph/runtime/shape.h"),
    _h("exe_graph/runtime/tensor.h", STUB, "metadef", _METADEF + "exe_graph/runtime/tensor.h"),
    _h(
        "exe_graph/runtime/tiling_parse_context.h", STUB, "metadef", _METADEF + "exe_graph/runtime/"
    ),
    _h("graph/ge_error_codes.h", STUB, "metadef", _METADEF + "graph/ge_error_codes.h"),
    _h("graph/tensor.h", STUB, "metadef", _METADEF + "graph/tensor.h"),
    _h("graph/utils/type_utils.h", STUB, "metadef", _METADEF + "graph/utils/type_utils.h"),
    _h("register/op_impl_kernel_registry.h", STUB, "metadef", _METADEF + "register/"),
    _h("platform/soc_spec.h", STUB, "metadef", "the SoC facts a tiling reads"),
    _h(
        "platform/platform_ascendc.h", STUB, "metadef", "PlatformAscendC, as common/src includes it"
    ),
    _h("ascendc/host_api/tiling/template_argument.h", STUB, "asc-devkit", "tiling-key templates"),
    _h("aclnn/opdev/common_types.h", STUB, "opbase", "nnopbase's opdev (aclnn/opdev)"),
    _h("aclnn/opdev/fast_vector.h", STUB, "opbase", "nnopbase's opdev (aclnn/opdev)"),
    _h("aclnn/opdev/make_op_executor.h", STUB, "opbase", "nnopbase's opdev (aclnn/opdev)"),
    _h("aclnn/opdev/op_def.h", STUB, "opbase", "nnopbase's opdev (aclnn/opdev)"),
    _h("aclnn/opdev/op_dfx.h", STUB, "opbase", "nnopbase's opdev (aclnn/opdev)"),
    _h("aclnn/opdev/op_executor.h", STUB, "opbase", "nnopbase's opdev (aclnn/opdev)"),
    _h("aclnn/opdev/shape_utils.h", STUB, "opbase", "nnopbase's opdev (aclnn/opdev)"),
    # libraries: the emulation (kernels/emu/CMakeLists.txt)
    _lib("libascendcl.so", EMULATED, "runtime", "ACL runtime on the CPU"),
    _lib("libnnopbase.so", EMULATED, "opbase", "aclnn tensors and executors"),
    _lib("libc_sec.so", EMULATED, "libboundscheck", "memcpy_s, memset_s, memmove_s"),
    _lib("libopapi_math.so", EMULATED, "ops-math", "what the examples link besides the package"),
    _lib("libops_base.so", EMULATED, "opbase", "opbase's op_common", opbase=True),
    # what the real torch_npu links besides libascendcl: without them `import torch_npu` fails
    _lib("libacl_op_compiler.so", EMULATED, "runtime", "compile options (torch_npu)"),
    _lib("libhccl.so", EMULATED, "hccl", "inert (torch_npu links it)"),
    _lib("libge_runner.so", EMULATED, "ge-executor", "inert (torch_npu links it)"),
    _lib("libgraph.so", EMULATED, "metadef", "inert (torch_npu links it; Findmetadef.cmake looks)"),
    _lib("libacl_tdt_channel.so", EMULATED, "runtime", "inert (torch_npu links it)"),
    # libraries the cmake modules look for (Finddlog, Findplatform, Findmetadef, Findsecurec,
    # Findtilingapi at v9.0.0); the stand-ins link none of them
    _lib("libascendalog.so", STUB, "runtime", "dlog"),
    _lib("libplatform.so", STUB, "metadef", "platform"),
    _lib(
        "libregister.so",
        STUB,
        "metadef",
        "register; the OpDef registry compiled from ge's "
        "graph_metadef/register/opdef (metadef base/asc/opdef from 9.1) where the host side "
        "comes from the repos (sandbox/opbuild.py)",
    ),
    StandIn(
        path="tools/opbuild/op_build",
        kind=EMULATED,
        package="toolkit",
        what="closed source: kernels/opbuild/op_build.cpp loads the operator definition library, "
        "reads its OpDefs from libregister and writes the aclnn sources, the prototypes and "
        "the ops-info ini the CMake rules expect",
        copy="opbuild/op_build.cpp",
        host_side=True,
    ),
    _lib("libopp_registry.so", STUB, "metadef", "opp_registry"),
    _lib("libexe_graph.so", STUB, "metadef", "exe_graph"),
    _lib("libgraph_base.so", STUB, "metadef", "graph_base"),
    _lib("liberror_manager.so", STUB, "metadef", "error_manager"),
    _lib("libmetadef.so", STUB, "metadef", "metadef"),
    # what the custom package's cust_opapi links (ops-transformer@v9.0.0
    # cmake/custom_build.cmake:91-93); built from runtime (adump, msprof) and ge (base/)
    _lib("libprofapi.so", STUB, "runtime", "profapi (msprof)"),
    _lib("libascend_dump.so", STUB, "runtime", "ascend_dump (adump)"),
    _lib("libge_common_base.so", STUB, "ge", "ge_common_base"),
    # and its tiling library, cust_opmaster (cmake/custom_build.cmake:161-183)
    _lib("libacl_rt.so", STUB, "runtime", "acl_rt"),
    # what ops-math's ophost library links from lib64 by name (ops-math@v9.0.0
    # cmake/symbol.cmake:36-50)
    _lib("libruntime.so", STUB, "runtime", "runtime"),
    _lib("libunified_dlog.so", STUB, "runtime", "unified_dlog"),
    # and ops-cv's at 9.1.0 (cmake/symbol.cmake:50, found by cmake/modules/Findmmpa.cmake)
    _lib("libmmpa.so", STUB, "runtime", "mmpa"),
    _lib("librt2_registry.a", STUB, "metadef", "rt2_registry (static)"),
    _lib("libtiling_api.a", STUB, "asc-devkit", "tiling_api (static)"),
    _lib("libc_sec.a", STUB, "libboundscheck", "c_sec (static)"),
)
EMPTY_ARCHIVE = b"!<arch>\n"  # what `ar` writes for an archive with no member

# What a build of the real repositories reaches that neither an open-source repository nor
# the sandbox provides: a stand-in that stops the build there, saying so.  The marker line
# is what doctor (build/derived.py) and the failure hint (hints.py) recognise.


class Wall(Struct, frozen=True, kw_only=True):
    path: str  # under the toolkit's install folder
    component: str
    what: str  # what the real one does, and why the sandbox has none


WALLS: Tuple[Wall, ...] = (
    Wall(
        path="tools/opbuild/op_build",
        component="op_build",
        what="the real toolkit's opbuild loads the compiled operator definitions and generates "
        "the aclnn sources and operator prototypes (ops-transformer@v9.0.0 "
        "cmake/custom_build.cmake:814-880); it is closed source, and the sandbox's emulation "
        "(TOOLKIT_FILES) needs the release's OpDef sources, which these host-side "
        "repositories do not hold",
    ),
    Wall(
        path="{arch}-linux/bin/gen_esb",
        component="gen_esb",
        what="the ge-compiler package's ES API generator that ge's generate_es_package.cmake "
        "runs for add_es_library (hicann/ge@v9.0.0 cmake/generate_es_package.cmake:490-493); "
        "a program built from hicann/ge, which the sandbox does not build",
    ),
    Wall(
        path="toolkit/toolchain/hcc/bin/aarch64-target-linux-gnu-g++",
        component="hcc",
        what="the device-side cross compiler opbase's device sub-build runs (opbase@v9.0.0 "
        "cmake/aarch64-hcc-toolchain.cmake); it ships with the toolkit, not in an open repository",
    ),
    Wall(
        path="toolkit/toolchain/hcc/bin/aarch64-target-linux-gnu-gcc",
        component="hcc",
        what="the device-side cross compiler (C), as above",
    ),
)


def wall_script(wall: Wall, arch: str) -> str:
    name = Path(wall.path).name
    return (
        "#!/bin/sh\ncat >&2 <<'WALL'\n"
        f"{WALL_MARKER} {wall.component} ({wall.path.format(arch=arch)}): {wall.what}\n"
        f"cannbuild sandbox: {name} is a stand-in and cannot run\nWALL\nexit 1\n"
    )


def lay_out(
    tk: Path, arch: str, emu_build: Path, opbase_in_toolkit: bool, host_side_repos: bool
) -> None:
    """Put every file of TOOLKIT_FILES under `tk` (the toolkit's install folder), but
    those an open repository ships where the release's host side comes from them."""
    kernels = data_dir("kernels")
    for item in TOOLKIT_FILES:
        if item.opbase_in_toolkit and not opbase_in_toolkit:
            continue
        if (host_side_repos and item.repo) or item.host_side:
            continue
        target = tk / item.path.format(arch=arch)
        target.parent.mkdir(parents=True, exist_ok=True)
        if item.copy:
            source = kernels / item.copy
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
            else:
                shutil.copy2(source, target)
        elif item.kind == EMULATED:
            shutil.copy2(emu_build / target.name, target)
        elif target.suffix == ".h":
            write(target, _stub(item))
        else:
            target.write_bytes(EMPTY_ARCHIVE if target.suffix == ".a" else b"")


def _stub(item: StandIn) -> str:
    return f"/* cannbuild sandbox stub of {item.path[len(INCLUDE) :]}: {item.what} */\n"


def stand_in_repo_files(repo: str, register_in_ge: bool) -> Dict[str, bytes]:
    """The files of the stand-in `repo` the sandbox serves in place of the real one: each
    header of TOOLKIT_FILES it ships, at the repository's path, and a packaging XML
    (scripts/package/<repo>/<repo>.xml) that installs them where the toolkit has them,
    which sandbox/hostside.py reads as it reads the real one.  `register_in_ge`: the
    release ships the operator definition headers in ge (<= 9.0), not metadef."""
    kernels = data_dir("kernels")
    files: Dict[str, bytes] = {}
    folders: Dict[str, List[str]] = {}
    for item in TOOLKIT_FILES:
        rel = item.path[len(INCLUDE) :]
        owner = item.repo
        folder = REPO_FOLDER.get(owner, "")
        if rel in GE_REGISTER and register_in_ge:
            owner, folder = "ge", "inc/graph_metadef/external/"
        if owner != repo:
            continue
        source = kernels / item.copy if item.copy else None
        if source is not None and source.is_dir():
            for path in sorted(source.rglob("*")):
                if path.is_file():
                    name = f"{folder}{rel}/{path.relative_to(source).as_posix()}"
                    files[name] = read_bytes(path, DATA_FILE)
        elif source is not None:
            files[folder + rel] = read_bytes(source, DATA_FILE)
        else:
            files[folder + rel] = _stub(item).encode()
        where, name = posixpath.split(rel)
        folders.setdefault(where, []).append(name)
    if repo == "opbase":  # op_common, under pkg_inc only (hicann/opbase@v9.0.0 package XML)
        common = kernels / "standin" / "opbase" / "pkg_inc"
        for path in sorted(common.rglob("*.h")):
            rel = path.relative_to(common).as_posix()
            files[f"pkg_inc/{rel}"] = read_bytes(path, DATA_FILE)
            where, name = posixpath.split(rel)
            folders.setdefault(f"pkg_inc:{where}", []).append(name)
    if repo == "libboundscheck":
        return files  # no package of its own: runtime installs its headers (hostside.THIRD_PARTY)
    xml = [f'<?xml version="1.0" encoding="UTF-8"?>\n<config name="{repo}">']
    for key in sorted(folders):
        tree, _, where = key.rpartition(":")
        top = tree or "include"
        install = f"$(TARGET_ENV)/{top}/{where}".rstrip("/")
        xml.append(f'    <file_info dst_path="{top}/{where}" install_path="{install}">')
        xml += [f'        <file value="{name}"/>' for name in sorted(folders[key])]
        xml.append("    </file_info>")
    if (
        repo == "runtime"
    ):  # runtime installs libboundscheck's headers (runtime@v9.0.0 RuntimeInc.xml:129)
        xml.append('    <file_info dst_path="include" install_path="$(TARGET_ENV)/include">')
        xml.append('        <file value="securec.h"/>')
        xml.append("    </file_info>")
    xml.append("</config>\n")
    files[f"scripts/package/{repo}/{repo}.xml"] = "\n".join(xml).encode()
    return files
