"""cannbuild bench on the sandbox: results.json, report.md, charts, and that nothing
wrong is ever timed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from reference import reference_torch

from cannbuild.host.pystack import read_python_stack

reference_torch()
REPO = Path(__file__).resolve().parents[2]
HAS_TORCH_NPU = read_python_stack().torch_npu is not None
LABELS = {
    "aclnnFlashAttentionScoreV2 (C API)",
    "torch scaled_dot_product_attention",
    "torch MatMul->Softmax->MatMul",
} | ({"torch_npu.npu_fusion_attention"} if HAS_TORCH_NPU else set())


def _png_size(path: Path):
    from matplotlib import image

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pixels = image.imread(str(path))
    assert len({tuple(p) for p in pixels.reshape(-1, pixels.shape[-1])[::7].tolist()}) > 20
    return pixels.shape


def test_bench_writes_results_a_report_and_charts_of_every_timed_implementation(
    installed, tmp_path
):
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    proc = installed(
        "bench", "--shapes", "N8S128D64,N8/2S256D64", "--budget", "60", "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "results.json").read_text())
    assert data["schema"] == "cannbuild-bench/1" and data["target"] == "sandbox"
    assert len(data["package"]["sha256"]) == 64 and set(data["commits"]) == {
        "opbase",
        "ops-transformer",
    }
    assert [s["name"] for s in data["shapes"]] == [
        "fp32_bnsd_b1_n8_s128_d64",
        "fp32_bnsd_b1_n8_kv2_s256_d64",
    ]
    assert data["shapes"][1]["flops"] == 4 * 8 * 256 * 256 * 64
    rows = {(r["shape"], r["impl"]): r for r in data["results"]}
    assert {impl for _, impl in rows} == {"capi", "torch_npu", "sdpa", "unfused"}
    if not HAS_TORCH_NPU:  # the route is reported, with how to get it, and nothing else
        for shape in ("fp32_bnsd_b1_n8_s128_d64", "fp32_bnsd_b1_n8_kv2_s256_d64"):
            npu = rows.pop((shape, "torch_npu"))
            assert npu["status"] == "not run" and npu["timing"] is None
            assert "pip install torch-npu==" in npu["reason"]
    for (shape, _impl), r in rows.items():
        assert r["status"] == "timed" and r["check"]["status"] == "PASS", r
        t = r["timing"]
        assert t["reps"] == len(t["times_ms"]) >= 3
        assert t["q1_ms"] <= t["median_ms"] <= t["q3_ms"] and t["tflops"] > 0
        sdpa = rows[(shape, "sdpa")]["timing"]["median_ms"]
        assert r["speedup_vs_sdpa"] == pytest.approx(sdpa / t["median_ms"], rel=1e-3)
        assert r["peak_memory_bytes"] is not None and r["peak_memory_bytes"] >= 0
    assert rows[("fp32_bnsd_b1_n8_s128_d64", "capi")]["check"]["max_abs_err"] < 1e-5
    # beyond the inputs the kernel holds attentionOut and the two softmax statistics (fp32)
    held = 4 * 8 * 256 * 64 + 2 * 4 * 8 * 256 * 8
    device = ["capi", "torch_npu"] if HAS_TORCH_NPU else ["capi"]
    for impl in device:
        peak = rows[("fp32_bnsd_b1_n8_kv2_s256_d64", impl)]["peak_memory_bytes"]
        assert held <= peak < held + (1 << 20), (impl, peak)
    kinds = {(c["kind"], c["group"]): c for c in data["charts"]}
    assert set(kinds) == {
        (kind, group)
        for kind in ("throughput", "speedup", "memory")
        for group in ("fp32 BNSD B1 N8 D64", "fp32 BNSD B1 N8/2 D64")
    }
    assert set(kinds[("throughput", "fp32 BNSD B1 N8 D64")]["series"]) == LABELS
    assert set(kinds[("memory", "fp32 BNSD B1 N8/2 D64")]["series"]) == LABELS
    assert set(kinds[("speedup", "fp32 BNSD B1 N8 D64")]["series"]) == LABELS - {
        "torch scaled_dot_product_attention"
    }
    for chart in data["charts"]:
        height, width = _png_size(out / chart["file"])[:2]
        assert width > 400 and height > 200
        assert f": {out / chart['file']}\n" in proc.stdout  # the terminal names every chart
    report = (out / "report.md").read_text()
    assert "| fp32_bnsd_b1_n8_kv2_s256_d64 | aclnnFlashAttentionScoreV2 (C API) |" in report
    assert all(f"]({c['file']})" in report for c in data["charts"])


def test_bench_on_a_fresh_workspace_builds_it_first_and_then_finds_it_up_to_date(cli, tmp_path):
    """bench brings the workspace up to date through the walk `install` runs, saying so
    (on stderr under --json: stdout stays the results); a second run builds nothing."""
    args = ("bench", "--shapes", "N2S64D64", "--budget", "1")
    first = cli(*args, "--out", str(tmp_path / "one"), "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["schema"] == "cannbuild-bench/1"
    assert (
        "workspace brought up to date first: ran opbase-build, opbase-install, "
        "ops-transformer-build, ops-transformer-install" in first.stderr
    )
    assert cli.stamp("ops-transformer-install") is not None
    installed = cli.stamp("ops-transformer-install")["finished"]
    again = cli(*args, "--out", str(tmp_path / "two"))
    assert again.returncode == 0, again.stderr
    said = again.stdout.splitlines()
    assert said[0] == "workspace up to date: all 4 steps were, nothing was built", again.stdout
    assert said[1].startswith("bench: 1 shapes")
    assert cli.stamp("ops-transformer-install")["finished"] == installed


def test_a_wrong_kernel_is_judged_left_out_of_the_timings_and_the_run_fails(cli, tmp_path):
    """A package whose FlashAttention squares the softmax scale: its output fails the check,
    so it is listed with the reason and never timed; the torch routes still are, and a run
    that timed FlashAttention on no shape exits 5 naming why, its results written."""
    env = cli.env(CANNBUILD_SANDBOX_FAULT="fa-wrong-scale")
    assert cli("install", env=env).returncode == 0
    out = tmp_path / "out"
    proc = cli("bench", "--shapes", "N8S128D64", "--out", str(out), env=env)  # no rebuild
    assert proc.returncode == 5, proc.stderr
    assert "FlashAttention was timed on no shape (not timed: baseline capi on" in " ".join(
        proc.stderr.split()
    )
    assert "Traceback" not in proc.stderr
    data = json.loads((out / "results.json").read_text())
    same_kernel = ["capi", "torch_npu"] if HAS_TORCH_NPU else ["capi"]
    for impl in same_kernel:  # torch_npu reaches the same wrong kernel
        row = next(r for r in data["results"] if r["impl"] == impl)
        assert row["status"] == "excluded" and row["timing"] is None, row
        assert row["check"]["status"] == "FAIL" and "exceeds the bound" in row["reason"]
    assert {r["impl"] for r in data["results"] if r["status"] == "timed"} == {"sdpa", "unfused"}
    assert "not timed" in (out / "report.md").read_text()


def test_three_variants_build_once_a_wrong_one_is_never_timed_and_a_rerun_builds_nothing(
    cli, tmp_path
):
    assert cli("install").returncode == 0
    patch = REPO / "bench" / "variants" / "patches" / "key-block-rows-128.diff"
    args = [
        "bench",
        "--shapes",
        "N8S256D64",
        "--build-variant",
        "q32=FA_TILING_QUERY_BLOCK_ROWS=32",
        "--build-variant",
        f"kv128={patch}",
        "--build-variant",
        "wrong=SANDBOX_FAULT_WRONG_SCALE=1",
    ]
    first = cli(*args, "--out", str(tmp_path / "one"))
    assert first.returncode == 0, first.stderr
    for name in ("q32", "kv128", "wrong"):
        assert first.stderr.count(f"variant {name}: building") == 1
    data = json.loads((tmp_path / "one" / "results.json").read_text())
    variants = {v["name"]: v for v in data["variants"]}
    assert variants["wrong"]["validation"].startswith("FAIL")
    assert variants["q32"]["validation"] == variants["kv128"]["validation"] == "PASS"
    timed = {r["variant"] for r in data["results"] if r["status"] == "timed"}
    assert timed == {"baseline", "q32", "kv128"}
    assert not [r for r in data["results"] if r["variant"] == "wrong"]
    assert any(c["kind"] == "variants" for c in data["charts"])
    tiling = cli.ws / "variants" / "kv128" / "src" / "ops-transformer" / "attention"
    header = tiling / "flash_attention_score" / "op_host" / "flash_attention_score_tiling.h"
    assert "#define FA_TILING_KEY_BLOCK_ROWS 128" in header.read_text()
    # each variant is a plan of its own: its stamps and logs in its folder
    stamp = "stamps/ops-transformer-build.json"
    built = {n: (cli.ws / "variants" / n / stamp).stat().st_mtime_ns for n in ("q32", "kv128")}
    logs = {n: sorted(os.listdir(cli.ws / "variants" / n / "logs")) for n in ("q32", "kv128")}

    again = cli(*args, "--out", str(tmp_path / "two"))
    assert again.returncode == 0, again.stderr
    assert "building" not in again.stderr
    for name in ("q32", "kv128", "wrong"):
        assert f"variant {name}: up to date" in again.stderr
    assert built == {
        n: (cli.ws / "variants" / n / stamp).stat().st_mtime_ns for n in ("q32", "kv128")
    }
    assert logs == {
        n: sorted(os.listdir(cli.ws / "variants" / n / "logs")) for n in ("q32", "kv128")
    }


@pytest.mark.skipif(not HAS_TORCH_NPU, reason="torch-npu is not installed")
def test_a_torch_npu_that_cannot_import_is_reported_not_run_with_the_reason(installed, tmp_path):
    """A broken torch_npu (here one that shadows the installed one and fails to load, as a
    missing CANN library does): its route is listed as not run with the import error, no
    number; every other route is still timed."""
    shadow = tmp_path / "shadow" / "torch_npu"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        'raise ImportError("libhccl.so: cannot open shared object file")\n'
    )
    out = tmp_path / "out"
    env = installed.env(
        PYTHONPATH=os.pathsep.join(filter(None, (str(shadow.parent), os.environ.get("PYTHONPATH"))))
    )
    proc = installed("bench", "--shapes", "N8S128D64", "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "results.json").read_text())
    npu = next(r for r in data["results"] if r["impl"] == "torch_npu")
    assert npu["status"] == "not run" and npu["timing"] is None, npu
    assert "import torch_npu: libhccl.so: cannot open shared object file" in npu["reason"]
    assert npu["peak_memory_bytes"] is None
    timed = {r["impl"] for r in data["results"] if r["status"] == "timed"}
    assert timed == {"capi", "sdpa", "unfused"}
    assert (
        "| not run: torch_npu cannot run here: import torch_npu: "
        in (out / "report.md").read_text()
    )


@pytest.mark.skipif(not HAS_TORCH_NPU, reason="torch-npu is not installed")
def test_a_torch_npu_that_aborts_is_said_once_with_its_error_line(installed, tmp_path):
    """A torch_npu that aborts at import (as beside PyPI's CUDA torch 2.13.0): the bench
    says once, for every shape, that the route was not run, how the worker ended and the
    first error line of its log (issue 30)."""
    shadow = tmp_path / "shadow" / "torch_npu"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "import os, resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
        "sys.stderr.write(\"c10::ValueError: Duplicated key 'pinned_reserve_segment_size_mb' "
        'found in device-specific configuration parser hook registration\\n")\n'
        "sys.stderr.flush()\n"
        "os.abort()\n"
    )
    out = tmp_path / "out"
    env = installed.env(
        PYTHONPATH=os.pathsep.join(filter(None, (str(shadow.parent), os.environ.get("PYTHONPATH"))))
    )
    shapes = "N8S128D64,N8S256D64"
    proc = installed("bench", "--shapes", shapes, "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "torch_npu" in line and "not run" in line]
    assert len(said) == 1, proc.stderr
    assert said[0].startswith("not run: baseline torch_npu on every shape (2): ")
    assert "exited with -6 (SIGABRT): c10::ValueError: Duplicated key" in said[0]
    assert "(None)" not in proc.stderr
