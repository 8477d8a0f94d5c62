"""profile --compare, bench --compare and a multi-rank folder (issue 28 items 5, 6), on the
real-shaped samples under fixtures/profiler (see their .source notes)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cannbuild.profile.summary import summarise

from clirun import cannbuild as cli

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profiler"
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
        f"unfused chains 2 -> 0, attention time 450 us -> {fused_us:.0f} us"
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


def test_profile_compare_table_ends_with_the_verdict(tmp_path):
    proc = cli("profile", "--compare", str(BEFORE), str(AFTER), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "unfused chains:   2 -> 0" in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1].startswith("verdict: unfused chains 2 -> 0")


def test_profile_compare_with_a_missing_profile_is_exit_2(tmp_path):
    proc = cli("profile", "--compare", str(tmp_path / "nope"), str(AFTER), cwd=tmp_path)
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def _bench(path: Path, medians: dict) -> Path:
    rows = [
        {
            "variant": "baseline",
            "impl": impl,
            "shape": shape,
            "status": "timed" if ms else "not run",
            "timing": {"median_ms": ms} if ms else None,
        }
        for (impl, shape), ms in medians.items()
    ]
    path.write_text(json.dumps({"schema": "cannbuild-bench/1", "results": rows}))
    return path


def test_bench_compare_matches_rows_and_says_what_got_faster(tmp_path):
    old = _bench(
        tmp_path / "old.json",
        {("capi", "N8S1024D64"): 2.0, ("sdpa", "N8S1024D64"): 4.0, ("capi", "N8S2048D64"): 8.0},
    )
    new = _bench(
        tmp_path / "new.json",
        {("capi", "N8S1024D64"): 1.0, ("sdpa", "N8S1024D64"): 4.1, ("capi", "N8S4096D64"): 30.0},
    )
    proc = cli("bench", "--compare", str(old), str(new), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    rows = {(r["impl"], r["shape"]): r for r in data["rows"]}
    assert rows[("capi", "N8S1024D64")]["change"] == -0.5
    assert data["only_old"] == ["baseline capi N8S2048D64"]
    assert data["only_new"] == ["baseline capi N8S4096D64"]
    assert data["verdict"].startswith("2 timings compared: 1 faster, 0 slower, 1 within 5%")
    table = cli("bench", "--compare", str(old), str(new), cwd=tmp_path)
    assert "-50.0%" in table.stdout and "verdict: 2 timings compared" in table.stdout


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
