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
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import List, Set, Tuple
from urllib.parse import quote

from msgspec import Struct

from ..bounded import PROFILE_DB_BYTES, open_regular
from ..errors import ProfileFormatError
from .analysis import Analyzer, Kernel
from .hostops import WATCHED, HostCollector, HostOp
from .ops import NA, TypeResolver, strip_quotes

KERNEL_TABLES = ("STRING_IDS", "TASK", "COMPUTE_TASK_INFO")
TASK_COLUMNS = ("globalTaskId", "startNs", "endNs", "streamId")
COMPUTE_COLUMNS = ("globalTaskId", "name")
OPTIONAL_STRINGS = ("opType", "taskType", "inputShapes", "inputDataTypes", "outputShapes")
# op_summary_assembler.cpp: task types that make no op_summary row (but `...AivKernel`)
NOT_OP_ROWS: Tuple[str, ...] = ("WRITE_BACK", "INVALID", "HCCL_AI_CPU", "COMMUNICATION")
FWK_LINKS = 5 << 28  # torch_npu DbConstant.START_CONNECTION_ID_FWK_API
TORCH_OP = 50001  # PYTORCH_API.type of a torch op (torch_npu ApiType.TORCH_OP)
HINT = (
    "torch_npu writes ascend_pytorch_profiler_<rank>.db and msprof msprof_<ts>.db with these "
    "tables: pass the profiler's own file (was the export finished?)."
)


class DbInfo(Struct, frozen=True, kw_only=True):
    rows: int
    notes: Tuple[str, ...]
    host_ops: Tuple[HostOp, ...]


def read_db(path: Path, analyzer: Analyzer) -> DbInfo:
    """Feed the compute kernels to `analyzer` by device, stream and start."""
    try:
        fd = open_regular(path, "profiler database", PROFILE_DB_BYTES)
    except OSError as exc:
        raise ProfileFormatError(f"{path}: cannot be read ({exc.strerror or exc}).") from None
    os.close(fd)  # checked: a regular file within the bound; sqlite opens it read-only below
    uri = f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1"
    try:
        db = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise ProfileFormatError(f"{path}: cannot be opened as SQLite ({exc}).", HINT) from None
    try:
        return _read(path, db, analyzer)
    except sqlite3.DatabaseError as exc:
        raise ProfileFormatError(
            f"{path}: not a readable profiler database ({exc}).", HINT
        ) from None
    finally:
        db.close()


def _columns(db: sqlite3.Connection, table: str) -> Set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _read(path: Path, db: sqlite3.Connection, analyzer: Analyzer) -> DbInfo:
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
    picks = ", ".join(f"s{i}.value" for i in range(len(strings)))
    joins = " ".join(
        f"LEFT JOIN STRING_IDS s{i} ON s{i}.id = c.{col}" for i, col in enumerate(strings)
    )
    keep, args = "", NOT_OP_ROWS[:0]
    if "taskType" in strings:
        kind = f"s{strings.index('taskType')}.value"
        marks = ", ".join("?" * len(NOT_OP_ROWS))
        keep = f"WHERE {kind} IS NULL OR {kind} NOT IN ({marks}) OR n.value LIKE '%AivKernel'"
        args = NOT_OP_ROWS
    sql = (
        f"SELECT {device}, t.streamId, t.startNs, t.endNs, n.value{', ' + picks if picks else ''} "
        "FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId "
        f"LEFT JOIN STRING_IDS n ON n.id = c.name {joins} {keep}"
    )
    if "COMMUNICATION_SCHEDULE_TASK_INFO" in tables:
        own = {"opType": "o.value", "taskType": "k.value"}
        sql += (
            f" UNION ALL SELECT {device}, t.streamId, t.startNs, t.endNs, n.value"
            + "".join(f", {own.get(col, 'NULL')}" for col in strings)
            + " FROM COMMUNICATION_SCHEDULE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId"
            " LEFT JOIN STRING_IDS n ON n.id = c.name LEFT JOIN STRING_IDS o ON o.id = c.opType"
            " LEFT JOIN STRING_IDS k ON k.id = c.taskType"
        )
    sql += " ORDER BY 1, 2, 3"
    resolve = TypeResolver()
    rows = 0
    for row in db.execute(sql, args):
        rows += 1
        dev, stream, start, end, name = row[:5]
        cells = dict(zip(strings, row[5:]))
        if start is None or end is None or end < start:
            raise ProfileFormatError(
                f"{path}: task {rows} has startNs {start!r}, endNs {end!r}: not a time span.", HINT
            )
        kernel_name = str(name) if name is not None else ""
        analyzer.add(
            Kernel(
                stream=f"device {dev} stream {stream}",
                name=kernel_name,
                op_type=resolve(kernel_name, _text(cells.get("opType"))),
                start_us=start / 1000.0,
                dur_us=(end - start) / 1000.0,
                core=_text(cells.get("taskType")),
                input_shapes=strip_quotes(_text(cells.get("inputShapes"))),
                input_dtypes=_text(cells.get("inputDataTypes")),
                output_shapes=strip_quotes(_text(cells.get("outputShapes"))),
            )
        )
    if "COMMUNICATION_OP" in tables:
        rows += _collectives(path, db, analyzer, resolve)
    else:
        notes.append("no COMMUNICATION_OP table: no collectives in this run")
    host: Tuple[HostOp, ...] = ()
    if "PYTORCH_API" in tables:
        host = _host_ops(db, "CONNECTION_IDS" in tables)
    else:
        notes.append("no PYTORCH_API table: host-side torch ops not seen")
    return DbInfo(rows=rows, notes=tuple(notes), host_ops=host)


