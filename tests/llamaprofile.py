"""Profiles of a Hugging Face Llama trained eagerly on torch_npu, generated from the model code
(issue 40): what the profilers would write for four decoder layers, GQA, the causal-mask slice
and attention dropout, one training step, on each of several ranks, as torch_npu's CSV and JSON
(`kernel_details.csv`, `trace_view.json`) and as its SQLite export of the same run
(`ascend_pytorch_profiler_<rank>.db`).

The kernels follow transformers' `modeling_llama.py` (4.48 and later, the same in Qwen2 and
Mistral) op by op, as torch_npu launches them:
- `LlamaRotaryEmbedding.forward`: `inv_freq_expanded @ position_ids_expanded` in fp32 (a
  BatchMatMul whose next kernels are no attention), cat, cos, sin, the casts;
- `LlamaRMSNorm`: `to(float32)`, `pow(2).mean(-1)`, `+ eps`, `rsqrt`, `*`, `to(bf16)`, `weight *`;
- `LlamaAttention.forward`: q/k/v_proj (MatMulV3), `apply_rotary_pos_emb` (`q * cos +
  rotate_half(q) * sin`: Neg, ConcatD, Mul, Mul, Add, for q and k), then
  `eager_attention_forward`: `repeat_kv` of k and v (an expand made contiguous:
  BroadcastTo), `matmul(query, key_states.transpose(2, 3)) * scaling` (BatchMatMulV2, Muls),
  `causal_mask = attention_mask[:, :, :, :key_states.shape[-2]]` made contiguous (StridedSliceD,
  or ViewCopy in newer torch_npu) and added (Add), `softmax(..., dtype=torch.float32)
  .to(query.dtype)` (Cast, SoftmaxV2, Cast), `dropout(p, training=True)` (DropOutGenMaskV3,
  DropOutDoMaskV3), `matmul(attn_weights, value_states)` (BatchMatMulV2),
  `transpose(1, 2).contiguous()` (Transpose), o_proj;
- `LlamaMLP`: gate/up MatMulV3, SiLU (Swish), Mul, down MatMulV3; the residual Adds;
- the loss (LogSoftmaxV2, NLLLoss), the backward pass in reverse (SoftmaxGrad, the MatMul
  gradients, DropOutDoMaskV3 on the gradient, ReduceSum for repeat_kv) and the gradients'
  all-reduce on the HCCL stream (`hcom_allReduce_`), with an AI CPU scheduling kernel.
With `attention="flash"` the same model calls torch_npu.npu_fusion_attention instead
(FlashAttentionScore / FlashAttentionScoreGrad, BNSD, GQA native: no repeat_kv).

Durations come from a cost model of an Atlas A2 (about 250 TFLOP/s on the Cube unit, 1.3 TB/s of
HBM), so the fused and unfused times compare as they would; each rank is a little slower than
the one before and every kernel has a deterministic jitter.  Formats: profiler-formats.md §1.2
(Level1 header of torch_npu 2.13, TAB after the start time, quoted shapes, CRLF), §1.6 (bare
array, string ts, `Ascend Hardware` track, `torch_to_npu` flows), and the export's tables as
msprof's `msprof_db.cpp` and torch_npu's `TableColumnsManager` declare them (STRING_IDS, TASK,
COMPUTE_TASK_INFO, COMMUNICATION_OP, COMMUNICATION_TASK_INFO, COMMUNICATION_SCHEDULE_TASK_INFO,
CANN_API, PYTORCH_API, CONNECTION_IDS).

    python tests/llamaprofile.py OUT [--attention eager|flash] [--ranks 4] [--slice ViewCopy]
"""

from __future__ import annotations

import argparse
import csv
import json
import sqlite3
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

T0_NS = 1_774_235_537_000_000_000  # the step's first kernel, epoch ns
COMPUTE, HCCL, AICPU = 2, 8, 9  # streams
DEVICE_PID, PYTHON_PID = 8_000_000, 40_960
TORCH_OP, TASK_QUEUE = 50001, 50002  # PYTORCH_API.type (torch_npu ApiType)
FWK_LINKS = 5 << 28  # torch_npu START_CONNECTION_ID_FWK_API: task-queue and fwd-bwd links
CUBE_FLOPS_PER_US, HBM_BYTES_PER_US = 250e6, 1.3e6
SIZES = {"DT_BF16": 2, "FLOAT16": 2, "FLOAT": 4, "INT64": 8, "UINT8": 1, "BOOL": 1, "INT32": 4}
KERNEL_HEADER = [
    "Step Id", "Device_id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State",
    "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Num",
    "Mix Block Num", "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats",
    "Output Shapes", "Output Data Types", "Output Formats", "Context ID",
]  # fmt: skip
LEVEL0_HEADER = [
    "Step Id", "Device_id", "Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)",
    "Wait Time(us)", "Block Num", "Mix Block Num", "Input Shapes", "Input Data Types",
    "Input Formats", "Output Shapes", "Output Data Types", "Output Formats",
]  # fmt: skip


