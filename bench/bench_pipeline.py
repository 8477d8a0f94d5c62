"""Pipeline timings on the sandbox (medians of --runs):

* cold `cannbuild setup --sandbox` (A2, CANN 8.5.0) in a fresh workspace, with
  the sandbox already created (its creation is bench_sandbox.py's figure);
* the no-op rerun of the same setup (every step up to date; validation runs);
* `cannbuild install` vs running the same rendered commands by hand from a shell
  script, both cold after `cannbuild fetch` (A3, CANN 9.0.0: every step is a command),
  and the part of cannbuild's wall time spent outside the steps (start-up, host
  reading, stamps): a fixed cost, not a per-step one;
* `cannbuild validate --sandbox` on an installed workspace.

  python bench/bench_pipeline.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import cannbuild_argv, compile_package, fmt, sandbox_create_argv, summary


def env_for(sandbox: Path) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "CANNBUILD_"))}
    env["CANNBUILD_SANDBOX_DIR"] = str(sandbox)
    return env


def cb(cwd: Path, env: Dict[str, str], *args: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        cannbuild_argv(*args),
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def script_for(cwd: Path, env: Dict[str, str], variant: str, cann: str) -> Path:
    """The plan's rendered commands, each with its cwd and env, as a shell script."""
    plan = json.loads(
        subprocess.run(
            cannbuild_argv("plan", "--json", "--sandbox", "--variant", variant, "--cann", cann),
            cwd=cwd,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    lines = ["#!/bin/bash", "set -e", f"mkdir -p {shlex.quote(str(cwd / '.cannbuild' / 'tmp'))}"]
    for step in plan["steps"]:
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in step["env"].items())
        command = step["command"]
        if "<output of" in command:  # the install steps take the package the build made
            name = (
                "cann-opbase_*.run"
                if "opbase" in step["name"]
                else "cann-ops-transformer-custom_linux-*.run"
            )
            repo = "opbase" if "opbase" in step["name"] else "ops-transformer"
            command = command.replace(
                shlex.quote(f"<output of {step['name'].replace('install', 'build')}>"),
                f"$(ls {cwd}/.cannbuild/src/{repo}/build_out/{name})",
            )
        lines.append(f"( cd {shlex.quote(step['cwd'])} && env {exports} {command} )")
    path = cwd / "by-hand.sh"
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="cannbuild-bench-pipeline-"))
    sb85, sb90 = tmp / "sb-A2-8.5.0", tmp / "sb-A3-9.0.0"
    for argv in (sandbox_create_argv(sb85), sandbox_create_argv(sb90, "A3", "9.0.0")):
        subprocess.run(argv, check=True, capture_output=True)

    cold: List[float] = []
    noop: List[float] = []
    validate: List[float] = []
    for i in range(args.runs):
        ws = tmp / f"setup{i}"
        ws.mkdir()
        cold.append(cb(ws, env_for(sb85), "setup", "--sandbox"))
        noop.append(cb(ws, env_for(sb85), "setup", "--sandbox"))
        validate.append(cb(ws, env_for(sb85), "validate", "--sandbox"))
    cold_s, noop_s = summary(cold), summary(noop)
    print(fmt("setup --sandbox A2 8.5.0, cold", cold_s))
    print(fmt("setup --sandbox, no-op rerun", noop_s, cold_s))
    print(fmt("validate --sandbox", summary(validate)))

    ours: List[float] = []
    hand: List[float] = []
    fixed: List[float] = []
    for i in range(args.runs):
        # alternate which goes first, so neither always meets a warmer page cache
        order = (("tool", ours), ("hand", hand)) if i % 2 == 0 else (("hand", hand), ("tool", ours))
        for label, times in order:
            ws = tmp / f"{label}{i}"
            ws.mkdir()
            env = env_for(sb90)
            cb(ws, env, "fetch", "--sandbox", "--variant", "A3", "--cann", "9.0.0")
            if label == "tool":
                wall = cb(ws, env, "install", "--sandbox", "--variant", "A3", "--cann", "9.0.0")
                times.append(wall)
                steps = sum(
                    json.loads(p.read_text())["duration_s"]
                    for p in (ws / ".cannbuild" / "stamps").glob("*.json")
                    if p.name != "validate.json"
                )
                fixed.append(wall - steps)
            else:
                script = script_for(ws, env, "A3", "9.0.0")
                start = time.perf_counter()
                subprocess.run(
                    ["bash", str(script)], cwd=ws, env=env, check=True, capture_output=True
                )
                times.append(time.perf_counter() - start)
    hand_s = summary(hand)
    print(fmt("rendered commands by hand (A3 9.0.0)", hand_s))
    print(fmt("cannbuild install (A3 9.0.0), cold", summary(ours), hand_s))
    print(fmt("  of which outside the steps", summary(fixed)))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
