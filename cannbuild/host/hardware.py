"""Which NPUs the host has: PCI ids from sysfs first, then `npu-smi`.

PCI ids need no driver, so they also work in containers and on hosts whose
driver is broken; `npu-smi` adds the exact chip name (910B3, 9392).
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct

from ..proc import run
from .infofiles import InfoFileError, read_host_file
from .npusmi import (
    NpuProcess,
    NpuSmiInfo,
    NpuSmiParseError,
    chip_name_from_table,
    parse_board,
    parse_info,
)
from .npusmi import soc_from_board as _soc_from_board
from .socs import HUAWEI_PCI_VENDOR, Family, by_chip, by_pci_device, by_soc
from .sysroot import Sysroot

# Each PCI function has `vendor` (`0x19e5`) and `device` (`0xd802`) files here; npu-smi itself
# derives the chip type from the same device id (npu_common.c npu_init_ep_chip_type).
PCI_DEVICES = "/sys/bus/pci/devices"
# The driver installs npu-smi into both directories; containers bind-mount one of them
# (`-v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi` in the CANN image docs).
NPU_SMI_PATHS = ("/usr/local/bin/npu-smi", "/usr/local/sbin/npu-smi")
# Per call: doctor runs `npu-smi info` and at most one `-t board` query after it.
NPU_SMI_TIMEOUT_S = 3.0


class Hardware(Struct, frozen=True, kw_only=True):
    source: str  # "pci", "npu-smi" or "none"
    family: Optional[Family]
    chip: Optional[str]
    npu_count: int
    chip_count: int
    pci_counts: Dict[str, int]
    npu_smi: Optional[Path]
    npu_smi_version: Optional[str]
    problems: Tuple[str, ...] = ()
    health: Tuple[Tuple[int, str], ...] = ()  # (NPU, npu-smi Health) per NPU, worst chip first
    processes: Tuple[NpuProcess, ...] = ()

    @property
    def mixed(self) -> bool:
        return len(self.pci_counts) > 1


def scan_pci(sysroot: Sysroot) -> Dict[str, int]:
    """Count Ascend PCI functions per SoC family (vendor 0x19e5)."""
    base = sysroot.path(PCI_DEVICES)
    counts: Counter = Counter()
    try:
        devices = sorted(base.iterdir())
    except OSError:
        return {}
    for dev in devices:
        try:
            # Each file holds one line such as `0x19e5`, so 64 bytes is ample.
            vendor = read_host_file(dev / "vendor").decode("ascii").strip().lower()
            if vendor.removeprefix("0x") != HUAWEI_PCI_VENDOR:
                continue
            device = read_host_file(dev / "device").decode("ascii").strip()
        except (InfoFileError, UnicodeDecodeError):
            continue
        fam = by_pci_device(device)
        if fam is not None:
            counts[fam.soc] += 1
    return dict(counts)


# In a container DCMI refuses a device it cannot have (cann-environment.md 4.3): `dcmi module
# initialize failed. ret is -8005` (another container holds it, or this one is not privileged),
# `... because the device is used. ret is -8020`; npu-smi may still exit 0.
# The code is searched alone and its line cut out after: a leading `[^\n]{0,200}` in the
# pattern began a 200-character scan at every character, 8 ms on a 5 KB `npu-smi info`.
DCMI_REFUSED = re.compile(r"\bret is -80(?:05|20)\b")


def dcmi_refusal(text: str) -> Optional[str]:
    """The line (its last 200 characters up to the code) where DCMI refuses a device."""
    found = DCMI_REFUSED.search(text) if "ret is -80" in text else None
    if found is None:
        return None
    line = text[text.rfind("\n", 0, found.start()) + 1 : found.end()]
    return line[-200 - len(found.group(0)) :]


def run_npu_smi(npu_smi: Path, args: Sequence[str], env: Mapping[str, str]) -> str:
    """Run npu-smi with a bounded wait; a hung driver must not hang doctor."""
    proc = run([str(npu_smi), *args], timeout=NPU_SMI_TIMEOUT_S, env=env, merge_stderr=True)
    text = proc.stdout.decode("utf-8", "replace")
    refused = dcmi_refusal(text)
    if proc.returncode != 0 or refused:
        said = text.strip().splitlines()[-1][:120] if text.strip() else "no output"
        raise NpuSmiParseError(
            f"'npu-smi {' '.join(args)}' exited with {proc.returncode}: "
            f"{refused.strip() if refused else said}"
        )
    return text


def detect_hardware(sysroot: Sysroot, env: Mapping[str, str]) -> Hardware:
    problems: List[str] = []
    pci = scan_pci(sysroot)
    npu_smi = sysroot.which("npu-smi", env, list(NPU_SMI_PATHS))
    info: Optional[NpuSmiInfo] = None
    if npu_smi is not None:
        try:
            info = parse_info(run_npu_smi(npu_smi, ["info"], env))
        except subprocess.TimeoutExpired:
            problems.append(f"npu-smi info did not answer within {NPU_SMI_TIMEOUT_S:.0f} s")
        except (OSError, NpuSmiParseError) as exc:
            problems.append(str(exc))

    family: Optional[Family] = None
    source = "none"
    chip_count = 0
    if pci:
        source = "pci"
        # A mixed host keeps the family with the most functions and reports the mix (`mixed`).
        soc, chip_count = max(pci.items(), key=lambda kv: kv[1])
        family = by_soc(soc)
    elif info is not None:
        source = "npu-smi"
        family = _family_from_table(info)
        chip_count = len(info.chips)

    chip: Optional[str] = None
    npu_count = 0
    if family is not None:
        # An A3 shows one PCI function per die, two per NPU (16 on an 8-NPU server); a lone
        # function still counts as one NPU.
        npu_count = max(chip_count // family.dies_per_npu, 1 if chip_count else 0)
    if info is not None:
        table_family = _family_from_table(info)
        if family is not None and table_family is not None and table_family.soc != family.soc:
            problems.append(
                f"PCI ids say {family.product} but npu-smi's table looks like "
                f"{table_family.product}"
            )
        # The table lists NPUs directly, so its count wins over the PCI estimate.
        npu_count = info.npu_count
        chip = chip_name_from_table(info)
        if chip is None and npu_smi is not None:
            chip = _chip_from_board(npu_smi, info, env, problems)
    return Hardware(
        source=source,
        family=family,
        chip=chip,
        npu_count=npu_count,
        chip_count=chip_count,
        pci_counts=pci,
        npu_smi=npu_smi,
        npu_smi_version=info.version if info else None,
        problems=tuple(problems),
        health=_health(info) if info else (),
        processes=info.processes if info else (),
    )


# npu-smi's Health values, best first (Huawei's ascend-deployer stops at anything but OK)
HEALTH_ORDER = ("OK", "Warning", "Alarm", "Critical")


def _health(info: NpuSmiInfo) -> Tuple[Tuple[int, str], ...]:
    def rank(health: str) -> int:  # a value outside the four known ones: worse than Critical
        return HEALTH_ORDER.index(health) if health in HEALTH_ORDER else len(HEALTH_ORDER)

    worst: Dict[int, str] = {}
    for chip in info.chips:
        if chip.npu not in worst or rank(chip.health) > rank(worst[chip.npu]):
            worst[chip.npu] = chip.health
    return tuple(sorted(worst.items()))


def _family_from_table(info: NpuSmiInfo) -> Optional[Family]:
    if info.table == "A3":
        return by_soc("ascend910_93")
    if info.table == "950":
        return by_soc("ascend950")
    chip = chip_name_from_table(info)
    return by_chip(chip) if chip else None


def _chip_from_board(
    npu_smi: Path, info: NpuSmiInfo, env: Mapping[str, str], problems: List[str]
) -> Optional[str]:
    # `-t board -i N -c 0` prints the chip identity (Chip Name, NPU Name or Chip Type) of NPU N.
    first = min(c.npu for c in info.chips)
    try:
        board = parse_board(
            run_npu_smi(npu_smi, ["info", "-t", "board", "-i", str(first), "-c", "0"], env)
        )
    except subprocess.TimeoutExpired:
        problems.append("npu-smi info -t board did not answer in time")
        return None
    except (OSError, NpuSmiParseError) as exc:
        problems.append(str(exc))
        return None
    return _soc_from_board(board)
