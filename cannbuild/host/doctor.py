"""Read the whole host once and turn every reading into doctor rows.

The result (`HostReport`) is plain data: the facts later steps build on (the
toolkit, the SoC, the environment `set_env.sh` gives) and one `Check` per
question a CANN engineer would ask.  Bad input becomes a row, never a crash.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..options import Options
from . import compat
from .check import FAIL, PASS, SKIP, WARN, Check
from .driver import Driver, firmware_in_range, read_driver
from .hardware import Hardware, detect_hardware
from .infofiles import InfoFileError, bracket_list, get_ci, read_kv
from .pystack import AUTOLOAD, PythonStack, plain_import_problem, read_python_stack
from .socs import Family, by_soc
from .sysroot import Sysroot
from .toolchain import CapturedEnv, ToolResult, capture_env, free_bytes, probe_tools
from .toolkit import (
    Toolkit,
    ToolkitSearch,
    find_toolkit,
    host_arch,
    kernel_entries,
    kernels_package_name,
)

GIB = 1 << 30
DISK_FAIL_BYTES = 1 * GIB
DISK_WARN_BYTES = 10 * GIB


@dataclass(frozen=True)
class HostReport:
    facts: Dict[str, Any]
    checks: Tuple[Check, ...]
    toolkit: Optional[Toolkit]
    hardware: Hardware
    soc: Optional[Family]
    build_env: Optional[Dict[str, str]] = field(default=None, repr=False)

    @property
    def failed(self) -> bool:
        return any(c.status == FAIL for c in self.checks)

    @property
    def blocking(self) -> List[Check]:
        return [c for c in self.checks if c.status == FAIL and c.blocking]

    def to_json(self) -> Dict[str, Any]:
        return {"host": self.facts, "checks": [c.to_json() for c in self.checks]}


def detection_env(options: Options, env: Mapping[str, str]) -> Dict[str, str]:
    """The environment host detection reads.

    An emulated host must not see the real host's `ASCEND_*` variables.
    """
    if options.sandbox:
        return {k: v for k, v in env.items() if not k.startswith("ASCEND_")}
    return dict(env)


def read_host(options: Options, env: Mapping[str, str]) -> HostReport:
    env = detection_env(options, env)
    sysroot = Sysroot.at(options.sysroot)
    search = find_toolkit(sysroot, env, options.cann_path)
    toolkit = search.toolkit
    with ThreadPoolExecutor(max_workers=4) as pool:
        hw_future = pool.submit(detect_hardware, sysroot, env)
        tools_future = pool.submit(probe_tools, env)
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
            except (OSError, ValueError) as exc:
                capture_error = str(exc)
            except Exception as exc:  # subprocess.TimeoutExpired and friends
                capture_error = f"{type(exc).__name__}: {exc}"
        stack = stack_future.result()
    driver = read_driver(sysroot)
    soc, soc_source = _effective_soc(options, hardware)

    checks: List[Check] = []
    checks += _os_checks()
    checks += _toolkit_checks(sysroot, search)
    checks += _env_checks(toolkit, captured, capture_error, env)
    checks += _hardware_checks(hardware, options)
    checks += _soc_checks(options, hardware, soc, soc_source)
    checks += _kernel_checks(toolkit, soc)
    checks += _driver_checks(sysroot, driver, toolkit, hardware)
    checks += _tool_checks(tools)
    checks += _disk_checks(options.workspace)
    checks += python_stack_checks(stack, toolkit, env)

    facts = _facts(sysroot, options, search, hardware, soc, soc_source, driver, stack, tools)
    return HostReport(
        facts=facts,
        checks=tuple(checks),
        toolkit=toolkit,
        hardware=hardware,
        soc=soc,
        build_env=captured.env if captured else None,
    )


def _effective_soc(options: Options, hardware: Hardware) -> Tuple[Optional[Family], str]:
    if options.soc:
        return by_soc(options.soc), "--soc"
    if hardware.family is not None and not hardware.mixed:
        return hardware.family, hardware.source
    return None, "none"


def _os_checks() -> List[Check]:
    import distro

    # os-release is on every OS CANN supports; lsb_release and uname cost a process each
    info = distro.LinuxDistribution(include_lsb=False, include_uname=False)
    os_id = info.id() or "unknown"
    version = info.version() or ""
    name = info.name(pretty=True) or os_id
    major_minor = ".".join(version.split(".")[:2])
    if (os_id.lower(), major_minor) in compat.IMAGE_OSES:
        return [Check("os", PASS, f"{name}")]
    known = ", ".join(f"{o} {v}" for o, v in compat.IMAGE_OSES)
    return [
        Check(
            "os",
            WARN,
            f"{name}: not an OS the official CANN images use",
            f"Builds usually work elsewhere but are untested upstream; the images use {known}.",
        )
    ]


def _toolkit_checks(sysroot: Sysroot, search: ToolkitSearch) -> List[Check]:
    checks: List[Check] = []
    tk = search.toolkit
    if tk is None:
        if search.explicit_failure:
            checks.append(
                Check(
                    "toolkit",
                    FAIL,
                    search.explicit_failure,
                    "Pass the toolkit folder itself: --cann-path=/usr/local/Ascend/cann (CANN "
                    ">= 8.5) or --cann-path=/usr/local/Ascend/ascend-toolkit/latest (<= 8.3).",
                    blocking=True,
                )
            )
        else:
            by_path: Dict[str, List[str]] = {}
            for rule, path, _ in search.tried:
                rules = by_path.setdefault(path, [])
                if rule not in rules:
                    rules.append(rule)
            tried = "; ".join(f"{path} ({', '.join(rules)})" for path, rules in by_path.items())
            checks.append(
                Check(
                    "toolkit",
                    FAIL,
                    f"no CANN toolkit found (looked in {tried or 'nothing'})",
                    "Install Ascend-cann-toolkit_<version>_linux-<arch>.run, or pass "
                    "--cann-path=<folder holding set_env.sh>, or source its set_env.sh. "
                    "To try cannbuild without CANN or an NPU: cannbuild setup --sandbox "
                    "(an emulated Ascend host).",
                    blocking=True,
                )
            )
    else:
        shown = sysroot.display(tk.path)
        if tk.version is None:
            checks.append(
                Check(
                    "toolkit",
                    FAIL,
                    f"toolkit at {shown} has no readable version "
                    f"({'; '.join(tk.problems) or 'no version file'})",
                    "Check <arch>-linux/ascend_toolkit_install.info (version=...) or reinstall the "
                    "toolkit.",
                    blocking=True,
                )
            )
        else:
            checks.append(
                Check(
                    "toolkit",
                    PASS,
                    f"CANN {tk.version} at {shown} ({tk.layout} layout; found by {tk.found_by}; "
                    f"version from {tk.version_source})",
                )
            )
        for problem in tk.problems if tk.version is not None else ():
            checks.append(
                Check(
                    "toolkit.files",
                    WARN,
                    problem,
                    "The file is malformed; cannbuild read the version elsewhere. Reinstalling "
                    "the toolkit restores it.",
                )
            )
        arch = host_arch()
        if tk.arch and tk.arch != arch:
            checks.append(
                Check(
                    "toolkit.arch",
                    FAIL,
                    f"toolkit is built for {tk.arch}, this host is {arch}",
                    f"Install the {arch} toolkit (Ascend-cann-toolkit_<version>_linux-{arch}.run).",
                    blocking=True,
                )
            )
        if len(search.installs) > 1:
            listed = ", ".join(sysroot.display(p) for p in search.installs)
            checks.append(
                Check("toolkit.installs", PASS, f"{len(search.installs)} installs: {listed}")
            )
    for warning in search.warnings:
        checks.append(
            Check(
                "toolkit.env",
                WARN,
                warning,
                "A stale variable from an old set_env.sh; open a new shell or source the "
                "right set_env.sh.",
            )
        )
    return checks


def _env_checks(
    tk: Optional[Toolkit],
    captured: Optional[CapturedEnv],
    capture_error: Optional[str],
    env: Mapping[str, str],
) -> List[Check]:
    if tk is None:
        return [Check("set_env", SKIP, "no toolkit", "Fix the toolkit row first.")]
    if tk.set_env is None:
        return [
            Check(
                "set_env",
                FAIL,
                f"no set_env.sh next to {tk.path}",
                "The toolkit install is incomplete; reinstall it (set_env.sh sits in the toolkit "
                "folder from 8.5, in ascend-toolkit/ before).",
                blocking=True,
            )
        ]
    if captured is None:
        return [
            Check(
                "set_env",
                FAIL,
                f"sourcing {tk.set_env} failed: {capture_error}",
                f"Run 'bash -x {tk.set_env}' to see where it stops.",
                blocking=True,
            )
        ]
    checks: List[Check] = []
    home = captured.env.get("ASCEND_HOME_PATH", "(unset)")
    if captured.status != 0:
        last = captured.stderr.splitlines()[-1] if captured.stderr else "no message"
        checks.append(
            Check(
                "set_env",
                WARN,
                f"set_env.sh returned {captured.status} ({last}); ASCEND_HOME_PATH={home}",
                "9.x set_env.sh reads driver_install_path_param from /etc/ascend_install.info; "
                "check that file exists and is complete.",
            )
        )
    else:
        checks.append(Check("set_env", PASS, f"sourced {tk.set_env.name}: ASCEND_HOME_PATH={home}"))
    bisheng = shutil.which("bisheng", path=captured.env.get("PATH", ""))
    if bisheng:
        checks.append(Check("bisheng", PASS, f"bisheng at {bisheng}"))
    else:
        checks.append(
            Check(
                "bisheng",
                FAIL,
                "bisheng is not on PATH after sourcing set_env.sh",
                "bisheng ships in the toolkit's compiler (compiler/ccec_compiler/bin); "
                "reinstall the toolkit with --full.",
                blocking=True,
            )
        )
    return checks


def _hardware_checks(hw: Hardware, options: Options) -> List[Check]:
    checks: List[Check] = []
    if hw.mixed:
        counts = ", ".join(f"{n} x {soc}" for soc, n in sorted(hw.pci_counts.items()))
        checks.append(
            Check(
                "hardware",
                FAIL,
                f"mixed NPU families on one host: {counts}",
                "cannbuild builds for one SoC at a time; pass --soc for the family you target.",
                blocking=options.soc is None,
            )
        )
    elif hw.family is None:
        checks.append(
            Check(
                "hardware",
                WARN,
                "no Ascend NPU found (no 0x19e5 PCI device, no npu-smi table)",
                "Normal on a build-only host: pass --soc=ascend910b (Atlas A2) or "
                "--soc=ascend910_93 (Atlas A3).",
            )
        )
    else:
        chip = f" ({hw.chip})" if hw.chip else ""
        smi = f"; npu-smi {hw.npu_smi_version}" if hw.npu_smi_version else ""
        dies = f", {hw.chip_count} dies" if hw.chip_count != hw.npu_count else ""
        checks.append(
            Check(
                "hardware",
                PASS,
                f"{hw.npu_count} x {hw.family.product}{chip}{dies} from "
                f"{'PCI ids' if hw.source == 'pci' else 'npu-smi'}{smi}",
            )
        )
    checks += _health_checks(hw)
    for problem in hw.problems:
        checks.append(
            Check(
                "npu-smi",
                WARN,
                problem,
                "Check the driver: 'npu-smi info' should print the device table "
                "(in a container, mount /usr/local/bin/npu-smi and the driver).",
            )
        )
    return checks


def _health_checks(hw: Hardware) -> List[Check]:
    """npu-smi's Health column and running processes: a validation on a sick or busy
    device would judge the device, not the package."""
    if not hw.health:
        return []
    sick = [(npu, h) for npu, h in hw.health if h in ("Alarm", "Critical")]
    unknown = [(npu, h) for npu, h in hw.health if h not in ("OK", "Warning", "Alarm", "Critical")]
    warned = [(npu, h) for npu, h in hw.health if h == "Warning"]
    checks: List[Check] = []
    listed = lambda rows: ", ".join(f"NPU {npu} {h}" for npu, h in rows)  # noqa: E731
    if sick:
        checks.append(
            Check(
                "npu.health",
                FAIL,
                f"{listed(sick)} (npu-smi info, Health column)",
                "Validation on such a device is meaningless. `npu-smi info -t health -i <npu>` "
                "shows the alarm codes; fix or reset the device (or ask its admin) first.",
            )
        )
    if warned or unknown:
        checks.append(
            Check(
                "npu.health",
                WARN,
                f"{listed(warned + unknown)} (npu-smi info, Health column)",
                "`npu-smi info -t health -i <npu>` shows why; results on this device may vary.",
            )
        )
    if not sick and not warned and not unknown:
        checks.append(Check("npu.health", PASS, f"all {len(hw.health)} NPUs report Health OK"))
    if hw.processes:
        busy = sorted({p.npu for p in hw.processes})
        shown = ", ".join(f"{p.name} (pid {p.pid}) on NPU {p.npu}" for p in hw.processes[:4])
        more = f" and {len(hw.processes) - 4} more" if len(hw.processes) > 4 else ""
        checks.append(
            Check(
                "npu.busy",
                WARN,
                f"{len(busy)} NPU(s) busy: {shown}{more}",
                "Timings and memory on a busy device are not comparable; validation runs on "
                "device 0 (ASCEND_RT_VISIBLE_DEVICES picks another).",
            )
        )
    return checks


def _soc_checks(options: Options, hw: Hardware, soc: Optional[Family], source: str) -> List[Check]:
    if soc is None:
        return [
            Check(
                "soc",
                FAIL,
                "no SoC to build for: no --soc and no NPU detected",
                "Pass --soc=ascend910b (Atlas A2, 910B) or --soc=ascend910_93 (Atlas A3).",
                blocking=True,
            )
        ]
    sources = {"pci": "PCI ids", "npu-smi": "npu-smi", "--soc": "--soc"}
    checks = [
        Check("soc", PASS, f"--soc={soc.soc} ({soc.product}) from {sources.get(source, source)}")
    ]
    if options.soc and hw.family is not None and hw.family.soc != options.soc:
        checks.append(
            Check(
                "soc.match",
                WARN,
                f"building for {soc.soc} ({soc.variant}) on a {hw.family.variant} host",
                f"The package will only run on {soc.product}; drop --soc to build for this host.",
            )
        )
    return checks


def _kernel_checks(tk: Optional[Toolkit], soc: Optional[Family]) -> List[Check]:
    if tk is None or soc is None:
        return [Check("kernels", SKIP, "needs a toolkit and a SoC", "Fix the rows above first.")]
    entries = kernel_entries(tk, soc.soc)
    if entries:
        return [Check("kernels", PASS, f"{len(entries)} kernel folders for {soc.soc}")]
    package = kernels_package_name(tk.version, soc.soc, tk.arch or host_arch())
    return [
        Check(
            "kernels",
            WARN,
            f"no kernels package for {soc.soc} in the toolkit",
            f"Building works without it; running operators needs {package} installed into the "
            "same path (--install --install-path=<toolkit root>).",
        )
    ]


def _driver_checks(
    sysroot: Sysroot, driver: Driver, tk: Optional[Toolkit], hw: Hardware
) -> List[Check]:
    checks: List[Check] = []
    if not driver.present:
        status = WARN if hw.family is not None else SKIP
        checks.append(
            Check(
                "driver",
                status,
                "no driver/version.info",
                "Fine on a build-only host; to run on the NPUs install the Ascend HDK driver "
                "(in a container, mount /usr/local/Ascend/driver and /etc/ascend_install.info).",
            )
        )
    elif driver.version is None:
        checks.append(
            Check(
                "driver",
                WARN,
                "; ".join(driver.problems) or "driver version unreadable",
                "Reinstall the driver package or check driver/version.info.",
            )
        )
    else:
        checks.append(
            Check(
                "driver", PASS, f"driver {driver.version} at {sysroot.display(driver.install_path)}"
            )
        )
        checks += _driver_compat(driver, tk)
    if driver.firmware_version and driver.firmware_range:
        ok = firmware_in_range(driver.firmware_version, driver.firmware_range)
        lo, hi = driver.firmware_range
        if ok is False:
            checks.append(
                Check(
                    "firmware",
                    WARN,
                    f"firmware {driver.firmware_version} is outside the driver's range "
                    f"[{lo}, {hi}]",
                    "Upgrade the firmware package that matches the driver (npu-smi info -t board "
                    "shows 'Compatibility').",
                )
            )
        else:
            checks.append(Check("firmware", PASS, f"firmware {driver.firmware_version}"))
    return checks


def _driver_compat(driver: Driver, tk: Optional[Toolkit]) -> List[Check]:
    if tk is None or tk.version is None or driver.version is None:
        return []
    if not tk.version.comparable or driver.version.internal:
        return [
            Check(
                "driver.compat",
                SKIP,
                "internal build versions cannot be matched to the tables",
                "Check the pairing in the release notes of that build.",
            )
        ]
    tk_compat: Tuple[str, ...] = ()
    tk_inner: Optional[str] = None
    if tk.arch:
        info = tk.real_path / f"{tk.arch}-linux" / "ascend_toolkit_install.info"
        try:
            values = read_kv(info)
            tk_compat = bracket_list(get_ci(values, "compatible_version"))
            tk_inner = get_ci(values, "innerversion")
        except InfoFileError:
            pass
    verdict = compat.driver_verdict(
        tk.version,
        driver.version,
        tk_compat,
        tk_inner,
        driver.compatible_trains,
        driver.innerversion,
    )
    if verdict.ok:
        return [Check("driver.compat", PASS, verdict.detail)]
    if verdict.ok is None:
        return [
            Check(
                "driver.compat",
                SKIP,
                verdict.detail,
                "Check the CANN release notes for the matching Ascend HDK.",
            )
        ]
    return [
        Check(
            "driver.compat",
            WARN,
            verdict.detail,
            "Upgrade the Ascend HDK (driver + firmware) to a version the CANN release notes "
            "list, or install the CANN release that matches this driver.",
        )
    ]


def _tool_checks(tools: List[ToolResult]) -> List[Check]:
    checks: List[Check] = []
    for tool in tools:
        spec = tool.spec
        cid = f"tool.{spec.name}"
        bad_status = FAIL if spec.required else WARN
        if tool.path is None:
            checks.append(
                Check(
                    cid,
                    bad_status,
                    f"{spec.name} not found on PATH",
                    spec.hint,
                    blocking=spec.required,
                )
            )
        elif tool.error:
            checks.append(Check(cid, bad_status, tool.error, spec.hint, blocking=spec.required))
        elif tool.too_old:
            checks.append(
                Check(
                    cid,
                    bad_status,
                    f"{spec.name} {tool.version} is older than {spec.minimum}",
                    spec.hint,
                    blocking=spec.required,
                )
            )
        else:
            checks.append(
                Check(
                    cid, PASS, f"{spec.name} {tool.version or ''} ({tool.path})".replace("  ", " ")
                )
            )
    return checks


def _disk_checks(workspace: Path) -> List[Check]:
    try:
        free = free_bytes(workspace)
    except OSError as exc:
        return [Check("disk", WARN, f"cannot read free space: {exc}", "Check the workspace path.")]
    shown = f"{free / GIB:.1f} GiB free under {workspace}"
    if free < DISK_FAIL_BYTES:
        return [
            Check(
                "disk",
                FAIL,
                shown,
                "A build needs several GiB; free space or pass --workspace on a larger disk.",
                blocking=True,
            )
        ]
    if free < DISK_WARN_BYTES:
        return [
            Check(
                "disk",
                WARN,
                shown,
                "A full ops-transformer build can take 10 GiB; consider --workspace elsewhere.",
            )
        ]
    return [Check("disk", PASS, shown)]


def python_stack_checks(
    stack: PythonStack, tk: Optional[Toolkit], env: Optional[Mapping[str, str]] = None
) -> List[Check]:
    """torch / torch_npu rows from package metadata and `env` (the shell's), never importing torch."""
    checks: List[Check] = []
    py = f"{stack.python[0]}.{stack.python[1]}"
    if stack.torch is None:
        checks.append(
            Check(
                "torch",
                SKIP,
                "torch not installed",
                "Needed only for the validation reference: pip install torch (CPU is enough).",
            )
        )
    else:
        verdict = compat.python_verdict(stack.torch, stack.python)
        if verdict.ok is False:
            checks.append(
                Check(
                    "torch",
                    WARN,
                    f"torch {stack.torch}: {verdict.detail}",
                    f"Use a Python torch supports (this is {py}).",
                )
            )
        else:
            checks.append(Check("torch", PASS, f"torch {stack.torch} on Python {py}"))
    if stack.torch_npu is None:
        checks.append(
            Check(
                "torch_npu",
                SKIP,
                "torch_npu not installed",
                "Only the torch_npu validation route needs it: pip install torch-npu==<version "
                "for this CANN>.",
            )
        )
        return checks
    if stack.torch is None:
        checks.append(
            Check(
                "torch_npu",
                FAIL,
                f"torch_npu {stack.torch_npu} is installed without torch",
                f"pip install torch=={_torch_for(stack.torch_npu)}",
            )
        )
        return checks
    if not compat.same_torch_line(stack.torch, stack.torch_npu):
        checks.append(
            Check(
                "torch_npu",
                FAIL,
                f"torch_npu {stack.torch_npu} does not match torch {stack.torch}",
                "torch_npu's major.minor.patch must equal torch's (else 'undefined symbol' "
                f"at import): pip install torch=={_torch_for(stack.torch_npu)}",
            )
        )
        return checks
    checks.append(_plain_import_check(stack, tk, env or {}))
    if tk is None or tk.version is None or not tk.version.comparable:
        checks.append(Check("torch_npu", PASS, f"torch_npu {stack.torch_npu} matches torch"))
        return checks
    verdict = compat.torch_npu_verdict(tk.version, stack.torch_npu)
    if not compat.in_table(stack.torch_npu):
        listed = compat.TORCH_NPU_FOR_CANN.get(tk.version.release, ())
        checks.append(
            Check(
                "torch_npu",
                WARN,
                verdict.detail,
                (
                    f"The tested ones for CANN {tk.version.release}: {', '.join(listed)}. "
                    if listed
                    else ""
                )
                + "An untested pairing may work: cannbuild validate's torch_npu route checks it "
                "on this host.",
            )
        )
    elif verdict.ok is False:
        listed = compat.TORCH_NPU_FOR_CANN.get(tk.version.release, ())
        checks.append(
            Check(
                "torch_npu",
                WARN,
                verdict.detail,
                f"Install a torch_npu tested with CANN {tk.version.release}: " + ", ".join(listed),
            )
        )
    elif verdict.ok is None:
        checks.append(
            Check(
                "torch_npu",
                SKIP,
                verdict.detail,
                "Check Ascend/pytorch COMPATIBILITY for this CANN.",
            )
        )
    else:
        checks.append(Check("torch_npu", PASS, verdict.detail))
    return checks


def _plain_import_check(stack: PythonStack, tk: Optional[Toolkit], env: Mapping[str, str]) -> Check:
    """With torch_npu installed, `import torch` loads it: say whether that works in this shell."""
    version = stack.torch_npu
    if env.get(AUTOLOAD) == "0":
        return Check(
            "torch_import", PASS, f"{AUTOLOAD}=0: `import torch` does not load torch_npu {version}"
        )
    problem = plain_import_problem(stack, env)
    if problem is None:
        return Check(
            "torch_import", PASS, f"`import torch` can load torch_npu {version} in this environment"
        )
    source = (
        f"source {tk.set_env}" if tk is not None and tk.set_env is not None else "source set_env.sh"
    )
    return Check(
        "torch_import",
        WARN,
        f"a plain `import torch` fails in this shell: it auto-loads torch_npu {version}, and {problem}",
        f"{source} before using torch_npu, or set {AUTOLOAD}=0 to import torch without torch_npu "
        "(cannbuild itself does both where it needs to).",
    )


def _torch_for(torch_npu: str) -> str:
    return compat.torch_release(torch_npu)


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
