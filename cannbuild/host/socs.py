"""SoC families, chip names and the `--soc` values build.sh takes, as
recipes/facts/hosts.toml lists them.

"910B3" is an Atlas A2 chip, not A3; the bare "Ascend910B" is an old 910
name.  Names are therefore matched exactly, never by prefix
(reference cann-environment.md §3.1).
"""

from __future__ import annotations

import re
from typing import Optional

from ..errors import UsageError
from .published import Family, families, read

# sysfs `vendor` reads `0x19e5` (`npu-smi info -t board` prints it as `PCI Vendor ID : 0x19E5`).
HUAWEI_PCI_VENDOR = "19e5"


def by_soc(soc: str) -> Optional[Family]:
    return next((fam for fam in families() if fam.soc == soc), None)


def by_pci_device(device: str) -> Optional[Family]:
    # sysfs `device` reads `0xd802`; case and `0x` are dropped so `0xD802` matches too.
    dev = device.strip().lower().removeprefix("0x")
    return next((fam for fam in families() if fam.pci_device == dev), None)


def by_chip(chip: str) -> Optional[Family]:
    """Exact chip-name match (case-insensitive); `Ascend910B` is the old 910."""
    lowered = chip.lower()
    return next((f for f in families() if any(c.lower() == lowered for c in f.chips)), None)


def chip_from_table_name(name: str) -> Optional[str]:
    """npu-smi's Name column: `910B3` -> `Ascend910B3`; `Ascend910` (A3) -> None."""
    # The A2 table prints `910B3` without the `Ascend` that chip names carry; the A3 table
    # prints `Ascend910`, which names no chip until the board block adds `NPU Name : 9392`.
    candidate = name if name.lower().startswith("ascend") else f"Ascend{name}"
    fam = by_chip(candidate)
    if fam is None:
        return None
    return next((c for c in fam.chips if c.lower() == candidate.lower()), None)


SOC_WORDS = (
    "A2, 910b or a chip such as Ascend910B3 = ascend910b (Atlas A2); "
    "A3, 910C, 910_93 or Ascend910_9392 = ascend910_93 (Atlas A3)"
)


def family_soc(word: str) -> str:
    """The family `--soc` value of a build's own spelling (v8.5.0's ascend910_95 is the
    ascend950), else the word itself (kirinx90: no family cannbuild knows)."""
    lowered = word.lower()
    return _said_soc(lowered) if lowered.startswith("ascend") else lowered


def _said_soc(lowered: str) -> str:
    """The `--soc` value a word means (hosts.toml soc_words: `a3`, `910b`), else the word."""
    words = {w: soc for f in read() for w, soc in f.soc_words.items()}
    return words.get(lowered, lowered)


def normalize_soc(value: str, flag: str = "--soc") -> Family:
    """Accept a family (`ascend910b`), a word users say (`A3`, `910b`) or a chip
    (`Ascend910B3`, `ascend910_9391`)."""
    raw = value.strip()
    lowered = _said_soc(raw.lower())
    # Exact case first: `Ascend910B` is an old-910 chip, while `ascend910b` (lower case) is the
    # A2's `--soc` value.
    exact = next((f for f in families() if raw in f.chips), None)
    fam = exact or by_soc(lowered) or by_chip(raw)
    # `ascend910_9391` style: vllm-ascend's SOC_VERSION spelling, which ops-transformer's
    # build.sh also accepts because it matches `--soc` values as lower-case substrings.
    if fam is None and re.fullmatch(r"ascend910_93\d\d", lowered):
        fam = by_soc("ascend910_93")
    if fam is None:
        known = ", ".join(f"{f.soc} ({f.product})" for f in families())
        raise UsageError(
            f"{flag} {value!r} is not a SoC cannbuild knows.",
            f"Use one of {known}; {SOC_WORDS} "
            "(npu-smi info -t board -i 0 -c 0 prints the chip name).",
        )
    return fam
