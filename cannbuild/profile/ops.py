"""Operator types as the profilers name them, and what attention looks like in them.

Sources (shared reference profiler-formats.md §0, §3): at torch_npu's default Level0
the `Type` cell is `N/A` and the type is the last `_` segment of the kernel name
(`aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore`), the fallback
the CANN team's own kernel_details reader uses; GE graphs name kernels after their
nodes, `<Type><node number>` (`BatchMatMul96`) or `trans_<Type>_<n>`, and the number
is dropped.  Unfused attention is Huawei's FlashAttentionFusionPass pattern:
(Batch)MatMul(V2|V3) -> Mul -> Softmax(V2) -> (Batch)MatMul, where real graphs also
put the mask, dropout and view or layout ops (AsStrided, Transpose, ViewCopy,
TransData, Cast) between them; the families are below, the matcher in chains.py.
"""

from __future__ import annotations

import re
from itertools import chain
from typing import Callable, Dict, Hashable, Iterable, List, Optional, Protocol, TypeVar

# What both profilers write in any cell that does not apply, at every level.
NA = "N/A"
R = TypeVar("R", bound="Mergeable")

# The op families of an unfused attention on the device, as kernel types.  Sources:
# msprof-analyze 26.2.0 (PyPI) msprof_analyze/advisor/rules/op_fusion_pass.yaml
# (FlashAttentionFusionPass: [BatchMatMulV2, BatchMatMul, MatMul, MatMulV2] -> [Mul] ->
# [Softmax, SoftmaxV2] -> the MatMuls again; FlashAttentionFusionPass_V2 puts a TransData
# between Mul and Softmax) and timeline_fusion_ops.yaml (npu_fusion_attention's aten patterns
# `matmul-(add){0,1}-(mul){0,1}-(masked_fill_|add){0,1}-softmax-(dropout){0,1}-matmul`); the
# type names are the ones the ops repos register (hicann/ops-nn, ops-math, ops-transformer
# OP_ADD: BatchMatMulV3, MatMulV3, ScaledMaskedSoftmaxV2, DropOutDoMaskV3, ...).  Which kernels
# sit between the two MatMuls is decided by structure in chains.py; the families below only
# say what an op can be there when the profile records no shapes (Level0, a trace).
MATMUL = frozenset({
    "MatMul", "MatMulV2", "MatMulV3", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3",
    "TransposeBatchMatMul"
})  # fmt: skip
# [Softmax, SoftmaxV2] in the pass; GE-era graphs fuse scale and mask into ScaledMaskedSoftmax
# (`ScaledMaskedSoftmax98` in msprof-analyze's unfused sample).
SOFTMAX = frozenset({
    "Softmax", "SoftmaxV2", "ScaledMaskedSoftmax", "ScaledMaskedSoftmaxV2",
    "MaskedSoftmaxWithRelPosBias"
})  # fmt: skip
# Between the first MatMul and the Softmax: the scale (`Mul`/`Muls`, or a division by sqrt(D)) and
# the mask (the additive `scores + mask`, or masked_fill, which runs as MaskedFill or Select).
SCALE_MASK = frozenset({
    "Mul", "Muls", "RealDiv", "Div", "DivV2", "Add", "Adds", "Sub", "MaskedFill", "Select",
    "SelectV2"
})  # fmt: skip
# Dropout on the probabilities: torch_npu runs F.dropout as a mask kernel (DropOutGenMaskV3, or
# StatelessDropOutGenMask) and DropOutDoMaskV3 on the compute stream; GE graphs as DropOutDoMask.
_DROPOUT = re.compile(r"^(Stateless)?Drop[Oo]ut")
# Views, copies and dtype or layout changes of an operand, anywhere in the chain: the causal mask's
# slice `causal_mask[:, :, :, :kv_len]` made contiguous (StridedSliceD, or ViewCopy in newer
# torch_npu), V as a strided view (`AsStrided93` in msprof-analyze's real unfused sample), the
# Casts around an fp32 softmax (transformers' `softmax(..., dtype=torch.float32).to(q.dtype)`),
# GQA's repeat_kv (an expand made contiguous) and GE's TransData.
_VIEW = re.compile(
    r"^(Strided)?Slice|^(View)?Copy$|^TensorMove$|^Identity$|^AsStrided|^Transpose|^Confusion"
    r"Transpose|^TransData|^Cast$|^Reshape$|^Contiguous$|^BroadcastTo|^Expand|^Tile$|Squeeze$"
)
# Kernels of a backward pass (SoftmaxGrad, DropOutDoMaskGrad, MatMul's grads run as plain MatMuls):
# an attention chain is forward work.
_BACKWARD = re.compile(r"Grad(V\d)?$|Grad[A-Z]|Backward")
BETWEEN = frozenset({"scale", "dropout", "view"})
# Task types of collectives: `HCCL` in 2023 kernel_details (msprof-analyze's sample), `COMMUNICATION`
# in op_summary since (msprof GenerateHcclBody).  At Level0 the cell is N/A and the name tells:
# `hcom_allReduce__445_2`.
COMMUNICATION_CORES = frozenset({"HCCL", "COMMUNICATION"})
# The inference op whose type lacks "flashattention" but which fuses attention all the same.
FUSED_EXTRA = frozenset({"FusedInferAttentionScore"})

