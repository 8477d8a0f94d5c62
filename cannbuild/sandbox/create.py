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

from ..errors import SandboxError
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

    directory.mkdir(parents=True, exist_ok=True)
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
    mirror = directory / "mirror"
    tree = lay_out_toolkit(sysroot, rel, variant, emu, cxx, network=mirror.as_uri() + "/")
    lay_out_hardware(sysroot, variant, rel)
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
