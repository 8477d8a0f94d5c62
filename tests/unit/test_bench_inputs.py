"""bench: shapes, FLOPs, timing summaries and variant files, without a sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from reference import reference_torch

from cannbuild.bench.report import flashattention_timed
from cannbuild.bench.routes import RouteError
from cannbuild.bench.shapes import bench_shape, default_dims, parse_shapes, sweep
from cannbuild.bench.sweep import (
    BASELINE,
    SweepResult,
    SweepSettings,
    _Route,
    _time_rounds,
    run_sweep,
)
from cannbuild.bench.timing import Timing, repetitions
from cannbuild.bench.variants import parse_variants
from cannbuild.errors import UsageError
from cannbuild.validate.cases import CaseResult

REPO = Path(__file__).resolve().parents[2]


def test_flops_are_4bns2d_and_half_of_that_with_a_causal_mask():
    (shape,) = sweep([(2, 8, 2, 1024, 128)], ["fp16"], ["BSH"], False)
    (causal,) = sweep([(2, 8, 2, 1024, 128)], ["fp16"], ["BSH"], True)
    assert shape.flops == 4 * 2 * 8 * 1024**2 * 128 == 2 * causal.flops
    assert shape.name == "fp16_bsh_b2_n8_kv2_s1024_d128" and causal.name.endswith("_causal")


def test_the_default_sweep_runs_cheapest_first_so_a_budget_cuts_the_largest_s():
    shapes = sweep(default_dims(), ["fp32"], ["BNSD"], False)
    assert [s.S for s in shapes] == sorted(s.S for s in shapes)
    assert {s.S for s in shapes} == {128, 256, 512, 1024, 2048, 4096, 8192}
    assert {(s.N2, s.D) for s in shapes} == {(8, 64), (8, 128), (2, 64), (2, 128)}


def test_shapes_parse_and_a_bad_one_names_the_flag_and_the_format():
    assert parse_shapes("B2N8/2S1024D64,n4s128d128") == [(2, 8, 2, 1024, 64), (1, 4, 4, 128, 128)]
    with pytest.raises(UsageError) as err:
        parse_shapes("N8S1024")
    assert (
        "--shapes 'N8S1024'" in err.value.paragraph() and "B1N8/2S1024D64" in err.value.paragraph()
    )
    with pytest.raises(UsageError):
        parse_shapes("N8/3S128D64")  # N1 not a multiple of N2


def test_median_iqr_and_tflops_of_a_timing():
    t = Timing(times_ms=(1.0, 2.0, 3.0, 4.0, 100.0))
    assert t.median_ms == 3.0 and t.iqr_ms == 2.0
    assert t.tflops(3e9) == pytest.approx(1.0)
    assert repetitions(1000.0, 0.25) == 3 and repetitions(0.01, 0.25) == 25


def test_the_example_variant_files_parse_into_patches_and_compile_definitions():
    q = parse_variants("bench/variants/query-block-rows.toml", [], REPO)
    assert [(v.name, v.defines) for v in q][:1] == [
        ("q16", (("FA_TILING_QUERY_BLOCK_ROWS", "16"),))
    ]
    kv = parse_variants("bench/variants/key-block-rows.toml", ["x=A=1,B=2"], REPO)
    assert [v.name for v in kv] == ["kv32", "kv128", "x"]
    assert (
        kv[1].patch is not None
        and kv[1].patch.is_file()
        and kv[2].defines == (("A", "1"), ("B", "2"))
    )


@pytest.mark.parametrize(
    "flags, message",
    [
        (["baseline=A=1"], "not a variant name"),
        (["q=nothing.diff"], "does not exist"),
        (["q=A=1", "q=B=2"], "named twice"),
        (["q=A=1;rm -rf"], "not a compile definition"),
    ],
)
def test_a_bad_variant_is_one_paragraph_naming_it(flags, message, tmp_path):
    with pytest.raises(UsageError) as err:
        parse_variants(None, flags, tmp_path)
    assert message in err.value.paragraph()


def _route(name: str, reps: int, order: list, fail_at: int = -1) -> _Route:
    def timed(calls: int) -> Timing:
        order.append(name)
        if len(order) == fail_at:
            raise RouteError("the device was lost")
        return Timing(times_ms=tuple(1.0 for _ in range(calls)))

    check = CaseResult(case=bench_shape("fp32", "BNSD", 1, 8, 8, 128, 64, False), status="PASS")
    return _Route(variant=BASELINE, impl=name, check=check, peak=None, timed=timed, reps=reps)


def test_every_route_is_timed_in_rounds_in_turn_so_load_falls_on_all_of_them():
    order: list = []
    shape = bench_shape("fp32", "BNSD", 1, 8, 8, 128, 64, False)
    routes = [_route("capi", 25, order), _route("sdpa", 3, order), _route("unfused", 10, order)]
    done = _time_rounds(shape, routes)
    assert order == [
        "capi",
        "sdpa",
        "unfused",
        "sdpa",
        "unfused",
        "capi",
        "unfused",
        "capi",
        "sdpa",
    ]
    assert [len(m.timing.times_ms) for m in done] == [25, 3, 10]
    # a route whose call fails mid-way is an error, the others are still timed
    order.clear()
    routes = [_route("capi", 9, order, fail_at=4), _route("sdpa", 9, order)]
    capi, sdpa = _time_rounds(shape, routes)
    assert (capi.status, capi.reason, capi.timing) == ("error", "the device was lost", None)
    assert sdpa.status == "timed" and len(sdpa.timing.times_ms) == 9


def test_the_host_conditions_are_recorded_and_a_load_past_the_cores_is_loaded():
    cores = len(os.sched_getaffinity(0))
    calm = SweepResult(threads=cores, loads={"a": 0.0}).host_json()
    assert calm == {
        "cores": cores,
        "torch_threads": cores,
        "rounds": 3,
        "load_max": 0.0,
        "loaded": False,
        "loaded_shapes": [],
    }
    busy = SweepResult(threads=cores, loads={"a": 0.0, "b": cores + 1.5}).host_json()
    assert busy["loaded"] and busy["loaded_shapes"] == ["b"]


def test_a_run_with_no_flashattention_timing_is_told_apart():
    def row(impl, status):
        return {"variant": "baseline", "impl": impl, "status": status}

    assert flashattention_timed([row("capi", "timed"), row("sdpa", "timed")])
    assert not flashattention_timed(
        [row("capi", "excluded"), row("torch_npu", "not run"), row("sdpa", "timed")]
    )


@pytest.mark.xdist_group("torch")  # on the worker that imports torch for the judging tests
def test_the_sweep_sets_torchs_thread_count_for_the_whole_run(tmp_path):
    torch = reference_torch()
    before = torch.get_num_threads()
    try:
        settings = SweepSettings(budget_s=1.0, target_s=0.1, threads=1)
        result = run_sweep([], [], tmp_path, settings, lambda line: None)
        assert (result.threads, torch.get_num_threads()) == (1, 1)
        default = run_sweep([], [], tmp_path, SweepSettings(budget_s=1.0, target_s=0.1), print)
        assert default.threads == len(os.sched_getaffinity(0)) == torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(
    "text, message",
    [
        ('[[variant]]\nname = "q"\npatchh = "q.diff"\n', "#1 has an unknown key 'patchh'"),
        ('[[variant]]\nname = "q"\ndefines = { A = [1] }\n', "#1 defines.A = [1] is not true"),
        ("[[variant]]\nname = 3\n", "[[variant]] #1 name = 3 is not a string"),
        ("title = 'no variants'\n", "no [[variant]] tables"),
    ],
)
def test_a_bad_variant_file_names_the_table_and_key(text, message, tmp_path):
    (tmp_path / "v.toml").write_text(text)
    with pytest.raises(UsageError) as err:
        parse_variants("v.toml", [], tmp_path)
    assert message in err.value.paragraph() and str(tmp_path / "v.toml") in err.value.paragraph()


def test_a_build_variant_whose_patch_is_no_unified_diff_is_refused_before_any_build(tmp_path):
    (tmp_path / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    with pytest.raises(UsageError, match="is not a unified diff"):
        parse_variants(None, [f"q32={tmp_path / 'passwd'}"], tmp_path)
    shipped = Path(__file__).resolve().parents[2] / "bench/variants/patches/key-block-rows-32.diff"
    (built,) = parse_variants(None, [f"q32={shipped}"], tmp_path)
    assert built.patch == shipped
