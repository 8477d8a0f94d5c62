"""The profiler files, read with their real quirks; every bad or cut file is an error that
names the file and the line.  Fixtures: tests/fixtures/profiler (hand-written after the
documented formats, see the .source notes)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cannbuild.errors import ProfileFormatError, UsageError
from cannbuild.profile.jsonarray import iter_array
from cannbuild.profile.summary import find_runs, summarise
from cannbuild.profile.tables import read_kernels, read_operator_details, read_statistic
from cannbuild.profile.trace import read_trace

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profiler"
L0 = next((FIX / "torch_npu_2.13_level0").glob("*_ascend_pt")) / "ASCEND_PROFILER_OUTPUT"
L1 = next((FIX / "torch_npu_2.5_level1").glob("*_ascend_pt")) / "ASCEND_PROFILER_OUTPUT"
MSPROF = next((FIX / "msprof").glob("PROF_*")) / "mindstudio_profiler_output"
NO_DEVICE = next((FIX / "torch_npu_no_device").glob("*_ascend_pt")) / "ASCEND_PROFILER_OUTPUT"


def test_the_fixtures_carry_the_quirks_they_are_meant_to_test():
    l0 = (L0 / "kernel_details.csv").read_bytes()
    assert l0.count(b"\r\n") == 14 and b"\t," in l0 and b",N/A,N/A," in l0
    l1 = (L1 / "kernel_details.csv").read_bytes()
    assert b"\r\n" not in l1 and b'\t"' in l1 and b'"""12,1024,72;' in l1 and b"Block Dim" in l1
    assert (L0 / "trace_view.json").read_text().startswith('[{"ph": "M"')
    assert (NO_DEVICE / "trace_view.json").read_text().endswith(",]")
    assert b"\r\n[1, 8, 128, 512]" in (L0 / "operator_details.csv").read_bytes()


def test_level0_kernel_types_come_from_the_kernel_names():
    kernels, info = read_kernels(L0 / "kernel_details.csv")
    types = [k.op_type for k in kernels]
    assert types[:4] == ["ZerosLike", "Transpose", "FlashAttentionScore", "BatchMatMulV2"]
    assert kernels[0].start_us == pytest.approx(1774235537533000.0)  # the TAB is not a problem
    assert kernels[2].dur_us == pytest.approx(30.16)
    assert "Type is N/A (Level0): op types taken from the kernel names" in info.notes
    assert "Block Num header" in info.notes


def test_an_older_header_with_block_dim_and_no_device_id_reads_the_same():
    kernels, info = read_kernels(L1 / "kernel_details.csv")
    first = next(k for k in kernels if k.name == "BatchMatMul96")
    assert (first.op_type, first.core, first.stream) == (
        "BatchMatMul",
        "AI_CORE",
        "device 0 stream 16",
    )
    assert first.input_shapes == "12,1024,72;12,72,1024"  # the literal quotes are gone
    assert first.input_dtypes == "FLOAT16;FLOAT16"
    assert "Block Dim header" in info.notes
    assert {k.op_type for k in kernels} >= {"hcom_allReduce_", "DropOutGenMask"}


def test_msprof_op_summary_names_its_columns_differently_and_reads_the_same():
    kernels, _ = read_kernels(next(MSPROF.glob("op_summary_*.csv")))
    assert [k.op_type for k in kernels][:2] == ["FlashAttentionScore", "MatMulV3"]
    assert kernels[0].core == "MIX_AIC" and kernels[0].input_dtypes.startswith("DT_BF16")


def test_op_statistic_and_operator_details_read_their_own_headers():
    stats, _ = read_statistic(L1 / "op_statistic.csv")
    assert [(s.op_type, s.count) for s in stats[:2]] == [("hcom_allReduce_", 1), ("BatchMatMul", 4)]
    assert read_operator_details(L0 / "operator_details.csv").rows == 3  # multi-line cells


def test_an_op_statistic_alone_gives_the_op_table_without_chains(tmp_path):
    shutil.copy(L1 / "op_statistic.csv", tmp_path / "op_statistic.csv")
    summary = summarise(tmp_path)
    assert [o.op_type for o in summary.analysis.ops][:2] == [
        "hcom_allReduce_",
        "ScaledMaskedSoftmax",
    ]
    assert summary.analysis.chains == ()


