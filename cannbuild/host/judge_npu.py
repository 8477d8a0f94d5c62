"""doctor rows about the NPUs: how many and which, their health, the SoC to build for,
the kernels package, the driver and firmware and their pairing with CANN."""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

from ..options import Options
from . import compat
from .check import FAIL, PASS, SKIP, WARN, Check
from .driver import Driver, firmware_in_range
from .hardware import DCMI_REFUSED, Hardware
from .infofiles import InfoFileError, bracket_list, get_ci, read_kv
from .reading import Readings
from .socs import Family
from .sysroot import Sysroot
from .toolkit import Toolkit, host_arch, kernel_entries, kernels_package_name


def npu_checks(r: Readings, options: Options) -> List[Check]:
    checks: List[Check] = []
    checks += _hardware_checks(r.hardware, options)
    checks += _soc_checks(options, r.hardware, r.soc, r.soc_source)
    checks += _kernel_checks(r.toolkit, r.soc)
    checks += _driver_checks(r.sysroot, r.driver, r.toolkit, r.hardware)
    return checks


def _hardware_checks(hw: Hardware, options: Options) -> Iterator[Check]:
    # One build targets one `--soc`; with the families mixed none is the obvious pick, so the row
    # blocks only until the user names one.
    if hw.mixed:
        counts = ", ".join(f"{n} x {soc}" for soc, n in sorted(hw.pci_counts.items()))
        yield Check(
            id="hardware",
            status=FAIL,
            detail=f"mixed NPU families on one host: {counts}",
            hint="cannbuild builds for one SoC at a time; pass --soc for the family you target.",
            blocking=options.soc is None,
        )
    elif hw.family is None:
        yield Check(
            id="hardware",
            status=WARN,
            detail="no Ascend NPU found (no 0x19e5 PCI device, no npu-smi table)",
            hint="Normal on a build-only host: pass --soc=ascend910b (Atlas A2) or "
            "--soc=ascend910_93 (Atlas A3).",
        )
    else:
        chip = f" ({hw.chip})" if hw.chip else ""
        smi = f"; npu-smi {hw.npu_smi_version}" if hw.npu_smi_version else ""
        # An A3 counts two dies per NPU (8 NPUs, 16 dies); the A2 has one, so nothing to add.
        dies = f", {hw.chip_count} dies" if hw.chip_count != hw.npu_count else ""
        yield Check(
            id="hardware",
            status=PASS,
            detail=f"{hw.npu_count} x {hw.family.product}{chip}{dies} from "
            f"{'PCI ids' if hw.source == 'pci' else 'npu-smi'}{smi}",
        )
    yield from _health_checks(hw)
    for problem in hw.problems:
        yield Check(
            id="npu-smi",
            status=WARN,
            detail=problem,
            hint="The driver cannot hand this container the NPU: another container holds it, or "
            "this one needs `--privileged` (or the device nodes /dev/davinci<N>, "
            "/dev/davinci_manager, /dev/devmm_svm, /dev/hisi_hdc passed with --device)."
            if DCMI_REFUSED.search(problem)
            else "Check the driver: 'npu-smi info' should print the device table "
            "(in a container, mount /usr/local/bin/npu-smi and the driver).",
        )


def _health_checks(hw: Hardware) -> Iterator[Check]:
    """npu-smi's Health column and running processes: a validation on a sick or busy
    device would judge the device, not the package."""
    if not hw.health:
        return
    # npu-smi's Health values are OK, Warning, Alarm and Critical; Huawei's ascend-deployer refuses
    # to go on at anything but OK and warns on busy devices (reference real-host-findings.md §5).
    # Only Alarm and Critical fail here.
    sick = [(npu, h) for npu, h in hw.health if h in ("Alarm", "Critical")]
    unknown = [(npu, h) for npu, h in hw.health if h not in ("OK", "Warning", "Alarm", "Critical")]
    warned = [(npu, h) for npu, h in hw.health if h == "Warning"]
    listed = lambda rows: ", ".join(f"NPU {npu} {h}" for npu, h in rows)  # noqa: E731
    if sick:
        yield Check(
            id="npu.health",
            status=FAIL,
            detail=f"{listed(sick)} (npu-smi info, Health column)",
            hint="Validation on such a device is meaningless. `npu-smi info -t health -i <npu>` "
            "shows the alarm codes; fix or reset the device (or ask its admin) first.",
        )
    if warned or unknown:
        yield Check(
            id="npu.health",
            status=WARN,
            detail=f"{listed(warned + unknown)} (npu-smi info, Health column)",
            hint="`npu-smi info -t health -i <npu>` shows why; results on this device may vary.",
        )
    if not sick and not warned and not unknown:
        yield Check(
            id="npu.health", status=PASS, detail=f"all {len(hw.health)} NPUs report Health OK"
        )
    # The process section's rows, `| <npu>       <chip>   | <pid> | <name> | <MB> |` on an A3.
    if hw.processes:
        busy = sorted({p.npu for p in hw.processes})
        shown = ", ".join(f"{p.name} (pid {p.pid}) on NPU {p.npu}" for p in hw.processes[:4])
        more = f" and {len(hw.processes) - 4} more" if len(hw.processes) > 4 else ""
        yield Check(
            id="npu.busy",
            status=WARN,
            detail=f"{len(busy)} NPU(s) busy: {shown}{more}",
            hint="Timings and memory on a busy device are not comparable; validation runs on "
            "device 0 (ASCEND_RT_VISIBLE_DEVICES picks another).",
        )


