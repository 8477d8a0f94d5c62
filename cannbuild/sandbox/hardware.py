"""The emulated host's hardware: PCI devices, npu-smi, driver and firmware records.

npu-smi output is made from the real captures in tests/fixtures/host, with the
version line and counts made consistent with the emulated driver.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

from msgspec import Struct

from ..bounded import DATA_FILE, read_text
from ..render.templates import file_env
from ..resources import data_dir
from .files import write
from .releases import Release

# Bus ids as the real captures list them.
# tests/fixtures/host/a2-910b3-npu-smi-info-cann8.3.txt (8 x 910B3, one PCI function each).
A2_BUS = ("C1", "C2", "81", "82", "01", "02", "41", "42")
# tests/fixtures/host/a3-npu-smi-info-idle-cann8.2.txt: two dies per NPU, Phy-ID 0..15.
A3_BUS = (
    "9D",
    "9F",
    "99",
    "9B",
    "95",
    "97",
    "91",
    "93",
    "8D",
    "8F",
    "89",
    "8B",
    "85",
    "87",
    "81",
    "83",
)


class Variant(Struct, frozen=True, kw_only=True):
    name: str
    soc: str
    chip: str
    pci_device: str
    npus: int
    dies: int
    table_name: str  # npu-smi's Name column
    # PCI subsystem device id (vendor 0x19e5): ascend-deployer tells cards apart by it,
    # 0x3003 on 910B (A900T) boards, 0x3001 on the A3 board (npu-smi board captures)
    subsystem_device: str = "3003"


VARIANTS = {
    # 8 x 910B3 (the A2 capture) and an 8-module A3 (Ascend910_9392, the board capture's chip).
    "A2": Variant(
        name="A2",
        soc="ascend910b",
        chip="Ascend910B3",
        pci_device="d802",
        npus=8,
        dies=1,
        table_name="910B3",
    ),
    "A3": Variant(
        name="A3",
        soc="ascend910_93",
        chip="Ascend910_9392",
        pci_device="d803",
        npus=8,
        dies=2,
        table_name="Ascend910",
        subsystem_device="3001",
    ),
}


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
    # The n-th die of the server in the capture's Bus-Id order.
    bus = (A3_BUS if v.dies == 2 else A2_BUS)[npu * v.dies + chip]

    def kv(pairs: List[Tuple[str, str]]) -> str:
        # npu-smi's `Key : value` layout: 8 spaces, the key padded to 31, then `: `
        # (tests/fixtures/host/a2-npu-smi-board.txt).
        return "".join(f"        {k:<31}: {val}\n" for k, val in pairs)

    whole = kv(
        [
            ("NPU ID", str(npu)),
            # Product names from the board captures: IT21HMDC_Bin5 (A2) and IT22HMDA_2_S (A3).
            ("Product Name", "IT22HMDA_2_S" if v.dies == 2 else "IT21HMDC_Bin5"),
            ("Model", "NA"),
            ("Manufacturer", "Huawei"),
            ("Serial Number", f"1025C90487{npu:02d}"),
            ("Software Version", driver),
            ("Firmware Version", "7.8.0.6.201"),
            ("Compatibility", "OK"),
            ("Board ID", "0x71" if v.dies == 2 else "0x60"),
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
        text += kv("Product Name", "IT22HMDA_2_S" if v.dies == 2 else "IT21HMDC_Bin5")
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
    bus = A3_BUS if v.dies == 2 else A2_BUS
    for b in bus[: v.npus * v.dies]:
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