# Op types that end in a digit without a version suffix, or in a `V` that is no version, every
# one the ops repos register (hicann/ops-math c41933244c, ops-nn e5c3fa9327, ops-transformer
# 05c401f9d: OP_ADD): a GE node name is never split inside them (`Relu6` stays Relu6, `Relu612` is
# Relu6 node 12, `SplitV3` is SplitV node 3).
OWN_DIGIT_TYPES = frozenset({
    "AccumulateNv2", "Atan2", "Expm1", "ForeachExpm1", "ForeachLog10", "ForeachLog2",
    "MatmulFp32", "Pow2", "Relu6", "LambNextMV", "SplitV", "SwinTransformerLnQKV"
})  # fmt: skip
# GE node names: the op type followed by the node's number (`BatchMatMul96`, `ReduceSum7`).  The
# same repos register 215 types that end in a digit: all but the ones above end in a one-digit
# version suffix `V<n>` (none has `V10` or more), so the first digit after such a `V` belongs to
# the type and the rest are the node's (`GatherV282` is GatherV2 node 82, as its Type cell in
# msprof-analyze's sample says; `MatMulV2` alone is MatMulV2).  Any other run of final digits after
# a letter is the node's: no other registered type ends in a digit.
_GE_VERSIONED = re.compile(r"^([A-Za-z][A-Za-z0-9]*[A-Za-z]V[1-9])\d*$")
_GE_NAME = re.compile(r"^([A-Za-z][A-Za-z0-9]*[A-Za-z])\d+$")
# Transform nodes GE inserts name themselves `trans_<Type>_<n>` (`trans_Cast_5` with Type Cast in
# msprof-analyze's sample; `trans_TransData_9`).
_GE_TRANS = re.compile(r"^trans_([A-Z][A-Za-z0-9]*)_\d+$")
# GE's atomic-clean kernels before an op that accumulates: `atomic_memset-1_69_2208226_1_0`, one
# name per node and call, all of Type MemSet in msprof-analyze's sample.
_GE_MEMSET = re.compile(r"^atomic_memset\b")
# Collectives are named `<type>_<n>_<n>`: `hcom_allReduce__445_2` is a call of Type
# `hcom_allReduce_` (msprof-analyze's sample writes both).
_HCOM = re.compile(r"^(hcom_[A-Za-z]+_)(_\d+)+$")


# A dtype as the profilers, the op configs, the docs and the command line spell it (upper
# case, without `DT_`) -> cannbuild's word; msprof's number_mapping.cpp names, torch's.
DTYPE_WORDS = {
    "FLOAT16": "fp16",
    "FP16": "fp16",
    "HALF": "fp16",
    "BF16": "bf16",
    "BFLOAT16": "bf16",
    "FLOAT": "fp32",
    "FLOAT32": "fp32",
    "FP32": "fp32",
    "DOUBLE": "fp64",
    "INT8": "int8",
    "HIFLOAT8": "hifloat8",
    "FLOAT8_E4M3FN": "fp8_e4m3",
    "FLOAT8_E5M2": "fp8_e5m2",
    "FP8": "fp8_e4m3",
}


def is_fused_attention(op_type: str) -> bool:
    """msprof-analyze's own test (`"flashattention" in type.lower()`), which also covers
    PromptFlashAttention / IncreFlashAttention, plus FusedInferAttentionScore."""
    return "flashattention" in op_type.lower() or op_type in FUSED_EXTRA


def is_communication(core: str, op_type: str) -> bool:
    """A collective (all-reduce, broadcast, ...): its time is mostly waiting for the other
    ranks, so it says nothing about how slow this rank's own work is."""
    return core in COMMUNICATION_CORES or op_type.startswith("hcom_")


def category(op_type: str) -> str:
    """fused | matmul | softmax | between | other (for charts)."""
    found = role(op_type)
    return "between" if found in BETWEEN else "other" if found == "backward" else found