@dataclass(frozen=True)
class Llama:
    """A Llama-style config (GQA: 16 query heads sharing 4 KV heads) and how it is run."""

    layers: int = 4
    batch: int = 2
    seq: int = 1024
    hidden: int = 2048
    heads: int = 16
    kv_heads: int = 4
    intermediate: int = 5632
    vocab: int = 32000
    mask_len: int = 2048  # the causal mask is built for this many positions, then sliced
    dtype: str = "DT_BF16"
    attention: str = "eager"  # "flash": npu_fusion_attention; "sdpa_math": SDPA's math path
    slice_kernel: str = "StridedSliceD"  # or "ViewCopy" (newer torch_npu)
    dropout: bool = True  # attention_dropout > 0 in training
    backward: bool = True
    level: int = 1  # 0: torch_npu's default level, no types or shapes in the table
    ranks: int = 4
    host_softmax: bool = False  # one extra softmax on CPU tensors (linked to its backward only)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


@dataclass(frozen=True)
class Kernel:
    name: str  # aclnn<Api>_<Impl>_<Type> (or a GE op name)
    op_type: str
    core: str
    inputs: Tuple[Tuple[Tuple[int, ...], str], ...]  # (shape, dtype) per input; () a scalar slot
    outputs: Tuple[Tuple[Tuple[int, ...], str], ...]
    cost_us: float
    stream: int = COMPUTE


@dataclass
class Call:
    """One torch op and the kernels it launched (none: it ran on the host)."""

    torch_op: str
    kernels: List[Kernel]
    backward_link: bool = False  # has a forward/backward connection (sequence number)


@dataclass(frozen=True)
class Placed:
    kernel: Kernel
    start_ns: int
    dur_ns: int
    task_id: int
    connection_id: int
    call: int  # index of the Call


@dataclass
class Run:
    calls: List[Call]
    placed: List[Placed] = field(default_factory=list)
    host: List[Tuple[int, int, int]] = field(
        default_factory=list
    )  # per call: start_ns, end_ns, tid


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _vector(name: str, op_type: str, inputs, outputs, core: str = "AI_VECTOR_CORE") -> Kernel:
    moved = sum(_numel(s) * SIZES[d] for s, d in (*inputs, *outputs) if s)
    cost = moved / HBM_BYTES_PER_US + 3.0
    return Kernel(name, op_type, core, tuple(inputs), tuple(outputs), cost)


def _matmul(name: str, op_type: str, a, b, out, dtype: str) -> Kernel:
    k = a[-1] if a[-1] in (b[-2], b[-1]) else a[-2]
    cost = 2.0 * _numel(out) * k / CUBE_FLOPS_PER_US + 4.0
    return Kernel(name, op_type, "AI_CORE", ((a, dtype), (b, dtype)), ((out, dtype),), cost)


def _aclnn(api: str, impl: str, op_type: str) -> str:
    return f"aclnn{api}_{impl}_{op_type}"


F32, I64 = "FLOAT", "INT64"
BMM = _aclnn("Matmul", "BatchMatMulNd", "BatchMatMulV2")
MM = _aclnn("Matmul", "MatMulV3Common", "MatMulV3")


