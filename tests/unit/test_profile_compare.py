"""profile --compare, bench --compare and a multi-rank folder (issue 28 items 5, 6), on the
real-shaped samples under fixtures/profiler (see their .source notes)."""

from __future__ import annotations

import csv
import json
import random
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from llamaprofile import Llama, generate

from cannbuild.bench.compare import compare_results, load_results
from cannbuild.profile.summary import summarise

from clirun import cannbuild as cli

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profiler"
BENCH = FIX.parent / "bench"
# before: two unfused chains (BatchMatMul > Mul > ScaledMaskedSoftmax > DropOutDoMask >
# BatchMatMul, 449.64 us); after: FlashAttentionScore and its Grad, no chain.
BEFORE = FIX / "torch_npu_2.5_level1"
AFTER = FIX / "msprof"


def test_profile_compare_gives_the_verdict_and_each_op_types_delta(tmp_path):
    proc = cli("profile", "--compare", str(BEFORE), str(AFTER), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    after_fa = summarise(AFTER, timeline=False).analysis
    fused_us = sum(f.total_us for f in after_fa.fused if not f.op_type.endswith("Grad"))
    assert data["verdict"].startswith(
        f"unfused chains 2 -> 0, forward attention time 450 us -> {fused_us:.0f} us"
    )
    b, a = data["attention"]["before"], data["attention"]["after"]
    assert (b["unfused_chains"], b["unfused_us"], b["fused_calls"]) == (2, 449.64, 0)
    assert (a["unfused_chains"], a["fused_calls"]) == (0, sum(f.count for f in after_fa.fused))
    ops = {o["type"]: o for o in data["ops"]}
    assert ops["ScaledMaskedSoftmax"]["after_us"] == 0.0
    assert ops["ScaledMaskedSoftmax"]["delta_us"] == -ops["ScaledMaskedSoftmax"]["before_us"]
    assert ops["FlashAttentionScore"]["before_count"] == 0
    deltas = [abs(o["delta_us"]) for o in data["ops"]]
    assert deltas == sorted(deltas, reverse=True)


def test_eager_llama_against_the_same_model_with_flashattention_gives_the_true_counts_and_times(
    tmp_path,
):
    before = generate(tmp_path / "eager", replace(Llama(), ranks=1), formats=("csv",))["csv"]
    after = generate(tmp_path / "fa", replace(Llama(), ranks=1, attention="flash"))["db"]
    proc = cli("profile", "--compare", str(before), str(after), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    # the truth, from the rows of the forward pass: from each Q·Kᵀ (its query and key shapes)
    # to the P·V after it
    with open(next(before.rglob("kernel_details.csv")), newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Stream ID"] == "2"]
    rows = rows[: next(i for i, r in enumerate(rows) if r["Type"] == "NLLLoss")]
    truth, inside = [], False
    for r in rows:
        shapes = r["Input Shapes"].strip('"')
        inside = inside or shapes == "2,16,1024,128;2,16,128,1024"
        if inside:
            truth.append(float(r["Duration(us)"]))
        inside = inside and shapes != "2,16,1024,1024;2,16,1024,128"
    assert len(truth) == 4 * 10
    b, a = data["attention"]["before"], data["attention"]["after"]
    (fa,) = [o for o in data["ops"] if o["type"] == "FlashAttentionScore"]
    assert (b["unfused_chains"], a["unfused_chains"]) == (4, 0)
    assert a["attention_us"] == fa["after_us"] and fa["after_count"] == 4
    assert b["attention_us"] == pytest.approx(sum(truth), abs=0.01)
    assert b["attention_us"] > 4 * a["attention_us"]  # the fused call is far faster
    assert data["verdict"].startswith(
        f"unfused chains 4 -> 0, forward attention time {b['attention_us']:.0f} us -> "
        f"{a['attention_us']:.0f} us, fused calls 0 -> 8"
    )


def test_profile_compare_table_ends_with_the_verdict(tmp_path):
    proc = cli("profile", "--compare", str(BEFORE), str(AFTER), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "unfused chains:   2 -> 0" in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1].startswith("verdict: unfused chains 2 -> 0")


def test_profile_compare_with_a_missing_profile_is_exit_2(tmp_path):
    proc = cli("profile", "--compare", str(tmp_path / "nope"), str(AFTER), cwd=tmp_path)
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def _bench(path: Path, times: dict, sha: str = "ab" * 32, loaded: tuple = ()) -> Path:
    rows = [
        {
            "variant": "baseline",
            "impl": impl,
            "shape": shape,
            "status": "timed" if ms else "not run",
            "timing": {"times_ms": list(ms), "median_ms": sorted(ms)[len(ms) // 2]} if ms else None,
        }
        for (impl, shape), ms in times.items()
    ]
    host = {"loaded": bool(loaded), "loaded_shapes": list(loaded)}
    data = {
        "schema": "cannbuild-bench/1",
        "results": rows,
        "package": {"sha256": sha},
        "host": host,
    }
    path.write_text(json.dumps(data))
    return path


def _spread(median: float, n: int, width: float = 0.04, seed: int = 0) -> list:
    """n timings around a median, the middle half within +-width/2 of it."""
    rng = random.Random(seed)
    return [median * (1 + width * (rng.random() - 0.5) * 2) for _ in range(n)]


def test_bench_compare_judges_distributions_and_says_how_many_samples_back_each_verdict(
    tmp_path,
):
    s = "N8S1024D64"
    old = _bench(
        tmp_path / "old.json",
        {
            ("capi", s): _spread(2.0, 25, seed=1),
            ("sdpa", s): _spread(4.0, 25, seed=2),
            ("torch_npu", s): [1.0, 1.01, 0.99],
            ("unfused", s): [1.0, 3.0, 0.5, 9.0, 0.2, 4.0, 2.0],
            ("capi", "N8S2048D64"): _spread(8.0, 5),
            ("capi", "N8S256D64"): _spread(1.0, 25, width=0.01, seed=5),
            ("sdpa", "N8S512D64"): _spread(1.0, 25, seed=6),
        },
    )
    new = _bench(
        tmp_path / "new.json",
        {
            ("capi", s): _spread(1.0, 25, seed=3),  # twice as fast, every call
            ("sdpa", s): _spread(4.0, 25, seed=4),  # the same distribution
            ("torch_npu", s): [0.5, 0.51, 0.49],  # 3 vs 3: no rank test can tell
            ("unfused", s): [1.0, 3.0, 0.5, 9.0, 0.2, 4.0, 0.1],  # spread too wide to read
            ("capi", "N8S4096D64"): _spread(30.0, 5),
            # 5% slower, every call: a real difference, but what two runs of one build differ by
            ("capi", "N8S256D64"): _spread(1.05, 25, width=0.01, seed=7),
            ("sdpa", "N8S512D64"): _spread(2.0, 25, seed=8),  # twice as slow, on a loaded host
        },
        loaded=("N8S512D64",),
    )
    proc = cli("bench", "--compare", str(old), str(new), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    rows = {(r["impl"], r["shape"]): r for r in data["rows"]}
    said = {key: (r["verdict"], r["old_n"], r["new_n"]) for key, r in rows.items()}
    assert said == {
        ("capi", s): ("faster", 25, 25),
        ("sdpa", s): ("within noise", 25, 25),
        ("torch_npu", s): ("no verdict", 3, 3),
        ("unfused", s): ("no verdict", 7, 7),
        ("capi", "N8S256D64"): ("within noise", 25, 25),
        ("sdpa", "N8S512D64"): ("no verdict", 25, 25),
    }
    assert "differ by less than 10%" in rows[("capi", "N8S256D64")]["why"]
    assert "loaded" in rows[("sdpa", "N8S512D64")]["why"]
    assert rows[("capi", s)]["p"] < 0.001 and rows[("sdpa", s)]["p"] > 0.05
    assert "too few" in rows[("torch_npu", s)]["why"]
    assert "spread too wide" in rows[("unfused", s)]["why"]
    assert data["only_old"] == ["baseline capi N8S2048D64"]
    assert data["only_new"] == ["baseline capi N8S4096D64"]
    assert data["verdict"].startswith(
        "6 timings compared: 1 faster, 0 slower, 2 within noise, 3 without a verdict"
    )
    assert "one build (package sha256 abababababab...) in both" in data["verdict"]
    table = cli("bench", "--compare", str(old), str(new), cwd=tmp_path)
    assert "faster (25 vs 25, p = " in " ".join(table.stdout.split())
    assert "verdict: 6 timings compared" in table.stdout
    assert "the new run timed on a loaded host" in data["verdict"]


def test_two_benches_of_one_build_on_a_loaded_host_claim_no_change():
    """Two real sandbox runs of one build on a loaded host (fixtures/bench, see its .source):
    their medians differ by -76 % to +52 %, and no row may call that a change."""
    old, new = (
        load_results(BENCH / name, "--compare") for name in ("loaded1.json", "loaded2.json")
    )
    data = compare_results(old, new)
    changes = [r["change"] for r in data["rows"]]
    assert min(changes) < -0.5 and max(changes) > 0.5  # what a median against a median reads
    assert {(r["verdict"], r["why"]) for r in data["rows"]} == {
        ("no verdict", "timed on a host loaded past its cores")
    }
    assert data["verdict"].startswith("8 timings compared: 0 faster, 0 slower, 0 within noise")
    assert "one build (package sha256 3e2807fd7021...) in both" in data["verdict"]
    assert "the old and new run timed on a loaded host" in data["verdict"]


def test_bench_compare_of_an_absurd_time_gives_no_mean_rather_than_a_traceback(tmp_path):
    """A results file edited by hand to 1e308 ms: the ratio of medians is 0, no logarithm."""
    s = "N8S1024D64"
    old = _bench(tmp_path / "old.json", {("capi", s): _spread(2.0, 25, seed=1)})
    new = _bench(tmp_path / "new.json", {("capi", s): [1e308] * 25})
    data = compare_results(load_results(old, "OLD"), load_results(new, "NEW"))
    assert data["verdict"].startswith("1 timings compared: 0 faster, 1 slower")
    assert "geometric mean" not in data["verdict"]


def test_bench_compare_refuses_a_file_that_is_no_bench_result(tmp_path):
    old = tmp_path / "old.json"
    old.write_text('{"ops": []}')
    new = _bench(tmp_path / "new.json", {})
    proc = cli("bench", "--compare", str(old), str(new), cwd=tmp_path)
    assert proc.returncode == 2 and "so it is not one cannbuild wrote" in proc.stderr
    alone = cli("bench", str(new), cwd=tmp_path)
    assert alone.returncode == 2 and "--compare OLD.json NEW.json" in alone.stderr


def _rank(root: Path, name: str, sample: Path, rank: int) -> None:
    run = next(sample.glob("*_ascend_pt"))
    shutil.copytree(run, root / name)
    (root / name / f"profiler_info_{rank}.json").write_text(json.dumps({"rank_id": rank}))


def test_a_multi_rank_folder_gives_one_row_per_rank_the_sum_and_the_slowest(tmp_path):
    _rank(tmp_path, "rank0_ascend_pt", FIX / "torch_npu_2.13_level0", 0)
    _rank(tmp_path, "rank1_ascend_pt", FIX / "attention_patterns" / "eager", 1)
    proc = cli("profile", str(tmp_path), "--json", "--out", str(tmp_path / "pics"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    ranks = {r["rank"]: r for r in data["ranks"]}
    assert set(ranks) == {"rank 0", "rank 1"}
    one = summarise(FIX / "torch_npu_2.13_level0", timeline=False).analysis
    assert ranks["rank 0"]["kernels"] == one.kernels
    assert data["slowest_rank"] == "rank 1"
    total = sum(o["total_us"] for o in data["ops"])
    assert abs(total - sum(r["device_total_us"] for r in ranks.values())) < 0.01
    table = cli("profile", str(tmp_path), "--out", str(tmp_path / "pics2"), cwd=tmp_path)
    assert "slowest: rank 1" in table.stdout and "\n  sum " in table.stdout


def test_the_slowest_rank_is_judged_without_the_time_it_waited_in_collectives(tmp_path):
    """Rank 0 computes less and waits 5210 us in the all-reduce for rank 1: counting the
    collective named rank 0 the slowest, the rank that waited (fixtures/profiler/hccl_ranks)."""
    proc = cli("profile", str(FIX / "hccl_ranks"), "--json", "--out", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["slowest_rank"] == "rank 1"
    ranks = {r["rank"]: r for r in data["ranks"]}
    assert ranks["rank 0"]["communication_us"] == 5210.48
    assert ranks["rank 0"]["device_total_us"] > ranks["rank 1"]["device_total_us"]


def test_one_rank_found_twice_is_named_with_both_places(tmp_path):
    """A CSV and a .db export of one run side by side look like two ranks of rank 0: the
    sum counts that rank twice, so the note names it and where it is, and says what to pass."""
    _rank(tmp_path, "csv_ascend_pt", FIX / "torch_npu_2.13_level0", 0)
    _rank(tmp_path, "db_ascend_pt", FIX / "torch_npu_2.13_level0", 0)
    proc = cli("profile", str(tmp_path), "--out", str(tmp_path / "pics"), cwd=tmp_path)
    said = " ".join(proc.stdout.split())
    assert proc.returncode == 0, proc.stderr
    assert "rank 0 is in 2 outputs (" in said and "pass one of them" in said
    assert "csv_ascend_pt" in said and "db_ascend_pt" in said
    _rank(tmp_path, "rank1_ascend_pt", FIX / "attention_patterns" / "eager", 1)
    shutil.rmtree(tmp_path / "db_ascend_pt")
    apart = cli("profile", str(tmp_path), "--out", str(tmp_path / "pics2"), cwd=tmp_path)
    assert "is in 2 outputs" not in apart.stdout  # two ranks, each once


def test_a_rank_whose_export_holds_no_table_is_named_not_silently_left_out(tmp_path):
    _rank(tmp_path, "rank0_ascend_pt", FIX / "torch_npu_2.13_level0", 0)
    _rank(tmp_path, "rank1_ascend_pt", FIX / "attention_patterns" / "eager", 1)
    _rank(tmp_path, "rank2_ascend_pt", FIX / "attention_patterns" / "eager", 2)
    for table in (tmp_path / "rank2_ascend_pt" / "ASCEND_PROFILER_OUTPUT").iterdir():
        table.unlink()  # its profiler_info_2.json stays: the rank ran, its export did not
    summary = summarise(tmp_path, timeline=False)
    assert len(summary.ranks) == 2
    assert any(
        "1 profiler output without tables, left out of the sums" in n and "rank2_ascend_pt" in n
        for n in summary.notes
    )


DEVICES = FIX / "msprof_devices"  # one PROF_* whose op_summary holds Device_id 0 and 1


def test_a_kernel_table_holding_several_devices_gives_a_row_per_device_and_the_slowest(tmp_path):
    """msprof run on a two-device application merges both devices' rows into one op_summary
    (Device_id 0 and 1): a row per device, not one rank of both, and the slowest named by its
    time outside collectives (device 0 waits 5210 us in the all-reduce for device 1)."""
    proc = cli("profile", str(DEVICES), "--json", "--out", str(tmp_path / "pics"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [(r["rank"], r["device"], r["kernels"]) for r in data["ranks"]] == [
        ("device 0", 0, 3),
        ("device 1", 1, 3),
    ]
    assert data["slowest_rank"] == "device 1"
    ranks = {r["rank"]: r for r in data["ranks"]}
    assert ranks["device 0"]["communication_us"] == 5210.48
    assert ranks["device 0"]["device_total_us"] > ranks["device 1"]["device_total_us"]
    total = sum(o["total_us"] for o in data["ops"])
    assert abs(total - sum(r["device_total_us"] for r in ranks.values())) < 0.01
    table = cli("profile", str(DEVICES), "--out", str(tmp_path / "pics2"), cwd=tmp_path)
    assert "slowest: device 1" in table.stdout
    # two such outputs: each row names its output and its device
    prof = next(DEVICES.glob("PROF_*"))
    for n in (1, 2):
        shutil.copytree(prof, tmp_path / "two" / prof.name.replace("000001", f"00000{n}"))
    both = summarise(tmp_path / "two", timeline=False)
    assert [r.rank for r in both.ranks] == [
        f"{prof.name.replace('000001', f'00000{n}')} device {d}" for n in (1, 2) for d in (0, 1)
    ]


def test_msprofs_device_folders_read_one_by_one_are_a_row_per_device(tmp_path):
    """An old msprof export with no merged copy: each device_<n>/summary/op_summary (no
    Device_id column) is that device's, as its folder says."""
    merged = next(DEVICES.rglob("op_summary_*.csv")).read_text().splitlines()
    prof = tmp_path / "PROF_000001_20260323031749197_00815596RKPKAHRB"
    for device in ("0", "1"):
        rows = [merged[0]] + [r for r in merged[1:] if r.split(",", 1)[0] == device]
        summary = prof / f"device_{device}" / "summary"
        summary.mkdir(parents=True)
        table = "".join(r.split(",", 1)[1] + "\n" for r in rows)
        (summary / f"op_summary_{device}_1_20260323031749.csv").write_text(table)
    found = summarise(prof, timeline=False)
    assert [(r.rank, r.analysis.kernels) for r in found.ranks] == [("device 0", 3), ("device 1", 3)]
    assert found.slowest is not None and found.slowest.rank == "device 1"


def test_a_single_device_output_keeps_its_json_shape():
    """One device in the table (Device_id 0 only): no ranks, as before."""
    data = summarise(AFTER, timeline=False).to_json()
    assert "ranks" not in data and "slowest_rank" not in data
