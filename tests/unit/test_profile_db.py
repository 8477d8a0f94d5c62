"""The SQLite exports read with sqlite3 (issue 28 item 5): real-schema databases made
here from the table and column names msprof-analyze 26.2.0 reads
(advisor/common/profiling/op_summary.py OpSummaryDB, compare_tools/compare_backend/
profiling_parser/npu_profiling_db_parser.py), in both schema variants."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from llamaprofile import Llama, generate

from cannbuild.bounded import PROFILE_DB
from cannbuild.errors import ProfileFormatError, UsageError
from cannbuild.profile.summary import summarise

from clirun import run_route

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profiler"
T0 = 1775122200000000000  # ns
FA_IN = "2,8,1000,72;2,8,1000,72;2,8,1000,72;;;;1000,1000;;;;;"
FA_OUT = "2,8,1000,8;2,8,1000,8;;2,8,1000,72"
# (name, opType, taskType, start us after T0, duration us, inputShapes, inputDataTypes, outputShapes)
KERNELS: List[Tuple[str, str, str, float, float, str, str, str]] = [
    (
        "aclnnBatchMatMul_BatchMatMulNd_BatchMatMulV2",
        "BatchMatMulV2",
        "AI_CORE",
        0,
        45.5,
        "16,1024,128;16,128,1024",
        "DT_BF16;DT_BF16",
        "16,1024,1024",
    ),
    (
        "aclnnMuls_MulAiCore_Mul",
        "Mul",
        "AI_VECTOR_CORE",
        50,
        10.0,
        "16,1024,1024",
        "DT_BF16",
        "16,1024,1024",
    ),
    (
        "aclnnSoftmax_SoftmaxAiCore_SoftmaxV2",
        "SoftmaxV2",
        "AI_VECTOR_CORE",
        65,
        30.25,
        "16,1024,1024",
        "DT_BF16",
        "16,1024,1024",
    ),
    (
        "aclnnBatchMatMul_BatchMatMulNd_BatchMatMulV2",
        "BatchMatMulV2",
        "AI_CORE",
        100,
        44.0,
        "16,1024,1024;16,1024,128",
        "DT_BF16;DT_BF16",
        "16,1024,128",
    ),
    (
        "aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore",
        "FlashAttentionScore",
        "MIX_AIC",
        200,
        120.0,
        FA_IN,
        "DT_BF16",
        FA_OUT,
    ),
]


def make_db(
    path: Path,
    block: str = "blockNum",
    op_state: bool = True,
    outputs: bool = True,
    torch_ops: bool = True,
) -> Path:
    """A profiler database with the tables and columns the exports have."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    ids: Dict[str, int] = {}

    def sid(text: str) -> int:
        if text not in ids:
            ids[text] = len(ids) + 1
        return ids[text]

    mix = "mixBlockNum" if block == "blockNum" else "mixBlockDim"
    compute = [
        "name",
        "globalTaskId",
        block,
        mix,
        "taskType",
        "opType",
        "inputFormats",
        "inputDataTypes",
        "inputShapes",
        "outputFormats",
        "outputDataTypes",
    ]
    compute += ["outputShapes"] if outputs else []
    compute += ["opState"] if op_state else []
    db.execute(f"CREATE TABLE COMPUTE_TASK_INFO ({', '.join(c + ' INTEGER' for c in compute)})")
    db.execute(
        "CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, contextId INTEGER, streamId INTEGER, taskId INTEGER, modelId INTEGER)"
    )
    for i, (name, op, core, start, dur, ins, dts, outs) in enumerate(KERNELS):
        begin = T0 + int(start * 1000)
        db.execute(
            "INSERT INTO TASK VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                begin,
                begin + int(dur * 1000),
                0,
                100 + i,
                7000 + i,
                1,
                sid("KERNEL_AICORE"),
                0,
                2,
                i,
                4294967295,
            ),
        )
        row = {
            "name": sid(name),
            "globalTaskId": 7000 + i,
            block: 20,
            mix: 40,
            "taskType": sid(core),
            "opType": sid(op),
            "inputFormats": sid("ND"),
            "inputDataTypes": sid(dts),
            "inputShapes": sid(ins),
            "outputFormats": sid("ND"),
            "outputDataTypes": sid("DT_BF16"),
            "outputShapes": sid(outs),
            "opState": sid("dynamic"),
        }
        db.execute(
            f"INSERT INTO COMPUTE_TASK_INFO VALUES ({','.join('?' for _ in compute)})",
            [row[c] for c in compute],
        )
    if torch_ops:
        db.execute(
            "CREATE TABLE PYTORCH_API (startNs INTEGER, endNs INTEGER, globalTid INTEGER, connectionId INTEGER, name INTEGER, sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER, inputShapes INTEGER, callchainId INTEGER, type INTEGER)"
        )
        # SDPA on CPU tensors (its backend, no launch), a matmul that launched its kernel.
        for name, start, dur, conn in (
            ("aten::scaled_dot_product_attention", -5000, 2400, None),
            ("aten::_scaled_dot_product_flash_attention_for_cpu", -4990, 2380, None),
            ("aten::matmul", -100, 30, 100),
        ):
            begin = T0 + start * 1000
            db.execute(
                "INSERT INTO PYTORCH_API VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (begin, begin + dur * 1000, 77, conn, sid(name), 1, 0, None, None, None, 50001),
            )
    db.execute("CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT)")
    db.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", [(v, k) for k, v in ids.items()])
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize(
    "name, variant",
    [
        ("w_1_20260402_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db", {}),
        (
            "PROF_000001_20260402093000456_ABCDEFGH/msprof_20260402093000.db",
            {"block": "blockDim", "op_state": False, "torch_ops": False},
        ),
    ],
)
def test_both_exports_give_the_op_table_the_chain_the_fused_shapes(tmp_path, name, variant):
    make_db(tmp_path / name, **variant)
    s = summarise(tmp_path, timeline=False)
    a = s.analysis
    assert a.kernels == 5 and a.chain_count == 1
    assert a.chain_list[0].stream == "device 0 stream 2"
    assert [k.op_type for k in a.chain_list[0].kernels] == [
        "BatchMatMulV2",
        "Mul",
        "SoftmaxV2",
        "BatchMatMulV2",
    ]
    assert a.chain_list[0].total_us == pytest.approx(45.5 + 10 + 30.25 + 44)
    (fa,) = a.fused_shapes
    assert (fa.dims().D, fa.dims().S, fa.count) == (72, 1000, 1)
    (db_file,) = s.files
    assert db_file.kind == "db" and db_file.records == 5
    spelled = "blockNum" if not variant else "blockDim"
    assert any(spelled in n for n in db_file.notes)