def copy_with(tmp_path: Path, source: Path, edit) -> Path:
    target = tmp_path / source.name
    target.write_bytes(edit(source.read_bytes()))
    return target


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda b: b[: b.rindex(b"\r\n1,0,aclnnFlash") + 40], ["line 14:", "cut short"]),
        (lambda b: b.replace(b",30.160,", b",thirty,", 1), ["line 4:", "Duration(us) is 'thirty'"]),
        (lambda b: b.replace(b"Start Time(us)", b"Begin", 1), ["line 1:", "Start Time(us)"]),
        (lambda b: b + b'1,0,"aclnnAdd_AddAiCore_Add,N/A', ["line 15:", "not valid CSV"]),
        (lambda b: b"", ["line 1:", "empty"]),
        (lambda b: b.replace(b",30.160,", b",nan,", 1), ["line 4:", "Duration(us) is 'nan'"]),
        (lambda b: b.replace(b",30.160,", b",-3,", 1), ["line 4:", "not a number of 0 or more"]),
    ],
)
def test_a_bad_or_cut_kernel_table_is_an_error_naming_the_file_and_line(tmp_path, edit, words):
    bad = copy_with(tmp_path, L0 / "kernel_details.csv", edit)
    with pytest.raises(ProfileFormatError) as err:
        read_kernels(bad)
    text = err.value.paragraph()
    assert text.startswith(str(bad))
    for word in words:
        assert word in text


def test_the_trace_device_track_is_found_by_its_metadata_or_its_task_args():
    analysis, info = read_trace(L0 / "trace_view.json")
    assert info.device_tasks == 13  # not the Python ops, not Overlap Analysis
    assert {o.op_type for o in analysis.ops} >= {"FlashAttentionScore", "SoftmaxV2"}
    assert "aten::matmul" not in {o.op_type for o in analysis.ops}
    assert {w.stream for w in analysis.windows} == {"NPU 0 / Stream 3"}
    assert any("without a process_name" in n for n in info.notes)  # the pruned CANN pid


def test_a_trace_ending_in_comma_bracket_reads(tmp_path):
    _analysis, info = read_trace(NO_DEVICE / "trace_view.json")
    assert info.events == 2 and info.device_tasks == 0
    assert "no device tasks" in info.notes[0]


def test_msprof_json_reads_the_same_with_its_own_tracks():
    analysis, info = read_trace(next(MSPROF.glob("msprof_*.json")))
    assert info.device_tasks == 4 and info.tracks == ("CANN", "Ascend Hardware")
    assert [w.stream for w in analysis.windows] == ["NPU 0 / Stream 2"]
    assert "AscendCL@aclnnFlashAttentionScore" not in {o.op_type for o in analysis.ops}


def test_msprofs_fusion_task_track_named_after_its_events_is_not_counted_as_kernels(tmp_path):
    """msprof (Ascend/msprof fusion_task_assembler.cpp) writes the `Fusion Task` track's
    events, each with a `Task Type` in its args, before its `process_name`: they are not
    device kernels, however late the name comes."""
    events = json.loads(next(MSPROF.glob("msprof_*.json")).read_text())
    fusion = {
        "name": "Fusion CCU",
        "pid": 999001,
        "tid": 3,
        "ts": events[-1].get("ts", "1774232269411729.250"),
        "dur": 500.0,
        "args": {"Task Id": 5, "Acc Id": 0, "Task Type": "CCU", "Fusion Task Type": "CCU"},
        "ph": "X",
    }
    named = {"name": "process_name", "pid": 999001, "tid": 0, "ph": "M"}
    trace = tmp_path / "msprof_20260323031749.json"
    trace.write_text(json.dumps([fusion, *events, {**named, "args": {"name": "Fusion Task"}}]))
    analysis, info = read_trace(trace)
    assert info.device_tasks == 4 and "Fusion Task" in info.tracks
    assert "Fusion CCU" not in {o.op_type for o in analysis.ops}
    assert analysis.kernels == 4


