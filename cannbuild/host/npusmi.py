"""Parsers for `npu-smi info` tables and `npu-smi info -t board` blocks.

The A3 table is recognised by its second header row `| Chip  Phy-ID`, and has
two chip rows per NPU named `Ascend910`; the A2 table has one chip row per
NPU named `910B1`…`910B4-1` (reference cann-environment.md §3.2-3.3).
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from msgspec import Struct

from .socs import by_chip, chip_from_table_name

# The banner row holds the npu-smi build, then the driver version; group 2 is kept:
#   | npu-smi 25.3.rc1.b061            Version: 25.3.rc1.b061                 |
_VERSION_RE = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")
# A PCI address `domain:bus:device.function` as the Bus-Id column prints it: `0000:C1:00.0`.
_BUS_RE = re.compile(r"^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
# The first row of an NPU: `| 0     910B3               | OK            | 98.2  52 ...`
# (NPU id, then the Name column; `Ascend910` on an A3).
_NAME_CELL_RE = re.compile(r"^(\d+)\s+(\S+)$")
# The second row: `| 0                         | 0000:C1:00.0  | ...` on an A2 (chip only),
# `| 1     1                   | 0000:9F:00.0  | ...` on an A3 (chip, then Phy-ID 0..15).
_CHIP_CELL_RE = re.compile(r"^(\d+)(?:\s+(\d+))?$")


class NpuSmiParseError(ValueError):
    """npu-smi printed something that is not a table cannbuild knows."""


class ChipRow(Struct, frozen=True, kw_only=True):
    npu: int
    chip: int
    name: str
    health: str


class NpuProcess(Struct, frozen=True, kw_only=True):
    npu: int
    chip: Optional[int]
    pid: int
    name: str


class NpuSmiInfo(Struct, frozen=True, kw_only=True):
    version: Optional[str]
    table: str  # "A2", "A3" or "950"
    chips: Tuple[ChipRow, ...]
    processes: Tuple[NpuProcess, ...] = ()

    @property
    def npu_count(self) -> int:
        return len({c.npu for c in self.chips})

    @property
    def names(self) -> Tuple[str, ...]:
        return tuple(sorted({c.name for c in self.chips}))


def _cells(line: str) -> List[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse_info(text: str) -> NpuSmiInfo:
    """Parse `npu-smi info`; raise NpuSmiParseError on anything else."""
    version: Optional[str] = None
    table: Optional[str] = None
    chips: List[ChipRow] = []
    processes: List[NpuProcess] = []
    in_processes = False
    pending: Optional[Tuple[int, str, str]] = None
    for raw in text.splitlines():
        line = raw.rstrip()
        # Border rows (`+----+`, `+====+`) carry no data; every data row starts with `|`.
        if not line.startswith("|"):
            continue
        m = _VERSION_RE.search(line)
        if m:
            version = m.group(2)
            continue
        cells = _cells(line)
        head = cells[0] if cells else ""
        # The process section's header: `| NPU     Chip   | Process id  | Process name ...`.
        if head.startswith("NPU") and "Process" in line:
            in_processes = True  # the device table is done; running processes follow
            continue
        if in_processes:
            row = _process_row(cells)
            if row is not None:
                processes.append(row)
            continue
        # The 950 prints a different table whose header starts `| NPU ID | Name`
        # (reference cann-environment.md §3.2); no 950 capture exists here, so only the
        # header is recognised and the table kind recorded.
        if head.startswith("NPU ID") and "Name" in line:
            table = "950"
            continue
        # The first header row, `| NPU   Name                | Health        | Power(W) ...`.
        if head.startswith("NPU") and "Name" in head:
            continue
        # The second header row tells the tables apart: the A3 prints `| Chip  Phy-ID | Bus-Id`
        # only when the chip type is 910_93 (npu-smi's print_total_info_header_v1);
        # the A2 prints `| Chip | Bus-Id`.
        if head.startswith("Chip"):
            table = "A3" if "Phy-ID" in head else (table or "A2")
            continue
        if len(cells) < 3:
            continue
        # A name row has the Health (OK, Warning, Alarm, Critical) in its second cell, a chip
        # row the Bus-Id; the name row is held until the chip row under it completes the record.
        # An A3 NPU repeats its name row above each of its two chip rows, so each die gets one.
        name_match = _NAME_CELL_RE.match(head)
        if name_match and not _BUS_RE.match(cells[1]):
            pending = (int(name_match.group(1)), name_match.group(2), cells[1])
            continue
        chip_match = _CHIP_CELL_RE.match(head)
        if chip_match and _BUS_RE.match(cells[1]) and pending is not None:
            npu, name, health = pending
            chips.append(ChipRow(npu=npu, chip=int(chip_match.group(1)), name=name, health=health))
            pending = None
    if table is None or not chips:
        preview = text.strip().splitlines()[:1]
        shown = preview[0][:80] if preview else "(empty output)"
        raise NpuSmiParseError(
            f"npu-smi info printed no NPU table cannbuild can read (first line: {shown!r})"
        )
    return NpuSmiInfo(version=version, table=table, chips=tuple(chips), processes=tuple(processes))


def _process_row(cells: List[str]) -> Optional[NpuProcess]:
    """`| <npu>  <chip> | <pid> | <name> | <MB> |`; "No running processes found" is None."""
    if len(cells) < 3:
        return None
    ids = cells[0].split()
    # The idle line `| No running processes found in NPU 0 |` is one cell and has no pid.
    if not ids or not ids[0].isdigit() or not cells[1].isdigit():
        return None
    chip = int(ids[1]) if len(ids) > 1 and ids[1].isdigit() else None
    return NpuProcess(npu=int(ids[0]), chip=chip, pid=int(cells[1]), name=cells[2])


def parse_board(text: str) -> Dict[str, str]:
    """`npu-smi info -t board -i N [-c C]`: `Key : value` lines."""
    values: Dict[str, str] = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        # Keys are padded and values may hold colons themselves, so split at the first one only:
        #         PCIe Bus Info                  : 0000:C1:00.0
        key, _, value = line.partition(":")
        key = key.strip()
        if key:
            values[key] = value.strip()
    if not values:
        raise NpuSmiParseError("npu-smi info -t board printed no 'Key : value' lines")
    return values


def soc_from_board(board: Dict[str, str]) -> Optional[str]:
    """A2: Chip Type + Chip Name (`Ascend`+`910B4`); A3: Chip Name_NPU Name
    (`Ascend910`_`9392`), as vllm-ascend's setup.py and the AOE docs do."""
    # The A3 block has `NPU Name : 9392` and no `Chip Type`; the A2 block has `Chip Type : Ascend`
    # and no `NPU Name` (tests/fixtures/host/a{2,3}-npu-smi-board-chip.txt).
    chip_name = board.get("Chip Name", "")
    if board.get("NPU Name") and chip_name:
        candidate = f"{chip_name}_{board['NPU Name']}"
    elif board.get("Chip Type") and chip_name:
        candidate = f"{board['Chip Type']}{chip_name}"
    else:
        return None
    fam = by_chip(candidate)
    if fam is None:
        return None
    # Return the family table's spelling, which later exact-name matches compare against.
    return next(c for c in fam.chips if c.lower() == candidate.lower())


def chip_name_from_table(info: NpuSmiInfo) -> Optional[str]:
    # The A3 table's `Ascend910` names no chip (None here), and a host whose rows disagree
    # has no single chip name: both leave the chip to `npu-smi info -t board`.
    names = {chip_from_table_name(n) for n in info.names}
    names.discard(None)
    return names.pop() if len(names) == 1 else None
