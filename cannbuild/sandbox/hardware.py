"""The emulated host's hardware: PCI devices, npu-smi, driver and firmware records.

npu-smi output is made from the real captures in tests/fixtures/host, with the
version line and counts made consistent with the emulated driver.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Dict, List, Mapping, Tuple

from msgspec import Struct
from msgspec.structs import replace

from ..bounded import DATA_FILE, read_text, read_toml
from ..decoded import convert
from ..render.templates import file_env
from ..resources import data_dir
from .files import write
from .releases import Release


class Variant(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An emulated server (templates/sandbox/hardware/variants.toml says where each value
    comes from)."""

    name: str = ""  # its key in the file
    soc: str
    chip: str
    pci_device: str
    npus: int
    dies: int
    table_name: str  # npu-smi's Name column
    subsystem_device: str
    product_name: str
    board_id: str
    bus: Tuple[str, ...]  # one PCI function a die, in the capture's order


@functools.lru_cache(maxsize=1)
def variants() -> Mapping[str, Variant]:
    """The sandbox's variants by name (read once per process)."""
    path = data_dir("templates") / "sandbox" / "hardware" / "variants.toml"
    data = convert(read_toml(path, DATA_FILE), Dict[str, Variant], str(path), "Fix the file.")
    return {name: replace(v, name=name) for name, v in data.items()}


def info_table(v: Variant, driver: str) -> str:
    """`npu-smi info`: the real capture for this variant, with the emulated driver's version."""
    capture = f"npu-smi-info-{v.name.lower()}.txt"
    text = read_text(data_dir("templates") / "sandbox" / "hardware" / capture, DATA_FILE)
    lines = text.splitlines()
    # Line 2 is the banner `| npu-smi 24.1.rc3.7 Version: 24.1.rc3.7 ... |`: rewritten to the
    # capture's 98 columns with this release's driver version.
    lines[1] = "| " + f"npu-smi {driver}".ljust(33) + f"Version: {driver}".ljust(62) + "|"
    return "\n".join(lines) + "\n"


def board(v: Variant, npu: int, chip: int, driver: str) -> Tuple[str, str]:
    """(`-t board -i N`, `-t board -i N -c C`) texts."""
    bus = v.bus[npu * v.dies + chip]  # the n-th die of the server

    def kv(pairs: List[Tuple[str, str]]) -> str:
        # npu-smi's `Key : value` layout: 8 spaces, the key padded to 31, then `: `
        # (tests/fixtures/host/a2-npu-smi-board.txt).
        return "".join(f"        {k:<31}: {val}\n" for k, val in pairs)

    whole = kv(
        [
            ("NPU ID", str(npu)),
            ("Product Name", v.product_name),
            ("Model", "NA"),
            ("Manufacturer", "Huawei"),
            ("Serial Number", f"1025C90487{npu:02d}"),
            ("Software Version", driver),
            ("Firmware Version", "7.8.0.6.201"),
            ("Compatibility", "OK"),
            ("Board ID", v.board_id),
            ("PCB ID", "A"),
            ("BOM ID", "1"),
            ("PCIe Bus Info", f"0000:{bus}:00.0"),
            ("Slot ID", str(npu)),
            ("Class ID", "NA"),
            ("PCI Vendor ID", "0x19E5"),
            ("PCI Device ID", f"0x{v.pci_device.upper()}"),
            ("Subsystem Vendor ID", "0x19E5"),
            ("Subsystem Device ID", f"0x{v.subsystem_device.upper()}"),
            ("Chip Count", str(v.dies)),
        ]
    )
    # The A3 block has `NPU Name : 9392` and no Chip Type, the A2 block `Chip Type : Ascend` plus
    # the chip (reference cann-environment.md §3.3): the split soc_from_board reads.
    if v.dies == 2:
        identity = [
            ("NPU ID", str(npu)),
            ("NPU Name", v.chip.split("_")[1]),
            ("Chip ID", str(chip)),
            ("Chip Name", "Ascend910"),
        ]
    else:
        identity = [
            ("NPU ID", str(npu)),
            ("Chip ID", str(chip)),
            ("Chip Type", "Ascend"),
            ("Chip Name", v.table_name),
        ]
    per_chip = kv(
        [
            *identity,
            ("Chip Version", "V1"),
            ("PCIe Bus Info", f"0000:{bus}:00.0"),
            ("Firmware Version", "7.8.0.6.201"),
        ]
    )
    return whole, per_chip