def role(op_type: str) -> str:
    """What an op can be in an unfused attention chain: fused | backward | matmul | softmax
    | scale | dropout | view | other."""
    if is_fused_attention(op_type):
        return "fused"
    if _BACKWARD.search(op_type):
        return "backward"
    if op_type in MATMUL:
        return "matmul"
    if op_type in SOFTMAX:
        return "softmax"
    if op_type in SCALE_MASK:
        return "scale"
    if _DROPOUT.match(op_type):
        return "dropout"
    if _VIEW.search(op_type):
        return "view"
    return "other"


def type_from_name(name: str) -> str:
    """The op type a kernel name carries: `aclnn<Api>_<Impl>_<Type>` -> Type; a GE node
    name `<Type><n>` or `trans_<Type>_<n>` -> Type, `atomic_memset-...` -> MemSet; a
    collective `hcom_allReduce__445_2` -> hcom_allReduce_; otherwise the name itself."""
    if name.upper() == name:  # runtime task names (MEMCPY_ASYNC, EVENT_RECORD)
        return name
    if _GE_MEMSET.match(name):
        return "MemSet"
    hcom = _HCOM.match(name)
    if hcom:
        return hcom.group(1)
    if "_" in name:
        trans = _GE_TRANS.match(name)
        if trans:
            return trans.group(1)
        # aclnn names are `aclnn<Api>_<KernelImpl>_<OpType>`:
        # `aclnnInplaceZero_ZerosLikeAiCore_ZerosLike` -> ZerosLike.
        return _aclnn_type(name)
    return _ge_type(name)


def _aclnn_type(name: str) -> str:
    """The last `_` segment that can be a type: op types start with a capital, so a variant
    tag after it is no type (`..._FlashAttentionScore_varlen`, which msprof-analyze's
    ai_core_performance_checker matches by `"varlen" in name`), nor are digits."""
    for segment in reversed(name.split("_")[1:]):
        if segment[:1].isupper():
            return segment
    return name


def _ge_type(name: str) -> str:
    if name in OWN_DIGIT_TYPES or not name[-1:].isdigit():
        return name
    for known in sorted(OWN_DIGIT_TYPES, key=len, reverse=True):  # the longest type first
        if name.startswith(known) and name[len(known) :].isdigit():
            return known
    match = _GE_VERSIONED.match(name) or _GE_NAME.match(name)
    return match.group(1) if match else name


class TypeResolver:
    """op type per (name, Type cell), cached: names repeat thousands of times."""

    def __init__(self) -> None:
        self._cache: Dict[str, str] = {}

    def __call__(self, name: str, cell: Optional[str] = None) -> str:
        if cell and cell != NA:
            return cell
        found = self._cache.get(name)
        if found is None:
            found = self._cache[name] = type_from_name(name)
        return found


def query_dtype(input_dtypes: str) -> Optional[str]:
    """The first input's dtype, the query's (`FLOAT16;FLOAT16` -> fp16), as dtype_word says it."""
    return dtype_word(input_dtypes.split(";")[0]) if input_dtypes else None


def dtype_word(cell: str) -> Optional[str]:
    """fp16 / bf16 / fp32 / ... from a profiler dtype (FLOAT16, DT_BF16, FLOAT), None for N/A."""
    text = cell.strip().upper()
    if not text or text == NA:
        return None
    # Real files mix `DT_BF16` with `FLOAT16` and `FLOAT` (msprof's number_mapping.cpp names).
    if text.startswith("DT_"):
        text = text[3:]
    return DTYPE_WORDS.get(text, text.lower())


def strip_quotes(cell: str) -> str:
    """Shape cells carry literal double quotes ("4096,2,512;..."): Huawei's tools strip
    them, so do we."""
    text = cell.strip()
    # The Python writer wraps the joined shapes in quotes, which CSV quoting then doubles: raw
    # `"""4096,2,512;..."""`, read back as `"4096,2,512;..."`.
    while len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        text = text[1:-1]
    return text


class Mergeable(Protocol):
    """A record of calls that adds up with another of the same key (OpStat, HostOp, ...)."""

    def merged(self: R, other: R) -> R: ...


def merge_by(key: Callable[[R], Hashable], *groups: Iterable[R]) -> List[R]:
    """The records of `groups`, those of one key merged into one, in the order first seen."""
    out: Dict[Hashable, R] = {}
    for item in chain.from_iterable(groups):
        k = key(item)
        out[k] = out[k].merged(item) if k in out else item
    return list(out.values())
