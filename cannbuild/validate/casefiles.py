"""The files a FlashAttention case is exchanged through with fa_check (the C API driver)
and the torch_npu worker: the raw inputs, the manifest line that describes them, and the
outputs read back and judged (cases.judge)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Dict, Optional, Tuple

from ..bounded import CASE_DATA, read_bytes
from ..errors import UsageError
from ..lazy import lazy_module
from ..states import Verdict
from .cases import (
    OPEN_TOKENS,
    Case,
    CaseResult,
    Reference,
    inputs_once,
    judge,
    make_inputs,
    reference_torch,
    torch_dtype,
)

if TYPE_CHECKING:
    import ctypes

    from torch import Tensor
else:  # only raw_bytes() pays for it
    ctypes = lazy_module("ctypes")


def raw_bytes(t: Tensor) -> bytes:
    t = t.contiguous()
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def read_tensor(path: Path, dtype: object) -> Tensor:
    """A raw case file (fa_check's, a worker's) as a flat tensor of `dtype`."""
    torch = reference_torch()
    return torch.frombuffer(bytearray(read_bytes(path, CASE_DATA)), dtype=dtype)


def write_inputs(
    case: Case, directory: Path, memo: Optional[Dict[str, object]] = None
) -> Dict[str, Tensor]:
    """The inputs as raw files for fa_check (made once per run with `memo`); returns the
    tensors."""
    tensors = make_inputs(case) if memo is None else inputs_once(memo, case)
    directory.mkdir(parents=True, exist_ok=True)
    for key, tensor in tensors.items():
        (directory / f"{case.name}.{key}").write_bytes(raw_bytes(tensor))
    return tensors


def manifest_line(case: Case, directory: Path) -> str:
    base = directory / case.name
    words = [
        f"name={case.name}",
        f"dtype={case.dtype}",
        f"layout={case.layout}",
        f"B={case.B}",
        f"N1={case.N1}",
        f"N2={case.N2}",
        f"S1={case.shape('q')[0] if case.varlen else case.S}",
        f"S2={case.shape('k')[0] if case.varlen else case.S}",
        f"D={case.D}",
        f"scale={case.scale!r}",
        # sparseMode 0, no band before the diagonal; after it the band agrees with the mask
        "sparse=0",
        f"pre={OPEN_TOKENS}",
        f"next={case.next_tokens}",
        *(f"{key}={base}.{key}" for key in ("q", "k", "v", "out", "smax", "ssum")),
    ]
    if case.causal:
        words.append(f"mask={base}.mask")
    if case.varlen:  # actual_seq_qlen / actual_seq_kvlen: cumulative ends
        words.append("seqq=" + ",".join(map(str, case.cu_seq_q)))
        words.append("seqkv=" + ",".join(map(str, case.cu_seq_kv)))
    return " ".join(words)


def read_outputs(case: Case, directory: Path) -> Tuple[Tensor, Tensor, Tensor]:
    """attentionOut (case layout and dtype), softmaxMax and softmaxSum as written by fa_check."""
    torch = reference_torch()
    base = directory / case.name
    shape = case.shape("out")
    out = read_tensor(base.with_suffix(".out"), torch_dtype(torch, case.dtype))
    # softmaxMax / softmaxSum are float32 [B, N1, S, 8]: the same value in 8 lanes, as the
    # example's [1, 1, 256, 8] shows; TND's [T, N1, 8] are judged as (1, N1, T, 8).
    smax, ssum = (
        read_tensor(base.with_suffix(s), torch.float32).reshape(case.stat_shape)
        for s in (".smax", ".ssum")
    )
    if case.varlen:
        smax, ssum = smax.permute(1, 0, 2).unsqueeze(0), ssum.permute(1, 0, 2).unsqueeze(0)
    return out.reshape(shape), smax, ssum


def judge_files(
    case: Case,
    tensors: Dict[str, Tensor],
    directory: Path,
    kernel_ms: Optional[float],
    expected: Optional[Reference] = None,
) -> CaseResult:
    try:
        out, smax, ssum = read_outputs(case, directory)
    except (UsageError, RuntimeError, ValueError) as exc:
        return CaseResult(
            case=case,
            status=Verdict.FAIL,
            message=f"the outputs cannot be read: {exc}",
            kernel_ms=kernel_ms,
        )
    return judge(case, tensors, out, smax, ssum, kernel_ms, expected)
