"""No silent minute (issue 30): how soon `cannbuild setup --sandbox` on a fresh workspace
prints its first line, and the longest silence after it, on a terminal (a pty) and
without one (a pipe).  Each run starts from an empty folder: sandbox, build, validation.

The issue's bar: the first line within 2 s; on a terminal no silence over 5 s.

    python bench/bench_first_line.py [--runs 1] [--keep]
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import cannbuild_argv, compile_package  # noqa: E402


def _read_all(fd: int, proc: subprocess.Popen, start: float) -> List[Tuple[float, bytes]]:
    """(seconds since start, bytes) of every read from `fd` until the child is done."""
    chunks: List[Tuple[float, bytes]] = []
    while True:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: a pty whose child closed it
            break
        if not data:
            break
        chunks.append((time.perf_counter() - start, data))
    return chunks


def run_once(folder: Path, terminal: bool) -> Tuple[float, float, float, int]:
    """(first output s, longest silence s, total s, exit code) of one fresh setup."""
    folder.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CANNBUILD_")}
    env["COLUMNS"] = "160"
    argv = cannbuild_argv("setup", "--sandbox")
    start = time.perf_counter()
    if terminal:
        primary, secondary = pty.openpty()
        proc = subprocess.Popen(
            argv, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary
        )
        os.close(secondary)
        chunks = _read_all(primary, proc, start)
        os.close(primary)
    else:
        proc = subprocess.Popen(
            argv,
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        assert proc.stdout is not None
        chunks = _read_all(proc.stdout.fileno(), proc, start)
    code = proc.wait()
    total = time.perf_counter() - start
    times = [t for t, _ in chunks] or [total]
    gaps = [b - a for a, b in zip(times, times[1:])] + [total - times[-1]]
    return times[0], max(gaps), total, code


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the workspaces")
    args = parser.parse_args()
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="cannbuild-bench-first-line-"))
    for terminal in (True, False):
        mode = "terminal (pty)" if terminal else "pipe"
        for i in range(args.runs):
            first, silence, total, code = run_once(tmp / f"{mode[:4]}{i}", terminal)
            print(
                f"setup --sandbox, fresh, {mode:<14} first line {first:5.2f} s, longest "
                f"silence {silence:5.2f} s, total {total:6.1f} s, exit {code}"
            )
    if args.keep:
        print(f"workspaces kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
