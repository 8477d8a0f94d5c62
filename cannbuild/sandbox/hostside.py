"""The sandbox toolkit's host side, laid out from CANN's open-source repositories.

A recipe names the repositories whose packages make a toolkit's host side (`[repos.X]`
with `toolkit = true`: ge, metadef, runtime, asc-devkit at the release, as
hicann/manifest's cann.xml names them, and libboundscheck, whose securec.h runtime
installs).  On the sandbox they are fetched and locked like any source; once their
checkouts are ready this module puts each file their packaging data installs where the
real toolkit has it (sandbox/packaging.py), over the emulated toolkit the sandbox made
(sandbox/toolkit.py): headers, CMake package configs and modules, host scripts.  What
no open repository provides (the device compiler, the driver, the libraries, closed
tools such as op_build) stays emulated, each named in sandbox/toolkit_files.py; op_build
is compiled here, over libregister built from the release's OpDef sources (opbuild.py).

A record (`<sandbox>/hostside.json`) keeps the commits it was laid out from and every
path it wrote, so a rerun with the same commits does nothing, and new commits first
remove what the old ones wrote.  It is written as incomplete before the first file and
complete after the last: an interrupted layout is redone.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import msgspec
from msgspec import Struct

from .. import proc, safefs
from ..bounded import SANDBOX_RECORD, read_state
from ..errors import SandboxError
from ..workspace import write_json_atomic

if TYPE_CHECKING:
    from .packaging import Placement, RepoIndex

RECORD = "hostside.json"
# Runs of two workspaces may share one sandbox (each holds its shared lock, create.py):
# one lays the host side out while the other waits, then finds it done.
LAYOUT_LOCK = ".hostside.lock"
LAYOUT = 3  # what laid a record out: a record of another layout is redone (3: install_mod)
# compilation units and build files a folder of headers holds beside them; the install
# rules copy headers (FILES_MATCHING PATTERN "*.h", asc-devkit impl/utils/CMakeLists.txt:12)
_NOT_INSTALLED = (".c", ".cc", ".cpp", ".cxx")
_NOT_INSTALLED_NAMES = ("CMakeLists.txt",)
# Third-party sources a package installs files of (runtime stages libboundscheck's
# include/ from its own build: runtime@v9.0.0 cmake/package.cmake:140-145).
THIRD_PARTY = ("libboundscheck",)


class Generated(Struct, frozen=True, kw_only=True):
    """A file a repository's build generates with one of its own scripts."""

    repo: str
    script: str  # relative to the checkout
    args: Tuple[str, ...]  # relative to the checkout; "{out}" is the file made
    installed: str  # relative to the toolkit root, {arch} the machine's
    source: str  # where the rule is


GENERATED = (
    Generated(
        repo="asc-devkit",
        script="impl/adv_api/cmake/scripts/gen_kernel_tiling_data_def.py",
        args=("include/adv_api", "{out}"),
        installed="{arch}-linux/asc/include/adv_api/kernel_tiling.h",
        source="hicann/asc-devkit@v9.0.0 impl/adv_api/CMakeLists.txt:44-51,98 "
        "(9.1.0: impl/adv_api/gen_kernel_tiling.cmake:29-35)",
    ),
)


class HostSideRecord(Struct, frozen=True, kw_only=True):
    layout: int
    key: str
    complete: bool
    commits: Dict[str, str]
    written: Tuple[str, ...] = ()  # relative to the toolkit root, deepest last
    counts: Dict[str, int] = {}  # repo -> files laid out


class HostSide(Struct, frozen=True, kw_only=True):
    record: HostSideRecord
    laid_out: bool  # False: the record said it was done for these commits


