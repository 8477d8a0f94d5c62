"""Run the repository's own FlashAttention examples and judge what each prints.

`build.sh --run_example flash_attention_score eager cust` compiles and runs every
`*/flash_attention_score/examples/test_aclnn_*.cpp` in turn (two at the 8.3 pin
and v8.5.0, three at v9.0.0), announcing each with `Start compile and run example
file: <path>`; each prints one `mean result[i] is: x` line per element of its
attentionOut, softmaxMax and softmaxSum and never checks them.  The output is split
at those lines and every example is judged on its own values: the examples cannbuild
knows (all-ones inputs, S=256, D=128, one head) must print attentionOut 1.0,
softmaxMax 128/sqrt(128) and softmaxSum 256; an example it does not know is judged
only by its exit and by printing finite values, and the verdict says so.  A known
example's values are also measured by opbase's MERE/MARE standard (precision.py)
against the exact expected values, shown beside the verdict, which they never change.
"""

from __future__ import annotations

import math
import re
import time
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct
from msgspec.structs import asdict

from ..phases import PhaseSink, no_phases
from ..proc import Bounds, run_bounded
from ..states import Verdict
from .precision import Precision, disagrees, measure_values, summary
from .precision import judge as judge_precision

# The examples' `printf("mean result[%ld] is: %f\n", ...)`: `mean result[0] is: 1.000000`; the
# sibling repositories' print `result[0] is: 1.000000`.  build.sh prefixes every stdout line
# with a `[YYYY-mm-dd HH:MM:SS] ` stamp, hence search.
_RESULT = re.compile(r"result\[(\d+)\] is: (\S+)")
# build.sh's announcement before it compiles each `test_aclnn_*.cpp` in turn: ops-transformer's
# `Start compile and run example file: <path>`, ops-math's and ops-cv's `... examples file:
# <path>` (ops-math@v9.0.0:build.sh:1410), ops-nn's `Start to run example,op_name:<op>
# example_name:<name> mode:<mode>.` (ops-nn@9.1.0:build.sh:1321), which names the file
# test_aclnn_<name>.cpp.
_START = re.compile(
    r"Start compile and run examples? file: (\S+)|Start to run example,op_name:\S* example_name:(\S+) mode:"
)
# build.sh's own verdict per example: `run test_aclnn_<op>, execute samples success`; ops-nn's
# `Run test_aclnn_<name> success.` / `... failed.` (:1383, :1452).
_FAILED = re.compile(r"execute samples failed|Run test_aclnn_\S+ failed\.")
# What a compile or link failure of an example prints (g++ and ld messages, ACL errors).
_ERROR = re.compile(
    r"error:|Error:|ERROR|No such file or directory|undefined reference|cannot find -l"
)
S, D, B, N = 256, 128, 1, 1
# (label, count, expected value, relative tolerance) in print order
# 32,768 attentionOut values (S x D), then 2,048 each of softmaxMax and softmaxSum (S x 8 lanes):
# 36,864 lines per example.  With all-ones q/k/v every score is D x scale = 128/sqrt(128) ~ 11.3137
# (the row max), each of the S equal scores adds exp(0) to the sum (256), and the output averages
# rows of ones (1.0).
ALL_ONES = (
    ("attentionOut", S * B * N * D, 1.0, 1e-5),
    ("softmaxMax", B * N * S * 8, D / math.sqrt(D), 1e-4),
    ("softmaxSum", B * N * S * 8, float(S), 1e-3),
)
# The examples of the pinned refs (read at each ref): all four feed all-ones q/k/v of
# S=256 (T=256 for VarLen), N=1, D=128 with a zero mask, and print the three outputs.  The
# sandbox's VarLen stand-in prints the same from two sequences of 100 and 156 query rows,
# each over 256 keys of its own: a kernel that lets a query see the other sequence's keys
# prints softmaxSum 512.
KNOWN_EXAMPLES: Dict[str, Tuple[Tuple[str, int, float, float], ...]] = {
    "test_aclnn_flash_attention_score.cpp": ALL_ONES,  # 8.3 pin, v9.0.0 (V2, SBH)
    "test_aclnn_flash_attention_score_v2_fp32.cpp": ALL_ONES,  # v8.5.0, v9.0.0 (V2, SBH)
    "test_aclnn_flash_attention_score_varlen_v4_fp32.cpp": ALL_ONES,  # v8.5.0, v9.0.0 (TND)
    "test_aclnn_flash_attention_varlen_score.cpp": ALL_ONES,  # 8.3 pin (VarLenV4, TND)
}
# The dtype opbase's standard judges those values in: all four pass attentionOut as ACL_FLOAT
# (`CreateAclTensor(..., aclDataType::ACL_FLOAT, ...)` at the 8.3 pin, v8.5.0 and v9.0.0; only a
# test_aclnn_flash_attention_score.cpp of 2025-09-28, b122ed2, before the 8.3 pin, used
# ACL_FLOAT16), and softmaxMax / softmaxSum are float32 at every ref.
OUTPUT_DTYPE = "fp32"
# A run is bounded by what it does, not by a short clock: 9.1.0's build.sh forks `date` for
# every line it prints (about 110,000 for the three FlashAttention examples), which a loaded
# host makes take well over ten minutes while the run is sound.  Stopped: silent for 5 min
# (each example compiles first: about a minute on 2 busy cores), past 500,000 lines or
# 64 MiB (4.5 times the three examples), or after 2 h in all.
BOUNDS = Bounds(idle_s=300.0, max_lines=500_000, max_bytes=64 << 20, wall_s=7200.0)
PROGRESS_S = 30.0  # how often the running example's count of values is shown


