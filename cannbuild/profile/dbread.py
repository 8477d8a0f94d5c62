"""The SQLite exports: torch_npu's `ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler(_<rank>).db`
and msprof's `PROF_*/msprof_<14 digits>.db`, read with the standard library's sqlite3,
read-only, row by row (issue 28 item 5).

Schema, as msprof-analyze 26.2.0 reads it (msprof_analyze/advisor/common/profiling/
op_summary.py `OpSummaryDB`, compare_tools/.../npu_profiling_db_parser.py):
- `STRING_IDS(id, value)`: every name, type and shape cell is an id into it;
- `TASK(globalTaskId, startNs, endNs, deviceId, modelId, streamId, contextId, taskId,
  connectionId, taskType)`: device tasks, nanoseconds;
- `COMPUTE_TASK_INFO(globalTaskId, name, opType, taskType, inputShapes, inputDataTypes,
  outputShapes, ..., blockNum|blockDim, mixBlockNum|mixBlockDim, [opState])`: the
  compute kernels (the `blockDim` spelling before msprof's 2026-01-28 rename; `opState`
  only in some versions);
- `COMMUNICATION_SCHEDULE_TASK_INFO(name, globalTaskId, taskType, opType)`: the AI CPU
  kernels that schedule communication, moved out of COMPUTE_TASK_INFO (msprof
  db_assembler.cpp), still rows of op_summary;
- `COMMUNICATION_OP(opName, startNs, endNs, connectionId, opType, [deviceId])`: the
  collectives (`hcom_allReduce_`), the rows op_summary adds with Task Type COMMUNICATION
  (GenerateHcclBody); their small tasks in TASK are not op_summary rows;
- `PYTORCH_API(startNs, endNs, globalTid, connectionId, name, inputShapes, type)`: torch
  ops (startNs TEXT in torch_npu's schema), `type` 50001 a torch op, 50002 a task-queue
  hop; connectionId is an id into `CONNECTION_IDS(id, connectionId)`, the op's links: a
  CANN node launch's id (TASK.connectionId: a device launch) or, from 5 << 28 up
  (torch_npu START_CONNECTION_ID_FWK_API), a task-queue or forward/backward link.
So the op table, totals and shares equal the CSV export's: op_summary's rows are the
compute tasks but those of Task Type WRITE_BACK, INVALID, HCCL_AI_CPU and COMMUNICATION
(unless named `...AivKernel`: op_summary_assembler.cpp INVALID_TASK_TYPE), the scheduling
kernels and the collectives.  A missing table or column is named in the error; the
variants are named in the notes.
A STRING_IDS value is read once (at most PROFILE_DB_CELL_CHARS of it), shared by the rows
naming it; a time that is not a number is an error naming its column; a signal stops
SQLite's own sort.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple
from urllib.parse import quote

from msgspec import Struct

from ..bounded import PROFILE_DB, PROFILE_DB_CELL_CHARS, open_regular
from ..errors import ProfileFormatError
from .analysis import Kernel, KernelSink
from .hostops import WATCHED, HostCollector, HostOp
from .ops import NA, TypeResolver, strip_quotes

KERNEL_TABLES = ("STRING_IDS", "TASK", "COMPUTE_TASK_INFO")
TASK_COLUMNS = ("globalTaskId", "startNs", "endNs", "streamId")
COMPUTE_COLUMNS = ("globalTaskId", "name")
OPTIONAL_STRINGS = ("opType", "taskType", "inputShapes", "inputDataTypes", "outputShapes")
HINT = (
    "torch_npu writes ascend_pytorch_profiler_<rank>.db and msprof msprof_<ts>.db with these "
    "tables: pass the profiler's own file (was the export finished?)."
)


class DbInfo(Struct, frozen=True, kw_only=True):
    rows: int
    notes: Tuple[str, ...]
    host_ops: Tuple[HostOp, ...]


# op_summary_assembler.cpp: task types that make no op_summary row (but `...AivKernel`)
NOT_OP_ROWS: Tuple[str, ...] = ("WRITE_BACK", "INVALID", "HCCL_AI_CPU", "COMMUNICATION")
FWK_LINKS = 5 << 28  # torch_npu DbConstant.START_CONNECTION_ID_FWK_API
TORCH_OP = 50001  # PYTORCH_API.type of a torch op (torch_npu ApiType.TORCH_OP)


def read_db(path: Path, analyzer: KernelSink) -> DbInfo:
    """Feed the compute kernels to `analyzer` by device, stream and start."""
    os.close(open_regular(path, PROFILE_DB))  # checked; sqlite opens it read-only below
    uri = f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1"
    try:
        db = sqlite3.connect(uri, uri=True)  # bounded: open_regular above, cells below
    except sqlite3.Error as exc:
        raise ProfileFormatError(f"{path}: cannot be opened as SQLite ({exc}).", HINT) from None
    try:
        with _interruptible(db):
            return _read(path, db, analyzer)
    except sqlite3.DatabaseError as exc:
        raise ProfileFormatError(
            f"{path}: not a readable profiler database ({exc}).", HINT
        ) from None
    finally:
        db.close()


@contextlib.contextmanager
def _interruptible(db: sqlite3.Connection) -> Iterator[None]:
    """Ctrl-C and SIGTERM stop SQLite's own work: every 100,000 steps it calls into Python,
    where a pending signal's handler raises; that aborts the query, and sqlite3 hands the
    exception to sys.unraisablehook, whence it is raised again."""
    stopped: List[Optional[BaseException]] = []
    hook, sys.unraisablehook = sys.unraisablehook, lambda u: stopped.append(u.exc_value)
    sqlite3.enable_callback_tracebacks(True)
    db.set_progress_handler(lambda: 0, 100_000)
    try:
        yield
    except sqlite3.OperationalError:
        if stopped and stopped[0] is not None:
            raise stopped[0] from None
        raise
    finally:
        sqlite3.enable_callback_tracebacks(False)
        sys.unraisablehook = hook


def _columns(db: sqlite3.Connection, table: str) -> Set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _read(path: Path, db: sqlite3.Connection, analyzer: KernelSink) -> DbInfo:
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    missing = [t for t in KERNEL_TABLES if t not in tables]
    if missing:
        raise ProfileFormatError(
            f"{path}: no {' / '.join(missing)} table (found: {', '.join(sorted(tables)) or 'none'}).",
            HINT,
        )
    task, compute = _columns(db, "TASK"), _columns(db, "COMPUTE_TASK_INFO")
    for table, have, need in (
        ("TASK", task, TASK_COLUMNS),
        ("COMPUTE_TASK_INFO", compute, COMPUTE_COLUMNS),
    ):
        lacking = [c for c in need if c not in have]
        if lacking:
            raise ProfileFormatError(
                f"{path}: table {table} has no {', '.join(lacking)} column.", HINT
            )
    notes: List[str] = []
    # Which spelling tells roughly which msprof wrote it (op_summary.py COLUMN_BLOCK_NUM).
    if "blockNum" in compute:
        notes.append("schema: COMPUTE_TASK_INFO.blockNum (msprof after 2026-01-28)")
    elif "blockDim" in compute:
        notes.append("schema: COMPUTE_TASK_INFO.blockDim (msprof before 2026-01-28)")
    strings = [c for c in OPTIONAL_STRINGS if c in compute]
    absent = [c for c in OPTIONAL_STRINGS if c not in compute]
    if absent:
        notes.append(f"schema: COMPUTE_TASK_INFO without {', '.join(absent)}")
    device = "t.deviceId" if "deviceId" in task else "0"
    picks = "".join(f", c.{col}" for col in strings)
    sql = (
        f"SELECT {device}, t.streamId, t.startNs, t.endNs, c.name{picks} "
        "FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId"
    )
    if "COMMUNICATION_SCHEDULE_TASK_INFO" in tables:
        own = {"opType": "c.opType", "taskType": "c.taskType"}
        sql += (
            f" UNION ALL SELECT {device}, t.streamId, t.startNs, t.endNs, c.name"
            + "".join(f", {own.get(col, 'NULL')}" for col in strings)
            + " FROM COMMUNICATION_SCHEDULE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId"
        )
    sql += " ORDER BY 1, 2, 3"
    resolve = TypeResolver()
    text = _strings(path, db)
    rows = 0
    for row in db.execute(sql):
        dev, stream, start, end, name = row[:5]
        _nanoseconds(path, "TASK", f"task {rows + 1}", start, end)
        cells = {col: text(value, col) for col, value in zip(strings, row[5:])}
        kernel_name = text(name, "name")
        kind = _text(cells.get("taskType"))
        if kind in NOT_OP_ROWS and not kernel_name.endswith("AivKernel"):
            continue  # no op_summary row
        rows += 1
        if start is None or end is None or end < start:
            raise ProfileFormatError(
                f"{path}: task {rows} has startNs {start!r}, endNs {end!r}: not a time span.", HINT
            )
        analyzer.add(
            Kernel(
                stream=f"device {dev} stream {stream}",
                name=kernel_name,
                op_type=resolve(kernel_name, _text(cells.get("opType"))),
                start_us=start / 1000.0,
                dur_us=(end - start) / 1000.0,
                core=kind,
                input_shapes=strip_quotes(_text(cells.get("inputShapes"))),
                input_dtypes=_text(cells.get("inputDataTypes")),
                output_shapes=strip_quotes(_text(cells.get("outputShapes"))),
            )
        )
    if "COMMUNICATION_OP" in tables:
        rows += _collectives(path, db, analyzer, resolve, text)
    elif (
        "COMMUNICATION_TASK_INFO" in tables
        and db.execute("SELECT 1 FROM COMMUNICATION_TASK_INFO LIMIT 1").fetchone()
    ):
        raise ProfileFormatError(
            f"{path}: COMMUNICATION_TASK_INFO holds collective tasks, but there is no "
            "COMMUNICATION_OP table, which op_summary takes the collectives from: their "
            "device time would be left out.",
            HINT,
        )
    else:
        notes.append("no COMMUNICATION_OP table: no collectives in this run")
    host: Tuple[HostOp, ...] = ()
    if "PYTORCH_API" in tables:
        host = _host_ops(path, db, "CONNECTION_IDS" in tables)
    else:
        notes.append("no PYTORCH_API table: host-side torch ops not seen")
    return DbInfo(rows=rows, notes=tuple(notes), host_ops=host)


def _strings(path: Path, db: sqlite3.Connection) -> Callable[[object, str], str]:
    """STRING_IDS values by id: each read once (at most PROFILE_DB_CELL_CHARS of it), and
    one str for every row that names it."""
    seen: Dict[object, str] = {None: ""}

    def text(ident: object, column: str) -> str:
        if ident not in seen:
            sql = "SELECT substr(value, 1, ?) FROM STRING_IDS WHERE id = ?"
            row = db.execute(sql, (PROFILE_DB_CELL_CHARS + 1, ident)).fetchone()
            if row is None and column == "name":  # a kernel's name: its type comes from it
                raise ProfileFormatError(
                    f"{path}: the kernel name {ident!r} names no STRING_IDS row: the file is "
                    "damaged (its kernels would be read without a name or type).",
                    HINT,
                )
            # other columns as msprof-analyze reads them (a subquery: no row, no value)
            seen[ident] = "" if row is None or row[0] is None else str(row[0])
            if len(seen[ident]) > PROFILE_DB_CELL_CHARS:
                raise ProfileFormatError(
                    f"{path}: STRING_IDS value {ident!r} (a COMPUTE_TASK_INFO.{column}) is "
                    f"longer than the {PROFILE_DB_CELL_CHARS >> 20} MiB cannbuild reads of a cell.",
                    HINT,
                )
        return seen[ident]

    return text


def _nanoseconds(
    path: Path, table: str, row: str, start: object, end: object
) -> Tuple[Optional[int], Optional[int]]:
    """startNs and endNs as numbers (or NULL); torch_npu declares PYTORCH_API's TEXT, so
    digits there are read as the number they write; other text is an error naming them."""
    out: List[Optional[int]] = []
    for column, value in (("startNs", start), ("endNs", end)):
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ProfileFormatError(
                f"{path}: {table}.{column} of {row} is {repr(value)[:60]}, not nanoseconds.", HINT
            )
        out.append(None if value is None else int(value))
    return out[0], out[1]


def _text(value: Optional[str]) -> str:
    text = "" if value is None else value.strip()
    return "" if text == NA else text


def _collectives(
    path: Path,
    db: sqlite3.Connection,
    analyzer: KernelSink,
    resolve: TypeResolver,
    text: Callable[[object, str], str],
) -> int:
    """COMMUNICATION_OP: one kernel per collective, on its device's stream-less key as the
    CSV's HCCL rows (Stream ID N/A) have it."""
    have = _columns(db, "COMMUNICATION_OP")
    if not {"opName", "startNs", "endNs"} <= have:
        raise ProfileFormatError(
            f"{path}: table COMMUNICATION_OP has no opName, startNs or endNs column.", HINT
        )
    device = "c.deviceId" if "deviceId" in have else "NULL"
    if device == "NULL" and "connectionId" in have:  # torch_npu's join: the device of its tasks
        device = "(SELECT t.deviceId FROM TASK t WHERE t.connectionId = c.connectionId LIMIT 1)"
    # unknown: the tasks' one device (a collective on a device of its own is a rank of its own)
    query = "SELECT DISTINCT deviceId FROM TASK LIMIT 2"
    ids = db.execute(query).fetchall() if "deviceId" in _columns(db, "TASK") else []
    unknown = ids[0][0] if len(ids) == 1 else 0
    op_type = "c.opType" if "opType" in have else "NULL"
    count = 0
    for dev, start, end, name, kind in db.execute(
        f"SELECT {device}, c.startNs, c.endNs, c.opName, {op_type} FROM COMMUNICATION_OP c "
        "ORDER BY 1, 2"
    ):
        count += 1
        _nanoseconds(path, "COMMUNICATION_OP", f"collective {count}", start, end)
        if start is None or end is None or end < start:
            raise ProfileFormatError(
                f"{path}: collective {count} has startNs {start!r}, endNs {end!r}: not a time "
                "span.",
                HINT,
            )
        label = text(name, "opName")
        analyzer.add(
            Kernel(
                stream=f"device {unknown if dev is None else dev}",
                name=label,
                op_type=resolve(label, _text(text(kind, "opType"))),
                start_us=start / 1000.0,
                dur_us=(end - start) / 1000.0,
                core="COMMUNICATION",
            )
        )
    return count


