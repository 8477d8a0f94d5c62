"""The profilers' CSV files, read with their real quirks (profiler-formats.md §0, §1.2-1.4,
§2.2-2.3).

- Two name sets: torch_npu's kernel_details.csv renames msprof's op_summary columns
  (`Op Name`->`Name`, `OP Type`->`Type`, `Task Type`->`Accelerator Core`, `Task Start
  Time(us)`->`Start Time(us)`, ...); both are accepted.
- `Block Dim`/`Mix Block Dim` became `Block Num`/`Mix Block Num`; `Device_id` and
  `Step Id` come and go with versions and settings.
- Start times carry a trailing TAB, shapes literal double quotes, empty values `N/A`;
  torch_npu writes CRLF, msprof LF; operator_details.csv has multi-line cells.
A cell or row that cannot be read is an error naming the file and the line.
"""

from __future__ import annotations

import contextlib
import csv
import math
from operator import attrgetter
from pathlib import Path
from typing import IO, Dict, Iterator, List, Sequence, Tuple

from msgspec import Struct

from ..bounded import PROFILE_CSV, PROFILE_CSV_LINE_CHARS, PROFILE_CSV_ROW_CHARS, MiB, open_text
from ..errors import ProfileFormatError
from .analysis import Kernel, OpStat
from .ops import NA, TypeResolver, strip_quotes

# canonical column -> the names it has in kernel_details.csv and op_summary_*.csv
# The two headers this maps, torch_npu 2.13 at Level0 and msprof's op_summary:
#   Step Id,Device_id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),...
#   Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,Task Start Time(us),...
KERNEL_COLUMNS: Dict[str, Tuple[str, ...]] = {
    "name": ("Name", "Op Name"),
    "type": ("Type", "OP Type"),
    "core": ("Accelerator Core", "Task Type"),
    "start": ("Start Time(us)", "Task Start Time(us)"),
    "duration": ("Duration(us)", "Task Duration(us)"),
    "wait": ("Wait Time(us)", "Task Wait Time(us)"),
    # msprof renamed Block Dim to Block Num on 2026-01-28, torch_npu between 2.8.0 and 2.10.0:
    # files of both spellings exist.
    "block": ("Block Num", "Block Dim"),
    "mix_block": ("Mix Block Num", "Mix Block Dim"),
    # op_summary and Level1 kernel_details have a Stream ID; torch_npu's Level0 table has none.
    "stream": ("Stream ID",),
    # torch_npu <= 2.5.1 writes no Device_id; `Step Id` appears only when steps were scheduled.
    "device": ("Device_id",),
    "step": ("Step Id",),
    "input_shapes": ("Input Shapes",),
    "input_dtypes": ("Input Data Types",),
    # FlashAttentionScore's first output, softmax_max (B, N, S, 8), tells N and S (affinity.py).
    "output_shapes": ("Output Shapes",),
}
# Enough to place a kernel in time and name it; every other column is optional.
KERNEL_REQUIRED = ("name", "start", "duration")
# `Device_id,OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),
# Ratio(%)`; msprof's older Python path wrote `Model Name` where `Device_id` is.
STATISTIC_COLUMNS: Dict[str, Tuple[str, ...]] = {
    "type": ("OP Type",),
    "core": ("Core Type",),
    "count": ("Count",),
    "total": ("Total Time(us)",),
    "max": ("Max Time(us)",),
}
SHARED_TEXTS = 1 << 16  # distinct cell texts kept once per table (bounds the cache)
OPERATOR_DETAILS_COLUMNS: Dict[str, Tuple[str, ...]] = {
    "name": ("Name",),
    "host": ("Host Total Duration(us)",),
}


class TableInfo(Struct, frozen=True, kw_only=True):
    """What reading a table found, for the report's file list."""

    rows: int
    notes: Tuple[str, ...]


@contextlib.contextmanager
def _open(path: Path, what: str) -> Iterator[Tuple[List[str], Iterator[Tuple[int, List[str]]]]]:
    """The header of a CSV file and its rows that are not blank, each with the line it
    starts on (a real CSV reader: quoted cells may hold commas and line breaks); an empty
    file is an error expecting `what`.  Only a regular file within PROFILE_CSV's bound is
    opened, and no line or row longer than its bound is ever held (bounded.py)."""
    # utf-8-sig drops a BOM; newline="" is what the csv module needs to keep a quoted
    # cell's own `\r\n` (operator_details.csv splits its cells with `";\r\n"`).
    fh = open_text(path, PROFILE_CSV, encoding="utf-8-sig", newline="")
    try:
        rows = _rows(path, _Lines(path, fh))
        header = next(rows, None)
        if header is None:
            raise ProfileFormatError(
                f"{path} line 1: the file is empty.", f"Expected {what} with a header row."
            )
        # A blank line reads as [].
        yield header[1], ((line, row) for line, row in rows if row)
    finally:
        fh.close()