def _text(value: object) -> str:
    text = "" if value is None else str(value).strip()
    return "" if text == NA else text


def _collectives(
    path: Path, db: sqlite3.Connection, analyzer: Analyzer, resolve: TypeResolver
) -> int:
    """COMMUNICATION_OP: one kernel per collective, on its device's stream-less key as the
    CSV's HCCL rows (Stream ID N/A) have it."""
    have = _columns(db, "COMMUNICATION_OP")
    if not {"opName", "startNs", "endNs"} <= have:
        raise ProfileFormatError(
            f"{path}: table COMMUNICATION_OP has no opName, startNs or endNs column.", HINT
        )
    device = "c.deviceId" if "deviceId" in have else "0"
    if device == "0" and "connectionId" in have:  # torch_npu's join: the device of its tasks
        device = "(SELECT t.deviceId FROM TASK t WHERE t.connectionId = c.connectionId LIMIT 1)"
    op_type = "o.value" if "opType" in have else "NULL"
    join = "LEFT JOIN STRING_IDS o ON o.id = c.opType" if "opType" in have else ""
    count = 0
    for dev, start, end, name, kind in db.execute(
        f"SELECT {device}, c.startNs, c.endNs, n.value, {op_type} FROM COMMUNICATION_OP c "
        f"LEFT JOIN STRING_IDS n ON n.id = c.opName {join} ORDER BY 1, 2"
    ):
        count += 1
        if start is None or end is None or end < start:
            raise ProfileFormatError(
                f"{path}: collective {count} has startNs {start!r}, endNs {end!r}: not a time "
                "span.",
                HINT,
            )
        text = str(name) if name is not None else ""
        analyzer.add(
            Kernel(
                stream=f"device {0 if dev is None else dev}",
                name=text,
                op_type=resolve(text, _text(kind)),
                start_us=start / 1000.0,
                dur_us=(end - start) / 1000.0,
                core="COMMUNICATION",
            )
        )
    return count


def _host_ops(db: sqlite3.Connection, links: bool) -> Tuple[HostOp, ...]:
    have = _columns(db, "PYTORCH_API")
    if not {"startNs", "endNs", "name"} <= have:
        return ()
    tid = "p.globalTid" if "globalTid" in have else "0"
    # torch_npu declares PYTORCH_API.startNs/endNs TEXT: the numbers are read as integers
    start, end = "CAST(p.startNs AS INTEGER)", "CAST(p.endNs AS INTEGER)"
    ops = f"AND p.type = {TORCH_OP}" if "type" in have else ""
    collector = HostCollector()
    marks = ", ".join("?" for _ in WATCHED)
    for name, begin, finish, thread in db.execute(
        f"SELECT s.value, {start}, {end}, {tid} FROM PYTORCH_API p "
        f"JOIN STRING_IDS s ON s.id = p.name WHERE s.value IN ({marks}) {ops}",
        sorted(WATCHED),
    ):
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
            f"SELECT DISTINCT {start}, {tid} FROM PYTORCH_API p {launch} {ops}", (FWK_LINKS,)
        ):
            if begin is not None:
                collector.flow(thread, begin / 1000.0)
    return collector.result()
