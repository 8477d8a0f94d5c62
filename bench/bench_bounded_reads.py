"""Peak memory and time of cannbuild's readers on hostile and big inputs (issues 25, 41).

--part csv (`cannbuild profile FILE --json`):
- a single-line kernel_details.csv of --hostile-mb MB (default 1024): refused at the
  line bound (cannbuild/bounded.py PROFILE_CSV_LINE_CHARS) without the line in memory;
- a normal kernel_details.csv of --normal-mb MB (default 200) in torch_npu's layout:
  read whole (every row is kept until sorted by stream and time).
--part db (`cannbuild profile DB --json`): a profiler database whose one 50 MB
  STRING_IDS value 20 (and 200) kernel rows name, and one whose 1 MiB value 20,000 rows
  name (read once, shared: profile/dbread.py).
--part manifest (`read_manifest`, the reader of `recipe draft --manifest`): a 4 MiB
  cann.xml of closed `<project .../>` elements, and one of unclosed tags.
Each case runs in a fresh process --runs times (default 3); the median wall time, the
peak RSS (wait4) and the exit code are printed, and with --baseline CHECKOUT the same
against that checkout's cannbuild (e.g. main), side by side; a run past --timeout
seconds (default 120) is stopped and shown as such.  The machine may be shared.

    python bench/bench_bounded_reads.py [--part csv,db,manifest] [--runs 3]
        [--baseline ../main] [--hostile-mb 1024] [--normal-mb 200] [--keep]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import cannbuild_argv  # noqa: E402

HEADER = (
    "Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),"
    "Duration(us),Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,"
    "Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,"
    "Context ID,aicore_time(us),aic_total_cycles\n"
)
OPS = (  # type, core, duration us, input shapes
    ("BatchMatMul", "AI_CORE", 45.5, '"""12,1024,72;12,72,1024"""'),
    ("Mul", "AI_VECTOR_CORE", 15.14, '"""12,1024,1024;"""'),
    ("SoftmaxV2", "AI_VECTOR_CORE", 91.84, '"""12,1024,1024"""'),
    ("BatchMatMul", "AI_CORE", 44.1, '"""12,1024,1024;12,1024,72"""'),
    ("Add", "AI_VECTOR_CORE", 2.0, '"""12,1024,72;12,1024,72"""'),
    ("FlashAttentionScore", "MIX_AIC", 30.16, '"""1,12,1024,72;1,12,1024,72"""'),
)


def hostile(path: Path, megabytes: int) -> None:
    """One line of `megabytes` MB (no newline anywhere)."""
    block = b"x" * (1 << 20)
    with open(path, "wb") as fh:
        for _ in range(megabytes):
            fh.write(block)


def normal(path: Path, megabytes: int) -> int:
    """A kernel_details.csv of about `megabytes` MB; returns its rows."""
    target = megabytes << 20
    rows = 0
    start = 1699529623122090.8
    with open(path, "w", newline="") as fh:
        fh.write(HEADER)
        size = len(HEADER)
        lines = []
        while size < target:
            op, core, dur, shapes = OPS[rows % len(OPS)]
            line = (
                f"1,4294967295,{rows % 65536},{16 + rows % 2},{op}{rows % 4096},{op},dynamic,"
                f'{core},"{start + rows * 50.0:.1f}\t",{dur},0,24,0,NO,{shapes},'
                'FLOAT16;FLOAT16,FORMAT_ND;FORMAT_ND,"""12,1024,1024""",FLOAT16,FORMAT_ND,'
                f"N/A,40.950,81900\r\n"
            )
            lines.append(line)
            size += len(line)
            rows += 1
            if len(lines) >= 10000:
                fh.write("".join(lines))
                lines = []
        fh.write("".join(lines))
    return rows


def hostile_db(path: Path, value_chars: int, references: int, rows: int = 0) -> Path:
    """A profiler database (the exports' TASK, COMPUTE_TASK_INFO and STRING_IDS) whose one
    STRING_IDS value of `value_chars` characters `references` kernel rows name (as name,
    shapes and types), with `rows` more rows of a short name; made inside SQLite."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT)")
    db.execute(
        "CREATE TABLE TASK (globalTaskId INTEGER, startNs INTEGER, endNs INTEGER, "
        "deviceId INTEGER, streamId INTEGER)"
    )
    db.execute(
        "CREATE TABLE COMPUTE_TASK_INFO (globalTaskId INTEGER, name INTEGER, opType INTEGER, "
        "taskType INTEGER, inputShapes INTEGER, inputDataTypes INTEGER, outputShapes INTEGER)"
    )
    db.execute("INSERT INTO STRING_IDS VALUES (1, ?)", ("8," * (value_chars // 2),))
    db.execute("INSERT INTO STRING_IDS VALUES (2, 'MatMul')")
    each = "WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x + 1 < ?) "
    db.execute(
        each + "INSERT INTO TASK SELECT x, x * 7919 % 1000000007, x * 7919 % 1000000007 + 500, "
        "0, 1 FROM c",
        (references + rows,),
    )
    named = "CASE WHEN x < ? THEN 1 ELSE 2 END"
    db.execute(
        each + f"INSERT INTO COMPUTE_TASK_INFO SELECT x, {named}, 2, 2, {named}, 2, {named} FROM c",
        (references + rows, references, references, references),
    )
    db.commit()
    db.close()
    return path


def manifest(path: Path, size: int, closed: bool) -> Path:
    """A cann.xml of `size` bytes: `<project .../>` elements, or tags never closed."""
    element = '<project name="p" revision="refs/tags/v9.0.0"/>\n' if closed else '<project a="b" '
    path.write_text(element * (size // len(element)))
    return path


def run(
    argv: Sequence[str], timeout: float, env: Optional[Dict[str, str]] = None, cap_mb: int = 4096
) -> Run:
    """Exit code, peak RSS in MB and wall seconds of `argv` (None: stopped at `timeout`),
    with at most `cap_mb` of address space (a shared machine: the old readers take GBs)."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_mb << 20, cap_mb << 20))

    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        # cwd: not a checkout, whose cannbuild `-m` would take before PYTHONPATH's
        proc = subprocess.Popen(
            argv, stdout=sink, stderr=sink, env=env, preexec_fn=cap, cwd=tempfile.gettempdir()
        )
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                return Run(code=None, rss_mb=0.0, wall=timeout)
            time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(
        code=proc.returncode, rss_mb=usage.ru_maxrss / 1024, wall=time.perf_counter() - start
    )


class Run(NamedTuple):
    code: Optional[int]
    rss_mb: float
    wall: float


def median_of(runs: int, argv: Sequence[str], timeout: float, env: Optional[Dict[str, str]]) -> str:
    done = [run(argv, timeout, env) for _ in range(runs)]
    if any(r.code is None for r in done):
        return f"stopped after {timeout:.0f} s"
    wall = statistics.median(r.wall for r in done)
    rss = statistics.median(r.rss_mb for r in done)
    return f"exit {done[0].code}, {wall:6.2f} s, peak RSS {rss:7.1f} MB"


def cases(part: str, tmp: Path, args: argparse.Namespace) -> Iterator[Tuple[str, List[str]]]:
    """(name, cannbuild arguments or a Python -c line) of each case of `part`."""
    if part == "csv":
        for name, make, mb in (
            ("single-line", hostile, args.hostile_mb),
            ("normal", normal, args.normal_mb),
        ):
            csv = tmp / name / "kernel_details.csv"
            csv.parent.mkdir()
            make(csv, mb)
            yield (
                f"csv {name} {mb} MB",
                ["profile", str(csv), "--json", "--out", str(tmp / f"o-{name}")],
            )
    if part == "db":
        for name, chars, refs in (
            ("50 MB value x 20", 50 << 20, 20),
            ("50 MB value x 200", 50 << 20, 200),
            ("1 MiB value x 20000", (1 << 20) - 64, 20000),
        ):
            db = hostile_db(
                tmp / name.replace(" ", "-") / "ascend_pytorch_profiler_0.db", chars, refs
            )
            yield f"db {name}", ["profile", str(db), "--json", "--out", str(tmp / f"o-{name}")]
    if part == "manifest":
        for closed in (True, False):
            path = manifest(tmp / f"cann-{closed}.xml", 4 << 20, closed)
            code = "import sys, pathlib; from cannbuild.train.manifest import read_manifest as r; r(pathlib.Path(sys.argv[1]))"
            yield f"manifest 4 MiB {'closed' if closed else 'unclosed'}", ["-c", code, str(path)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="csv,db,manifest")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--baseline", type=Path, help="another checkout, e.g. ../main")
    ap.add_argument("--hostile-mb", type=int, default=1024)
    ap.add_argument("--normal-mb", type=int, default=200)
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-bounded-"))
    envs = {"this": None}
    if args.baseline:
        envs["baseline"] = {**os.environ, "PYTHONPATH": str(args.baseline.resolve())}
    try:
        for part in args.part.split(","):
            for name, argv in cases(part, tmp, args):
                full = [sys.executable, *argv] if argv[0] == "-c" else cannbuild_argv(*argv)
                for label, env in envs.items():
                    print(
                        f"{name:28} {label:8} {median_of(args.runs, full, args.timeout, env)}",
                        flush=True,
                    )
    finally:
        if args.keep:
            print(f"files kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
