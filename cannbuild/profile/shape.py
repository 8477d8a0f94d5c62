"""The attention problem a user names on the command line (dtype, layout, B, N, S, D)."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from msgspec import Struct
from msgspec.structs import asdict

from ..errors import UsageError
from .ops import DTYPE_WORDS, dtype_word

# The dtypes --dtype names (float16, bf16, ...: ops.DTYPE_WORDS); FlashAttentionScore takes
# FLOAT16, BFLOAT16 and FLOAT32, the FP8 and HIFLOAT8 forms are 950-only (reference
# cann-build-systems.md §3.5).
DTYPES = frozenset(DTYPE_WORDS.values()) - {"fp64"}
# FlashAttentionScore's layouts; TND is the VarLen APIs' (same section).
LAYOUTS = ("BNSD", "BSND", "BSH", "SBH", "TND")
NUMBERS = (
    ("batch", "B"),
    ("heads", "N1"),
    ("kv_heads", "N2"),
    ("seq_len", "S"),
    ("head_dim", "D"),
)


class AttentionShape(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What is known of the user's attention; None where a flag was not given (and left
    out of its JSON)."""

    dtype: Optional[str] = None
    layout: Optional[str] = None
    B: Optional[int] = None
    N1: Optional[int] = None
    N2: Optional[int] = None
    S: Optional[int] = None
    D: Optional[int] = None

    def with_defaults(self, **defaults: Any) -> AttentionShape:
        values = {k: (v if v is not None else defaults.get(k)) for k, v in asdict(self).items()}
        if values["N2"] is None:
            # No --kv-heads: plain multi-head attention, N2 = N1 (GQA needs N1 a multiple of N2).
            values["N2"] = values["N1"]
        return AttentionShape(**values)


def shape_from_flags(flags: Mapping[str, Any]) -> AttentionShape:
    """Parse --dtype, --layout, --batch, --heads, --kv-heads, --seq-len, --head-dim."""
    values: Dict[str, Any] = {}
    dtype = flags.get("dtype")
    if dtype:
        word = dtype_word(str(dtype))
        if word not in DTYPES:
            raise UsageError(
                f"--dtype {dtype!r} is not a dtype cannbuild knows.",
                "Use fp16, bf16 or fp32 (float16, bfloat16, float32), or int8/fp8/hifloat8.",
            )
        values["dtype"] = word
    layout = flags.get("layout")
    if layout:
        upper = str(layout).strip().upper()
        if upper not in LAYOUTS:
            raise UsageError(
                f"--layout {layout!r} is not an attention layout.",
                "Use BNSD, BSND, BSH or SBH (TND is for the VarLen APIs).",
            )
        values["layout"] = upper
    for flag, key in NUMBERS:
        text = flags.get(flag)
        if text is None or text == "":
            continue
        try:
            number = int(str(text).strip())
        except ValueError:
            number = 0
        if number <= 0:
            option = "--" + flag.replace("_", "-")
            raise UsageError(
                f"{option} {text!r} is not a positive whole number.",
                f"Pass {option} as a count, e.g. {option} 128.",
            )
        values[key] = number
    return AttentionShape(**values)
