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
(kernels/toolkit/files.toml [[wall]]).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import List, Mapping, Sequence, Tuple

from msgspec import Struct

from .. import proc, usercache
from ..bounded import DATA_FILE, read_bytes, read_toml
from ..decoded import convert
from ..errors import SandboxError
from ..resources import data_dir
from .files import write
from .toolkit_files import wall_script, walls

LIBREGISTER = "{arch}-linux/lib64/libregister.so"
OP_BUILD = "tools/opbuild/op_build"


class OpDefSources(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where a release keeps the OpDef implementation libregister is built from."""

    repo: str
    sources: Tuple[str, ...]  # globs, relative to the checkout
    includes: Tuple[str, ...] = ()  # the repo's own include folders those sources need
    # the toolkit's include folders (relative to <arch>-linux) the repo's build adds
    toolkit_includes: Tuple[str, ...] = ()
    source: str  # where the rule is


class _SourcesFile(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    opdef: Tuple[OpDefSources, ...]
    ascend_string: OpDefSources


def _sources_file() -> _SourcesFile:
    path = data_dir("kernels") / "opbuild" / "sources.toml"
    return convert(read_toml(path, DATA_FILE), _SourcesFile, str(path), "Fix the shipped file.")


def _sources(spec: OpDefSources, roots: Mapping[str, Path]) -> List[Path]:
    root = roots.get(spec.repo)
    if root is None:
        return []
    return sorted(p for pattern in spec.sources for p in root.glob(pattern) if p.is_file())


def build_op_build(
    home: Path, arch: str, roots: Mapping[str, Path], commits: Mapping[str, str]
) -> Tuple[str, ...]:
    """Compile libregister from the checkouts' OpDef sources and op_build over it, into the
    toolkit at `home`; returns the paths written (relative to `home`), none where the
    checkouts hold no OpDef implementation.  Compiled once per user for these commits
    (cannbuild/usercache.py), like the emulated runtime."""
    rules = _sources_file()  # kernels/opbuild/sources.toml
    opdef = next((s for s in rules.opdef if _sources(s, roots)), None)
    strings = _sources(rules.ascend_string, roots)
    if opdef is None or not strings:
        _keep_wall(home, arch)
        return ()
    kernels = data_dir("kernels") / "opbuild"
    archdir = home / f"{arch}-linux"
    includes = [archdir / "include", archdir / "pkg_inc", archdir / "pkg_inc" / "base"]
    includes += [archdir / "include" / "external", *(roots[opdef.repo] / i for i in opdef.includes)]
    includes += [archdir / i for i in opdef.toolkit_includes]
    includes += [roots[rules.ascend_string.repo] / i for i in rules.ascend_string.includes]
    flags = ["-std=c++17", "-O1", "-fPIC", *(f"-I{p}" for p in includes)]
    cxx = os.path.realpath(shutil.which(os.environ.get("CXX") or "c++") or "c++")
    register = LIBREGISTER.format(arch=arch)
    # op_build finds libregister where the toolkit has it, wherever the toolkit is
    rpath = os.path.relpath(Path(register).parent, Path(OP_BUILD).parent)

    def make(out: Path) -> None:
        library = out / Path(register).name
        units = [*_sources(opdef, roots), *strings, kernels / "dlog_off.cpp"]
        objects = _compile_units(cxx, flags, units, out, f"{opdef.repo}'s OpDef sources")
        _run(
            [cxx, "-shared", f"-Wl,-soname,{library.name}", "-o", str(library), *objects],
            f"linking {library.name}",
        )
        link = [f"-L{out}", "-lregister", "-ldl", f"-Wl,-rpath,$ORIGIN/{rpath}"]
        source = str(kernels / "op_build.cpp")
        _run([cxx, *flags, "-o", str(out / "op_build"), source, *link], "the sandbox's op_build")
        for obj in objects:
            os.unlink(obj)

    digest = hashlib.sha256(f"cannbuild op_build 2|{arch}|{cxx}|{flags[:3]}\n".encode())
    digest.update(repr(sorted(commits.items())).encode())
    for path in sorted(kernels.iterdir()):
        digest.update(read_bytes(path, DATA_FILE))
    root = usercache.cache_root(os.environ)
    with tempfile.TemporaryDirectory(prefix="cannbuild-opbuild-") as scratch:
        if root is None:
            built = Path(scratch)
            make(built)
        else:
            built, _ = usercache.cached(root, "opbuild", digest.hexdigest()[:32], make)
        for name, rel in ((Path(register).name, register), ("op_build", OP_BUILD)):
            target = home / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built / name, f"{target}.tmp")
            os.chmod(f"{target}.tmp", 0o755)
            os.replace(f"{target}.tmp", target)
    return (register, OP_BUILD)


def _keep_wall(home: Path, arch: str) -> None:
    """The wall and the empty libregister, where a host side of other commits had replaced
    them and was removed (hostside._remove)."""
    tool = home / OP_BUILD
    if not tool.exists():
        wall = next(w for w in walls() if w.path == OP_BUILD)
        write(tool, wall_script(wall, arch), executable=True)
        write(home / LIBREGISTER.format(arch=arch), "")


def _compile_units(
    cxx: str, flags: List[str], units: Sequence[Path], out: Path, what: str
) -> List[str]:
    """Each unit to an object in `out`, as many at a time as there are cores."""
    jobs = max(os.cpu_count() or 1, 1)
    objects = [str(out / f"{i}-{unit.name}.o") for i, unit in enumerate(units)]
    commands = [[cxx, *flags, "-c", "-o", obj, str(unit)] for obj, unit in zip(objects, units)]
    for start in range(0, len(commands), jobs):
        batch = commands[start : start + jobs]
        running = [proc.popen(c, stdout=subprocess.DEVNULL) for c in batch]
        try:
            said = [p.communicate(timeout=1800)[1] for p in running]  # all end before a failure
        except BaseException:  # a timeout, Ctrl-C, SIGTERM: every compiler's group goes with us
            for process in running:
                proc.kill_group(process, grace_s=0.5)
            raise
        for command, process, err in zip(batch, running, said):
            _check(process.returncode, err, f"{what} ({command[-1]})")
    return objects


def _run(command: List[str], what: str) -> None:
    done = proc.run(command, timeout=1800)
    _check(done.returncode, done.stderr, what)


def _check(returncode: int, stderr: bytes, what: str) -> None:
    if returncode != 0:
        said = stderr.decode("utf-8", "replace").strip()[-800:]
        raise SandboxError(
            f"compiling {what} failed (exit {returncode}): {said}",
            "The sources are upstream's at the locked commit, the headers the sandbox toolkit's "
            "host side laid out from the same release: check that the host-side repos are of "
            "one release.",
        )
