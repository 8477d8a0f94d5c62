"""`cannbuild sandbox create`: lay out (or reuse) an emulated Ascend host.

Idempotent: a finished sandbox records a key of its spec and of every source it
is made from; the same key means nothing to do.  A `.creating` mark is written
first and removed last, so an interrupted creation is noticed and redone.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from ..errors import SandboxError, UsageError
from ..ownership import claim
from ..resources import data_dir
from ..workspace import write_json_atomic
from .files import CommandLog, write
from .hardware import VARIANTS, lay_out_hardware
from .releases import UPSTREAM, release
from .repos import build_repos, build_third_party
from .spec import CREATING_MARK, INFO_FILE, SandboxInfo, SandboxSpec, load_info
from .toolkit import compile_emulation, lay_out_toolkit

MANAGED = ("sysroot", "mirror", ".build", "create.log", INFO_FILE)
SANDBOX_FORMAT = "1"


@dataclass(frozen=True)
class CreateResult:
    info: SandboxInfo
    created: bool  # False: an identical sandbox was already there


def _files(root: Path) -> Iterable[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def sources_key(spec: SandboxSpec, cxx: str) -> str:
    """Hash of the spec and of everything a sandbox is made from."""
    digest = hashlib.sha256()
    digest.update(f"{SANDBOX_FORMAT}|{spec.variant}|{spec.cann}|{spec.dir}|{cxx}".encode())
    package = Path(__file__).resolve().parent
    roots = [
        data_dir("templates") / "sandbox",
        data_dir("kernels") / "emu",
        data_dir("kernels") / "standin",
        package,
    ]
    for root in roots:
        for path in _files(root):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


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
    import json

    try:
        data = json.loads((directory / INFO_FILE).read_text(encoding="utf-8"))
        return SandboxSpec(directory, str(data["variant"]), str(data["cann"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def resolve_spec(directory: Path, variant: Optional[str], cann: Optional[str]) -> SandboxSpec:
    """The sandbox a run means: what it asks for, else what the folder already holds, else
    the default; asking for another variant or CANN than the folder holds is an error."""
    directory = directory.resolve()
    existing = recorded_spec(directory)
    if existing is None:
        return SandboxSpec(directory, variant or DEFAULT_VARIANT, cann or DEFAULT_CANN)
    want = SandboxSpec(directory, variant or existing.variant, cann or existing.cann)
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
    if spec.variant not in VARIANTS:
        return f"would refuse: --variant {spec.variant!r} is not a sandbox variant"
    release(spec.cann)
    directory = spec.dir.resolve()
    existing = load_info(directory)
    cxx = find_cxx() or ""
    key = sources_key(SandboxSpec(directory, spec.variant, spec.cann), cxx)
    if existing is not None and existing.key == key:
        return f"up to date: {existing.variant} host with CANN {existing.cann} at {directory}"
    verb = "remake" if existing is not None else "create"
    return f"would {verb} an {spec.variant} host with CANN {spec.cann} at {directory}"


def create_sandbox(spec: SandboxSpec) -> CreateResult:
    if spec.variant not in VARIANTS:
        raise SandboxError(
            f"--variant {spec.variant!r} is not a sandbox variant.", "Use A2 (910B) or A3 (910_93)."
        )
    rel = release(spec.cann)
    cxx = check_prerequisites()
    directory = spec.dir.resolve()
    key = sources_key(SandboxSpec(directory, spec.variant, spec.cann), cxx)
    existing = load_info(directory)
    if existing is not None and existing.key == key:
        return CreateResult(existing, created=False)

    claim(directory, "sandbox", "the sandbox folder (--dir, or <workspace>/sandbox)")
    for name in MANAGED:  # a different or half-made sandbox: start over
        target = directory / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
    write(
        directory / CREATING_MARK, "sandbox creation in progress; an interrupted run leaves this\n"
    )
    log = CommandLog(directory / "create.log")
    variant = VARIANTS[spec.variant]
    sysroot = directory / "sysroot"
    emu = compile_emulation(directory / ".build" / "emu", log, rel.opbase_in_toolkit, rel.version)
    tree = lay_out_toolkit(sysroot, rel, variant, emu, cxx)
    lay_out_hardware(sysroot, variant, rel)
    mirror = directory / "mirror"
    build_repos(mirror, directory / ".build" / "repos", log)
    build_third_party(mirror)
    info = SandboxInfo(
        dir=directory,
        variant=spec.variant,
        cann=spec.cann,
        key=key,
        sysroot=sysroot,
        toolkit=tree.home,
        set_env=tree.set_env,
        mirror=mirror,
        upstream=UPSTREAM,
        soc=variant.soc,
        chip=variant.chip,
    )
    write_json_atomic(directory / INFO_FILE, info.to_json())
    (directory / CREATING_MARK).unlink()
    return CreateResult(info, created=True)