def npu_list(v: Variant) -> str:
    """`npu-smi info -l`: a Total Count line, then one `NPU ID : n` block per NPU (the
    fields of the board block that identify the card)."""

    def kv(key: str, value: str) -> str:
        return f"        {key:<31}: {value}\n"

    text = kv("Total Count", str(v.npus))
    for npu in range(v.npus):
        text += "\n" + kv("NPU ID", str(npu))
        text += kv("Product Name", v.product_name)
        text += kv("Serial Number", f"1025C90487{npu:02d}")
        text += kv("Chip Count", str(v.dies))
    return text


def mapping(v: Variant) -> str:
    # `npu-smi info -m` (reference cann-environment.md §3.2): A2 rows name `Ascend 910B4` and add
    # an `Mcu` row per NPU; A3 rows name `Ascend910`, one per die.
    head = "        NPU ID                         Chip ID                        Chip Logic ID                  Chip Name\n"
    rows = []
    logic = 0
    for npu in range(v.npus):
        for chip in range(v.dies):
            name = "Ascend910" if v.dies == 2 else f"Ascend {v.table_name}"
            rows.append(f"        {npu:<31}{chip:<31}{logic:<31}{name}\n")
            logic += 1
        if v.dies == 1:
            rows.append(f"        {npu:<31}{1:<31}{'-':<31}Mcu\n")
    return head + "".join(rows)


def lay_out_hardware(sysroot: Path, v: Variant, rel: Release) -> None:
    # PCI functions: one per die, vendor 0x19e5
    for b in v.bus[: v.npus * v.dies]:
        dev = sysroot / "sys/bus/pci/devices" / f"0000:{b.lower()}:00.0"
        write(dev / "vendor", "0x19e5\n")
        write(dev / "device", f"0x{v.pci_device}\n")
        write(dev / "subsystem_vendor", "0x19e5\n")
        write(dev / "subsystem_device", f"0x{v.subsystem_device}\n")
        # PCI class 0x1200xx: "Processing accelerators", as lspci shows these devices.
        write(dev / "class", "0x120000\n")
    # device nodes (placeholders: the sandbox cannot mknod) and the DCMI folder containers mount
    for i in range(v.npus * v.dies):
        # /dev/davinci<N> per die (0-7 on an A2 server, 0-15 on an A3), plus the three shared nodes
        # the CANN images pass with --device.
        write(sysroot / "dev" / f"davinci{i}", "")
    for node in ("davinci_manager", "devmm_svm", "hisi_hdc"):
        write(sysroot / "dev" / node, "")
    (sysroot / "usr/local/dcmi").mkdir(parents=True, exist_ok=True)
    # driver installer record, driver and firmware version files
    write(
        # The driver installer's record as tests/fixtures/host/ascend_install.info holds it,
        # including Driver_Install_Status=complete, without which npu-smi warns.
        sysroot / "etc/ascend_install.info",
        "UserName=HwHiAiUser\nUserGroup=HwHiAiUser\nFirmware_Install_Type=full\n"
        "Firmware_Install_Path_Param=/usr/local/Ascend\nDriver_Install_Type=full\n"
        "Driver_Install_Path_Param=/usr/local/Ascend\nDriver_Install_For_All=no\n"
        "Driver_Install_Mode=normal\nDriver_Install_Status=complete\n",
    )
    ascend = sysroot / "usr/local/Ascend"
    write(
        ascend / "driver/version.info",
        f"Version={rel.driver}\nascendhal_version=7.35.23\naicpu_version=1.0\n"
        f"Innerversion={rel.driver_inner}\ncompatible_version={rel.driver_compatible}\n"
        f"compatible_version_fw=[7.0.0,8.9.9]\npackage_version={rel.driver}\n",
    )
    for sub in ("driver/lib64/common", "driver/lib64/driver", "driver/tools"):
        (ascend / sub).mkdir(parents=True, exist_ok=True)
    write(
        ascend / "firmware/version.info",
        f"Version=7.8.0.6.201\nfirmware_version=1.0\npackage_version={rel.driver}\n",
    )
    # npu-smi with its recorded outputs
    data = sysroot / "usr/local/share/cannbuild-sandbox/npu-smi"
    write(data / "info.txt", info_table(v, rel.driver))
    write(data / "mapping.txt", mapping(v))
    write(data / "list.txt", npu_list(v))
    for npu in range(v.npus):
        for chip in range(v.dies):
            whole, per_chip = board(v, npu, chip, rel.driver)
            write(data / f"board-{npu}.txt", whole)
            write(data / f"board-{npu}-{chip}.txt", per_chip)
    env = file_env(data_dir("templates") / "sandbox")
    script = env.get_template("hardware/npu-smi.j2").render(
        variant=v.name,
        npu_count=v.npus,
        chip_count=v.npus * v.dies,
        data_dir=str(data),
        driver_version=rel.driver,
    )
    write(sysroot / "usr/local/bin/npu-smi", script, executable=True)
