"""Which CANN package ships a toolkit header or a find_package module's files.

Keyed by include prefix (the first folder of `#include <register/...>`, or the whole
name for a header at the top); each row cites where the fact comes from: the open-source
project the header lives in, or the "compile with ci" search path of the module that
looks for it (cannmirror/ops-transformer@v9.0.0 cmake/modules/Find*.cmake name the
source tree of each component next to the installed path).  An include no row matches is
not a toolkit header cannbuild can vouch for (the C++ library, a third-party header, a
generated one): it is counted, not checked.
"""

from __future__ import annotations

from typing import Optional, Tuple

from msgspec import Struct


class Shipper(Struct, frozen=True, kw_only=True):
    prefix: str  # "register/" (a folder) or "securec.h" (a header at the top)
    package: str  # the CANN package (share/info/<package>) or project that ships it
    source: str  # where that is read


_METADEF = "hicann/metadef inc/external/"
_OT = "ops-transformer@v9.0.0 cmake/modules/"
HEADERS: Tuple[Shipper, ...] = (
    Shipper(
        prefix="register/", package="metadef", source=_METADEF + "register/ (and asc/register/)"
    ),
    Shipper(prefix="exe_graph/", package="metadef", source=_METADEF + "exe_graph/runtime/"),
    Shipper(prefix="graph/", package="metadef", source=_METADEF + "graph/"),
    Shipper(prefix="ge_common/", package="metadef", source=_METADEF + "ge_common/"),
    Shipper(
        prefix="base/alog_pub.h",
        package="runtime (dlog)",
        source=_OT + "Findalog.cmake:46-52 (base/alog_pub.h under pkg_inc)",
    ),
    Shipper(prefix="base/", package="metadef", source=_METADEF + "base/ (err_msg.h, ...)"),
    Shipper(
        prefix="platform/",
        package="metadef or runtime (platform)",
        source=_OT + "Findplatform.cmake:18-22 (the metadef/inc/external and runtime "
        "platform source trees, compile with ci)",
    ),
    Shipper(
        prefix="tiling/",
        package="asc-devkit",
        source=_OT + "Findtilingapi.cmake (tiling/tiling_api.h, libtiling_api.a); asc-devkit "
        "ships tiling (recipes/9.0.toml)",
    ),
    Shipper(
        prefix="ascendc/",
        package="asc-devkit",
        source=_OT + "Findtilingapi.cmake:47-53 (the ascendc/ folders beside tiling/)",
    ),
    Shipper(
        prefix="securec.h",
        package="libboundscheck (c_sec)",
        source="openeuler-mirror/libboundscheck include/securec.h; "
        + _OT
        + "Findsecurec.cmake:16-18 (${TOP_DIR}/abl/libc_sec/include)",
    ),
    Shipper(
        prefix="securectype.h",
        package="libboundscheck (c_sec)",
        source="openeuler-mirror/libboundscheck include/securectype.h",
    ),
    Shipper(
        prefix="acl/",
        package="runtime",
        source=_OT + "Findruntime.cmake:14-17 (${TOP_DIR}/runtime/include/external)",
    ),
    Shipper(
        prefix="runtime/",
        package="runtime",
        source=_OT + "Findruntime.cmake:33-36 (${TOP_DIR}/runtime/pkg_inc/runtime)",
    ),
    Shipper(
        prefix="toolchain/",
        package="runtime (dlog)",
        source=_OT + "Finddlog.cmake:47-50 (${TOP_DIR}/abl/slog/inc/toolchain)",
    ),
    Shipper(
        prefix="dlog_pub.h",
        package="runtime (dlog)",
        source=_OT + "Finddlog.cmake:47-57",
    ),
    Shipper(
        prefix="alog_pub.h",
        package="runtime (dlog)",
        source=_OT + "Findalog.cmake:46-52",
    ),
    Shipper(
        prefix="aclnn/",
        package="opbase",
        source=_OT + "Findnnopbase.cmake:19-21 (${TOP_DIR}/ops-base/include/nnopbase); opbase's "
        "install tree holds include/aclnn (reference cann-build-systems.md §1.3)",
    ),
    Shipper(
        prefix="opdev/",
        package="opbase",
        source=_OT + "Findnnopbase.cmake:24-26 (aclnn/opdev, ${TOP_DIR}/ops-base/include/nnopbase)",
    ),
    Shipper(
        prefix="op_common/",
        package="opbase",
        source=_OT + "FindOPBASE.cmake (op_common/op_host/util/opbase_export.h; pkg_inc, §1.3)",
    ),
)

# find_package modules by name: the package their lookups belong to
MODULES = {
    "dlog": "runtime (dlog)",
    "alog": "runtime (dlog)",
    "unified_dlog": "runtime (dlog)",
    "runtime": "runtime",
    "platform": "metadef",
    "metadef": "metadef",
    "nnopbase": "opbase",
    "OPBASE": "opbase",
    "tilingapi": "asc-devkit",
    "securec": "libboundscheck (c_sec)",
}
# The package a recipe's own opbase steps provide (built and installed into the workspace
# overlay before ops-transformer configures, recipes/8.5.toml).
OPBASE_PACKAGE = "opbase"


def shipper_of(header: str) -> Optional[Shipper]:
    """The row whose prefix `header` starts with (a folder) or is (a top-level header)."""
    for row in HEADERS:  # in order: "base/alog_pub.h" before "base/"
        if header == row.prefix or (row.prefix.endswith("/") and header.startswith(row.prefix)):
            return row
    return None


def module_package(module: str) -> str:
    return MODULES.get(module, f"the package that ships {module} (not in cannbuild's table)")
