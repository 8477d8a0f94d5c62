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

_VERSION_RE = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")
_BUS_RE = re.compile(r"^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
_NAME_CELL_RE = re.compile(r"^(\d+)\s+(\S+)$")
_CHIP_CELL_RE = re.compile(r"^(\d+)(?:\s+(\d+))?$")
_USAGE_RE = re.compile(r"(\d+)\s*/\s*(\d+)")


class NpuSmiParseError(ValueError):
    """npu-smi printed something that is not a table cannbuild knows."""


class ChipRow(Struct, frozen=True, kw_only=True):
    npu: int
    chip: int
    phy_id: Optional[int]
    name: str
    health: str
    bus_id: str
    hbm_total_mb: Optional[int]


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
        if not line.startswith("|"):
            continue
        m = _VERSION_RE.search(line)
        if m:
            version = m.group(2)
            continue
        cells = _cells(line)
        head = cells[0] if cells else ""
        if head.startswith("NPU") and "Process" in line:
            in_processes = True  # the device table is done; running processes follow
            continue
        if in_processes:
            row = _process_row(cells)
            if row is not None:
                processes.append(row)
            continue
        if head.startswith("NPU ID") and "Name" in line:
            table = "950"
            continue
        if head.startswith("NPU") and "Name" in head:
            continue
        if head.startswith("Chip"):
            table = "A3" if "Phy-ID" in head else (table or "A2")
            continue
        if len(cells) < 3:
            continue
        name_match = _NAME_CELL_RE.match(head)
        if name_match and not _BUS_RE.match(cells[1]):
            pending = (int(name_match.group(1)), name_match.group(2), cells[1])
            continue
        chip_match = _CHIP_CELL_RE.match(head)
        if chip_match and _BUS_RE.match(cells[1]) and pending is not None:
            usage = _USAGE_RE.findall(cells[2])
            npu, name, health = pending
            chips.append(
                ChipRow(
                    npu=npu,
                    chip=int(chip_match.group(1)),
                    phy_id=int(chip_match.group(2)) if chip_match.group(2) else None,
                    name=name,
                    health=health,
                    bus_id=cells[1],
                    hbm_total_mb=int(usage[-1][1]) if usage else None,
                )
            )
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
    return next(c for c in fam.chips if c.lower() == candidate.lower())


def chip_name_from_table(info: NpuSmiInfo) -> Optional[str]:
    names = {chip_from_table_name(n) for n in info.names}
    names.discard(None)
    return names.pop() if len(names) == 1 else None
