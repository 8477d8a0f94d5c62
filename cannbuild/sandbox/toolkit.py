"""The emulated CANN toolkit tree, in the real layout for its release.

<= 8.3: `ascend-toolkit/<ver>` plus a `latest` folder of per-component links
and `version.cfg`; >= 8.5: `cann-<ver>`, a `cann` link and a compat
`ascend-toolkit/latest`.  The libraries are the CPU emulation compiled from
kernels/emu; bisheng wraps the host C++ compiler.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Callable, List

from msgspec import Struct

from .. import usercache
from ..bounded import DATA_FILE, read_bytes, read_text
from ..host.toolkit import host_arch, kernels_package_name
from ..host.versions import parse_cann_version
from ..render.templates import file_env
from ..resources import data_dir
from .files import CommandLog, symlink, write
from .hardware import Variant
from .releases import Release
from .toolkit_files import lay_out, wall_script, walls

# Each ships a `version.info`; torch_npu refuses a home without runtime/ and compiler/.
COMPONENTS = ("runtime", "compiler", "opp", "toolkit")
# <arch>-linux/data/platform_config/<SoC>.ini, one per SoC (the A2 and A3 ones among them)
PLATFORM_CONFIGS = (
    "Ascend910B1",
    "Ascend910B2",
    "Ascend910B3",
    "Ascend910B4",
    "Ascend910_9381",
    "Ascend910_9382",
    "Ascend910_9391",
    "Ascend910_9392",
    "Ascend310P3",
)


class ToolkitTree(Struct, frozen=True, kw_only=True):
    root: Path  # <sysroot>/usr/local/Ascend
    install: Path  # the real tree: cann-<ver> or ascend-toolkit/<ver>
    home: Path  # what ASCEND_HOME_PATH is: cann-<ver> or ascend-toolkit/latest
    set_env: Path


def compile_emulation(
    build_dir: Path,
    log: CommandLog,
    with_opbase: bool,
    opbase_version: str,
    phases: Callable[[str], None] = lambda _: None,
) -> Path:
    """The emulated runtime libraries: compiled once per user and machine into the cache
    (cannbuild/usercache.py, keyed by their sources, the compiler and cmake and the flags)
    and reused by every later sandbox; compiled in `build_dir` where there is no cache of
    the user's own.  Returns the folder holding the libraries."""
    kernels = data_dir("kernels")
    sources = [kernels / "emu"] + ([kernels / "standin" / "opbase"] if with_opbase else [])
    # $ORIGIN: the libraries find each other wherever they are copied, never in a build folder
    args = ["-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON"]
    if with_opbase:
        args += [f"-DSTANDIN_OPBASE_DIR={sources[1]}", f"-DSTANDIN_OPBASE_VERSION={opbase_version}"]

    def compile_into(out: Path) -> None:
        log.run(
            ["cmake", "-S", str(sources[0]), "-B", str(build_dir), *args],
            what="configuring the CPU emulation of the ACL runtime",
        )
        jobs = str(max(os.cpu_count() or 1, 1))
        log.run(
            ["cmake", "--build", str(build_dir), "-j", jobs], what="compiling the CPU emulation"
        )
        if out != build_dir:
            for lib in build_dir.glob("lib*.so"):
                shutil.copy2(lib, out / lib.name)

    root = usercache.cache_root(os.environ)
    if root is None:
        phases("compiling the emulated ACL runtime (c++, log create.log; no per-user cache here)")
        compile_into(build_dir)
        return build_dir
    key = _emulation_key(sources, args, log)
    phases(f"compiling the emulated ACL runtime, once per machine (kept in {root})")
    entry, reused = usercache.cached(root, "emulation", key, compile_into)
    with open(log.path, "a", encoding="utf-8") as out:
        out.write(f"emulation libraries {'reused from' if reused else 'compiled into'} {entry}\n")
    return entry


