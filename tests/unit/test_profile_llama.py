"""Unfused attention as transformers' eager Llama leaves it on torch_npu (issue 40): four
decoder layers with GQA, the causal-mask slice, the Casts around an fp32 softmax and training
dropout, one training step on four ranks, generated from the model code (tests/llamaprofile.py)
as torch_npu's CSV and trace and as its SQLite export of the same run."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from llamaprofile import Llama, analyse, generate

from cannbuild.profile.summary import summarise

from clirun import cannbuild as cli

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profiler"

BASE = Llama()
# transformers' eager_attention_forward in training, kernel by kernel
TRAINING = (
    "BatchMatMulV2",  # matmul(query, repeat_kv(key).transpose(2, 3))
    "Mul",  # * scaling
    "StridedSliceD",  # attention_mask[:, :, :, :kv_len] made contiguous
    "Add",  # + causal_mask
    "Cast",  # softmax(..., dtype=torch.float32)
    "SoftmaxV2",
    "Cast",  # .to(query.dtype)
    "DropOutGenMaskV3",  # dropout(p, training=True)
    "DropOutDoMaskV3",
    "BatchMatMulV2",  # matmul(attn_weights, repeat_kv(value))
)


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> Dict[str, Path]:
    root = tmp_path_factory.mktemp("llama")
    made = {}
    for name, cfg in {
        "eager": BASE,
        "viewcopy": replace(BASE, slice_kernel="ViewCopy", ranks=1),
        "eval": replace(BASE, dropout=False, backward=False, ranks=1),
        "level0": replace(BASE, level=0, ranks=1),
    }.items():
        made[name] = generate(root / name, cfg, formats=("csv",))["csv"]
    return made


def chains(path: Path) -> List[Tuple[str, ...]]:
    return [tuple(k.op_type for k in c.kernels) for c in summarise(path).analysis.chain_list]


def test_every_eager_layer_of_every_rank_is_one_chain_with_its_ops_in_order(samples):
    found = summarise(samples["eager"]).analysis
    # four layers on each of four ranks; the backward pass and the rotary table's fp32
    # BatchMatMul make none
    assert found.chain_count == 16
    assert {tuple(k.op_type for k in c.kernels) for c in found.chain_list} == {TRAINING}
    assert [r.analysis.chain_count for r in summarise(samples["eager"]).ranks] == [4, 4, 4, 4]
    first = found.chain_list[0].kernels[0]
    assert (first.input_shapes, first.input_dtypes) == (
        "2,16,1024,128;2,16,128,1024",
        "DT_BF16;DT_BF16",
    )


@pytest.mark.parametrize(
    "sample, ops",
    [
        # newer torch_npu copies the slice with a ViewCopy kernel
        ("viewcopy", tuple("ViewCopy" if t == "StridedSliceD" else t for t in TRAINING)),
        # eval: no dropout kernels, no backward
        ("eval", tuple(t for t in TRAINING if not t.startswith("DropOut"))),
        # Level0: no types and no shapes, the families of the kernel names decide
        ("level0", TRAINING),
    ],
)
def test_each_variant_of_the_eager_attention_is_found_layer_by_layer(samples, sample, ops):
    assert chains(samples[sample]) == [ops] * 4


def test_the_trace_alone_finds_the_same_chains(samples):
    trace = sorted(samples["eager"].glob("*/ASCEND_PROFILER_OUTPUT/trace_view.json"))[0]
    assert chains(trace) == [TRAINING] * 4


S, Q, V = "2,16,1024,1024", "2,16,1024,128", "2,16,1024,128"


@pytest.mark.parametrize(
    "kernels, count",
    [
        # backward: the gradient of P·V, dropout's mask on the gradient, SoftmaxGrad between
        # the Casts, the scale's gradient and the gradients of Q·Kᵀ: no forward Softmax, no chain
        (
            [
                ("BatchMatMulV2", f"{Q};2,16,128,1024", S),
                ("BatchMatMulV2", f"{S};{Q}", Q),
                ("DropOutDoMaskV3", f"{S};4194304;", S),
                ("Cast", S, S),
                ("SoftmaxGrad", f"{S};{S}", S),
                ("Cast", S, S),
                ("Mul", f"{S};", S),
                ("BatchMatMulV2", f"{S};{Q}", Q),
            ],
            0,
        ),
        # the Softmax does not take the first MatMul's output: not connected
        ([("BatchMatMulV2", f"{Q};2,16,128,1024", S), ("SoftmaxV2", Q, Q), ("BatchMatMulV2", f"{S};{V}", Q)], 0),
        # the second MatMul does not take the Softmax's output
        ([("BatchMatMulV2", f"{Q};2,16,128,1024", S), ("SoftmaxV2", S, S), ("BatchMatMulV2", f"{Q};2,16,128,1024", S)], 0),
        # a score transform of no known family (Gemma-style soft-capping) ties in by its shape
        ([("BatchMatMulV2", f"{Q};2,16,128,1024", S), ("Tanh", S, S), ("SoftmaxV2", S, S), ("BatchMatMulV2", f"{S};{V}", Q)], 1),
        # ... but not without shapes, nor an op on another tensor
        ([("BatchMatMulV2", "", ""), ("Tanh", "", ""), ("SoftmaxV2", "", ""), ("BatchMatMulV2", "", "")], 0),
        ([("BatchMatMulV2", f"{Q};2,16,128,1024", S), ("Tanh", "2048,5632", "2048,5632"), ("SoftmaxV2", S, S), ("BatchMatMulV2", f"{S};{V}", Q)], 0),
        # after the Softmax an op of no family must be V's: a copy of V passes, a GELU of P not
        ([("BatchMatMulV2", f"{Q};2,16,128,1024", S), ("SoftmaxV2", S, S), ("Neg", V, V), ("BatchMatMulV2", f"{S};{V}", Q)], 1),
        ([("BatchMatMulV2", f"{Q};2,16,128,1024", S), ("SoftmaxV2", S, S), ("GeluV2", S, S), ("BatchMatMulV2", f"{S};{V}", Q)], 0),
        # a batched MatMul folding B and N (16,1024,1024 is 2,8,1024,1024) is the same tensor
        ([("BatchMatMulV2", "16,1024,128;16,128,1024", "16,1024,1024"), ("Add", "2,8,1024,1024;2,1,1024,1024", "2,8,1024,1024"), ("SoftmaxV2", "2,8,1024,1024", "2,8,1024,1024"), ("BatchMatMulV2", "16,1024,1024;16,1024,128", "16,1024,128")], 1),
    ],
)  # fmt: skip
def test_the_two_matmuls_must_connect_through_the_softmax_where_shapes_say_so(kernels, count):
    assert analyse(kernels).chain_count == count


def test_the_gain_sets_chains_beside_fused_calls_of_the_same_shape_only(tmp_path):
    one = replace(BASE, ranks=1, backward=False)
    eager = generate(tmp_path / "eager", one, formats=("csv",))["csv"]
    flash = generate(tmp_path / "flash", replace(one, attention="flash"), formats=("csv",))["csv"]
    both = tmp_path / "both"
    both.mkdir()
    for run in (*eager.iterdir(), *flash.iterdir()):
        shutil.copytree(run, both / f"{run.parent.parent.name}_{run.name}")
    summary = summarise(both, timeline=False)
    gain = summary.details()["attention"]["opportunity"]
    fa = next(o for o in summary.analysis.ops if o.op_type == "FlashAttentionScore")
    assert gain["matched_chains"] == 4 and gain["fused_mean_us"] == round(fa.mean_us, 3)
    assert gain["estimated_saving_us"] == pytest.approx(
        summary.analysis.chain_total_us - 4 * fa.mean_us, abs=0.01
    )
    # FlashAttention of other shapes (fa_shapes: S 4096 and 1000) is no yardstick: no estimate
    other = tmp_path / "other"
    shutil.copytree(eager, other / "eager")
    shutil.copytree(FIX / "fa_shapes", other / "fa")
    proc = cli("profile", str(other), "--out", "pics", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "no FlashAttention call of the same shape (query size, S, D) ran" in text
    assert "save about" not in text


def test_a_trace_whose_device_tasks_are_out_of_order_is_sorted_before_chains_are_matched(
    tmp_path,
):
    """Chains are matched in time order on each stream: a trace written (or merged) out of
    order finds the same chains as in order, and says it sorted them."""
    import json
    import random

    from cannbuild.profile.trace import read_trace

    one = replace(BASE, ranks=1, backward=False)
    (trace,) = generate(tmp_path, one, formats=("csv",))["csv"].glob("*/*/trace_view.json")
    ordered, info = read_trace(trace)
    events = json.loads(trace.read_text())
    random.Random(1).shuffle(events)
    shuffled = tmp_path / "trace_view.json"
    shuffled.write_text(json.dumps(events))
    again, said = read_trace(shuffled)
    assert len(ordered.chain_list) == 4 and not any("out of time order" in n for n in info.notes)
    assert [c.kernels for c in again.chain_list] == [c.kernels for c in ordered.chain_list]
    assert any("sorted by start time before chains were matched" in n for n in said.notes)
