"""A fresh sandbox's cost: `cannbuild sandbox create` and a cold `cannbuild setup --sandbox`
(a new workspace, so a new sandbox, fetch, build, install, validate), each with the per-user
emulation cache cold (an empty XDG_CACHE_HOME: the emulated ACL runtime is compiled) and
warm (a machine that made one sandbox before: it is reused; cannbuild/usercache.py).
Medians of --runs fresh runs each, the warm ones side by side with the cold as baseline.

Baseline for `sandbox create`: a second create on an existing sandbox (the idempotent no-op).

    python bench/bench_sandbox.py [--runs 3] [--variant A2] [--cann 8.5.0] [--no-setup]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    cannbuild_argv,
    compile_package,
    fmt,
    sandbox_create_argv,
    summary,
    time_command,
)


def du_bytes(path: Path) -> int:
    out = subprocess.run(
        ["du", "-sb", str(path)], capture_output=True, text=True, check=True
    ).stdout
    return int(out.split()[0])


def cache_env(folder: Path) -> dict:
    env = dict(os.environ, XDG_CACHE_HOME=str(folder))
    env.pop("CMAKE_CXX_COMPILER_LAUNCHER", None)  # no ccache behind the compiler's back
    return env


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variant", default="A2")
    parser.add_argument("--cann", default="8.5.0")
    parser.add_argument("--no-setup", action="store_true", help="only `sandbox create`")
    args = parser.parse_args()
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="cannbuild-bench-sandbox-"))
    warm = tmp / "warm-cache"
    cold, hot = [], []
    for i in range(args.runs):
        fresh = cache_env(tmp / f"cold-cache-{i}")
        argv = sandbox_create_argv(tmp / f"cold{i}", args.variant, args.cann)
        cold += time_command(argv, 1, env=fresh)
        if i == 0:  # the machine's first sandbox fills the warm cache (not timed)
            time_command(
                sandbox_create_argv(tmp / "prime", args.variant, args.cann), 1, env=cache_env(warm)
            )
        argv = sandbox_create_argv(tmp / f"warm{i}", args.variant, args.cann)
        hot += time_command(argv, 1, env=cache_env(warm))
    again = time_command(sandbox_create_argv(tmp / "cold0", args.variant, args.cann), args.runs)
    print(fmt("sandbox create (existing, no-op)", summary(again)))
    print(
        fmt(f"sandbox create {args.variant} {args.cann} cold cache", summary(cold), summary(again))
    )
    print(fmt(f"sandbox create {args.variant} {args.cann} warm cache", summary(hot), summary(cold)))
    total = du_bytes(tmp / "cold0")
    parts = {p.name: du_bytes(p) for p in sorted((tmp / "cold0").iterdir()) if p.is_dir()}
    print(
        f"tree size: {total / 1e6:.1f} MB ({', '.join(f'{k} {v / 1e6:.1f} MB' for k, v in parts.items())})"
    )
    if not args.no_setup:
        cold, hot = [], []
        setup = ("setup", "--sandbox", "--variant", args.variant, "--cann", args.cann, "-w")
        for i in range(args.runs):
            fresh = cache_env(tmp / f"setup-cold-cache-{i}")
            cold += time_command(cannbuild_argv(*setup, str(tmp / f"ws-cold{i}")), 1, env=fresh)
            hot += time_command(
                cannbuild_argv(*setup, str(tmp / f"ws-warm{i}")), 1, env=cache_env(warm)
            )
        print(fmt("cold setup --sandbox, cold cache", summary(cold)))
        print(fmt("cold setup --sandbox, warm cache", summary(hot), summary(cold)))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
