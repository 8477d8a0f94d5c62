"""Small timing helpers shared by the bench scripts (medians, never single runs)."""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple


def cannbuild_argv(*args: str) -> List[str]:
    """The CLI as this interpreter runs it (the venv the bench runs in)."""
    return [sys.executable, "-m", "cannbuild", *args]


def sandbox_create_argv(directory: Path, variant: str = "A2", cann: str = "8.5.0") -> List[str]:
    return cannbuild_argv(
        "sandbox", "create", "--dir", str(directory), "--variant", variant, "--cann", cann
    )


def run_measured(argv: Sequence[str], **kwargs) -> Tuple[float, float]:
    """Wall time and CPU time (user + sys) of `argv` and every process it waited for.
    CPU time is the work done: on a shared 2-core machine it moves far less with the
    other core's load than wall time does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, **kwargs)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def compile_package(checkout: Optional[Path] = None) -> None:
    """Write cannbuild's .pyc files (this checkout's, or `checkout`'s), as a non-editable
    pip install does, so start-up is measured, not byte-compilation
    (PYTHONDONTWRITEBYTECODE may be set)."""
    root = checkout or Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "cannbuild")], check=True)


def time_command(
    argv: Sequence[str],
    runs: int,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    codes: Sequence[int] = (0,),
) -> List[float]:
    """`codes`: the exit codes a run may end with (doctor ends 1 on a host with a FAIL row)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
        if proc.returncode not in codes:
            raise subprocess.CalledProcessError(proc.returncode, list(argv))
    return times


def summary(times: Sequence[float]) -> Dict[str, float]:
    ordered = sorted(times)
    return {
        "median_s": statistics.median(ordered),
        "min_s": ordered[0],
        "max_s": ordered[-1],
        "runs": len(ordered),
    }


def fmt(name: str, stats: Dict[str, float], baseline: Optional[Dict[str, float]] = None) -> str:
    line = (
        f"{name:<34} median {stats['median_s'] * 1000:7.1f} ms"
        f"  (min {stats['min_s'] * 1000:6.1f}, max {stats['max_s'] * 1000:6.1f},"
        f" n={int(stats['runs'])})"
    )
    if baseline:
        line += f"  ratio vs baseline {stats['median_s'] / baseline['median_s']:.2f}x"
    return line


# Runs `argv` from a fresh interpreter, so that its RUSAGE_CHILDREN holds this one command
# (and whatever it waited for) and nothing the bench ran before.
_MEASURE = """
import json, resource, subprocess, sys, time
with open(sys.argv[1], "wb") as out, open(sys.argv[1] + ".err", "wb") as err:
    start = time.perf_counter()
    code = subprocess.run(sys.argv[2:], stdout=out, stderr=err).returncode
    wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "peak_mb": usage.ru_maxrss / 1024, "code": code}))
"""


def measure_peak(
    argv: Sequence[str], log: Path, env: Optional[Mapping[str, str]] = None
) -> Dict[str, float]:
    """Wall time, CPU time (user + sys) and peak RSS of `argv`, its stdout in `log`
    and its stderr in `log` + `.err`.
    The peak is ru_maxrss of the children: the largest single process of the command's
    tree (a worker pool's processes are not added up), as `/usr/bin/time -v` reports it."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(log), *argv],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: Dict[str, float] = json.loads(out.stdout)
    if result["code"]:
        raise SystemExit(f"{argv[0]} exited {int(result['code'])}; its output: {log}(.err)")
    return result
