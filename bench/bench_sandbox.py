"""A fresh sandbox's cost: `cannbuild sandbox create` and a cold `cannbuild setup --sandbox`
(a new workspace, so a new sandbox, fetch, build, install, validate), each with the per-user
emulation cache cold (an empty XDG_CACHE_HOME: the emulated ACL runtime is compiled) and
warm (a machine that made one sandbox before: it is reused; cannbuild/usercache.py).
Medians of --runs fresh runs each, the warm ones side by side with the cold as baseline.

Baseline for `sandbox create`: a second create on an existing sandbox (the idempotent no-op).

With `--warm-only` only the case issue 42 names is timed, a cold `setup --sandbox` on a machine
that made one sandbox before (each interpreter's own cache primed first, untimed), wall and CPU
time; `--baseline-python PY` times the same with another cannbuild (a venv of an older checkout)
in the same rounds, interleaved, and prints the ratios.

    python bench/bench_sandbox.py [--runs 3] [--variant A2] [--cann 8.5.0] [--no-setup]
    python bench/bench_sandbox.py --warm-only [--runs 5] [--baseline-python OLD/bin/python]
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
    run_measured,
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
    parser.add_argument("--warm-only", action="store_true", help="only a warm-cache cold setup")
    parser.add_argument("--baseline-python", help="the interpreter of a baseline cannbuild")
    args = parser.parse_args()
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="cannbuild-bench-sandbox-"))
    if args.warm_only:
        warm_setup(tmp, args)
        shutil.rmtree(tmp)
        return
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


def warm_setup(tmp: Path, args: argparse.Namespace) -> None:
    """A cold `setup --sandbox` (new workspace, new sandbox) with the per-user cache warm."""
    pythons = {"this": sys.executable}
    if args.baseline_python:
        pythons["baseline"] = args.baseline_python
    setup = ("setup", "--sandbox", "--variant", args.variant, "--cann", args.cann, "-w")
    times: dict = {name: ([], []) for name in pythons}
    for name, python in pythons.items():  # each one's machine-wide cache made, untimed
        argv = [python, "-m", "cannbuild", *setup, str(tmp / f"prime-{name}")]
        run_measured(
            argv,
            env=cache_env(tmp / f"cache-{name}"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=tmp,  # `-m cannbuild` takes the package of its cwd first: each its own
        )
    for i in range(args.runs):
        for name, python in pythons.items():
            argv = [python, "-m", "cannbuild", *setup, str(tmp / f"ws-{name}-{i}")]
            wall, cpu = run_measured(
                argv,
                env=cache_env(tmp / f"cache-{name}"),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=tmp,
            )
            times[name][0].append(wall)
            times[name][1].append(cpu)
    load = os.getloadavg()[0]
    print(f"cold setup --sandbox {args.variant} {args.cann}, warm cache (load {load:.1f}):")
    base = times.get("baseline")
    for name, (walls, cpus) in times.items():
        print(
            fmt(
                f"  {name} wall",
                summary(walls),
                summary(base[0]) if base and name != "baseline" else None,
            )
        )
        print(
            fmt(
                f"  {name} CPU",
                summary(cpus),
                summary(base[1]) if base and name != "baseline" else None,
            )
        )


if __name__ == "__main__":
    main()