class ExampleRun(Struct, frozen=True, kw_only=True):
    """One example file's share of the output, judged."""

    file: str
    status: str  # PASS | FAIL
    message: str
    values: int
    judged: str  # "values": against known expected values; "run": exit and finite values only
    # The values by opbase's MERE/MARE standard; None where no expected values are known
    precision: Optional[Precision] = None

    @property
    def disagree(self) -> bool:
        return disagrees(self.status, self.precision)

    def to_json(self) -> Dict[str, object]:
        measured = None if self.precision is None else self.precision.to_json()
        return {**asdict(self), "precision": measured, "disagree": self.disagree}


class ExampleResult(Struct, frozen=True, kw_only=True):
    status: str  # PASS | FAIL | SKIPPED
    message: str
    command: str
    exit_code: Optional[int] = None
    tail: Sequence[str] = ()
    examples: Sequence[ExampleRun] = ()
    stopped_by: str = ""  # the bound that ended the run (proc.IDLE, WORK, WALL); "" if it exited


def _indexed(lines: Sequence[str]) -> List[Tuple[int, float]]:
    """(index, value) of every `result[i] is: x` line."""
    found: List[Tuple[int, float]] = []
    for line in lines:
        match = _RESULT.search(line)
        if match:
            try:
                value = float(match.group(2))
            except ValueError:
                value = float("nan")
            found.append((int(match.group(1)), value))
    return found


def _values(lines: Sequence[str]) -> List[float]:
    return [value for _, value in _indexed(lines)]


def judge_values(
    values: Sequence[float], expected: Sequence[Tuple[str, int, float, float]]
) -> Optional[str]:
    """None when the printed numbers are right; otherwise what is wrong."""
    # A short count means the example stopped part way or printed something else.
    want = sum(n for _, n, _, _ in expected)
    if len(values) != want:
        labels = ", ".join(label for label, _, _, _ in expected)
        return f"printed {len(values)} result values, expected {want} ({labels})"
    start = 0
    for label, count, value, tol in expected:
        for i, got in enumerate(values[start : start + count]):
            if not math.isfinite(got) or abs(got - value) > tol * max(1.0, abs(value)):
                return f"{label}[{i}] is {got}, expected {value:.6g} for all-ones inputs"
        start += count
    return None


def measure_example(
    values: Sequence[float], expected: Sequence[Tuple[str, int, float, float]]
) -> Precision:
    """The printed values by opbase's standard, against the exact expected values."""
    golden = [value for _, count, value, _ in expected for _ in range(count)]
    if len(values) != len(golden):
        return Precision(
            dtype=OUTPUT_DTYPE,
            status=Verdict.SKIPPED,
            message=f"printed {len(values)} values, expected {len(golden)}: nothing to measure",
            values=len(values),
        )
    return judge_precision(OUTPUT_DTYPE, measure_values(values, golden))