def _host_ops(path: Path, db: sqlite3.Connection, links: bool) -> Tuple[HostOp, ...]:
    have = _columns(db, "PYTORCH_API")
    if not {"startNs", "endNs", "name"} <= have:
        return ()
    tid = "p.globalTid" if "globalTid" in have else "0"
    ops = f"AND p.type = {TORCH_OP}" if "type" in have else ""
    collector = HostCollector()
    marks = ", ".join("?" for _ in WATCHED)
    for name, begin, finish, thread in db.execute(
        f"SELECT s.value, p.startNs, p.endNs, {tid} FROM PYTORCH_API p "
        f"JOIN STRING_IDS s ON s.id = p.name WHERE s.value IN ({marks}) {ops}",
        sorted(WATCHED),
    ):
        begin, finish = _nanoseconds(path, "PYTORCH_API", f"a {name} call", begin, finish)
        if begin is not None and finish is not None and finish >= begin:
            collector.op(thread, str(name), begin / 1000.0, (finish - begin) / 1000.0)
    if "connectionId" in have:
        # A torch op launched a device task when one of its links is a CANN node launch's id
        # (below FWK_LINKS); a task-queue hop or a forward/backward pair is not a launch.
        launch = (
            "JOIN CONNECTION_IDS c ON c.id = p.connectionId WHERE c.connectionId < ?"
            if links
            else "WHERE p.connectionId < ?"
        )
        for begin, thread in db.execute(
            f"SELECT DISTINCT p.startNs, {tid} FROM PYTORCH_API p {launch} {ops}", (FWK_LINKS,)
        ):
            begin, _ = _nanoseconds(path, "PYTORCH_API", "a launching call", begin, None)
            if begin is not None:
                collector.flow(thread, begin / 1000.0)
    return collector.result()
