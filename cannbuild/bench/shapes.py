"""Benchmark shapes: the default sweep, `--shapes` parsing, FLOPs, and the validation case
each shape is judged as."""

from __future__ import annotations

import re
from typing import List, Sequence, Tuple

from msgspec.structs import asdict

from ..errors import UsageError
from ..validate.cases import Case

# The dtypes FlashAttentionScore takes on A2/A3; FP8 and HIFLOAT8 are 950-only.
DTYPES = ("fp16", "bf16", "fp32")
LAYOUTS = ("BNSD", "BSH")
DEFAULT_S = tuple(2**i for i in range(7, 14))  # 128 ... 8192
# `B1N8/2S1024D64`: B (optional) 1, N1 8, N2 2 (GQA, optional), S 1024, D 64.
_SHAPE = re.compile(r"^(?:B(\d+))?N(\d+)(?:/(\d+))?S(\d+)D(\d+)$", re.IGNORECASE)
SHAPE_HELP = "B1N8/2S1024D64 (B optional, /N2 for GQA), comma-separated"


class BenchShape(Case, frozen=True, kw_only=True):
    """A validation case (what the bench judges each timed result by) with what the
    bench adds: its curve and its FLOPs.  Made by `bench_shape`, which names it."""

    @property
    def series(self) -> str:
        """The curve this shape belongs to: everything but S."""
        gqa = f"/{self.N2}" if self.N2 != self.N1 else ""
        return f"{self.dtype} {self.layout} B{self.B} N{self.N1}{gqa} D{self.D}" + (
            " causal" if self.causal else ""
        )

    @property
    def flops(self) -> float:
        """Forward FLOPs, 4*B*N*S^2*D (two matmuls), halved for a causal mask."""
        # flash-attention's own benchmark counts forward FLOPs the same way: two matmuls of 2*S*S*D
        # each per head, half of them masked out when causal.
        full = 4.0 * self.B * self.N1 * self.S * self.S * self.D
        return full / 2 if self.causal else full

    def to_json(self) -> dict:
        return {**asdict(self), "flops": self.flops}


def bench_shape(
    dtype: str, layout: str, B: int, N1: int, N2: int, S: int, D: int, causal: bool
) -> BenchShape:
    gqa = f"_kv{N2}" if N2 != N1 else ""
    mask = "_causal" if causal else ""
    name = f"{dtype}_{layout.lower()}_b{B}_n{N1}{gqa}_s{S}_d{D}{mask}"
    return BenchShape(
        name=name, dtype=dtype, layout=layout, B=B, N1=N1, N2=N2, S=S, D=D, causal=causal
    )


def _words(text: str, allowed: Sequence[str], flag: str) -> Tuple[str, ...]:
    words = tuple(w.strip() for w in text.split(",") if w.strip())
    for word in words:
        if word not in allowed:
            raise UsageError(
                f"{flag} {word!r} is not supported.", f"Use one or more of {', '.join(allowed)}."
            )
    if not words:
        raise UsageError(f"{flag} is empty.", f"Use one or more of {', '.join(allowed)}.")
    return words


def parse_dtypes(text: str) -> Tuple[str, ...]:
    return _words(text, DTYPES, "--dtype")


def parse_layouts(text: str) -> Tuple[str, ...]:
    return _words(text.upper(), LAYOUTS, "--layout")


def parse_shapes(text: str) -> List[Tuple[int, int, int, int, int]]:
    """(B, N1, N2, S, D) from `--shapes B1N8/2S1024D64,N8S512D128`."""
    out = []
    for word in (w.strip() for w in text.split(",") if w.strip()):
        m = _SHAPE.match(word)
        if not m:
            raise UsageError(f"--shapes {word!r} is not a shape.", f"Write shapes as {SHAPE_HELP}.")
        b, n1, n2, s, d = (None if g is None else int(g) for g in m.groups())
        assert n1 is not None and s is not None and d is not None
        b = 1 if b is None else b  # B and /N2 left out mean 1 and N1; written as 0 they are wrong
        n2 = n1 if n2 is None else n2
        if min(b, n1, n2, s, d) < 1 or n1 % n2:
            raise UsageError(
                f"--shapes {word!r}: sizes must be positive and N1 a multiple of N2 (GQA).",
                f"Write shapes as {SHAPE_HELP}.",
            )
        out.append((b, n1, n2, s, d))
    if not out:
        raise UsageError("--shapes is empty.", f"Write shapes as {SHAPE_HELP}.")
    return out


def default_dims() -> List[Tuple[int, int, int, int, int]]:
    """B=1, N=8 (and GQA with N2=2), D=64 and 128, S = 128 ... 8192."""
    return [(1, 8, n2, s, d) for s in DEFAULT_S for n2 in (8, 2) for d in (64, 128)]


def sweep(
    dims: Sequence[Tuple[int, int, int, int, int]],
    dtypes: Sequence[str],
    layouts: Sequence[str],
    causal: bool,
) -> List[BenchShape]:
    # Sorted by S first: a time budget that runs out drops the largest sequences, not a dtype.
    """Every combination, cheapest first, so a time budget cuts the largest S."""
    shapes = [
        bench_shape(dt, lay, b, n1, n2, s, d, causal)
        for (b, n1, n2, s, d) in dims
        for dt in dtypes
        for lay in layouts
    ]
    return sorted(shapes, key=lambda x: (x.S, x.flops, x.name))
