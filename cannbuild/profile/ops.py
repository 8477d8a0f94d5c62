"""Operator types as the profilers name them, and what attention looks like in them.

Sources (shared reference profiler-formats.md §0, §3): at torch_npu's default Level0
the `Type` cell is `N/A` and the type is the last `_` segment of the kernel name
(`aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore`), the fallback
the CANN team's own kernel_details reader uses; older GE-style names are
`<Type><node number>` (`BatchMatMul96`).  Unfused attention is Huawei's
FlashAttentionFusionPass pattern: (Batch)MatMul(V2|V3) -> Mul -> Softmax(V2) ->
(Batch)MatMul, where real graphs also put Cast, TransData and DropOutDoMask between
them and the scale and mask may be fused into ScaledMaskedSoftmax.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

# What both profilers write in any cell that does not apply, at every level.
NA = "N/A"

# The FlashAttentionFusionPass lists [BatchMatMulV2, BatchMatMul, MatMul, MatMulV2]; newer CANN
# also runs `aclnnMatmul_MatMulV3Common_MatMulV3` (Type MatMulV3).
MATMUL = frozenset(
    {"MatMul", "MatMulV2", "MatMulV3", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"}
)
# [Softmax, SoftmaxV2] in the pass; GE-era graphs fuse scale and mask into ScaledMaskedSoftmax
# (`ScaledMaskedSoftmax98` in msprof-analyze's unfused sample).
SOFTMAX = frozenset({"Softmax", "SoftmaxV2", "ScaledMaskedSoftmax"})
# what real graphs put between the MatMuls and the Softmax (scale, mask, casts, layout
# changes, dropout); Add/Adds: the additive mask of `scores + mask * -10000`
BETWEEN = frozenset(
    {"Mul", "Muls", "Add", "Adds", "Cast", "TransData", "DropOutDoMask", "MaskedFill"}
)
# The inference op whose type lacks "flashattention" but which fuses attention all the same.
FUSED_EXTRA = frozenset({"FusedInferAttentionScore"})

# GE-style node names: the op type followed by the node's number
# `BatchMatMul96`, `ScaledMaskedSoftmax98`, `DropOutDoMask99`. The type must end in a letter, so
# `MatMulV27` (which could be MatMulV2, node 7) is not split and stays whole.
_GE_NAME = re.compile(r"^([A-Za-z][A-Za-z0-9]*?[A-Za-z])(\d+)$")
# Only known types are split off: an unknown name ending in digits may be no GE name.
_KNOWN = MATMUL | SOFTMAX | BETWEEN | {"Transpose", "Reshape", "ZerosLike", "Add"}


def is_fused_attention(op_type: str) -> bool:
    """msprof-analyze's own test (`"flashattention" in type.lower()`), which also covers
    PromptFlashAttention / IncreFlashAttention, plus FusedInferAttentionScore."""
    return "flashattention" in op_type.lower() or op_type in FUSED_EXTRA


def category(op_type: str) -> str:
    """fused | matmul | softmax | between | other (for charts and the chain finder)."""
    if is_fused_attention(op_type):
        return "fused"
    if op_type in MATMUL:
        return "matmul"
    if op_type in SOFTMAX:
        return "softmax"
    if op_type in BETWEEN:
        return "between"
    return "other"


def type_from_name(name: str) -> str:
    """The op type a kernel name carries: `aclnn<Api>_<Impl>_<Type>` -> Type; a GE node
    name `<Type><n>` -> Type when Type is a known op; otherwise the name itself."""
    if name.upper() == name:  # runtime task names (MEMCPY_ASYNC, EVENT_RECORD)
        return name
    # aclnn names are `aclnn<Api>_<KernelImpl>_<OpType>`:
    # `aclnnInplaceZero_ZerosLikeAiCore_ZerosLike` -> ZerosLike.  A last segment of digits is no
    # type: the old HCCL name `hcom_allReduce__445_2` stays whole.
    if "_" in name:
        last = name.rsplit("_", 1)[1]
        if last and not last.isdigit():
            return last
        return name
    match = _GE_NAME.match(name)
    if match and match.group(1) in _KNOWN:
        return match.group(1)
    return name


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


def dtype_word(cell: str) -> Optional[str]:
    """fp16 / bf16 / fp32 / ... from a profiler dtype (FLOAT16, DT_BF16, FLOAT), None for N/A."""
    text = cell.strip().upper()
    if not text or text == NA:
        return None
    # Real files mix `DT_BF16` with `FLOAT16` and `FLOAT` (msprof's number_mapping.cpp names).
    if text.startswith("DT_"):
        text = text[3:]
    return {
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
    }.get(text, text.lower())


def strip_quotes(cell: str) -> str:
    """Shape cells carry literal double quotes ("4096,2,512;..."): Huawei's tools strip
    them, so do we."""
    text = cell.strip()
    # The Python writer wraps the joined shapes in quotes, which CSV quoting then doubles: raw
    # `"""4096,2,512;..."""`, read back as `"4096,2,512;..."`.
    while len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        text = text[1:-1]
    return text