def _soc_checks(
    options: Options, hw: Hardware, soc: Optional[Family], source: str
) -> Iterator[Check]:
    if soc is None:
        yield Check(
            id="soc",
            status=FAIL,
            detail="no SoC to build for: no --soc and no NPU detected",
            hint="Pass --soc=ascend910b (Atlas A2, 910B) or --soc=ascend910_93 (Atlas A3).",
            blocking=True,
        )
        return
    sources = {"pci": "PCI ids", "npu-smi": "npu-smi", "--soc": "--soc"}
    yield Check(
        id="soc",
        status=PASS,
        detail=f"--soc={soc.soc} ({soc.product}) from {sources.get(source, source)}",
    )
    # The A2 and A3 use the same toolkit: only `--soc` and the ops package differ, so a package
    # built for the other family builds fine and then finds no kernel on this host.
    if options.soc and hw.family is not None and hw.family.soc != options.soc:
        yield Check(
            id="soc.match",
            status=WARN,
            detail=f"building for {soc.soc} ({soc.variant}) on a {hw.family.variant} host",
            hint=f"The package will only run on {soc.product}; drop --soc to build for this host.",
        )


def _kernel_checks(tk: Optional[Toolkit], soc: Optional[Family]) -> Iterator[Check]:
    if tk is None or soc is None:
        yield Check(
            id="kernels",
            status=SKIP,
            detail="needs a toolkit and a SoC",
            hint="Fix the rows above first.",
        )
        return
    entries = kernel_entries(tk, soc.soc)
    # A kernel folder per op (ops_oam and config aside) means the SoC's ops package is installed.
    if entries:
        yield Check(
            id="kernels", status=PASS, detail=f"{len(entries)} kernel folders for {soc.soc}"
        )
        return
    package = kernels_package_name(tk.version, soc.soc, tk.arch or host_arch())
    yield Check(
        id="kernels",
        status=WARN,
        detail=f"no kernels package for {soc.soc} in the toolkit",
        hint=f"Building works without it; running operators needs {package} installed into the "
        "same path (--install --install-path=<toolkit root>).",
    )


def _driver_checks(
    sysroot: Sysroot, driver: Driver, tk: Optional[Toolkit], hw: Hardware
) -> Iterator[Check]:
    if not driver.present:
        # A build-only host has neither NPU nor driver; a missing driver matters only next to NPUs.
        status = WARN if hw.family is not None else SKIP
        yield Check(
            id="driver",
            status=status,
            detail="no driver/version.info",
            hint="Fine on a build-only host; to run on the NPUs install the Ascend HDK driver "
            "(in a container, mount /usr/local/Ascend/driver and /etc/ascend_install.info).",
        )
    elif driver.version is None:
        yield Check(
            id="driver",
            status=WARN,
            detail="; ".join(driver.problems) or "driver version unreadable",
            hint="Reinstall the driver package or check driver/version.info.",
        )
    else:
        yield Check(
            id="driver",
            status=PASS,
            detail=f"driver {driver.version} at {sysroot.display(driver.install_path)}",
        )
        yield from _driver_compat(driver, tk)
    # The driver's `compatible_version_fw=[7.0.0,8.9.9]` against the firmware `Version=`;
    # `npu-smi info -t board` prints `Compatibility : OK` when the two agree.
    if driver.firmware_version and driver.firmware_range:
        ok = firmware_in_range(driver.firmware_version, driver.firmware_range)
        lo, hi = driver.firmware_range
        if ok is False:
            yield Check(
                id="firmware",
                status=WARN,
                detail=f"firmware {driver.firmware_version} is outside the driver's range "
                f"[{lo}, {hi}]",
                hint="Upgrade the firmware package that matches the driver (npu-smi info -t board "
                "shows 'Compatibility').",
            )
        else:
            yield Check(id="firmware", status=PASS, detail=f"firmware {driver.firmware_version}")


def _driver_compat(driver: Driver, tk: Optional[Toolkit]) -> Iterator[Check]:
    if tk is None or tk.version is None or driver.version is None:
        return
    # `8.0.T63`-style builds have no row in any published table.
    if not tk.version.comparable or driver.version.internal:
        yield Check(
            id="driver.compat",
            status=SKIP,
            detail="internal build versions cannot be matched to the tables",
            hint="Check the pairing in the release notes of that build.",
        )
        return
    tk_compat: Tuple[str, ...] = ()
    tk_inner: Optional[str] = None
    if tk.arch:
        # The toolkit's own train list: `compatible_version=[V100R001C15],...,[V100R001C23]` and
        # `innerversion=V100R001C23SPC002B210` (tests/fixtures/host/ascend_toolkit_install.info.*).
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
        yield Check(id="driver.compat", status=PASS, detail=verdict.detail)
        return
    if verdict.ok is None:
        yield Check(
            id="driver.compat",
            status=SKIP,
            detail=verdict.detail,
            hint="Check the CANN release notes for the matching Ascend HDK.",
        )
        return
    yield Check(
        id="driver.compat",
        status=WARN,
        detail=verdict.detail,
        hint="Upgrade the Ascend HDK (driver + firmware) to a version the CANN release notes "
        "list, or install the CANN release that matches this driver.",
    )