def _emulation_key(sources: List[Path], args: List[str], log: CommandLog) -> str:
    """What decides the emulation's bytes: its sources, the compiler and cmake that build
    them (path and version) and the flags (ours and the environment's)."""
    digest = hashlib.sha256(b"cannbuild emulation 1\n")
    for root in sources:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            digest.update(f"{path.relative_to(root.parent)}\n".encode())
            digest.update(read_bytes(path, DATA_FILE))
    cxx = os.environ.get("CXX") or shutil.which("c++") or "c++"
    for tool in (cxx, "cmake"):
        found = shutil.which(tool) or tool
        digest.update(f"{os.path.realpath(found)}\n".encode())
        digest.update(log.run([found, "--version"], what=f"asking {tool} its version").encode())
    for name in (
        "CXXFLAGS",
        "CPPFLAGS",
        "LDFLAGS",
        "CMAKE_GENERATOR",
        "CMAKE_BUILD_PARALLEL_LEVEL",
    ):
        digest.update(f"{name}={os.environ.get(name, '')}\n".encode())
    digest.update(f"{args}|{host_arch()}".encode())
    return digest.hexdigest()[:32]


def lay_out_toolkit(
    sysroot: Path, rel: Release, v: Variant, emu_build: Path, cxx: str, network: str = ""
) -> ToolkitTree:
    arch = host_arch()
    root = sysroot / "usr/local/Ascend"
    if rel.layout == "cann":
        install = root / f"cann-{rel.version}"
        # >= 8.5: ASCEND_HOME_PATH is the real `cann-<ver>` (as in the 8.5.0 image's
        # ASCEND_TOOLKIT_HOME=/usr/local/Ascend/cann-8.5.0); <= 8.3 it is the `latest` farm.
        home = install
    else:
        install = root / "ascend-toolkit" / rel.version
        home = root / "ascend-toolkit" / "latest"
    _populate(install, rel, v, emu_build, cxx, arch)
    env = file_env(data_dir("templates") / "sandbox")
    set_env_text = env.get_template("toolkit/set_env.sh.j2").render(
        version=rel.version,
        toolkit_home=str(home),
        layout=rel.layout,
        ascend_root=str(root),
        sysroot=str(sysroot),
        major=int(rel.version.split(".")[0]),
        network=network,
        host_tools=str(sysroot / "usr" / "local" / "bin"),
    )
    if rel.layout == "cann":
        set_env = write(install / "set_env.sh", set_env_text)
        # `cann -> cann-9.0.0`, and `ascend-toolkit/latest -> ../cann` as a 9.0.0 image has it; the
        # old `ascend-toolkit/set_env.sh` still works, since official images still source it.
        symlink(root / "cann", install.name)
        symlink(root / "ascend-toolkit" / "latest", "../cann")
        write(root / "ascend-toolkit" / "set_env.sh", f"source {install / 'set_env.sh'}\n")
    else:
        set_env = write(root / "ascend-toolkit" / "set_env.sh", set_env_text)
        _latest_farm(home, install, arch)
    # An installer record `Install_Path=<root>`. Host detection reads the one in /etc/Ascend/ or
    # $HOME/Ascend/ (host/toolkit.py), not this copy; the env and the default roots find this
    # toolkit.
    write(root / "ascend_cann_install.info", f"Install_Path={root}\n")
    return ToolkitTree(root=root, install=install, home=home, set_env=set_env)


