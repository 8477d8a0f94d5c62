"""`cannbuild sandbox create` wall time (median of --runs fresh creations) and tree size.

Baseline: a second create on an existing sandbox (the idempotent no-op).

    python bench/bench_sandbox.py [--runs 3] [--variant A2] [--cann 8.5.0]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import compile_package, fmt, sandbox_create_argv, summary, time_command


def du_bytes(path: Path) -> int:
    out = subprocess.run(
        ["du", "-sb", str(path)], capture_output=True, text=True, check=True
    ).stdout
    return int(out.split()[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variant", default="A2")
    parser.add_argument("--cann", default="8.5.0")
    args = parser.parse_args()
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="cannbuild-bench-sandbox-"))
    times = []
    for i in range(args.runs):
        times += time_command(sandbox_create_argv(tmp / f"sb{i}", args.variant, args.cann), 1)
    again = time_command(sandbox_create_argv(tmp / "sb0", args.variant, args.cann), args.runs)
    cold = summary(times)
    print(fmt("sandbox create (existing, no-op)", summary(again)))
    print(fmt(f"sandbox create {args.variant} {args.cann} (fresh)", cold, summary(again)))
    total = du_bytes(tmp / "sb0")
    parts = {p.name: du_bytes(p) for p in sorted((tmp / "sb0").iterdir()) if p.is_dir()}
    print(
        f"tree size: {total / 1e6:.1f} MB ({', '.join(f'{k} {v / 1e6:.1f} MB' for k, v in parts.items())})"
    )
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