class _Lines:
    """The file's lines for the CSV reader, read with a bounded readline: a line over
    PROFILE_CSV_LINE_CHARS, or a row (quoted cells span lines) over
    PROFILE_CSV_ROW_CHARS, is refused before more of it is read."""

    def __init__(self, path: Path, fh: IO[str]) -> None:
        self.path = path
        self.fh = fh
        self.line = 0
        self.row_chars = 0  # of the row being read; _rows resets it after each row

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        text: str = self.fh.readline(PROFILE_CSV_LINE_CHARS + 1)
        if not text:
            raise StopIteration
        self.line += 1
        if len(text) > PROFILE_CSV_LINE_CHARS:
            raise self._refuse(f"line longer than {PROFILE_CSV_LINE_CHARS // MiB} MiB")
        self.row_chars += len(text)
        if self.row_chars > PROFILE_CSV_ROW_CHARS:
            raise self._refuse(f"row longer than {PROFILE_CSV_ROW_CHARS // MiB} MiB")
        return text

    def _refuse(self, what: str) -> ProfileFormatError:
        return ProfileFormatError(
            f"{self.path} line {self.line}: a {what}, which no profiler writes (cannbuild "
            "reads lines and rows up to that bound).",
            "The file is damaged or not a profiler table: pass the profiler's own CSV.",
        )


def _rows(path: Path, lines: _Lines) -> Iterator[Tuple[int, List[str]]]:
    """Each row with the line it starts on."""
    # strict: a stray quote is an error with a line number, not a silently merged row.
    reader = csv.reader(lines, strict=True)
    start = 1
    while True:
        try:
            row = next(reader)
            # A row is complete: the next one gets its own size bound.
            lines.row_chars = 0
        except StopIteration:
            return
        except csv.Error as exc:
            raise ProfileFormatError(
                # line_num is where the reader stopped, the last line of a multi-line row.
                f"{path} line {reader.line_num}: not valid CSV ({exc}).",
                "The file is damaged or was cut short (was the profiler still writing it?).",
            ) from None
        except UnicodeDecodeError as exc:
            raise ProfileFormatError(
                f"{path} line {reader.line_num + 1}: not UTF-8 text ({exc.reason}).",
                "The profilers write UTF-8 CSV: the file is damaged or not a profiler table.",
            ) from None
        yield start, row
        # line_num is the last line of this row, so the next row starts after it.
        start = reader.line_num + 1


def _columns(
    path: Path,
    header: Sequence[str],
    wanted: Dict[str, Tuple[str, ...]],
    required: Sequence[str],
    kind: str,
) -> Dict[str, int]:
    index = {name.strip(): i for i, name in enumerate(header)}
    found: Dict[str, int] = {}
    for key, names in wanted.items():
        for name in names:
            if name in index:
                found[key] = index[name]
                break
    missing = [wanted[k][0] for k in required if k not in found]
    if missing:
        raise ProfileFormatError(
            f"{path} line 1: the header has no {' / '.join(missing)} column "
            f"(found: {', '.join(h.strip() for h in header) or 'an empty line'}).",
            f"Expected a {kind} header as torch_npu or msprof write it; is this the right file?",
        )
    return found


def _number(path: Path, line: int, column: str, text: str) -> float:
    """A time or count cell: a finite number, not negative (nan/inf would make the
    --json output invalid JSON)."""
    # torch_npu writes `1774235537533009.500<TAB>` unquoted; older files quote it as
    # `"1699529623122090.8<TAB>"`, which the CSV reader unquotes.
    cell = text.strip()  # start times end in a TAB
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ProfileFormatError(
            f"{path} line {line}: {column} is {text!r}, not a number of 0 or more.",
            "The file is damaged or was edited: the profiler writes numbers in this column.",
        ) from None
    return value


def _check_width(path: Path, line: int, row: Sequence[str], width: int) -> None:
    if len(row) != width:
        cut = " (the file was cut short?)" if len(row) < width else ""
        raise ProfileFormatError(
            f"{path} line {line}: {len(row)} fields where the header has {width}{cut}.",
            "Every row of a profiler table has the header's columns: the file is damaged.",
        )


