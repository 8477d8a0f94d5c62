"""What the sibling repositories' own examples must print (issue 27), and the judge of a
printed `result[i] is: x` run against it.

The three examples (byte-identical at v9.0.0, v9.0.1, v9.1.0 and branch 9.1.0) feed fixed
FLOAT inputs and print every output element, checking nothing:
- ops-math math/segsum/examples/test_aclnn_segsum.cpp: self {1,1,1,4} = 0, 1, 2, 3, out
  {1,1,1,4,4}: exp(x[j+1] + ... + x[i]) below and on the diagonal, 0 above;
- ops-nn activation/swi_glu/examples/test_aclnn_swi_glu.cpp: x {2,32} = 0 .. 63, dim -1,
  out {2,16} = silu(A) * B;
- ops-cv image/upsample_bilinear2d/examples/test_aclnn_upsample_bilinear2d.cpp: self
  {1,1,4,2} = 0 .. 7 NCHW, outputSize {8,4}, alignCorners true, out {1,1,8,4}.
Values are matched by their printed index: ops-nn's build.sh shows only the last 10 lines
of an example (`| tail -n 10`, build_single_example), so a run may print a tail.
Pure arithmetic, no torch: the expected values are computed here in double precision.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .precision import Precision, judge, measure_values

# %f prints 6 decimals; the kernels compute in float: relative 1e-5 (at least 1e-5 absolute)
TOLERANCE = 1e-5
# the examples' output dtype (ACL_FLOAT in all three)
OUTPUT_DTYPE = "fp32"


def _segsum() -> Tuple[float, ...]:
    x = [0.0, 1.0, 2.0, 3.0]
    n = len(x)
    return tuple(
        math.exp(sum(x[j + 1 : i + 1])) if j <= i else 0.0 for i in range(n) for j in range(n)
    )


def _swi_glu() -> Tuple[float, ...]:
    out: List[float] = []
    for row in range(2):
        x = [float(row * 32 + i) for i in range(32)]
        a, b = x[:16], x[16:]
        out += [ai / (1.0 + math.exp(-ai)) * bi for ai, bi in zip(a, b)]
    return tuple(out)


def _upsample() -> Tuple[float, ...]:
    h, w, oh, ow = 4, 2, 8, 4
    x = [[float(r * w + c) for c in range(w)] for r in range(h)]

    def taps(size_in: int, size_out: int, o: int) -> Tuple[int, int, float]:
        src = o * (size_in - 1) / (size_out - 1)  # alignCorners
        i0 = min(int(src), size_in - 1)
        return i0, min(i0 + 1, size_in - 1), src - i0

    out = []
    for orow in range(oh):
        r0, r1, lr = taps(h, oh, orow)
        for ocol in range(ow):
            c0, c1, lc = taps(w, ow, ocol)
            top = x[r0][c0] * (1 - lc) + x[r0][c1] * lc
            bottom = x[r1][c0] * (1 - lc) + x[r1][c1] * lc
            out.append(top * (1 - lr) + bottom * lr)
    return tuple(out)


EXPECTED: Mapping[str, Tuple[float, ...]] = MappingProxyType(
    {
        "test_aclnn_segsum.cpp": _segsum(),
        "test_aclnn_swi_glu.cpp": _swi_glu(),
        "test_aclnn_upsample_bilinear2d.cpp": _upsample(),
    }
)


def judge_indexed(
    printed: Sequence[Tuple[int, float]], expected: Sequence[float]
) -> Tuple[Optional[str], str, Optional[Precision]]:
    """(what is wrong or None, what was judged, MERE/MARE of the printed values).

    Every printed index must be one the example has and its value the expected one; the
    indices must be all of them, or their tail (a `tail -n` of the run)."""
    if not printed:
        return "printed no result values", "", None
    indices = [i for i, _ in printed]
    want = len(expected)
    if any(i < 0 or i >= want for i in indices):
        bad = next(i for i in indices if i < 0 or i >= want)
        return f"printed result[{bad}], but the example has {want} values", "", None
    tail = list(range(want - len(indices), want))
    if indices != list(range(want)) and indices != tail:
        return (
            f"printed {len(indices)} values at indices {indices[0]}..{indices[-1]}, expected "
            f"all {want} (or a tail of them)",
            "",
            None,
        )
    got = [v for _, v in printed]
    golden = [expected[i] for i in indices]
    measured = judge(OUTPUT_DTYPE, measure_values(got, golden))
    shown = "all" if len(indices) == want else f"the last {len(indices)} (a tail of the run)"
    for i, value in printed:
        wanted = expected[i]
        if not math.isfinite(value) or abs(value - wanted) > TOLERANCE * max(1.0, abs(wanted)):
            return f"result[{i}] is {value}, expected {wanted:.6g}", shown, measured
    return None, f"{shown} of {want} values", measured


def expected_for(file_name: str) -> Optional[Tuple[float, ...]]:
    return EXPECTED.get(file_name)


def described() -> Dict[str, int]:
    """Each known example and how many values it prints."""
    return {name: len(values) for name, values in EXPECTED.items()}
