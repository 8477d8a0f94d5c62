"""Read the whole host once: the toolkit, NPUs, driver, tools, the environment
set_env.sh gives, the Python stack.  Nothing here judges; judge.py does."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from msgspec import Struct

from ..options import Options
from ..usercache import cache_root
from .driver import Driver, read_driver
from .hardware import Hardware, detect_hardware
from .pystack import PythonStack, read_python_stack
from .socs import Family, by_soc
from .sysroot import Sysroot
from .toolchain import (
    CapturedEnv,
    ToolResult,
    capture_env,
    probe_tools,
    read_tool_memo,
    remember_tools,
)
from .toolkit import Toolkit, ToolkitSearch, find_toolkit, host_arch


def detection_env(options: Options, env: Mapping[str, str]) -> Dict[str, str]:
    """The environment host detection reads.

    An emulated host must not see the real host's `ASCEND_*` variables, and has its own
    /usr/local/bin (the stand-in pigz and dos2unix ops-nn's build.sh checks for) last on
    PATH as a machine's own folder is, whatever set_env.sh its toolkit has: the host side
    laid out from the real repositories brings the real one, which does not add it.
    """
    if not options.sandbox:
        return dict(env)
    emulated = {k: v for k, v in env.items() if not k.startswith("ASCEND_")}
    tools = str(Sysroot.at(options.sysroot).path("/usr/local/bin"))
    path = emulated.get("PATH", os.defpath)
    if tools not in path.split(os.pathsep):
        emulated["PATH"] = f"{path}{os.pathsep}{tools}" if path else tools
    return emulated


class Readings(Struct, frozen=True, kw_only=True):
    """Everything read from the host, before any of it is judged."""

    sysroot: Sysroot
    env: Mapping[str, str]
    search: ToolkitSearch
    hardware: Hardware
    tools: List[ToolResult]
    captured: Optional[CapturedEnv]
    capture_error: Optional[str]
    stack: PythonStack
    driver: Driver
    soc: Optional[Family]
    soc_source: str

    @property
    def toolkit(self) -> Optional[Toolkit]:
        return self.search.toolkit


def read_readings(options: Options, env: Mapping[str, str]) -> Readings:
    """Read the host once: the slow probes (npu-smi, set_env.sh, tool versions) side by
    side."""
    env = detection_env(options, env)
    sysroot = Sysroot.at(options.sysroot)
    search = find_toolkit(sysroot, env, options.cann_path)
    toolkit = search.toolkit
    memo = _tool_memo()
    known = read_tool_memo(memo)
    with ThreadPoolExecutor(max_workers=4) as pool:
        hw_future = pool.submit(detect_hardware, sysroot, env)
        tools_future = pool.submit(probe_tools, env, None, known)
        env_future = (
            pool.submit(capture_env, toolkit.set_env, env)
            if toolkit is not None and toolkit.set_env is not None
            else None
        )
        stack_future = pool.submit(read_python_stack)
        hardware = hw_future.result()
        tools = tools_future.result()
        captured: Optional[CapturedEnv] = None
        capture_error: Optional[str] = None
        if env_future is not None:
            try:
                captured = env_future.result()
            except subprocess.TimeoutExpired as exc:
                # said in words: the exception's text is the whole `bash -c '...'` line
                capture_error = (
                    f"it was still running after {exc.timeout:g} s, so a command in it hangs "
                    "or waits (set_env.sh should only export variables)"
                )
            except (OSError, ValueError) as exc:
                capture_error = str(exc)
            except Exception as exc:  # anything else the capture raises
                capture_error = f"{type(exc).__name__}: {exc}"
        stack = stack_future.result()
    if memo is not None:
        remember_tools(memo, tools, known)
    driver = read_driver(sysroot)
    soc, soc_source = _effective_soc(options, hardware)
    return Readings(
        sysroot=sysroot,
        env=env,
        search=search,
        hardware=hardware,
        tools=tools,
        captured=captured,
        capture_error=capture_error,
        stack=stack,
        driver=driver,
        soc=soc,
        soc_source=soc_source,
    )


def _tool_memo() -> Optional[Path]:
    """Where tool versions are remembered: this user's cache (usercache.py, found from
    the process's own environment as its other entries are), not a workspace's, so
    doctor anywhere and every workspace share them; None where the user has no cache of
    their own (every tool is then asked)."""
    root = cache_root(os.environ)
    return root / "tools.json" if root is not None else None


def _effective_soc(options: Options, hardware: Hardware) -> Tuple[Optional[Family], str]:
    if options.soc:
        return by_soc(options.soc), "--soc"
    # A mixed host names no SoC: the user picks one with --soc (doctor's hardware row says so).
    if hardware.family is not None and not hardware.mixed:
        return hardware.family, hardware.source
    return None, "none"


def facts_of(r: Readings, options: Options) -> Dict[str, Any]:
    """The readings as report facts (plain data)."""
    return _facts(
        r.sysroot, options, r.search, r.hardware, r.soc, r.soc_source, r.driver, r.stack, r.tools
    )


def _facts(
    sysroot: Sysroot,
    options: Options,
    search: ToolkitSearch,
    hw: Hardware,
    soc: Optional[Family],
    soc_source: str,
    driver: Driver,
    stack: PythonStack,
    tools: List[ToolResult],
) -> Dict[str, Any]:
    tk = search.toolkit
    cann: Dict[str, Any] = {
        "path": str(tk.path) if tk else None,
        "real_path": str(tk.real_path) if tk else None,
        "version": tk.version_text if tk else None,
        "train": tk.version.train if tk and tk.version else None,
        "version_source": tk.version_source if tk else None,
        "layout": tk.layout if tk else None,
        "found_by": tk.found_by if tk else None,
        "arch": tk.arch if tk else None,
        "set_env": str(tk.set_env) if tk and tk.set_env else None,
        "installs": [str(p) for p in search.installs],
        "share_info": dict(tk.share_info) if tk else {},
        "components": dict(tk.components) if tk else {},
    }
    return {
        "sysroot": str(sysroot.root),
        "sandbox": options.sandbox,
        "arch": host_arch(),
        "cann": cann,
        "soc": soc.soc if soc else None,
        "soc_source": soc_source,
        "variant": soc.variant if soc else None,
        "chip": hw.chip,
        "npu_count": hw.npu_count,
        "chip_count": hw.chip_count,
        "pci": dict(hw.pci_counts),
        "npu_smi": {"path": str(hw.npu_smi) if hw.npu_smi else None, "version": hw.npu_smi_version},
        "driver": {
            "version": driver.version_text,
            "path": str(driver.install_path) if driver.present else None,
            "firmware": driver.firmware_version,
        },
        "python": f"{stack.python[0]}.{stack.python[1]}",
        "torch": stack.torch,
        "torch_npu": stack.torch_npu,
        "tools": {t.spec.name: t.version for t in tools if t.path},
        "cpu_count": os.cpu_count(),
    }
