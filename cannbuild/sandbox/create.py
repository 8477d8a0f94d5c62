"""`cannbuild sandbox create`: lay out (or reuse) an emulated Ascend host.

Idempotent: a finished sandbox records a key of its spec and of every source it
is made from; the same key means nothing to do.  A `.creating` mark is written
first and removed last, so an interrupted creation is noticed and redone.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence

from msgspec import Struct

from .. import facts, safefs
from ..bounded import DATA_FILE, MEMO, SANDBOX_RECORD, read_bytes, read_state
from ..decoded import to_plain
from ..errors import SandboxError, UsageError
from ..lazy import lazy_module
from ..ownership import claim
from ..phases import PhaseSink, no_phases
from ..resources import data_dir
from ..workspace import remember, write_json_atomic
from .files import CommandLog, write
from .spec import CREATING_MARK, INFO_FILE, SandboxInfo, SandboxSpec, load_info

if TYPE_CHECKING:
    from . import hardware, releases, repos, toolkit
else:  # the tables and builders: a reused sandbox does not load them
    hardware = lazy_module("cannbuild.sandbox.hardware")
    releases = lazy_module("cannbuild.sandbox.releases")
    repos = lazy_module("cannbuild.sandbox.repos")
    toolkit = lazy_module("cannbuild.sandbox.toolkit")

LOCK_FILE = ".lock"
KEY_MEMO = "sources-key.json"  # sources_key, kept with the mark of its files
# hostside.RECORD: a remade toolkit holds no host side until the next run lays it out
MANAGED = ("sysroot", "mirror", ".build", "create.log", INFO_FILE, "hostside.json")
SANDBOX_FORMAT = "1"


class CreateResult(Struct, frozen=True, kw_only=True):
    info: SandboxInfo
    created: bool  # False: an identical sandbox was already there
    lease: Optional[SandboxLease] = None


def _files(root: Path) -> Iterable[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _source_roots() -> List[Path]:
    return [
        data_dir("templates") / "sandbox",
        data_dir("kernels") / "emu",
        data_dir("kernels") / "standin",
        data_dir("kernels") / "toolkit",
        # cannbuild's own sandbox code too: a changed emulator means a sandbox made anew.
        Path(__file__).resolve().parent,
    ]


def _stat_mark(roots: Sequence[Path], files: Sequence[Path] = ()) -> str:
    """The name, size, inode and mtime of every source file under `roots` and of `files`:
    what changes when one does."""
    paths: List[str] = []
    for root in roots:
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            paths += (os.path.join(folder, name) for name in sorted(names))
    digest = hashlib.sha256()
    for path in [*paths, *map(str, files)]:
        st = os.stat(path)
        digest.update(f"{path}|{st.st_size}|{st.st_ino}|{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def sources_key(spec: SandboxSpec, cxx: str) -> str:
    """Hash of the spec and of everything a sandbox is made from.  Reading and hashing
    those files was 10 ms of every run on a sandbox, so the hash is kept in the sandbox
    folder with a mark of their names, sizes and times: a run whose mark matches takes it."""
    # The compiler is part of the key: another one builds other emulation libraries.
    head = f"{SANDBOX_FORMAT}|{spec.variant}|{spec.cann}|{spec.dir}|{cxx}"
    roots = _source_roots()
    data = facts.files(facts.SANDBOX)  # a user's cannbuild-recipes/sandbox/ too
    mark = hashlib.sha256(f"{head}|{_stat_mark(roots, data)}".encode()).hexdigest()
    kept = read_state(spec.dir / KEY_MEMO, MEMO, Dict[str, str])
    if kept is not None and kept.get("mark") == mark and kept.get("key"):
        return kept["key"]
    key = _content_key(head, roots, data)
    if (spec.dir / INFO_FILE).is_file():  # a sandbox folder cannbuild made
        remember(spec.dir / KEY_MEMO, {"mark": mark, "key": key})
    return key


def _content_key(head: str, roots: Sequence[Path], data: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    digest.update(head.encode())
    for root in roots:
        for path in _files(root):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(read_bytes(path, DATA_FILE))
    # and the data it is made from: the shipped releases and stand-ins, and a user's
    for path in data:
        digest.update(f"{path.name}\n".encode())
        digest.update(read_bytes(path, DATA_FILE))
    return digest.hexdigest()


def mirror_key() -> str:
    """What decides the mirror's bytes: the sources and data of every sandbox, not one
    sandbox's variant, CANN, folder or compiler (the mirror holds every release's stand-ins
    and commits have fixed authors and dates)."""
    return _content_key(f"mirror|{SANDBOX_FORMAT}", _source_roots(), facts.files(facts.SANDBOX))


def find_cxx() -> Optional[str]:
    for name in ("c++", "g++", "clang++"):
        found = shutil.which(name)
        if found:
            return found
    return None


def check_prerequisites() -> str:
    missing = [tool for tool in ("cmake", "git", "bash") if shutil.which(tool) is None]
    cxx = find_cxx()
    if cxx is None:
        missing.append("a C++ compiler (c++/g++)")
    if missing:
        raise SandboxError(
            f"creating a sandbox needs {', '.join(missing)}, which this machine does not have.",
            "Install them (Debian/Ubuntu: apt install cmake g++ git) and run the command again.",
        )
    return cxx  # type: ignore[return-value]


DEFAULT_VARIANT = "A2"
DEFAULT_CANN = "8.5.0"


def recorded_spec(directory: Path) -> Optional[SandboxSpec]:
    """The variant and CANN a sandbox folder was made with (even if its sources changed
    since, which only means it is remade the same)."""
    data = read_state(directory / INFO_FILE, SANDBOX_RECORD)
    if not isinstance(data, dict) or not {"variant", "cann"} <= set(data):
        return None
    return SandboxSpec(dir=directory, variant=str(data["variant"]), cann=str(data["cann"]))


def resolve_spec(directory: Path, variant: Optional[str], cann: Optional[str]) -> SandboxSpec:
    """The sandbox a run means: what it asks for, else what the folder already holds, else
    the default; asking for another variant or CANN than the folder holds is an error."""
    directory = directory.resolve()
    existing = recorded_spec(directory)
    if existing is None:
        return SandboxSpec(
            dir=directory, variant=variant or DEFAULT_VARIANT, cann=cann or DEFAULT_CANN
        )
    want = SandboxSpec(
        dir=directory, variant=variant or existing.variant, cann=cann or existing.cann
    )
    if (want.variant, want.cann.lower()) != (existing.variant, existing.cann.lower()):
        raise UsageError(
            f"the sandbox at {directory} is an {existing.variant} host with CANN {existing.cann}; "
            f"this run asks for {want.variant} with CANN {want.cann}.",
            f"Pass --variant {existing.variant} --cann {existing.cann} (or neither) to use it, or "
            "another --workspace (or --dir) for the other sandbox; cannbuild does not replace a "
            "sandbox of another kind.",
        )
    return existing if (variant, cann) == (None, None) else want


def plan_sandbox(spec: SandboxSpec) -> str:
    """What `create_sandbox(spec)` would do, without doing it (for --dry-run)."""
    if spec.variant not in hardware.variants():
        return f"would refuse: --variant {spec.variant!r} is not a sandbox variant"
    releases.release(spec.cann)
    directory = spec.dir.resolve()
    existing = load_info(directory)
    cxx = find_cxx() or ""
    key = sources_key(SandboxSpec(dir=directory, variant=spec.variant, cann=spec.cann), cxx)
    if existing is not None and existing.key == key:
        return f"up to date: {existing.variant} host with CANN {existing.cann} at {directory}"
    verb = "remake" if existing is not None else "create"
    return f"would {verb} an {spec.variant} host with CANN {spec.cann} at {directory}"


class SandboxLease:
    """A shared flock on `<sandbox>/.lock`: while a run holds one, no other run replaces
    the sandbox under it (creation takes the lock exclusively).  The kernel drops it if
    the process dies."""

    def __init__(self, fd: int) -> None:
        self._fd: Optional[int] = fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> SandboxLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def create_sandbox(spec: SandboxSpec, phases: PhaseSink = no_phases) -> CreateResult:
    """The sandbox `spec` names, made if it is missing, half-made or built from older
    sources; returned with a lease the caller holds while it uses the sandbox.

    Concurrent creations of one sandbox wait for each other and all succeed; a sandbox
    another run holds a lease on is never replaced (SandboxError instead).  The key
    holds the variant and CANN a sandbox was made for, so a sandbox found up to date was
    made from a valid spec; the spec is checked before anything is made.  `phases` hears
    each phase of a creation as it starts (a sandbox found up to date has none)."""
    cxx = check_prerequisites()
    directory = spec.dir.resolve()
    key = sources_key(SandboxSpec(dir=directory, variant=spec.variant, cann=spec.cann), cxx)
    existing = load_info(directory) if (directory / LOCK_FILE).exists() else None
    if existing is None or existing.key != key:
        _check_spec(spec)
    claim(directory, "sandbox", "the sandbox folder (--dir, or <workspace>/sandbox)")
    fd = safefs.open_lock(directory / LOCK_FILE, "the sandbox lock")
    lease = SandboxLease(fd)
    # flock cannot turn a shared lock into an exclusive one atomically: drop it, try the exclusive
    # one without waiting, and look again.  A run using the sandbox holds its shared lock
    # throughout, so after three rounds the answer is "in use", not "wait longer".
    for _attempt in range(3):
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            phases("waiting for another run that creates this sandbox")
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits while another run creates it
        existing = load_info(directory)
        if existing is not None and existing.key == key:
            return CreateResult(info=existing, created=False, lease=lease)
        fcntl.flock(fd, fcntl.LOCK_UN)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            continue  # another run creates it (wait and look again) or uses it (refused below)
        existing = load_info(directory)  # made by the run that held the lock before us?
        if existing is not None and existing.key == key:
            fcntl.flock(fd, fcntl.LOCK_SH)
            return CreateResult(info=existing, created=False, lease=lease)
        info = _lay_out(spec, directory, key, cxx, phases)
        sources_key(SandboxSpec(dir=directory, variant=spec.variant, cann=spec.cann), cxx)  # kept
        fcntl.flock(fd, fcntl.LOCK_SH)  # keep using what we made
        return CreateResult(info=info, created=True, lease=lease)
    lease.close()
    raise SandboxError(
        f"the sandbox at {directory} must be remade (cannbuild's emulation changed since it was "
        "made), but another run is using it.",
        "Wait for that run to finish, or pass another --workspace for a sandbox of your own.",
    )


def _check_spec(spec: SandboxSpec) -> None:
    if spec.variant not in hardware.variants():
        raise SandboxError(
            f"--variant {spec.variant!r} is not a sandbox variant.", "Use A2 (910B) or A3 (910_93)."
        )
    releases.release(spec.cann)  # a CANN the sandbox does not emulate is a usage error naming them


def _lay_out(
    spec: SandboxSpec, directory: Path, key: str, cxx: str, phases: PhaseSink
) -> SandboxInfo:
    """Make the sandbox's tree; the caller holds the exclusive lock.  (The builders are
    imported on first use, here: a run that reuses its sandbox does not load them.)"""
    phases(f"making an {spec.variant} host with CANN {spec.cann} at {directory}")
    # Only the managed entries go: the lock file and anything the user put there stay.
    for name in MANAGED:  # a different or half-made sandbox: start over
        safefs.discard(directory / name)
    write(
        directory / CREATING_MARK, "sandbox creation in progress; an interrupted run leaves this\n"
    )
    log = CommandLog(path=directory / "create.log")
    rel = releases.release(spec.cann)
    variant = hardware.variants()[spec.variant]
    sysroot = directory / "sysroot"
    emu = toolkit.compile_emulation(
        directory / ".build" / "emu", log, rel.opbase_in_toolkit, rel.version, phases
    )
    mirror = directory / "mirror"
    phases("laying out the toolkit")
    tree = toolkit.lay_out_toolkit(sysroot, rel, variant, emu, cxx, network=mirror.as_uri() + "/")
    toolkit.lay_out_host_tools(sysroot)
    phases(f"laying out the {spec.variant} hardware (NPUs, driver, npu-smi)")
    hardware.lay_out_hardware(sysroot, variant, rel)
    repos.lay_out_mirror(mirror, directory / ".build" / "repos", log, mirror_key(), phases)
    info = SandboxInfo(
        dir=directory,
        variant=spec.variant,
        cann=spec.cann,
        key=key,
        sysroot=sysroot,
        toolkit=tree.home,
        set_env=tree.set_env,
        mirror=mirror,
        upstream=releases.UPSTREAM,
        soc=variant.soc,
        chip=variant.chip,
    )
    write_json_atomic(directory / INFO_FILE, to_plain(info))
    (directory / CREATING_MARK).unlink()
    return info
