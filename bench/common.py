"""Small timing helpers shared by the bench scripts (medians, never single runs)."""

from __future__ import annotations

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
) -> List[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
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