def test_the_torch_ops_table_gives_the_host_fallbacks(tmp_path):
    make_db(tmp_path / "x_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db")
    fallbacks = summarise(tmp_path, timeline=False).to_json()["attention"]["host_fallbacks"]
    assert [f["name"] for f in fallbacks] == ["aten::_scaled_dot_product_flash_attention_for_cpu"]
    assert fallbacks[0]["total_us"] == 2380.0


def test_a_schema_variant_without_output_shapes_is_named(tmp_path):
    make_db(tmp_path / "msprof_20260402093000.db", outputs=False)
    s = summarise(tmp_path / "msprof_20260402093000.db", timeline=False)
    assert any("without outputShapes" in n for n in s.files[0].notes)
    # D is still read from the 4-dim query; S needs softmax_max.
    assert s.analysis.fused_shapes[0].dims().D == 72 and s.analysis.fused_shapes[0].dims().S is None


def edit(path: Path, sql: str) -> None:
    """One statement run on a profile's .db and committed: the damage a test makes."""
    con = sqlite3.connect(path)
    con.execute(sql)
    con.commit()
    con.close()


def test_a_database_without_the_task_table_names_it(tmp_path):
    path = make_db(tmp_path / "msprof_20260402093000.db")
    edit(path, "DROP TABLE TASK")
    with pytest.raises(ProfileFormatError, match="no TASK table"):
        summarise(path, timeline=False)


def test_a_file_that_is_not_sqlite_is_an_error_naming_it(tmp_path):
    path = tmp_path / "ascend_pytorch_profiler_0.db"
    path.write_text("Step Id,Name\n")
    with pytest.raises(ProfileFormatError, match="ascend_pytorch_profiler_0.db"):
        summarise(path, timeline=False)


def test_a_fifo_named_like_a_database_is_refused_unopened(tmp_path):
    path = tmp_path / "msprof_20260402093000.db"
    os.mkfifo(path)
    with pytest.raises(UsageError, match="not a regular file|FIFO"):
        summarise(path, timeline=False)


