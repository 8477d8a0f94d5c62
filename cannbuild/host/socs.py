"""SoC families, chip names and the `--soc` values build.sh takes.

"910B3" is an Atlas A2 chip, not A3; the bare "Ascend910B" is an old 910
name.  Names are therefore matched exactly, never by prefix
(reference cann-environment.md §3.1).
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from msgspec import Struct

from ..errors import UsageError


class Family(Struct, frozen=True, kw_only=True):
    soc: str  # the build.sh --soc value
    variant: str  # A2, A3, ...
    product: str
    pci_device: str  # lower-case hex, no 0x
    chips: Tuple[str, ...]
    dies_per_npu: int = 1


# The families of reference cann-environment.md §3.1: chip names as aclrtGetSocName spells
# them (opbase op_kernel_lib.cpp socOpMap, torch_npu NpuVariables.h), the PCI device id
# sysfs shows, and the ops-transformer build.sh `--soc` value.  Ascend910_9363 appears only
# in torch_npu's list.  The A3 puts two dies behind each NPU: two chip rows per NPU in
# `npu-smi info` and 16 PCI functions on an 8-NPU server.
FAMILIES: Tuple[Family, ...] = (
    Family(
        soc="ascend910b",
        variant="A2",
        product="Atlas A2",
        pci_device="d802",
        chips=(
            "Ascend910B1",
            "Ascend910B2",
            "Ascend910B2C",
            "Ascend910B3",
            "Ascend910B4",
            "Ascend910B4-1",
        ),
    ),
    Family(
        soc="ascend910_93",
        variant="A3",
        product="Atlas A3",
        pci_device="d803",
        chips=(
            "Ascend910_9391",
            "Ascend910_9392",
            "Ascend910_9381",
            "Ascend910_9382",
            "Ascend910_9372",
            "Ascend910_9362",
            "Ascend910_9363",
        ),
        dies_per_npu=2,
    ),
    Family(
        soc="ascend910",
        variant="910",
        product="Atlas 800/900 (Ascend 910)",
        pci_device="d801",
        # opbase's socOpMap sends the bare `Ascend910B` to `ascend910/`: an old-910 name, and a
        # prefix of the A2's `Ascend910B3`.
        chips=("Ascend910A", "Ascend910ProA", "Ascend910ProB", "Ascend910PremiumA", "Ascend910B"),
    ),
    Family(
        soc="ascend950",
        variant="950",
        product="Ascend 950",
        pci_device="d806",
        chips=("Ascend950PR", "Ascend950DT"),
    ),
    Family(
        soc="ascend310p",
        variant="310P",
        product="Atlas inference (310P)",
        pci_device="d500",
        chips=("Ascend310P1", "Ascend310P3", "Ascend310P5", "Ascend310P7"),
    ),
)

# sysfs `vendor` reads `0x19e5` (`npu-smi info -t board` prints it as `PCI Vendor ID : 0x19E5`).
HUAWEI_PCI_VENDOR = "19e5"


def by_soc(soc: str) -> Optional[Family]:
    for fam in FAMILIES:
        if fam.soc == soc:
            return fam
    return None


def by_pci_device(device: str) -> Optional[Family]:
    # sysfs `device` reads `0xd802`; case and `0x` are dropped so `0xD802` matches too.
    dev = device.strip().lower().removeprefix("0x")
    for fam in FAMILIES:
        if fam.pci_device == dev:
            return fam
    return None


def by_chip(chip: str) -> Optional[Family]:
    """Exact chip-name match (case-insensitive); `Ascend910B` is the old 910."""
    lowered = chip.lower()
    for fam in FAMILIES:
        if any(c.lower() == lowered for c in fam.chips):
            return fam
    return None


def chip_from_table_name(name: str) -> Optional[str]:
    """npu-smi's Name column: `910B3` -> `Ascend910B3`; `Ascend910` (A3) -> None."""
    # The A2 table prints `910B3` without the `Ascend` that chip names carry; the A3 table
    # prints `Ascend910`, which names no chip until the board block adds `NPU Name : 9392`.
    candidate = name if name.lower().startswith("ascend") else f"Ascend{name}"
    fam = by_chip(candidate)
    if fam is None:
        return None
    for chip in fam.chips:
        if chip.lower() == candidate.lower():
            return chip
    return None


# The words users say for a family: the product (A2, A3), the chip family without
# "ascend" (910b, 910_93), and build.sh's own spelling for the 950.
_SOC_ALIASES: Dict[str, str] = {
    "ascend910_95": "ascend950",
    "a2": "ascend910b",
    "a3": "ascend910_93",
    "910b": "ascend910b",
    "910_93": "ascend910_93",
    "91093": "ascend910_93",
    "910": "ascend910",
    "950": "ascend950",
    "310p": "ascend310p",
}

SOC_WORDS = (
    "A2, 910b or a chip such as Ascend910B3 = ascend910b (Atlas A2); "
    "A3, 910_93 or Ascend910_9392 = ascend910_93 (Atlas A3)"
)


def normalize_soc(value: str, flag: str = "--soc") -> Family:
    """Accept a family (`ascend910b`), a word users say (`A3`, `910b`) or a chip
    (`Ascend910B3`, `ascend910_9391`)."""
    raw = value.strip()
    lowered = raw.lower()
    lowered = _SOC_ALIASES.get(lowered, lowered)
    # Exact case first: `Ascend910B` is an old-910 chip, while `ascend910b` (lower case) is the
    # A2's `--soc` value.
    exact = next((f for f in FAMILIES if raw in f.chips), None)
    fam = exact or by_soc(lowered) or by_chip(raw)
    # `ascend910_9391` style: vllm-ascend's SOC_VERSION spelling, which ops-transformer's
    # build.sh also accepts because it matches `--soc` values as lower-case substrings.
    if fam is None and re.fullmatch(r"ascend910_93\d\d", lowered):
        fam = by_soc("ascend910_93")
    if fam is None:
        known = ", ".join(f"{f.soc} ({f.product})" for f in FAMILIES)
        raise UsageError(
            f"{flag} {value!r} is not a SoC cannbuild knows.",
            f"Use one of {known}; {SOC_WORDS} "
            "(npu-smi info -t board -i 0 -c 0 prints the chip name).",
        )
    return fam