# What the sibling repositories' own examples must print (issue 27).  The three examples
# (byte-identical at v9.0.0, v9.0.1, v9.1.0 and branch 9.1.0) feed fixed FLOAT inputs and
# print every output element, checking nothing:
# - ops-math math/segsum/examples/test_aclnn_segsum.cpp: self {1,1,1,4} = 0, 1, 2, 3, out
#   {1,1,1,4,4}: exp(x[j+1] + ... + x[i]) below and on the diagonal, 0 above;
# - ops-nn activation/swi_glu/examples/test_aclnn_swi_glu.cpp: x {2,32} = 0 .. 63, dim -1,
#   out {2,16} = silu(A) * B;
# - ops-cv image/upsample_bilinear2d/examples/test_aclnn_upsample_bilinear2d.cpp: self
#   {1,1,4,2} = 0 .. 7 NCHW, outputSize {8,4}, alignCorners true, out {1,1,8,4}.
# Values are matched by their printed index: ops-nn's build.sh shows only the last 10 lines
# of an example (`| tail -n 10`, build_single_example), so a run may print a tail.  The
# expected values are computed here in double precision; their output dtype is ACL_FLOAT
# (OUTPUT_DTYPE) in all three.
# %f prints 6 decimals; the kernels compute in float: relative 1e-5 (at least 1e-5 absolute)
TOLERANCE = 1e-5


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
    measured = judge_precision(OUTPUT_DTYPE, measure_values(got, golden))
    shown = "all" if len(indices) == want else f"the last {len(indices)} (a tail of the run)"
    for i, value in printed:
        wanted = expected[i]
        if not math.isfinite(value) or abs(value - wanted) > TOLERANCE * max(1.0, abs(wanted)):
            return f"result[{i}] is {value}, expected {wanted:.6g}", shown, measured
    return None, f"{shown} of {want} values", measured


def split_examples(lines: Sequence[str]) -> List[Tuple[str, List[str]]]:
    """(example file, its lines) for each `Start compile and run example file` block."""
    parts: List[Tuple[str, List[str]]] = []
    for line in lines:
        match = _START.search(line)
        if match:
            parts.append((_announced(match), []))
        elif parts:
            parts[-1][1].append(line)
    return parts


def _announced(match: re.Match[str]) -> str:
    """The example file a `_START` line announces."""
    return match.group(1) or f"test_aclnn_{match.group(2).rstrip('.')}.cpp"


def _first_error(lines: Sequence[str]) -> Optional[str]:
    for line in lines:
        if _ERROR.search(line):
            return line.strip()[:300]
    return None


def judge_example(
    file: str, lines: Sequence[str], ended_the_run: bool, code: int, stderr_error: Optional[str]
) -> ExampleRun:
    """`ended_the_run`: this example is the last one and the script exited `code`;
    `stderr_error`: the first error on stderr, which arrives apart from stdout."""
    name = Path(file).name
    values = _values(lines)
    # The script's exit code belongs to the last example it ran: earlier ones only have their own
    # `execute samples failed`.
    failed = any(_FAILED.search(line) for line in lines) or (ended_the_run and code != 0)
    # stderr is not interleaved (v8.5.0 / v9.0.0 pipe only stdout through gawk), so its first error
    # is credited to the example that ended the run.
    error = _first_error(lines) or (stderr_error if ended_the_run else None)
    expected = KNOWN_EXAMPLES.get(name)
    indexed = EXPECTED.get(name)
    # every verdict below names the file and counts its values
    ran = partial(ExampleRun, file=file, values=len(values))
    if failed:
        why = f"exited {code}" if ended_the_run and code != 0 else "execute samples failed"
        detail = f": {error}" if error else ""
        return ran(status=Verdict.FAIL, message=f"{why}{detail}", judged="run")
    if not values:
        detail = f" ({error})" if error else ""
        judged = "values" if expected or indexed else "run"
        return ran(status=Verdict.FAIL, message=f"printed no result values{detail}", judged=judged)
    if indexed is not None:
        problem, what, measured = judge_indexed(_indexed(lines), indexed)
        return ran(
            status=Verdict.FAIL if problem else Verdict.PASS,
            message=problem or f"{what} equal the expected values (within 1e-5 relative)",
            judged="values",
            precision=measured,
        )
    if expected is not None:
        problem = judge_values(values, expected)
        return ran(
            status=Verdict.FAIL if problem else Verdict.PASS,
            message=problem
            or f"{len(values)} values: attentionOut = 1.0, softmaxMax = 128/sqrt(128), "
            "softmaxSum = 256 everywhere",
            judged="values",
            precision=measure_example(values, expected),
        )
    bad = next((i for i, v in enumerate(values) if not math.isfinite(v)), None)
    if bad is not None:
        return ran(status=Verdict.FAIL, message=f"result[{bad}] is {values[bad]}", judged="run")
    return ran(
        status=Verdict.PASS,
        message=f"ran and printed {len(values)} finite values; not judged on its values (cannbuild "
        "does not know this example's expected outputs)",
        judged="run",
    )