def test_msprofs_database_beside_its_csv_export_is_not_counted_twice(tmp_path):
    prof = tmp_path / "PROF_000001_20260323031749197_00815596RKPKAHRB"
    shutil.copytree(FIX / "msprof" / prof.name, prof)
    make_db(prof / "msprof_20260323031749.db")
    s = summarise(tmp_path, timeline=False)
    assert [f.kind for f in s.files if f.kind == "db"] == []
    assert s.analysis.kernels == summarise(FIX / "msprof", timeline=False).analysis.kernels


def test_a_database_past_its_bound_is_refused_before_sqlite_opens_it(tmp_path):
    path = tmp_path / "ascend_pytorch_profiler_0.db"
    with open(path, "wb") as fh:
        fh.truncate((PROFILE_DB.max_bytes or 0) + 1)  # sparse: no disk used
    with pytest.raises(UsageError, match="over the 8 GiB"):
        summarise(path, timeline=False)


def _tables(path: Path):
    s = summarise(path, timeline=False)
    data = s.to_json()
    ranks = [
        {k: v for k, v in r.items() if k != "path"} for r in data.get("ranks", [])
    ]  # the folders differ, the numbers must not
    return data["ops"], data["attention"], ranks, s.analysis.kernels


def test_the_db_export_and_the_csv_of_the_same_run_give_the_same_tables(tmp_path):
    made = generate(tmp_path, Llama())  # four ranks, collectives and AI CPU scheduling kernels
    csv_ops, csv_att, csv_ranks, csv_kernels = _tables(made["csv"])
    db_ops, db_att, db_ranks, db_kernels = _tables(made["db"])
    assert db_kernels == csv_kernels and db_ops == csv_ops  # counts, totals, max, shares
    assert db_ranks == csv_ranks and len(db_ranks) == 4
    assert {o["type"] for o in db_ops} >= {"hcom_allReduce_", "AllReduceAicpuKernel"}
    # the same chains (a start in ns through a float differs from the CSV's text by < 1 us)
    for att in (csv_att, db_att):
        for chain in att["unfused_chains"]["chains"]:
            chain["start_us"] = pytest.approx(chain["start_us"], abs=1.0)
    assert db_att == csv_att and csv_att["unfused_chains"]["count"] == 16
    # without the collectives' table the .db would lose their time: where their tasks are
    # still there, the file is damaged; with neither, the run had none (the check can fail)
    dbs = sorted(made["db"].rglob("*.db"))
    for db_path in dbs:
        edit(db_path, "DROP TABLE COMMUNICATION_OP")
    with pytest.raises(ProfileFormatError, match="COMMUNICATION_TASK_INFO holds collective"):
        summarise(made["db"], timeline=False)
    for db_path in dbs:
        edit(db_path, "DROP TABLE COMMUNICATION_TASK_INFO")
    lost = summarise(made["db"], timeline=False)
    assert lost.analysis.kernels == csv_kernels - 16
    assert any("no COMMUNICATION_OP" in n for f in lost.files for n in f.notes)


def test_compute_tasks_of_a_type_op_summary_leaves_out_are_no_op_rows(tmp_path):
    made = generate(tmp_path, replace(Llama(), ranks=1, backward=False), formats=("db",))
    (path,) = made["db"].rglob("*.db")
    before = summarise(path, timeline=False).analysis.kernels
    con = sqlite3.connect(path)
    ids = {v: i for i, v in con.execute("SELECT id, value FROM STRING_IDS")}
    for i, (name, kind) in enumerate(
        (("ReduceScatterAivKernel", "COMMUNICATION"), ("AllGather_Notify", "COMMUNICATION"))
    ):
        for text in (name, kind):
            if text not in ids:
                ids[text] = max(ids.values()) + 1
                con.execute("INSERT INTO STRING_IDS VALUES (?, ?)", (ids[text], text))
        task = 9_000_000 + i
        con.execute(
            "INSERT INTO TASK VALUES (?,?,0,NULL,?,1,NULL,0,2,?,0)",
            (T0 + i, T0 + i + 1000, task, task),
        )
        con.execute(
            "INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId, taskType, opType) VALUES (?,?,?,?)",
            (ids[name], task, ids[kind], ids[name]),
        )
    con.commit()
    con.close()
    ops = {o.op_type for o in summarise(path, timeline=False).analysis.ops}
    # op_summary keeps a COMMUNICATION task only when it is an `...AivKernel`
    assert "ReduceScatterAivKernel" in ops and "AllGather_Notify" not in ops
    assert summarise(path, timeline=False).analysis.kernels == before + 1


