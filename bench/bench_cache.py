"""The shared compile cache, measured: two fresh workspaces ("runners") on one sandbox
sharing one local redis-server (started and stopped here, on 127.0.0.1 with a password).

* runner 1: a cold `cannbuild install --sandbox` with CANNBUILD_CACHE_REMOTE set: every
  compilation misses and is written to the remote;
* runner 2: a cold `install --locked` from runner 1's lock in another fresh workspace (an
  empty local ccache): its compilations come from the remote;
* without a remote: the same cold install in a third workspace, for the timings a team
  without the remote keeps.

Figures: the report's `cache` record (remote hits / compilations the local cache could
not serve), the compile phase (each compiler invocation's span in ccache's own log,
CCACHE_LOGFILE, summed: configure, link and packaging excluded) and the build steps'
wall time.  Medians of --runs (each run: a fresh redis, fresh workspaces).

  python bench/bench_cache.py [--runs 3] [--variant A2 --cann 8.5.0]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Mapping, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from common import cannbuild_argv, sandbox_create_argv  # noqa: E402
from sharedcache import compile_phase, running_redis  # noqa: E402

BUILD_STEPS = ("opbase-build", "ops-transformer-build")


def env_for(sandbox: Path, **extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "CANNBUILD_"))}
    env.update(CANNBUILD_SANDBOX_DIR=str(sandbox), CANNBUILD_RETRIES="0", **extra)
    return env


def runner(
    folder: Path, sandbox: Path, variant: str, cann: str, remote: Optional[str], *extra: str
) -> Dict[str, float]:
    folder.mkdir(parents=True)
    log = folder / "ccache.log"
    # a fresh runner's own ccache folder (the builds use the ccache PATH finds, remote or
    # not; with a remote cannbuild puts it in the workspace)
    env = env_for(sandbox, CCACHE_LOGFILE=str(log), CCACHE_DIR=str(folder / "ccache-home"))
    if remote:
        env["CANNBUILD_CACHE_REMOTE"] = remote
    argv = cannbuild_argv("install", "--sandbox", "--variant", variant, "--cann", cann, *extra)
    subprocess.run(argv, cwd=folder, env=env, check=True, capture_output=True)
    report = json.loads((folder / ".cannbuild/reports/latest/report.json").read_text())
    steps = {s["name"]: s["duration_s"] for s in report["steps"]}
    cache: Mapping[str, int] = report["cache"]
    phase = compile_phase(log) if log.is_file() else {"seconds": 0.0, "invocations": 0.0}
    served_elsewhere = cache.get("compilations", 0) - cache.get("local_hits", 0)
    return {
        "compile_s": phase["seconds"],
        "compilations": float(cache.get("compilations", phase["invocations"])),
        "remote_hits": float(cache.get("remote_hits", 0)),
        "misses": float(cache.get("misses", 0)),
        "remote_share": (cache.get("remote_hits", 0) / served_elsewhere) if served_elsewhere else 0,
        "build_steps_s": sum(steps.get(s, 0.0) for s in BUILD_STEPS),
    }


def median(rows: List[Dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variant", default="A2")
    parser.add_argument("--cann", default="8.5.0")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cache.") as tmp:
        root = Path(tmp)
        sandbox = root / "sandbox"
        subprocess.run(
            sandbox_create_argv(sandbox, args.variant, args.cann), check=True, capture_output=True
        )
        first: List[Dict[str, float]] = []
        second: List[Dict[str, float]] = []
        plain: List[Dict[str, float]] = []
        for run in range(args.runs):
            base = root / f"run{run}"
            with running_redis(base / "redis") as url:
                one = runner(base / "runner-1", sandbox, args.variant, args.cann, url)
                lock = base / "runner-1" / ".cannbuild" / "cannbuild.lock"
                two = runner(
                    base / "second-runner", sandbox, args.variant, args.cann, url,
                    "--locked", "--lock-file", str(lock),
                )  # fmt: skip
            first.append(one)
            second.append(two)
            plain.append(runner(base / "no-remote", sandbox, args.variant, args.cann, None))
        for name, rows in (("runner 1", first), ("runner 2", second), ("no remote", plain)):
            print(
                f"{name:<10} compile phase {median(rows, 'compile_s'):6.2f} s over "
                f"{median(rows, 'compilations'):.0f} compilations; remote hits "
                f"{median(rows, 'remote_hits'):.0f} ({100 * median(rows, 'remote_share'):.0f} % of "
                f"those the local cache could not serve), misses {median(rows, 'misses'):.0f}; "
                f"build steps {median(rows, 'build_steps_s'):6.2f} s  (n={len(rows)})"
            )
        speedup = statistics.median(
            a["compile_s"] / b["compile_s"] for a, b in zip(first, second) if b["compile_s"]
        )
        steps = statistics.median(
            a["build_steps_s"] / b["build_steps_s"] for a, b in zip(first, second)
        )
        print(
            f"runner 2 vs runner 1: compile phase {speedup:.1f}x faster, build steps {steps:.2f}x"
        )
        print(
            "no remote vs runner 1 (the remote's cost on a cold miss): build steps "
            f"{median(plain, 'build_steps_s') / median(first, 'build_steps_s'):.2f}x"
        )


if __name__ == "__main__":
    main()