def judge_run(
    stdout: Sequence[str], stderr: Sequence[str], code: int
) -> Tuple[str, str, List[ExampleRun]]:
    """(status, message, per-example verdicts) for a whole `--run_example` run."""
    parts = split_examples(stdout)
    stderr_error = _first_error(stderr)
    runs = [
        judge_example(file, lines, i == len(parts) - 1, code, stderr_error)
        for i, (file, lines) in enumerate(parts)
    ]
    # No announcement at all: build.sh stopped before its first example (setup, compile).
    if not runs:
        error = stderr_error or _first_error(stdout)
        if code != 0:
            return (
                Verdict.FAIL,
                f"the example run exited {code} before any example: {error or 'no output'}",
                runs,
            )
        return (
            Verdict.FAIL,
            f"the example run exited 0 but ran no example ({error or 'no example file was announced'})",
            runs,
        )
    failed = [r for r in runs if r.status == Verdict.FAIL]
    upstream = summary([(Path(r.file).name, r.status, r.precision) for r in runs])
    upstream = f"; {upstream}" if upstream else ""
    if failed:
        first = failed[0]
        return (
            Verdict.FAIL,
            f"{len(failed)}/{len(runs)} examples FAIL; first: {Path(first.file).name}: "
            f"{first.message}{upstream}",
            runs,
        )
    # 8.3's build.sh exits 0 on every failure, but a later ref's non-zero exit still counts.
    if code != 0:
        return Verdict.FAIL, f"every example printed its values, but the run exited {code}", runs
    by_values = [r for r in runs if r.judged == "values"]
    only_run = [Path(r.file).name for r in runs if r.judged == "run"]
    message = f"{len(runs)}/{len(runs)} examples PASS"
    if by_values:
        what = (
            "(attentionOut = 1.0, softmaxMax = 128/sqrt(128), softmaxSum = 256)"
            if any(Path(r.file).name in KNOWN_EXAMPLES for r in by_values)
            else "(the values of their fixed inputs)"
        )
        message += f"; {len(by_values)} judged on their values {what}"
    if only_run:
        message += f"; {', '.join(only_run)} judged only by exit and finite values (expected values unknown)"
    return Verdict.PASS, message + upstream, runs


# Where a ref's build.sh --run_example looks for the custom package when it ignores
# ASCEND_CUSTOM_OPP_PATH: ops-transformer 8.3 only `${ASCEND_OPP_PATH}/vendors/${VENDOR}_<repo>`
# (build.sh:391-392; v8.5.0 :450 and v9.0.0 :504 honour ASCEND_CUSTOM_OPP_PATH), the sibling
# repositories at v9.0.0 only `${ASCEND_HOME_PATH}/opp/vendors/${VENDOR}_<repo>`
# (ops-math@v9.0.0:build.sh:1526-1528, ops-nn :1269-1270, ops-cv :1438-1440).
LOOKUP_ROOTS: Mapping[str, Tuple[str, str]] = {
    "opp": ("ASCEND_OPP_PATH", "vendors"),
    "home-opp": ("ASCEND_HOME_PATH", "opp/vendors"),
}


