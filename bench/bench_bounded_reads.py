"""Peak memory of `cannbuild profile` on a hostile and on a big profiler CSV (issue 25).

- a single-line kernel_details.csv of --hostile-mb MB (default 1024): refused at the
  line bound (cannbuild/bounded.py PROFILE_CSV_LINE_CHARS) without the line in memory;
- a normal kernel_details.csv of --normal-mb MB (default 200) in torch_npu's layout:
  read whole (every row is kept until sorted by stream and time).
Each is `cannbuild profile FILE --json` in a fresh process; the peak RSS comes from
wait4, with the exit code, wall and CPU time (the machine may be shared).

    python bench/bench_bounded_reads.py [--hostile-mb 1024] [--normal-mb 200] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Tuple

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


def measure(path: Path, out: Path) -> Tuple[int, float, float, float]:
    """Exit code, peak RSS in MB, wall and CPU seconds of `profile FILE --json`."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(
            cannbuild_argv("profile", str(path), "--json", "--out", str(out)),
            stdout=sink,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        err = proc.stderr.read()
        _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 2):
        sys.stderr.write(err.decode(errors="replace"))
    return proc.returncode, usage.ru_maxrss / 1024, wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hostile-mb", type=int, default=1024)
    ap.add_argument("--normal-mb", type=int, default=200)
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-bounded-"))
    try:
        for name, make, mb in (
            ("single-line", hostile, args.hostile_mb),
            ("normal", normal, args.normal_mb),
        ):
            folder = tmp / name
            folder.mkdir()
            csv = folder / "kernel_details.csv"
            make(csv, mb)
            code, rss, wall, cpu = measure(csv, tmp / f"out-{name}")
            print(
                f"{name:12} {csv.stat().st_size / (1 << 20):7.0f} MB: exit {code}, "
                f"peak RSS {rss:7.1f} MB, {wall:6.1f} s wall, {cpu:6.1f} s CPU"
            )
    finally:
        if args.keep:
            print(f"files kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
