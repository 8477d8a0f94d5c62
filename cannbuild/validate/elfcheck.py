"""Check a built operator library as the dynamic loader would see it.

Read with pyelftools (not by parsing `nm`/`ldd` text): the ELF machine must be
the host's, the aclnn entry points must be exported (defined, global, default
visibility), and every DT_NEEDED entry must resolve through RPATH/RUNPATH,
LD_LIBRARY_PATH and the system paths, transitively for non-system libraries.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection
from msgspec import Struct, field

from ..bounded import BINARY, open_binary
from ..errors import UsageError
from ..proc import run

# pyelftools' names for e_machine.
MACHINES = {"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64"}
# Where the loader looks last, when neither the runpath nor LD_LIBRARY_PATH nor its cache has a
# library.
SYSTEM_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")


class ElfInfo(Struct, frozen=True, kw_only=True):
    machine: str
    elfclass: int
    exported: Set[str]
    needed: Tuple[str, ...]
    rpaths: Tuple[str, ...]


class LibraryCheck(Struct, frozen=True, kw_only=True):
    path: Path
    ok: bool
    problems: Tuple[str, ...]
    exported: Tuple[str, ...] = ()
    resolved: Dict[str, str] = field(default_factory=dict)


def read_elf(path: Path) -> ElfInfo:
    with open_binary(path, BINARY) as fh:
        elf = ELFFile(fh)
        exported: Set[str] = set()
        dynsym = elf.get_section_by_name(".dynsym")
        if isinstance(dynsym, SymbolTableSection):
            for sym in dynsym.iter_symbols():
                # What `dlsym` can find from outside: defined here (not SHN_UNDEF), global or weak,
                # and not hidden.  `aclnnFlashAttentionScoreGetWorkspaceSize` must pass this in
                # libcust_opapi.so.
                if (
                    sym.name
                    and sym["st_shndx"] != "SHN_UNDEF"
                    and sym["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
                    and sym["st_other"]["visibility"] == "STV_DEFAULT"
                ):
                    exported.add(sym.name)
        needed: List[str] = []
        rpaths: List[str] = []
        for section in elf.iter_sections():
            if not isinstance(section, DynamicSection):
                continue
            tag: Any  # pyelftools sets needed/runpath/rpath per tag kind
            for tag in section.iter_tags():
                # DT_RUNPATH and the older DT_RPATH both name folders searched for this
                # library's own DT_NEEDED entries.
                if tag.entry.d_tag == "DT_NEEDED":
                    needed.append(tag.needed)
                elif tag.entry.d_tag == "DT_RUNPATH":
                    rpaths.extend(tag.runpath.split(":"))
                elif tag.entry.d_tag == "DT_RPATH":
                    rpaths.extend(tag.rpath.split(":"))
        origin = str(path.parent)
        # `$ORIGIN` is the folder of the library that carries the runpath.
        rpaths = [r.replace("$ORIGIN", origin).replace("${ORIGIN}", origin) for r in rpaths if r]
        return ElfInfo(
            machine=elf["e_machine"],
            elfclass=elf.elfclass,
            exported=exported,
            needed=tuple(needed),
            rpaths=tuple(rpaths),
        )


def system_libraries() -> Dict[str, str]:
    """soname -> path from the loader cache (`ldconfig -p`), plus the default dirs."""
    found: Dict[str, str] = {}
    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        try:
            out = run([ldconfig, "-p"], timeout=10).stdout.decode("utf-8", "replace")
        except (OSError, subprocess.TimeoutExpired):
            continue
        # `ldconfig -p` prints a count line, then one entry per library:
        #     libz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1
        for line in out.splitlines()[1:]:
            if "=>" not in line:
                continue
            name = line.strip().split(" ", 1)[0]
            path = line.rsplit("=>", 1)[1].strip()
            found.setdefault(name, path)
        if found:
            break
    return found


def _search(name: str, dirs: Sequence[str], machine: str) -> Optional[str]:
    for directory in dirs:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            try:
                # A library of the wrong arch in a search dir is skipped, as the loader skips it.
                if read_elf(Path(candidate)).machine == machine:
                    return candidate
            except (ELFError, OSError, UsageError):
                continue
    return None


def check_library(
    path: Path, symbols: Sequence[str], env: Mapping[str, str], host_arch: str
) -> LibraryCheck:
    if not path.is_file():
        return LibraryCheck(path=path, ok=False, problems=(f"{path} does not exist",))
    try:
        info = read_elf(path)
    except (ELFError, OSError, UsageError) as exc:
        return LibraryCheck(
            path=path, ok=False, problems=(f"{path.name} is not a readable ELF file ({exc})",)
        )
    problems: List[str] = []
    want_machine = MACHINES.get(host_arch)
    if want_machine and info.machine != want_machine:
        problems.append(f"{path.name} is built for {info.machine}, this host needs {want_machine}")
    missing = [s for s in symbols if s not in info.exported]
    if missing:
        problems.append(f"{path.name} does not export {', '.join(missing)}")
    ld_path = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    system = system_libraries()
    resolved: Dict[str, str] = {}
    queue: List[Tuple[str, ElfInfo, str]] = [(path.name, info, str(path))]
    seen: Set[str] = set()
    while queue:
        owner, owner_info, _owner_path = queue.pop(0)
        for name in owner_info.needed:
            if name in seen:
                continue
            seen.add(name)
            # Being found at all is what counts here.  The order (rpath, then LD_LIBRARY_PATH)
            # is ld.so's for DT_RPATH; for DT_RUNPATH it tries LD_LIBRARY_PATH first, so
            # `resolved` may name another copy than the loader would pick.
            hit = _search(name, list(owner_info.rpaths) + ld_path, owner_info.machine)
            if hit is None and name in system:
                hit = system[name]
                resolved[name] = hit
                continue  # system libraries: trust the distribution
            if hit is None:
                hit = _search(name, SYSTEM_DIRS, owner_info.machine)
            if hit is None:
                problems.append(
                    f"{name} (needed by {owner}) is not found on RPATH, LD_LIBRARY_PATH or the system paths"
                )
                continue
            resolved[name] = hit
            try:
                # A found library's own needs are followed too: one missing link anywhere
                # fails the dlopen.  System libraries (above) are trusted as they are.
                queue.append((name, read_elf(Path(hit)), hit))
            except (ELFError, OSError):
                problems.append(f"{hit} (needed by {owner}) is not a readable ELF file")
    return LibraryCheck(
        path=path,
        ok=not problems,
        problems=tuple(problems),
        exported=tuple(sorted(s for s in symbols if s in info.exported)),
        resolved=resolved,
    )