def lookup_skip(
    lookup: str, env: Mapping[str, str], vendor_dir: Optional[Path], vendor_name: str
) -> Optional[str]:
    """Why the example cannot see this package, for a ref whose build.sh looks only in one
    folder of the toolkit (lookup "opp" or "home-opp"); None when it can."""
    if lookup not in LOOKUP_ROOTS or vendor_dir is None:
        return None
    variable, below = LOOKUP_ROOTS[lookup]
    root = env.get(variable, "")
    # the vendor folder, <vendor_name>_<repo>, as the package installed it
    looked = Path(root) / below / vendor_dir.name if root else None
    if looked is not None and looked.exists() and looked.resolve() == vendor_dir.resolve():
        return None
    where = f"${variable}/{below}/{vendor_dir.name}" + (
        f" ({looked})" if looked else f" ({variable} is unset)"
    )
    quirk = " (and this ref's build.sh exits 0 even then)" if lookup == "opp" else ""
    return (
        f"not run: this ref's build.sh compiles its examples only against {where} and "
        f"ignores ASCEND_CUSTOM_OPP_PATH, while this package is installed in {vendor_dir}; the "
        f"example would find no package{quirk}. The capi check runs the installed operator; "
        "to run the example too, install the package into the toolkit's opp/vendors"
    )


def run_example(
    command: str,
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    lookup: str = "custom-opp",
    vendor_dir: Optional[Path] = None,
    vendor_name: str = "custom",
    phases: PhaseSink = no_phases,
    bounds: Bounds = BOUNDS,
    progress_s: float = PROGRESS_S,
) -> ExampleResult:
    """Run the repository's examples under `bounds` and judge what they print; `phases`
    hears which example runs and, every `progress_s`, how far it got."""
    if not (cwd / "build.sh").is_file():
        return ExampleResult(
            status=Verdict.SKIPPED,
            message=f"no checkout at {cwd} (run cannbuild fetch)",
            command=command,
        )
    skip = lookup_skip(lookup, env, vendor_dir, vendor_name)
    if skip:
        return ExampleResult(status=Verdict.SKIPPED, message=skip, command=command)
    ran = run_bounded(argv, bounds, cwd=cwd, env=env, on_line=_Watch(phases, progress_s))
    out, err = ran.stdout, ran.stderr
    # stderr first: it holds the error while stdout holds the buffered tail.
    tail = tuple((err + out)[-15:])
    if ran.stopped:
        started = len(split_examples(out))
        return ExampleResult(
            status=Verdict.FAIL,
            message=f"stopped by its {ran.stopped} bound ({ran.why}) after {ran.seconds:.0f} s, "
            f"{len(out) + len(err):,} lines and {started} example(s) started",
            command=command,
            tail=tail,
            stopped_by=ran.stopped,
        )
    assert ran.code is not None
    status, message, runs = judge_run(out, err, ran.code)
    return ExampleResult(
        status=status,
        message=message,
        command=command,
        exit_code=ran.code,
        tail=tail if status != Verdict.PASS else (),
        examples=tuple(runs),
    )


class _Watch:
    """Shows the example run's progress as its stdout comes: the example that starts
    (build.sh's announcement) and, every `every_s`, the values it has printed."""

    def __init__(self, phases: PhaseSink, every_s: float) -> None:
        self.phases, self.every_s = phases, every_s
        self.clock = time.monotonic
        self.file, self.started, self.values, self.shown = "", 0, 0, self.clock()

    def __call__(self, line: str) -> None:
        start = _START.search(line)
        if start:
            self.file = Path(_announced(start)).name
            self.started += 1
            self.values = 0
            self.shown = self.clock()
            self.phases(f"example {self.started}: {self.file}")
        elif _RESULT.search(line):
            self.values += 1
            if self.clock() - self.shown >= self.every_s:
                self.shown = self.clock()
                self.phases(f"example {self.started}: {self.file}: {self.values:,} values")