class Builder:
    """The kernels of one training step of `cfg`, in launch order, grouped by torch op."""

    def __init__(self, cfg: Llama) -> None:
        self.cfg = cfg
        self.dt = cfg.dtype
        self.calls: List[Call] = []
        c = cfg
        self.tokens = c.batch * c.seq
        self.q = (c.batch, c.heads, c.seq, c.head_dim)
        self.kv = (c.batch, c.kv_heads, c.seq, c.head_dim)
        self.scores = (c.batch, c.heads, c.seq, c.seq)
        self.h = (self.tokens, c.hidden)

    def call(self, torch_op: str, *kernels: Kernel, link: bool = True) -> None:
        self.calls.append(Call(torch_op, list(kernels), link))

    def vec(self, api: str, op_type: str, ins, outs) -> Kernel:
        """A vector kernel `aclnn<api>_<op_type>AiCore_<op_type>`; a bare shape is in bf16."""

        def typed(items):
            return tuple(t if isinstance(t[-1], str) else (t, self.dt) for t in items)

        return _vector(_aclnn(api, f"{op_type}AiCore", op_type), op_type, typed(ins), typed(outs))

    def cast(self, shape, src: str, dst: str) -> Kernel:
        return _vector(
            _aclnn("Cast", "CastAiCore", "Cast"), "Cast", ((shape, src),), ((shape, dst),)
        )

    def linear(self, inp: Tuple[int, ...], out_features: int, in_features: int) -> None:
        out = (inp[0], out_features)
        self.call(
            "aten::linear", _matmul(MM, "MatMulV3", inp, (out_features, in_features), out, self.dt)
        )

    def rms_norm(self) -> None:
        h, col = self.h, (self.tokens, 1)
        self.call("aten::to", self.cast(h, self.dt, F32), link=False)
        self.call("aten::pow", self.vec("PowTensorScalar", "Pows", [(h, F32)], [(h, F32)]))
        self.call("aten::mean", self.vec("Mean", "ReduceMean", [(h, F32)], [(col, F32)]))
        self.call("aten::add", self.vec("Adds", "Adds", [(col, F32)], [(col, F32)]))
        self.call("aten::rsqrt", self.vec("Rsqrt", "Rsqrt", [(col, F32)], [(col, F32)]))
        self.call("aten::mul", self.vec("Mul", "Mul", [(h, F32), (col, F32)], [(h, F32)]))
        self.call("aten::to", self.cast(h, F32, self.dt), link=False)
        self.call("aten::mul", self.vec("Mul", "Mul", [(self.cfg.hidden,), h], [h]))

    def rotary_tables(self) -> None:
        """LlamaRotaryEmbedding.forward: `inv_freq_expanded.float() @ position_ids_expanded.float()`
        (a batched MatMul in fp32 that starts no attention), cat, cos, sin, casts."""
        c = self.cfg
        half = c.head_dim // 2
        freqs, emb = (c.batch, c.seq, half), (c.batch, c.seq, c.head_dim)
        table = (c.batch, half, c.seq)
        self.call(
            "aten::matmul",
            _matmul(BMM, "BatchMatMulV2", (c.batch, half, 1), (c.batch, 1, c.seq), table, F32),
            link=False,
        )
        self.call(
            "aten::transpose",
            self.vec("Permute", "Transpose", [(table, F32), ((3,), I64)], [(freqs, F32)]),
            link=False,
        )
        self.call(
            "aten::cat",
            self.vec("Cat", "ConcatD", [(freqs, F32), (freqs, F32)], [(emb, F32)]),
            link=False,
        )
        for fn, t in (("aten::cos", "Cos"), ("aten::sin", "Sin")):
            self.call(fn, self.vec(t, t, [(emb, F32)], [(emb, F32)]), link=False)
            self.call("aten::to", self.cast(emb, F32, self.dt), link=False)

    def rope(self, x: Tuple[int, ...]) -> None:
        """`q * cos + rotate_half(q) * sin`; rotate_half is `cat((-x2, x1), dim=-1)`."""
        half = (*x[:-1], x[-1] // 2)
        cos = (self.cfg.batch, 1, self.cfg.seq, self.cfg.head_dim)
        self.call("aten::mul", self.vec("Mul", "Mul", [x, cos], [x]))
        self.call("aten::neg", self.vec("Neg", "Neg", [half], [half]))
        self.call("aten::cat", self.vec("Cat", "ConcatD", [half, half], [x]))
        self.call("aten::mul", self.vec("Mul", "Mul", [x, cos], [x]))
        self.call("aten::add", self.vec("Add", "Add", [x, x], [x]))

    def mask_slice(self) -> Kernel:
        c = self.cfg
        full, part = (c.batch, 1, c.seq, c.mask_len), (c.batch, 1, c.seq, c.seq)
        if c.slice_kernel == "ViewCopy":
            # aclnnInplaceCopy: the destination, its size, stride and offset, then the source's
            meta = [((4,), I64), ((4,), I64), ((1,), I64)]
            return self.vec("InplaceCopy", "ViewCopy", [part, *meta, full, *meta], [part])
        return _vector("StridedSliceD", "StridedSliceD", ((full, self.dt),), ((part, self.dt),))

    def dropout(self, s: Tuple[int, ...]) -> Tuple[Kernel, Kernel]:
        bits = (_numel(s) // 8,)
        gen = self.vec(
            "DropoutGenMaskV2", "DropOutGenMaskV3", [((4,), I64), ((), F32)], [(bits, "UINT8")]
        )
        do = self.vec("DropoutDoMask", "DropOutDoMaskV3", [s, (bits, "UINT8"), ((), F32)], [s])
        return gen, do

    def eager_attention(self) -> None:
        c, dt, s = self.cfg, self.dt, self.scores
        for _ in ("key", "value"):  # repeat_kv: `x[:, :, None].expand(...).reshape(...)`
            self.call(
                "aten::reshape",
                self.vec("Expand", "BroadcastTo", [self.kv, ((5,), I64)], [self.q]),
                link=False,
            )
        k_t = (c.batch, c.heads, c.head_dim, c.seq)
        self.call("aten::matmul", _matmul(BMM, "BatchMatMulV2", self.q, k_t, s, dt))
        self.call("aten::mul", self.vec("Muls", "Mul", [s, ((), F32)], [s]))
        self.call("aten::contiguous", self.mask_slice(), link=False)
        self.call("aten::add", self.vec("Add", "Add", [s, (c.batch, 1, c.seq, c.seq)], [s]))
        softmax = _vector(
            _aclnn("Softmax", "SoftmaxAiCore", "SoftmaxV2"), "SoftmaxV2", ((s, F32),), ((s, F32),)
        )
        self.call("aten::softmax", self.cast(s, dt, F32), softmax)
        self.call("aten::to", self.cast(s, F32, dt))
        if c.dropout:
            self.call("aten::dropout", *self.dropout(s))
        self.call("aten::matmul", _matmul(BMM, "BatchMatMulV2", s, self.q, self.q, dt))

    def sdpa_math(self) -> None:
        """SDPA (attn_implementation="sdpa") dispatched to PyTorch's math path on NPU tensors:
        `q @ k.transpose(-2, -1) * scale + attn_mask`, softmax, dropout, `@ v` (repeat_interleave
        of k and v for enable_gqa), all launched from inside the one math op."""
        c, dt, s = self.cfg, self.dt, self.scores
        k_t = (c.batch, c.heads, c.head_dim, c.seq)
        repeat = self.vec("RepeatInterleave", "RepeatInterleave", [self.kv], [self.q])
        self.call(
            "aten::_scaled_dot_product_attention_math",
            repeat,
            repeat,
            _matmul(BMM, "BatchMatMulV2", self.q, k_t, s, dt),
            self.vec("Muls", "Mul", [s, ((), F32)], [s]),
            self.vec("Add", "Add", [s, (c.batch, 1, c.seq, c.seq)], [s]),
            self.vec("Softmax", "SoftmaxV2", [s], [s]),
            *(self.dropout(s) if c.dropout else ()),
            _matmul(BMM, "BatchMatMulV2", s, self.q, self.q, dt),
        )

    def flash_attention(self) -> Kernel:
        c, dt = self.cfg, self.dt
        stats = (c.batch, c.heads, c.seq, 8)
        causal = 4.0 * c.batch * c.heads * c.seq * c.seq * c.head_dim / 2  # half the blocks
        bits = (_numel(self.scores) // 8,)
        mask = (c.mask_len, c.mask_len)
        return Kernel(
            _aclnn("FlashAttentionScore", "FlashAttentionScore", "FlashAttentionScore"),
            "FlashAttentionScore",
            "MIX_AIC",
            (
                (self.q, dt),
                (self.kv, dt),
                (self.kv, dt),
                ((), dt),
                (bits, "UINT8"),
                ((), dt),
                (mask, "BOOL"),
            ),
            ((stats, F32), (stats, F32), ((), dt), (self.q, dt)),
            causal / (0.6 * CUBE_FLOPS_PER_US) + 12.0,
        )

    def flash_attention_grad(self) -> Kernel:
        c, dt = self.cfg, self.dt
        fwd = self.flash_attention()
        stats = (c.batch, c.heads, c.seq, 8)
        ins = (
            *fwd.inputs[:3],
            (self.q, dt),
            *fwd.inputs[3:],
            (stats, F32),
            (stats, F32),
            ((), dt),
            (self.q, dt),
        )
        outs = ((self.q, dt), (self.kv, dt), (self.kv, dt), ((), dt))
        name = _aclnn(
            "FlashAttentionScoreGrad", "FlashAttentionScoreGrad", "FlashAttentionScoreGrad"
        )
        return Kernel(name, "FlashAttentionScoreGrad", "MIX_AIC", ins, outs, fwd.cost_us * 2.5)

    def layer(self) -> None:
        c = self.cfg
        kv_dim = c.kv_heads * c.head_dim
        self.rms_norm()
        for out in (c.hidden, kv_dim, kv_dim):
            self.linear(self.h, out, c.hidden)
        self.rope(self.q)
        self.rope(self.kv)
        if c.attention == "flash":
            # npu_fusion_attention makes its dropout mask first, then runs the fused kernel
            self.call(
                "npu::npu_fusion_attention", self.dropout(self.scores)[0], self.flash_attention()
            )
        elif c.attention == "sdpa_math":
            self.sdpa_math()
        else:
            self.eager_attention()
        bsnd = (c.batch, c.seq, c.heads, c.head_dim)
        self.call(
            "aten::contiguous",
            self.vec("Permute", "Transpose", [self.q, ((4,), I64)], [bsnd]),
            link=False,
        )
        self.linear(self.h, c.hidden, c.hidden)
        self.call("aten::add", self.vec("Add", "Add", [self.h, self.h], [self.h]))
        self.rms_norm()
        mid = (self.tokens, c.intermediate)
        self.linear(self.h, c.intermediate, c.hidden)
        self.linear(self.h, c.intermediate, c.hidden)
        self.call("aten::silu", self.vec("Silu", "Swish", [mid], [mid]))
        self.call("aten::mul", self.vec("Mul", "Mul", [mid, mid], [mid]))
        self.linear(mid, c.hidden, c.intermediate)
        self.call("aten::add", self.vec("Add", "Add", [self.h, self.h], [self.h]))

    def layer_backward(self, index: int) -> None:
        """The gradients of one layer, last op first; the attention part holds SoftmaxGrad."""
        c, dt, s, h = self.cfg, self.dt, self.scores, self.h
        mid = (self.tokens, c.intermediate)
        mm = "autograd::MmBackward0"
        self.call(mm, _matmul(MM, "MatMulV3", h, (c.hidden, c.intermediate), mid, dt))
        self.call(
            mm,
            _matmul(MM, "MatMulV3", (c.hidden, self.tokens), mid, (c.hidden, c.intermediate), dt),
        )
        self.call(
            "autograd::SiluBackward0", self.vec("SiluBackward", "SwishGrad", [mid, mid], [mid])
        )
        self.call(mm, _matmul(MM, "MatMulV3", mid, (c.intermediate, c.hidden), h, dt))
        self.call(mm, _matmul(MM, "MatMulV3", h, (c.hidden, c.hidden), h, dt))
        if c.attention == "flash":
            self.call("autograd::NpuFusionAttentionBackward", self.flash_attention_grad())
        else:
            v_t = (c.batch, c.heads, c.head_dim, c.seq)
            grad = "autograd::MatmulBackward0"
            self.call(
                grad,
                _matmul(BMM, "BatchMatMulV2", self.q, v_t, s, dt),
                _matmul(BMM, "BatchMatMulV2", s, self.q, self.q, dt),
            )
            if c.dropout:
                self.call("autograd::NativeDropoutBackward0", self.dropout(s)[1])
            self.call("autograd::ToCopyBackward0", self.cast(s, dt, F32))
            self.call(
                "autograd::SoftmaxBackward0",
                self.vec("SoftmaxBackward", "SoftmaxGrad", [(s, F32), (s, F32)], [(s, F32)]),
            )
            self.call("autograd::ToCopyBackward0", self.cast(s, F32, dt))
            self.call("autograd::MulBackward0", self.vec("Muls", "Mul", [s, ((), F32)], [s]))
            k = (c.batch, c.heads, c.seq, c.head_dim)
            self.call(
                grad,
                _matmul(BMM, "BatchMatMulV2", s, k, self.q, dt),
                _matmul(BMM, "BatchMatMulV2", s, self.q, self.q, dt),
            )
            for _ in ("key", "value"):  # repeat_kv's gradient: the groups summed
                self.call(
                    "autograd::ExpandBackward0",
                    self.vec("ReduceSum", "ReduceSum", [self.q], [self.kv]),
                )
        for _ in range(3):
            self.call(mm, _matmul(MM, "MatMulV3", h, (c.hidden, c.hidden), h, dt))
        # DDP: this layer's gradient bucket is all-reduced on the HCCL stream, with the AI CPU
        # kernel that schedules it
        grads = (c.hidden * (c.hidden * 2 + c.kv_heads * c.head_dim * 2 + c.intermediate * 3),)
        self.call(
            "c10d::allreduce_",
            Kernel(
                f"hcom_allReduce__{428 + index}_0_1",
                "hcom_allReduce_",
                "COMMUNICATION",
                ((grads, dt),),
                ((grads, dt),),
                _numel(grads) * 2 / 40e3,
                HCCL,
            ),
            Kernel("AllReduceAicpuKernel", "AllReduceAicpuKernel", "AI_CPU", (), (), 18.0, AICPU),
            link=False,
        )

    def step(self) -> List[Call]:
        c, h = self.cfg, self.h
        self.call(
            "aten::embedding",
            self.vec("Embedding", "GatherV2", [(c.vocab, c.hidden), ((self.tokens,), I64)], [h]),
        )
        self.rotary_tables()
        for _ in range(c.layers):
            self.layer()
        if c.host_softmax:  # a softmax on CPU tensors: no kernel, only its backward link
            self.call("aten::softmax")
        self.rms_norm()
        logits = (self.tokens, c.vocab)
        self.linear(h, c.vocab, c.hidden)
        self.call(
            "aten::log_softmax",
            self.vec("LogSoftmax", "LogSoftmaxV2", [(logits, F32)], [(logits, F32)]),
        )
        self.call(
            "aten::nll_loss",
            self.vec("NLLLoss", "NLLLoss", [(logits, F32), ((self.tokens,), I64)], [((), F32)]),
        )
        if c.backward:
            for index in range(c.layers):
                self.layer_backward(index)
        return self.calls


def _jitter(*key: object) -> float:
    """A deterministic factor in [0.97, 1.03] per kernel."""
    return 0.97 + (zlib.crc32(repr(key).encode()) % 601) / 10000.0


def place(cfg: Llama, rank: int) -> Run:
    """Times for every kernel: the compute stream back to back with launch gaps, the HCCL
    stream from the moment its bucket is ready, the host a little ahead of the device."""
    run = Run(calls=Builder(cfg).step())
    ready = {COMPUTE: T0_NS, HCCL: T0_NS, AICPU: T0_NS}
    slower = 1.0 + 0.015 * rank
    task = connection = 0
    host = T0_NS - 400_000
    tid = PYTHON_PID
    for index, call in enumerate(run.calls):
        begin = host
        for kernel in call.kernels:
            task += 1
            connection += 1
            dur = int(kernel.cost_us * 1000 * slower * _jitter(rank, index, kernel.name))
            if kernel.stream == COMPUTE:
                start = ready[COMPUTE] + 1_500 + int(2_000 * _jitter(rank, index))
            else:
                start = max(ready[kernel.stream], ready[COMPUTE]) + 3_000
            ready[kernel.stream] = start + dur
            run.placed.append(Placed(kernel, start, dur, task, connection, index))
            host += 9_000
        host = max(host + 4_000, begin + 6_000)
        run.host.append((begin, host - 1_000, tid))
    return run


def _shape_cell(tensors, dtypes: bool) -> str:
    if dtypes:
        return ";".join(d for _s, d in tensors)
    return ";".join(",".join(str(x) for x in s) for s, _d in tensors)


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def write_csv(path: Path, run: Run, cfg: Llama, rank: int) -> None:
    """kernel_details.csv as torch_npu 2.13 writes it (Level1, or the Level0 projection)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        table = csv.writer(fh)  # the excel dialect: CRLF, as torch_npu writes it
        table.writerow(KERNEL_HEADER if cfg.level else LEVEL0_HEADER)
        for p in sorted(run.placed, key=lambda p: p.start_ns):
            k = p.kernel
            comm = k.core == "COMMUNICATION"
            shapes = [
                f'"{_shape_cell(k.inputs, False)}"', _shape_cell(k.inputs, True), ";".join("ND" for _ in k.inputs),
                f'"{_shape_cell(k.outputs, False)}"', _shape_cell(k.outputs, True), ";".join("ND" for _ in k.outputs),
            ]  # fmt: skip
            if comm or not cfg.level:
                shapes = ["N/A"] * 6  # HCCL rows have no shapes (msprof GenerateHcclBody)
            block = "0" if comm else ("40" if k.core == "AI_VECTOR_CORE" else "20")
            mix = "40" if k.core == "MIX_AIC" else "0"
            times = [f"{_us(p.start_ns)}\t", _us(p.dur_ns), "0" if comm else "1.250000"]
            if cfg.level:
                table.writerow(
                    ["1", str(rank), "4294967295", "N/A" if comm else str(p.task_id), "N/A" if comm else str(k.stream),
                     k.name, k.op_type, "N/A" if comm else "dynamic", k.core, *times, block, mix, "N/A" if comm else "NO",
                     *shapes, "N/A" if k.core != "MIX_AIC" else "0"]
                )  # fmt: skip
            else:
                typed = (k.op_type, k.core) if comm else ("N/A", "N/A")
                table.writerow(["1", str(rank), k.name, *typed, *times, block, mix, *shapes])


def write_trace(path: Path, run: Run, rank: int) -> None:
    """trace_view.json: the torch ops on the Python track, the device track, the flows."""
    events: List[Dict[str, object]] = [
        {
            "ph": "M",
            "name": "process_name",
            "pid": PYTHON_PID,
            "tid": 0,
            "args": {"name": "Python"},
        },
        {
            "ph": "M",
            "name": "process_labels",
            "pid": PYTHON_PID,
            "tid": 0,
            "args": {"labels": "CPU"},
        },
    ]
    for index, call in enumerate(run.calls):
        begin, end, tid = run.host[index]
        args: Dict[str, object] = {
            "Sequence number": index if call.backward_link else -1,
            "Fwd thread id": 0,
        }
        events.append(
            {
                "ph": "X",
                "name": call.torch_op,
                "pid": PYTHON_PID,
                "tid": tid,
                "ts": _us(begin),
                "dur": (end - begin) / 1000,
                "cat": "cpu_op",
                "args": args,
            }
        )
    for p in run.placed:
        begin = run.host[p.call][0]
        flow = p.start_ns  # torch_npu's flow id: the device task's start in ns
        events.append(
            {
                "ph": "s",
                "bp": "e",
                "name": "torch_to_npu",
                "id": flow,
                "pid": PYTHON_PID,
                "tid": PYTHON_PID,
                "ts": _us(begin + 500),
                "cat": "async_npu",
            }
        )
        events.append({
            "name": p.kernel.name, "pid": DEVICE_PID, "tid": p.kernel.stream, "ts": _us(p.start_ns), "dur": p.dur_ns / 1000,
            "args": {"Model Id": 4294967295, "Task Type": p.kernel.core, "Physic Stream Id": p.kernel.stream, "Task Id": p.task_id, "Batch Id": 0, "Subtask Id": 4294967295, "connection_id": p.connection_id},
            "ph": "X",
        })  # fmt: skip
        events.append(
            {
                "ph": "f",
                "bp": "e",
                "name": "torch_to_npu",
                "id": flow,
                "pid": DEVICE_PID,
                "tid": p.kernel.stream,
                "ts": _us(p.start_ns),
                "cat": "async_npu",
            }
        )
    # msprof writes the device track's metadata after its events
    events.append(
        {
            "name": "process_name",
            "pid": DEVICE_PID,
            "tid": 0,
            "args": {"name": "Ascend Hardware"},
            "ph": "M",
        }
    )
    events.append(
        {
            "name": "process_labels",
            "pid": DEVICE_PID,
            "tid": 0,
            "args": {"labels": f"NPU {rank}"},
            "ph": "M",
        }
    )
    for stream in sorted({p.kernel.stream for p in run.placed}):
        events.append(
            {
                "name": "thread_name",
                "pid": DEVICE_PID,
                "tid": stream,
                "args": {"name": f"Stream {stream}"},
                "ph": "M",
            }
        )
    path.write_text(json.dumps(events))


def write_db(path: Path, run: Run, cfg: Llama, rank: int) -> None:
    """ascend_pytorch_profiler_<rank>.db: the export's tables for the same run."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    ids: Dict[str, int] = {}

    def sid(text: Optional[str]) -> Optional[int]:
        if text is None:
            return None
        if text not in ids:
            ids[text] = len(ids) + 1
        return ids[text]

    ddl = {
        "STRING_IDS": "id INTEGER PRIMARY KEY, value TEXT",
        "TASK": "startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, contextId INTEGER, streamId INTEGER, taskId INTEGER, modelId INTEGER",
        "COMPUTE_TASK_INFO": "name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockNum INTEGER, mixBlockNum INTEGER, taskType INTEGER, opType INTEGER, inputFormats INTEGER, inputDataTypes INTEGER, inputShapes INTEGER, outputFormats INTEGER, outputDataTypes INTEGER, outputShapes INTEGER, attrInfo INTEGER, opState INTEGER, hf32Eligible INTEGER",
        "COMMUNICATION_SCHEDULE_TASK_INFO": "name INTEGER, globalTaskId INTEGER PRIMARY KEY, taskType INTEGER, opType INTEGER",
        "COMMUNICATION_OP": "opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER, groupName INTEGER, opId INTEGER PRIMARY KEY, relay INTEGER, retry INTEGER, dataType INTEGER, algType INTEGER, count NUMERIC, opType INTEGER, deviceId INTEGER, rankSize INTEGER",
        "COMMUNICATION_TASK_INFO": "name INTEGER, globalTaskId INTEGER, taskType INTEGER, planeId INTEGER, groupName INTEGER, notifyId INTEGER, rdmaType INTEGER, srcRank INTEGER, dstRank INTEGER, transportType INTEGER, size INTEGER, dataType INTEGER, linkType INTEGER, opId INTEGER, isMaster INTEGER, bandwidth NUMERIC",
        "CANN_API": "startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER, connectionId INTEGER PRIMARY KEY, name INTEGER",
        "PYTORCH_API": "startNs TEXT, endNs TEXT, globalTid INTEGER, connectionId INTEGER, name INTEGER, sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER, inputShapes INTEGER, callchainId INTEGER, type INTEGER",
        "CONNECTION_IDS": "id INTEGER, connectionId INTEGER",
        "ENUM_API_TYPE": "id INTEGER PRIMARY KEY, name TEXT",
        "RANK_DEVICE_MAP": "rankId INTEGER, deviceId INTEGER",
    }
    for table, columns in ddl.items():
        db.execute(f"CREATE TABLE {table} ({columns})")
    global_tid = (PYTHON_PID << 32) | PYTHON_PID
    launched: Dict[int, List[int]] = {}
    op_id = 0
    for p in run.placed:
        k = p.kernel
        launched.setdefault(p.call, []).append(p.connection_id)
        db.execute(
            "INSERT INTO CANN_API VALUES (?,?,?,?,?,?)",
            (
                run.host[p.call][0] + 300,
                run.host[p.call][0] + 800,
                10000,
                global_tid,
                p.connection_id,
                sid("launch"),
            ),
        )
        if k.core == "COMMUNICATION":
            # the big operator in COMMUNICATION_OP, its small tasks in TASK and COMMUNICATION_TASK_INFO
            op_id += 1
            db.execute(
                "INSERT INTO COMMUNICATION_OP VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (sid(k.name), p.start_ns, p.start_ns + p.dur_ns, p.connection_id, sid("10.0.0.1%eth0_60000_0_1774235537"), op_id, 0, 0, 4, sid("RING"), k.inputs[0][0][0], sid(k.op_type), rank, cfg.ranks),
            )  # fmt: skip
            step = p.dur_ns // 3
            for i, small in enumerate(("Notify_Wait", "Memcpy", "Reduce_Inline")):
                gid = 1_000_000 + p.task_id * 10 + i
                db.execute(
                    "INSERT INTO TASK VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (p.start_ns + i * step, p.start_ns + (i + 1) * step, rank, p.connection_id, gid, 1, sid("SDMA_SQE"), 4294967295, k.stream, p.task_id * 10 + i, 4294967295),
                )  # fmt: skip
                db.execute(
                    "INSERT INTO COMMUNICATION_TASK_INFO VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (sid(small), gid, sid(small), 0, sid("group"), 0, 0, rank, (rank + 1) % cfg.ranks, 1, 1 << 20, 4, 1, op_id, 1, 20e9),
                )  # fmt: skip
            continue
        db.execute(
            "INSERT INTO TASK VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (p.start_ns, p.start_ns + p.dur_ns, rank, p.connection_id, p.task_id, 1, sid("KERNEL_AICORE"), 4294967295, k.stream, p.task_id, 4294967295),
        )  # fmt: skip
        if k.stream == AICPU:
            db.execute(
                "INSERT INTO COMMUNICATION_SCHEDULE_TASK_INFO VALUES (?,?,?,?)",
                (sid(k.name), p.task_id, sid(k.core), sid(k.op_type)),
            )
            continue
        shaped = cfg.level > 0
        db.execute(
            "INSERT INTO COMPUTE_TASK_INFO VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                sid(k.name), p.task_id, 40 if k.core == "AI_VECTOR_CORE" else 20, 40 if k.core == "MIX_AIC" else 0,
                sid(k.core if shaped else "N/A"), sid(k.op_type if shaped else "N/A"),
                sid(";".join("ND" for _ in k.inputs) if shaped else "N/A"), sid(_shape_cell(k.inputs, True) if shaped else "N/A"),
                sid(_shape_cell(k.inputs, False) if shaped else "N/A"), sid(";".join("ND" for _ in k.outputs) if shaped else "N/A"),
                sid(_shape_cell(k.outputs, True) if shaped else "N/A"), sid(_shape_cell(k.outputs, False) if shaped else "N/A"),
                None, sid("dynamic" if shaped else "N/A"), sid("NO" if shaped else "N/A"),
            ),
        )  # fmt: skip
    # The torch ops: each one's links go in CONNECTION_IDS; a device launch is the CANN node
    # launch's connection id (TASK.connectionId), a forward/backward pair or a task-queue hop a
    # framework id from FWK_LINKS up (torch_npu _fwk_file_parser.py).
    link = 0
    for index, call in enumerate(run.calls):
        begin, end, _tid = run.host[index]
        links = list(launched.get(index, []))
        if call.backward_link:
            links.append(FWK_LINKS + 100_000 + index)
        row_id = None
        if links:
            row_id = link
            link += 1
            db.executemany("INSERT INTO CONNECTION_IDS VALUES (?,?)", [(row_id, c) for c in links])
        db.execute(
            "INSERT INTO PYTORCH_API VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                str(begin),
                str(end),
                global_tid,
                row_id,
                sid(call.torch_op),
                index,
                0,
                None,
                None,
                None,
                TORCH_OP,
            ),
        )
        # the op's hop through torch_npu's task queue: Enqueue on this thread, inside the op
        enqueue = link
        link += 1
        db.execute("INSERT INTO CONNECTION_IDS VALUES (?,?)", (enqueue, FWK_LINKS + index))
        db.execute(
            "INSERT INTO PYTORCH_API VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (str(begin + 200), str(begin + 400), global_tid, enqueue, sid(f"Enqueue@{call.torch_op}"), None, None, None, None, None, TASK_QUEUE),
        )  # fmt: skip
    db.executemany(
        "INSERT INTO ENUM_API_TYPE VALUES (?,?)",
        [(TORCH_OP, "op"), (TASK_QUEUE, "queue"), (10000, "node")],
    )
    db.execute("INSERT INTO RANK_DEVICE_MAP VALUES (?,?)", (rank, rank))
    db.executemany("INSERT INTO STRING_IDS VALUES (?,?)", [(v, k) for k, v in ids.items()])
    db.commit()
    db.close()


def analyse(rows: Sequence[Tuple[str, str, str]], dur_us: float = 1.0, dtype: str = "") -> Any:
    """The Analysis of kernels (op type, input shapes, output shapes) one after another on
    one stream, for the tests that need a handful of kernels, not a whole run."""
    from cannbuild.profile.analysis import Analyzer
    from cannbuild.profile.analysis import Kernel as Task

    analyzer = Analyzer(windows=False)
    for i, (op_type, inputs, outputs) in enumerate(rows):
        analyzer.add(
            Task(
                stream="s",
                name=op_type,
                op_type=op_type,
                start_us=i * 10.0 * dur_us,
                dur_us=dur_us,
                input_shapes=inputs,
                input_dtypes=dtype,
                output_shapes=outputs,
            )
        )
    return analyzer.result()


def rank_folder(root: Path, rank: int) -> Path:
    """torch_npu's `<worker>_<pid>_<time>_ascend_pt`, one per rank, with profiler_info_<rank>.json."""
    return root / f"node0_{41000 + rank}_20260323101435{123 + rank:03d}_ascend_pt"


def generate(
    root: Path, cfg: Llama = Llama(), formats: Sequence[str] = ("csv", "db")
) -> Dict[str, Path]:
    """{"csv": root/csv, "db": root/db}: one folder per format, each holding a folder per rank."""
    made: Dict[str, Path] = {}
    for rank in range(cfg.ranks):
        run = place(cfg, rank)
        for fmt in formats:
            top = root / fmt
            made[fmt] = top
            folder = rank_folder(top, rank)
            out = folder / "ASCEND_PROFILER_OUTPUT"
            if fmt == "csv":
                write_csv(out / "kernel_details.csv", run, cfg, rank)
                write_trace(out / "trace_view.json", run, rank)
            else:
                write_db(out / f"ascend_pytorch_profiler_{rank}.db", run, cfg, rank)
            (out / "analyse.done").write_text("")
            info = {
                "config": {
                    "common_config": {"record_shapes": bool(cfg.level)},
                    "experimental_config": {"_profiler_level": f"Level{cfg.level}"},
                },
                "rank_id": rank,
                "torch_npu_version": "2.13.0",
            }
            (folder / f"profiler_info_{rank}.json").write_text(json.dumps(info, indent=4))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--attention", choices=("eager", "flash", "sdpa_math"), default="eager")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--slice", choices=("StridedSliceD", "ViewCopy"), default="StridedSliceD")
    parser.add_argument("--level", type=int, choices=(0, 1), default=1)
    args = parser.parse_args()
    cfg = replace(
        Llama(),
        attention=args.attention,
        ranks=args.ranks,
        slice_kernel=args.slice,
        level=args.level,
    )
    for fmt, path in generate(args.out, cfg).items():
        print(f"{fmt}: {path}")


if __name__ == "__main__":
    main()