def test_a_task_queue_or_backward_link_is_not_a_device_launch(tmp_path):
    # one softmax ran on CPU tensors: its PYTORCH_API row links only to its backward, and the
    # task queue's Enqueue rows sit on the same thread; both exports must call it host-only
    made = generate(tmp_path, replace(Llama(), ranks=1, host_softmax=True))
    for fmt in ("csv", "db"):
        fallbacks = summarise(made[fmt], timeline=False).to_json()["attention"]["host_fallbacks"]
        assert [(f["name"], f["count"], f["host_only"]) for f in fallbacks] == [
            ("aten::softmax", 5, 1)
        ], fmt


# --- bounded cells (issue 41 item 2): the hostile databases of bench/bench_bounded_reads.py -


def _bench():
    spec = importlib.util.spec_from_file_location("bench_bounded_reads", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_bounded_reads.py"
CELL_CAP = 500 << 20  # the address space the reader may map: the bound the issue sets


@pytest.mark.parametrize("references", [20, 200])
def test_a_50_mb_string_many_kernels_name_is_refused_at_the_cell_bound_in_500_mb(
    tmp_path, references
):
    db = tmp_path / "x_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"
    _bench().hostile_db(db, 50 << 20, references)
    began = time.monotonic()
    proc = run_route(
        "cannbuild", "profile", str(db), "--json", "--out", "out",
        cwd=tmp_path, timeout=60, memory_cap=CELL_CAP,
    )  # fmt: skip
    assert time.monotonic() - began < 10
    assert proc.returncode == 2, proc.stderr
    assert "STRING_IDS value 1" in proc.stderr and "longer than the 1 MiB" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_long_string_thousands_of_kernels_name_is_read_once_and_shared(tmp_path):
    """20,000 rows naming one 1 MiB value: 20 GB if each row held a copy, within the
    500 MB cap when they share it."""
    db = tmp_path / "ascend_pytorch_profiler_0.db"
    _bench().hostile_db(db, (1 << 20) - 64, 20_000)
    proc = run_route(
        "cannbuild", "profile", str(db), "--json", "--out", "out",
        cwd=tmp_path, timeout=60, memory_cap=CELL_CAP,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ops"][0]["count"] == 20_000


@pytest.mark.parametrize(
    "table, column, update",
    [
        ("TASK", "startNs", "UPDATE TASK SET startNs = 'soon' WHERE globalTaskId = 7002"),
        ("TASK", "endNs", "UPDATE TASK SET endNs = x'00ff' WHERE globalTaskId = 7000"),
        ("PYTORCH_API", "startNs", "UPDATE PYTORCH_API SET startNs = 'a while ago'"),
    ],
)
def test_text_where_a_time_belongs_is_an_error_naming_table_and_column(
    tmp_path, table, column, update
):
    path = make_db(tmp_path / "msprof_20260402093000.db")
    db = sqlite3.connect(path)
    db.execute(update)
    db.commit()
    db.close()
    with pytest.raises(ProfileFormatError, match=rf"{table}\.{column} of .* not nanoseconds"):
        summarise(path, timeline=False)


@pytest.mark.integration  # a 2,000,000-row database: seconds to make
def test_sigterm_stops_sqlites_own_sort_within_5_s(tmp_path):
    db = _bench().hostile_db(tmp_path / "ascend_pytorch_profiler_0.db", 100, 0, rows=2_000_000)
    child = subprocess.Popen(
        [sys.executable, "-m", "cannbuild", "profile", str(db), "--json", "--out", "out"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    time.sleep(1.0)  # SQLite sorts the joined rows before the first one comes back
    assert child.poll() is None, "read before the signal: the test proves nothing"
    child.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    _out, err = child.communicate(timeout=30)
    assert time.monotonic() - sent < 5
    assert child.returncode == 143, err
    assert b"Traceback" not in err


def test_a_kernel_name_with_no_string_row_is_a_damaged_file_not_a_blank_op(tmp_path):
    made = generate(tmp_path, replace(Llama(), ranks=1, backward=False), formats=("db",))
    (path,) = made["db"].rglob("*.db")
    edit(path, "DELETE FROM STRING_IDS WHERE id IN (SELECT name FROM COMPUTE_TASK_INFO)")
    with pytest.raises(ProfileFormatError, match="names no STRING_IDS row: the file is damaged"):
        summarise(path, timeline=False)