def _populate(tk: Path, rel: Release, v: Variant, emu_build: Path, cxx: str, arch: str) -> None:
    kernels = data_dir("kernels")
    templates = data_dir("templates") / "sandbox"
    archdir = tk / f"{arch}-linux"
    # The fields and order of tests/fixtures/host/ascend_toolkit_install.info.*.
    write(
        archdir / "ascend_toolkit_install.info",
        "package_name=Ascend-cann-toolkit\n"
        f"version={rel.version}\ninnerversion={rel.innerversion}\n"
        f"compatible_version={rel.compatible_version}\narch={arch}\nos=linux\npath={archdir}\n",
    )
    # headers and libraries, declared, stubs and the emulation: one list (toolkit_files.py)
    lay_out(tk, arch, emu_build, rel.opbase_in_toolkit, rel.host_side_from_repos)
    include = archdir / "include"
    (include / "aclnnop").mkdir(parents=True, exist_ok=True)
    write(archdir / "conf" / "sandbox_npu.ini", f"devices={v.npus * v.dies}\nsoc={v.chip}\n")
    if rel.opbase_in_toolkit:
        if not rel.host_side_from_repos:  # else opbase's package brings it (hostside.py)
            opbase_inc = kernels / "standin" / "opbase" / "pkg_inc" / "op_common"
            shutil.copytree(opbase_inc, archdir / "pkg_inc" / "op_common", dirs_exist_ok=True)
            shutil.copytree(opbase_inc, include / "op_common", dirs_exist_ok=True)
        # opbase >= 8.5 installs op_common under `<arch>-linux/pkg_inc` only (reference
        # real-host-findings.md §1; hicann/opbase@v9.0.0 scripts/package XML): a copy under
        # include/ would be found first by a real FindOPBASE and shadow the opbase source.
        symlink(tk / "pkg_inc", f"{arch}-linux/pkg_inc")
    for link in ("include", "lib64", "conf"):
        symlink(tk / link, f"{arch}-linux/{link}")
    _lay_out_build_files(tk, rel, v, arch)
    for comp in COMPONENTS:
        # `Version=8.5.0.2.220` style (the component's own number), `version_dir=8.5.0` the
        # release, as the real opp/version.info of 8.5.0 reads.
        write(
            tk / comp / "version.info", f"Version={rel.version}.2.220\nversion_dir={rel.version}\n"
        )
    write(
        tk / "bin" / "setenv.bash",
        read_text(templates / "toolkit" / "setenv.bash", DATA_FILE),
        executable=True,
    )
    bisheng = file_env(templates).get_template("toolkit/bisheng.j2").render(cxx=cxx)
    # build.sh requires bisheng on PATH; set_env.sh puts compiler/ccec_compiler/bin there.
    write(tk / "compiler" / "ccec_compiler" / "bin" / "bisheng", bisheng, executable=True)
    symlink(tk / "tools" / "ccec_compiler", "../compiler/ccec_compiler")
    for pkg in rel.share_info:
        # What check_build_dependencies.py reads: `share/info/<pkg>/version.info`.
        write(tk / "share" / "info" / pkg / "version.info", f"Version={rel.version}\n")
    if rel.opbase_in_toolkit:
        write(
            tk / "share" / "info" / "opbase" / "version.info",
            f"Version={rel.opbase_version or rel.version}\nversion_dir=cann\n",
        )
    # the kernels (ops) package for this SoC, and the vendors folder custom packages go to
    kernel_root = tk / "opp/built-in/op_impl/ai_core/tbe/kernel" / v.soc
    # `ops_oam` is all a toolkit without the ops package has under kernel/<soc>/; ops_transformer/
    # stands for the ops package being installed.
    write(kernel_root / "ops_oam" / "ops_oam.json", "{}\n")
    write(
        kernel_root / "ops_transformer" / "flash_attention_score" / "flash_attention_score.json",
        f'{{"op": "flash_attention_score", "soc": "{v.soc}"}}\n',
    )
    (tk / "opp" / "vendors").mkdir(parents=True, exist_ok=True)
    if rel.layout == "cann":
        # The >= 8.5 ops package record (`cat .../ascend_ops_install.info` in opbase's install
        # docs), named as the package it records (`Ascend-cann-910b-ops_<version>_...run`).
        version = parse_cann_version(rel.version)
        package = kernels_package_name(version, v.soc, arch).split("_")[0]
        write(
            archdir / "ascend_ops_install.info",
            f"package_name={package}\nversion={rel.version}\narch={arch}\nos=linux\npath={archdir}\n",
        )


