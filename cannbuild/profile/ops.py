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

NA = "N/A"

MATMUL = frozenset(
    {"MatMul", "MatMulV2", "MatMulV3", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"}
)
SOFTMAX = frozenset({"Softmax", "SoftmaxV2", "ScaledMaskedSoftmax"})
# what real graphs put between the MatMuls and the Softmax (scale, mask, casts, layout
# changes, dropout); Add/Adds: the additive mask of `scores + mask * -10000`
BETWEEN = frozenset(
    {"Mul", "Muls", "Add", "Adds", "Cast", "TransData", "DropOutDoMask", "MaskedFill"}
)
FUSED_EXTRA = frozenset({"FusedInferAttentionScore"})

# GE-style node names: the op type followed by the node's number
_GE_NAME = re.compile(r"^([A-Za-z][A-Za-z0-9]*?[A-Za-z])(\d+)$")
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
    while len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        text = text[1:-1]
    return text