def host_side_key(commits: Mapping[str, str], release: str) -> str:
    text = f"{LAYOUT}|{release}|" + "|".join(f"{k}={v}" for k, v in sorted(commits.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def read_record(sandbox: Path) -> Optional[HostSideRecord]:
    """The record, or None (absent, or damaged and said so: the layout is redone)."""
    record: Optional[HostSideRecord] = read_state(sandbox / RECORD, SANDBOX_RECORD, HostSideRecord)
    return record


def laid_out_for(sandbox: Path, commits: Mapping[str, str]) -> bool:
    """Whether the sandbox's toolkit holds the host side of exactly these commits."""
    record = read_record(sandbox)
    return (
        record is not None
        and record.complete
        and record.layout == LAYOUT
        and record.commits == dict(commits)
    )


def lay_out_host_side(
    sandbox: Path,
    home: Path,
    arch: str,
    release: str,
    checkouts: Mapping[str, Tuple[Path, str]],
) -> HostSide:
    """Lay the host side of the repos `checkouts` names (repo -> (checkout, commit)) out
    under the toolkit at `home`, unless the record says it is done for these commits."""
    with _layout_lock(sandbox):
        commits = {repo: commit for repo, (_, commit) in checkouts.items()}
        key = host_side_key(commits, release)
        old = read_record(sandbox)
        if old is not None and old.complete and old.key == key and old.layout == LAYOUT:
            return HostSide(record=old, laid_out=False)
        if old is not None:
            _remove(home, old.written)
        # only a lay-out reads the repos' packaging rules (doctor and a no-op read the record)
        from .opbuild import build_op_build
        from .packaging import RepoIndex, placements

        record = HostSideRecord(layout=LAYOUT, key=key, complete=False, commits=commits)
        write_json_atomic(sandbox / RECORD, msgspec.to_builtins(record))
        indexes = {repo: RepoIndex(repo, path) for repo, (path, _) in checkouts.items()}
        others = [indexes[r] for r in THIRD_PARTY if r in indexes]
        values = {"ASCEND_VER": release}
        # share/info/<pkg> is the package's installer and version record: the sandbox
        # writes those for the release it emulates (sandbox/toolkit.py)
        planned = {
            repo: [
                e
                for e in placements(index, arch, values, others)
                if not e.installed.startswith("share/")
            ]
            for repo, index in indexes.items()
            if repo not in THIRD_PARTY
        }
        # the links it will make, named before the first: _apply takes a link already in
        # place for the emulated toolkit's own, so one an interrupted layout made would be
        # left out of the record; the redo removes these first (above) and makes them again
        links = [
            e.installed
            for entries in planned.values()
            for e in entries
            if e.kind == "link" and not _linked(_inside(home, e.installed), e.source)
        ]
        record = HostSideRecord(
            layout=LAYOUT, key=key, complete=False, commits=commits, written=tuple(links)
        )
        write_json_atomic(sandbox / RECORD, msgspec.to_builtins(record))
        written: List[str] = []
        counts: Dict[str, int] = {}
        for repo, entries in planned.items():
            counts[repo] = _apply(home, entries, indexes, written)
        for gen in GENERATED:  # a stand-in repository has not the script: nothing to generate
            if gen.repo in indexes and (indexes[gen.repo].root / gen.script).is_file():
                written.append(_generate(home, arch, gen, indexes[gen.repo].root))
        # the closed op_build, emulated over the release's own OpDef implementation (opbuild.py)
        roots = {repo: path for repo, (path, _) in checkouts.items()}
        written += build_op_build(home, arch, roots, commits)
        record = HostSideRecord(
            layout=LAYOUT,
            key=key,
            complete=True,
            commits=commits,
            written=tuple(written),
            counts=counts,
        )
        write_json_atomic(sandbox / RECORD, msgspec.to_builtins(record))
        return HostSide(record=record, laid_out=True)


@contextlib.contextmanager
def _layout_lock(sandbox: Path) -> Iterator[None]:
    fd = safefs.open_lock(sandbox / LAYOUT_LOCK, "the sandbox's host-side lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the kernel drops it if the holder dies
        yield
    finally:
        os.close(fd)


def _inside(home: Path, rel: str) -> Path:
    target = Path(os.path.normpath(home / rel))
    if target != home and home not in target.parents:
        raise SandboxError(
            f"a packaging entry installs {rel!r}, outside the sandbox toolkit {home}.",
            "The repository's scripts/package XML names a path cannbuild will not write; "
            "check the checkout.",
        )
    return target


def _apply(
    home: Path, entries: Sequence[Placement], indexes: Mapping[str, RepoIndex], written: List[str]
) -> int:
    count = 0
    for entry in entries:
        target = _inside(home, entry.installed)
        if entry.kind == "link":
            if _linked(target, entry.source):
                continue  # the emulated toolkit's own link (include -> <arch>-linux/include)
            safefs.discard(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(entry.source, target)
            written.append(entry.installed)
            continue
        if entry.kind == "generated":
            safefs.discard(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(entry.text, encoding="utf-8")
            written.append(entry.installed)
            continue
        source = indexes[entry.repo].root / entry.source
        if entry.kind == "dir":
            for dirpath, dirnames, filenames in os.walk(source):
                dirnames.sort()
                rel = os.path.relpath(dirpath, source)
                for name in sorted(filenames):
                    if name.endswith(_NOT_INSTALLED) or name in _NOT_INSTALLED_NAMES:
                        continue
                    sub = os.path.normpath(os.path.join(entry.installed, rel, name))
                    count += _copy(Path(dirpath) / name, _inside(home, sub))
                    written.append(sub)
        else:
            count += _copy(source, target)
            if entry.executable and target.is_file():  # a tool the package installs as one
                target.chmod(0o755)
            written.append(entry.installed)
    return count


def _linked(target: Path, source: str) -> bool:
    return target.is_symlink() and os.readlink(target) == source


def _copy(source: Path, target: Path) -> int:
    if source.is_symlink() or not source.is_file():
        return 0  # a link in a checkout is not followed out of it
    safefs.discard(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return 1


def _remove(home: Path, written: Sequence[str]) -> None:
    for rel in reversed(written):
        target = Path(os.path.normpath(home / rel))
        if home in target.parents and (target.is_symlink() or target.is_file()):
            target.unlink()


def _generate(home: Path, arch: str, gen: Generated, checkout: Path) -> str:
    installed = gen.installed.format(arch=arch)
    target = _inside(home, installed)
    safefs.discard(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    args = [str(target) if a == "{out}" else str(checkout / a) for a in gen.args]
    done = proc.run([sys.executable, str(checkout / gen.script), *args], cwd=checkout, timeout=300)
    if done.returncode != 0 or not target.is_file():
        raise SandboxError(
            f"{gen.repo}'s {gen.script} ({gen.source}) did not make {installed} for the "
            f"sandbox toolkit (exit {done.returncode}): {done.stderr.decode('utf-8', 'replace').strip()[-500:]}",
            "The script is upstream's; check the checkout at its locked commit.",
        )
    return installed