def indented(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "trace_view.json"
    target.write_text(json.dumps(json.loads(source.read_text()), indent=1))
    return target


def test_a_cut_trace_names_its_line(tmp_path):
    whole = indented(L0 / "trace_view.json", tmp_path)
    text = whole.read_text()
    whole.write_text(text[: len(text) // 2])
    with pytest.raises(ProfileFormatError) as err:
        read_trace(whole)
    message = err.value.paragraph()
    assert message.startswith(f"{whole} line ") and "cut short" in message


def test_invalid_json_in_a_trace_names_its_line_and_column(tmp_path):
    whole = indented(L0 / "trace_view.json", tmp_path)
    lines = whole.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"dur": 30.16' in line)
    lines[at] = lines[at].replace('"dur": 30.16', '"dur": 30.16.5')
    whole.write_text("\n".join(lines))
    with pytest.raises(ProfileFormatError) as err:
        read_trace(whole)
    assert f"line {at + 1} column" in err.value.paragraph()


def test_an_event_with_a_bad_timestamp_names_the_line_it_starts_on(tmp_path):
    whole = indented(L0 / "trace_view.json", tmp_path)
    text = whole.read_text().replace('"ts": "1774235537533009.500"', '"ts": "soon"', 1)
    whole.write_text(text)
    lines = text.splitlines()
    name_line = next(i for i, line in enumerate(lines) if '"ts": "soon"' in line)
    start = max(i for i in range(name_line) if lines[i].strip() == "{") + 1
    with pytest.raises(ProfileFormatError) as err:
        read_trace(whole)
    assert f"line {start}: event" in err.value.paragraph() and "'soon'" in err.value.paragraph()


@pytest.mark.parametrize(
    "text, words",
    [
        ('[{"ph": "X"}, ' + "[" * 100000 + "]" * 100000 + "]", ["column 15", "nested too deeply"]),
        ('[{"a": ' * 100000 + "1" + "}" * 100000 + "]", ["column 2", "nested too deeply"]),
        (
            '[{"ph": "X", "pid": 1, "name": "k", "ts": "1", "dur": NaN, "args": {"Task Type": '
            '"AI_CORE"}}]',
            ["event 1 has dur nan"],
        ),
    ],
)
def test_a_hostile_trace_is_an_error_not_a_crash(tmp_path, text, words):
    bad = tmp_path / "trace_view.json"
    bad.write_text(text)
    with pytest.raises(ProfileFormatError) as err:
        read_trace(bad)
    message = err.value.paragraph()
    assert message.startswith(f"{bad} line 1")
    for word in words:
        assert word in message


@pytest.mark.parametrize("chunk", [7, 64, 1 << 22])
def test_the_streaming_reader_gives_what_json_load_gives_at_any_chunk_size(tmp_path, chunk):
    events = [{"name": "a}, {b", "args": {"x": [{"y": "}, {"}]}}, {"n": 2}] * 50
    path = tmp_path / "t.json"
    path.write_text(json.dumps(events))
    assert list(iter_array(path, chunk_chars=chunk)) == events


def test_finding_runs_does_not_count_a_torch_runs_own_msprof_copy_twice(tmp_path):
    run = tmp_path / "host_1_20260101000000000_ascend_pt"
    shutil.copytree(L0, run / "ASCEND_PROFILER_OUTPUT")
    shutil.copytree(
        MSPROF, run / "PROF_000001_20260101000000000_ABCDEFGH" / "mindstudio_profiler_output"
    )
    assert [r.folder.name for r in find_runs(tmp_path)] == ["ASCEND_PROFILER_OUTPUT"]
    # an export that stopped before its kernel tables (only step_trace_time.csv written): the
    # raw PROF_* copy is the run's kernels
    for table in (run / "ASCEND_PROFILER_OUTPUT").iterdir():
        table.unlink()
    (run / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv").write_text("Step,Computing\n")
    assert [r.folder.name for r in find_runs(tmp_path)] == ["mindstudio_profiler_output"]


def test_msprofs_per_device_summary_beside_its_merged_export_is_not_counted_twice(tmp_path):
    """msprof writes each device's `device_<n>/summary/op_summary_<n>_1_<ts>.csv` (no Device_id
    column) and merges them, Device_id prepended, into mindstudio_profiler_output, leaving them
    in place (msprof analysis/msinterface/msprof_output_summary.py; msprof-analyze's
    cluster_prof_info_analysis.py skips the merged copy for that reason)."""
    prof = tmp_path / MSPROF.parent.name
    shutil.copytree(MSPROF, prof / MSPROF.name)
    summary = prof / "device_0" / "summary"
    summary.mkdir(parents=True)
    merged = next(MSPROF.glob("op_summary_*.csv")).read_text().splitlines(keepends=True)
    assert merged[0].startswith("Device_id,")
    device_rows = "".join(line.split(",", 1)[1] for line in merged)
    (summary / "op_summary_0_1_20260323031749.csv").write_text(device_rows)
    once = summarise(MSPROF.parent, timeline=False).analysis
    both = summarise(prof, timeline=False).analysis
    assert (both.kernels, both.total_us) == (once.kernels, once.total_us)
    # an old export with no merged copy: its device summaries are the kernels
    shutil.rmtree(prof / MSPROF.name)
    assert summarise(prof, timeline=False).analysis.kernels == once.kernels


def test_a_path_without_profiler_files_is_a_usage_error(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(UsageError, match="no profiler output under"):
        find_runs(tmp_path)
    with pytest.raises(UsageError, match="is not a profiler file"):
        find_runs(tmp_path / "notes.txt")
    with pytest.raises(UsageError, match="does not exist"):
        find_runs(tmp_path / "nothing")


def test_a_name_in_a_profile_never_reaches_the_terminal_as_a_control_sequence(tmp_path):
    """An op name holding ESC ] 0 (set the window title) and ESC [ 31m (red): profile and
    diagnose print it escaped, as `status` prints what it reads from disk."""
    from clirun import cannbuild

    run = tmp_path / "hostile_ascend_pt"
    shutil.copytree(L0.parent, run)
    table = run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    hostile = "AiCore_Transpose\x1b]0;PWNED\x07\x1b[31m,"  # the kernel name's op type
    text = table.read_text(encoding="utf-8-sig")
    assert "AiCore_Transpose," in text
    table.write_text(text.replace("AiCore_Transpose,", hostile, 1))
    for args in (["profile", str(run)], ["diagnose", "--profile", str(run)]):
        proc = cannbuild(*args, cwd=tmp_path)
        out = proc.stdout + proc.stderr
        assert "\x1b]0;" not in out and "\x07" not in out, args
    assert "\\x1b]0;PWNED\\x07" in cannbuild("profile", str(run), cwd=tmp_path).stdout


def test_msprofs_op_summary_slices_are_one_table_a_missing_one_is_said_and_a_whole_beside_them_read_alone(
    tmp_path,
):
    """Past a million rows msprof writes op_summary_slice_<i>_<ts>.csv: slices 0..n-1 are one
    table; the unsliced file beside them is the same kernels again."""
    header, *rows = (MSPROF / "op_summary_20260323031749.csv").read_text().splitlines(True)
    assert len(rows) == 4
    out = tmp_path / "PROF_000001_20260323031749197_00815596RKPKAHRB" / MSPROF.name
    out.mkdir(parents=True)
    for i in (0, 2):  # slice 1 of 3 lost
        part = rows[i * 2 : i * 2 + 2] if i == 0 else rows[2:]
        (out / f"op_summary_slice_{i}_20260323031749.csv").write_text(header + "".join(part))
    short = summarise(tmp_path, timeline=False)
    assert short.analysis.kernels == 4
    assert any("slice 1 of 3 is missing: the kernel table is short" in n for n in short.notes)
    shutil.copy(MSPROF / "op_summary_20260323031749.csv", out)
    whole = summarise(tmp_path, timeline=False)
    assert whole.analysis.kernels == 4  # not 8
    assert any("2 slices beside op_summary_20260323031749.csv" in n for n in whole.notes)