def read_kernels(path: Path) -> Tuple[List[Kernel], TableInfo]:
    """kernel_details.csv or op_summary_*.csv: one Kernel per row."""
    resolve = TypeResolver()
    with _open(path, "a kernel table") as (header, rows):
        cols = _columns(path, header, KERNEL_COLUMNS, KERNEL_REQUIRED, "kernel_details/op_summary")
        width = len(header)
        kernels: List[Kernel] = []
        shared = _Shared()
        named_types = derived = 0
        start_name = header[cols["start"]].strip()
        dur_name = header[cols["duration"]].strip()
        for line, row in rows:
            _check_width(path, line, row, width)
            name = shared(row[cols["name"]].strip())
            type_cell = _cell(row, cols, "type")
            # At Level0 every Type is N/A and the type comes from the name
            # (`aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore`).
            if type_cell and type_cell != NA:
                named_types += 1
            else:
                derived += 1
            # No Device_id column (torch_npu <= 2.5.1) means one device.
            device = _cell(row, cols, "device") or "0"
            stream = _cell(row, cols, "stream")
            # HCCL rows have `Stream ID` N/A (msprof adds them without task or stream ids).
            key = f"device {device}" + (f" stream {stream}" if stream and stream != NA else "")
            kernels.append(
                Kernel(
                    stream=shared(key),
                    name=name,
                    op_type=shared(resolve(name, type_cell)),
                    start_us=_number(path, line, start_name, row[cols["start"]]),
                    dur_us=_number(path, line, dur_name, row[cols["duration"]]),
                    core=shared(_na(_cell(row, cols, "core"))),
                    # Python-written shapes keep literal quotes after CSV parsing: raw
                    # `"""4096,2,512;..."""`.
                    input_shapes=shared(strip_quotes(_na(_cell(row, cols, "input_shapes")))),
                    input_dtypes=shared(_na(_cell(row, cols, "input_dtypes"))),
                    output_shapes=shared(strip_quotes(_na(_cell(row, cols, "output_shapes")))),
                )
            )
        notes = []
        if derived and not named_types:
            notes.append("Type is N/A (Level0): op types taken from the kernel names")
        elif derived:
            notes.append(f"{derived} rows without a Type: op types taken from their names")
        # Which spelling a file uses tells roughly which profiler version wrote it.
        block = [h.strip() for h in header if h.strip() in ("Block Dim", "Block Num")]
        if block:
            notes.append(f"{block[0]} header")
        if "stream" not in cols:
            notes.append("no Stream ID column: chains are matched per device")
        # by stream, then time (two stable sorts: no key tuple per kernel at the peak)
        kernels.sort(key=attrgetter("start_us"))
        kernels.sort(key=attrgetter("stream"))
        return kernels, TableInfo(rows=len(kernels), notes=tuple(notes))


class _Shared:
    """One copy of each repeated cell text (stream, name, type, shapes, dtypes repeat
    every step): the rows kept until the sort cost their Kernel, not their strings."""

    def __init__(self) -> None:
        self._seen: Dict[str, str] = {}

    def __call__(self, text: str) -> str:
        found = self._seen.get(text)
        if found is not None:
            return found
        if len(self._seen) < SHARED_TEXTS:
            self._seen[text] = text
        return text


def _cell(row: Sequence[str], cols: Dict[str, int], key: str) -> str:
    """The row's cell of column `key`, stripped; "" where the file has no such column."""
    i = cols.get(key)
    return row[i].strip() if i is not None else ""


def _na(text: str) -> str:
    return "" if text == NA else text


def read_statistic(path: Path) -> Tuple[List[OpStat], TableInfo]:
    """op_statistic(.csv|_<ts>.csv): one OpStat per op type and core type."""
    with _open(path, "an op_statistic table") as (header, rows):
        cols = _columns(path, header, STATISTIC_COLUMNS, ("type", "count", "total"), "op_statistic")
        width = len(header)
        out: List[OpStat] = []
        for this, row in rows:
            _check_width(path, this, row, width)
            count = _number(path, this, "Count", row[cols["count"]])
            total = _number(path, this, "Total Time(us)", row[cols["total"]])
            biggest = (
                _number(path, this, "Max Time(us)", row[cols["max"]]) if "max" in cols else 0.0
            )
            # `Count` is written as a whole number (`105`); `int` drops a `.0` if one appears.
            out.append(
                OpStat(
                    op_type=_cell(row, cols, "type"),
                    count=int(count),
                    total_us=total,
                    max_us=biggest,
                    core=_cell(row, cols, "core"),
                )
            )
        # op_statistic comes only from Level1/Level2 runs and holds totals per op type.
        return out, TableInfo(
            rows=len(out), notes=("op statistics only: no kernel order, no chains",)
        )


def read_operator_details(path: Path) -> TableInfo:
    """operator_details.csv (torch ops, multi-line cells): checked and counted."""
    with _open(path, "torch_npu's operator_details.csv") as (header, rows):
        cols = _columns(
            path, header, OPERATOR_DETAILS_COLUMNS, ("name", "host"), "operator_details"
        )
        width = len(header)
        count = 0
        for this, row in rows:
            _check_width(path, this, row, width)
            # The one number this table gives: host time per torch op.
            _number(path, this, "Host Total Duration(us)", row[cols["host"]])
            count += 1
        return TableInfo(rows=count, notes=())
