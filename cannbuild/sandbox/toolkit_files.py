"""Every header and library the sandbox toolkit holds for the builds, in one list
(kernels/toolkit/files.toml).

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

import functools
import posixpath
import shutil
from pathlib import Path
from typing import Dict, List, Tuple

from msgspec import Struct

from ..bounded import DATA_FILE, read_bytes, read_toml
from ..decoded import convert
from ..host.contents import WALL_MARKER
from ..resources import data_dir
from .files import copy, write

DECLARED, STUB, EMULATED = "declared", "stub", "emulated"
INCLUDE = "{arch}-linux/include/"
# the packages whose headers an open repository of the same name ships, and where under it
# they are (hicann/opbase@v9.0.0 include/nnopbase/, hicann/metadef inc/external/, hicann/runtime
# include/external/, cannmirror/asc-devkit include/, openeuler-mirror/libboundscheck include/)
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
        shipped = self.package in REPO_FOLDER and self.path.startswith(INCLUDE)
        return self.package if shipped else ""


EMPTY_ARCHIVE = b"!<arch>\n"  # what `ar` writes for an archive with no member


class Wall(Struct, frozen=True, kw_only=True):
    path: str  # under the toolkit's install folder
    component: str
    what: str  # what the real one does, and why the sandbox has none


class _Files(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    file: Tuple[StandIn, ...]
    wall: Tuple[Wall, ...]


@functools.lru_cache(maxsize=1)
def _files() -> _Files:
    """kernels/toolkit/files.toml: read once per process."""
    path = data_dir("kernels") / "toolkit" / "files.toml"
    return convert(read_toml(path, DATA_FILE), _Files, str(path), "Fix the shipped file.")


def toolkit_files() -> Tuple[StandIn, ...]:
    """Every header and library of the sandbox toolkit (kernels/toolkit/files.toml [[file]])."""
    return _files().file


def walls() -> Tuple[Wall, ...]:
    """What a build of the real repositories reaches that neither an open repository nor
    the sandbox provides: a stand-in that stops the build there, saying so (the marker line
    is what doctor, build/derived.py, and the failure hint, hints.py, recognise)."""
    return _files().wall


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
    """Put every file of toolkit_files() under `tk` (the toolkit's install folder), but
    those an open repository ships where the release's host side comes from them."""
    kernels = data_dir("kernels")
    for item in toolkit_files():
        if item.opbase_in_toolkit and not opbase_in_toolkit:
            continue
        if (host_side_repos and item.repo) or item.host_side:
            continue
        target = tk / item.path.format(arch=arch)
        target.parent.mkdir(parents=True, exist_ok=True)
        if item.copy:
            copy(kernels / item.copy, target)
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
    header of toolkit_files() it ships, at the repository's path, and a packaging XML
    (scripts/package/<repo>/<repo>.xml) that installs them where the toolkit has them,
    which sandbox/hostside.py reads as it reads the real one.  `register_in_ge`: the
    release ships the operator definition headers in ge (<= 9.0), not metadef."""
    kernels = data_dir("kernels")
    files: Dict[str, bytes] = {}
    folders: Dict[str, List[str]] = {}
    for item in toolkit_files():
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
