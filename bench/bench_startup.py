"""Start-up of two short runs against the imports cannbuild cannot do without (issue 39):
a no-op `cannbuild setup --sandbox` (a workspace already set up, run again) and
`cannbuild doctor --json` on that workspace, each beside a bare
`python -c "import invoke, jinja2, packaging, distro"`, interleaved round by round so
the machine's load moves all three alike.  CPU time (user + sys of the process and
every child it waited for: git, bash, probes) is the figure; wall time is printed too.
The bars: no-op at most 1.2x, doctor at most 1.1x the bare import (medians).

On a shared 2-core machine CPU time moves 10-30 % with what the other core compiles:
run it under `flock /tmp/cannbuild-heavy.lock` and repeat when the figures disagree.
Run it from a venv as the README's set-up makes one (no torch-npu): beside torch_npu,
doctor imports torch and torch_npu in a child (host/judge_imports.py), seconds by design.
With --baseline DIR (a checkout of another cannbuild, e.g. `git worktree add /tmp/old
main`) that one's two runs too, on a workspace of its own, in the same rounds.

    python bench/bench_startup.py [--runs 15] [--keep DIR] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import compile_package  # noqa: E402

BARE = "import invoke, jinja2, packaging, distro"
BARS = {"setup --sandbox, no-op": 1.2, "doctor --json": 1.1}


def argv_of(*args: str) -> List[str]:
    return [sys.executable, "-m", "cannbuild", *args]


def measured(argv: Sequence[str], cwd: Path, env: Dict[str, str]) -> Tuple[float, float, int]:
    """(wall s, CPU s, exit code) of `argv` and everything it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    code = subprocess.run(argv, cwd=cwd, env=env, capture_output=True).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, code


def workspace(ws: Path, env: Dict[str, str]) -> Path:
    """A workspace whose `setup --sandbox` ran twice (the second fills what a run keeps)."""
    ws.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        proc = subprocess.run(
            argv_of("setup", "--sandbox"), cwd=ws, env=env, capture_output=True, text=True
        )
        if proc.returncode:
            raise SystemExit(f"setup --sandbox exited {proc.returncode}:\n{proc.stderr}")
    return ws


def env_for(tmp: Path, checkout: Optional[Path]) -> Dict[str, str]:
    """The environment of one checkout's runs: its sandbox, and that checkout first on the
    path (the one holding this script unless another is given), whatever is installed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "CANNBUILD_"))}
    env["CANNBUILD_SANDBOX_DIR"] = str(tmp / "sandbox")
    if checkout is not None:
        compile_package(checkout)
        env["PYTHONPATH"] = os.pathsep.join([str(checkout), env.get("PYTHONPATH", "")])
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--keep", type=Path, help="set up (or reuse) the workspaces here")
    parser.add_argument("--baseline", type=Path, help="another cannbuild checkout, side by side")
    args = parser.parse_args()
    compile_package()
    if importlib.util.find_spec("torch_npu") is not None:
        print(
            "note: torch_npu is installed here: doctor's import probe takes seconds",
            file=sys.stderr,
        )
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="cannbuild-bench-startup-"))
    bare = f"bare {BARE}"
    runs: Dict[str, Tuple[List[str], Path, Dict[str, str]]] = {
        bare: ([sys.executable, "-c", BARE], tmp, env_for(tmp, None))
    }
    for label, checkout in (("", None), (" (baseline)", args.baseline)):
        if label and checkout is None:
            continue
        folder = tmp / ("baseline" if label else "this")
        env = env_for(folder, checkout.resolve() if checkout else HERE.parent)
        ws = workspace(folder / "project", env)
        runs[f"setup --sandbox, no-op{label}"] = (argv_of("setup", "--sandbox"), ws, env)
        runs[f"doctor --json{label}"] = (argv_of("doctor", "--json"), ws, env)
    wall: Dict[str, List[float]] = {k: [] for k in runs}
    cpu: Dict[str, List[float]] = {k: [] for k in runs}
    for name, (argv, cwd, env) in runs.items():  # warm the page cache, check the exit codes
        code = measured(argv, cwd, env)[2]
        if code not in (0, 1) or (code and not name.startswith("doctor")):
            raise SystemExit(f"{name} exited {code}")
    for _ in range(args.runs):
        for name, (argv, cwd, env) in runs.items():
            w, c, _ = measured(argv, cwd, env)
            wall[name].append(w)
            cpu[name].append(c)
    for name in runs:
        line = (
            f"{name:<52} cpu median {statistics.median(cpu[name]) * 1000:6.1f} ms"
            f"  wall median {statistics.median(wall[name]) * 1000:6.1f} ms"
        )
        if name != bare:
            ratio = statistics.median(cpu[name]) / statistics.median(cpu[bare])
            per_round = statistics.median(a / b for a, b in zip(cpu[name], cpu[bare]))
            bar = BARS[name.split(" (")[0]]
            line += f"  cpu {ratio:.2f}x bare (per round {per_round:.2f}x; bar {bar}x)"
        print(line)
    print(f"n={args.runs} rounds, interleaved; load average {os.getloadavg()[0]:.2f}")
    if args.keep is None:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