def _lay_out_build_files(tk: Path, rel: Release, v: Variant, arch: str) -> None:
    # The real ones generate code (op_build) or cross-compile for the device (hcc, which opbase's
    # device sub-build wants); the stand-ins stop a build that reaches them, naming the wall
    # (toolkit_files.walls(), with the reason each is not emulated).
    for wall in walls():
        write(tk / wall.path.format(arch=arch), wall_script(wall, arch), executable=True)
    # the Ascend C kernel cmake: under <arch>-linux/tikcpp from 8.5, tools/ascend_project before
    kernel_cmake = (
        f"{arch}-linux/tikcpp/ascendc_kernel_cmake/cmake"
        if rel.layout == "cann"
        else "tools/ascend_project/cmake"
    )
    write(tk / kernel_cmake / "README", "cannbuild sandbox stand-in\n")
    # a real toolkit ships a platform_config ini for every SoC it supports
    for soc in sorted({*PLATFORM_CONFIGS, v.chip}):
        write(
            tk / f"{arch}-linux/data/platform_config/{soc}.ini",
            # `[version]` section, `SoC_version=Ascend910B3` key, as the real INIs have.
            f"[version]\nSoC_version={soc}\n",
        )


# Host tools a sibling's build checks for that a minimal OS lacks: ops-nn's build.sh runs
# install_deps.sh's check_dependencies_silent, which with --pkg wants pigz >= 2.4 and dos2unix
# (ops-nn@9.1.0:install_deps.sh:425-510).  The emulated host has stand-ins in
# <sysroot>/usr/local/bin, which its set_env.sh puts last on PATH: a real one of the machine
# comes first.  Each is a script in templates/sandbox/host-tools/.
def lay_out_host_tools(sysroot: Path) -> Path:
    """The stand-in host tools; returns their folder."""
    folder = sysroot / "usr" / "local" / "bin"
    for tool in sorted((data_dir("templates") / "sandbox" / "host-tools").iterdir()):
        write(folder / tool.name, read_text(tool, DATA_FILE), executable=True)
    return folder


def _latest_farm(latest: Path, install: Path, arch: str) -> None:
    """The <= 8.3 `latest` folder: per-component relative links and version.cfg."""
    latest.mkdir(parents=True, exist_ok=True)
    ver = install.name
    for comp in (*COMPONENTS, "bin", "share", "tools", "pkg_inc"):
        if (install / comp).exists():
            symlink(latest / comp, f"../{ver}/{comp}")
    # `acllib -> ../8.2.RC2/runtime` and `ops -> ../8.2.RC2/opp` in the real 8.2 farm
    # (tests/fixtures/host/ls-ascend-toolkit-latest-8.2.txt).
    symlink(latest / "acllib", f"../{ver}/runtime")
    symlink(latest / "ops", f"../{ver}/opp")
    archdir = latest / f"{arch}-linux"
    archdir.mkdir(parents=True, exist_ok=True)
    for entry in sorted((install / f"{arch}-linux").iterdir()):
        symlink(archdir / entry.name, f"../../{ver}/{arch}-linux/{entry.name}")
    for link in ("include", "lib64", "conf"):
        symlink(latest / link, f"{arch}-linux/{link}")
    if arch == "aarch64":
        # The real farm's `arm64-linux -> aarch64-linux` alias.
        symlink(latest / "arm64-linux", "aarch64-linux")
    lines = ["# version: 1.0"]
    # `<pkg>_running_version=[<component version>:<CANN version>]` (version.cfg.8.0.0 fixture).
    for pkg in ("runtime", "compiler", "hccl", "opp", "toolkit", "opp_kernel"):
        lines.append(f"{pkg}_running_version=[7.8.0.1.100:{ver}]")
    write(latest / "version.cfg", "\n".join(lines) + "\n")
