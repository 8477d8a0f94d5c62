"""Pipeline timings on the sandbox (medians of --runs):

* cold `cannbuild setup --sandbox` (A2, CANN 8.5.0) in a fresh workspace, with
  the sandbox already created (its creation is bench_sandbox.py's figure);
* the no-op rerun of the same setup (every step up to date; validation reused), and
  with --part noop only that, over --runs interleaved with two floors measured side by
  side: the Python start-up and `cannbuild --version` (the CLI's own start-up: its option
  table and parser; invoke is not loaded by the `cannbuild` script); with --baseline DIR
  (a checkout of another cannbuild, e.g. `git worktree add /tmp/old <commit>`) that
  one's no-op too, on a sandbox and workspace of its own, interleaved with the others;
  and the no-op's time after start-up split by bench/noop_parts.py: imports and the
  task, the cyclic collector's part of it, and what is left for start-up and exit;
* `cannbuild validate --sandbox` on an installed workspace;
* orchestration overhead: cold `cannbuild install` (fetch + build + install: setup
  without its validation, which has no by-hand twin) in an empty workspace vs a shell
  script doing the same job by hand: source set_env.sh, clone each repo at its tag,
  place the pinned opbase and the third-party archives, run the plan's rendered
  commands.  For A2 / CANN 8.5.0 (the issue's configuration) the script installs
  opbase into the toolkit itself, as the tutorials do, so it runs on a sandbox of its
  own (cannbuild stages opbase and overlays the toolkit instead, and that is counted
  as cannbuild's overhead); A3 / CANN 9.0.0 too.  Also the part of cannbuild's wall
  time spent outside the steps (start-up, host reading, git, stamps), and the median
  of the per-pair ratios (each pair runs back to back), wall time and CPU time;
* what deriving the toolkit's needs from the checkouts costs a cold and a no-op run
  (--part derive, bench/derive_costs.py: in process, and end to end against --baseline);
* the same A2 / CANN 8.5.0 comparison in instructions executed, every process
  counted (valgrind's callgrind, --part instructions, one pair, about 12 minutes).
  On a shared 2-core machine wall and CPU times of the same job move by 10-30 %
  from run to run; instruction counts repeat, so a 5 % budget can be read off them.
  Instructions are work, not latency: what cannbuild overlaps (the fetch of one
  repo during the other's build) is not credited, and kernel time is not counted.

  python bench/bench_pipeline.py [--runs 3] [--part setup|noop|overhead|instructions|derive]
                                 [--baseline DIR] [--real DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))

import derive_costs

from common import (
    cannbuild_argv,
    compile_package,
    fmt,
    run_measured,
    sandbox_create_argv,
    summary,
)


def env_for(sandbox: Path) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "CANNBUILD_"))}
    env["CANNBUILD_SANDBOX_DIR"] = str(sandbox)
    return env


def cb(cwd: Path, env: Dict[str, str], *args: str) -> float:
    return run_measured(cannbuild_argv(*args), cwd=cwd, env=env, capture_output=True)[0]


def script_for(cwd: Path, env: Dict[str, str], reference: Path, variant: str, cann: str) -> Path:
    """What an engineer would type for a cold build, as a shell script: clone each repo
    at its tag (the pinned opbase too), put the third-party archives in place, then the
    plan's rendered commands, each with its cwd and env.  `reference` is a workspace
    `cannbuild fetch` filled (untimed): its lock and checkout markers say what goes where."""
    plan = json.loads(
        subprocess.run(
            cannbuild_argv("plan", "--json", *sandbox_flags(variant, cann)),
            cwd=cwd,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    sandbox = json.loads((Path(env["CANNBUILD_SANDBOX_DIR"]) / "sandbox.json").read_text())
    lock = tomllib.loads((reference / "cannbuild.lock").read_text())
    src = cwd / ".cannbuild" / "src"
    downloads = cwd / "downloads"
    q = shlex.quote
    # as the tutorials say: source the toolkit's set_env.sh once; then the settings the
    # plan adds to it (the mirror for git, TMPDIR) -- the same env each step gets
    first = plan["steps"][0]["env"]
    extra = {k: v for k, v in first.items() if k.startswith("GIT_") or k == "TMPDIR"}
    lines = [
        "#!/bin/bash",
        "set -e",
        f"source {q(sandbox['set_env'])}",
        f"mkdir -p {q(str(cwd / '.cannbuild' / 'tmp'))}",  # TMPDIR must exist (valgrind needs it)
        "export " + " ".join(f"{k}={q(v)}" for k, v in sorted(extra.items())),
        f"mkdir -p {q(str(downloads))}",
    ]
    for item in lock["third_party"]:
        local = "file://" + sandbox["mirror"] + "/" + item["url"][len(sandbox["upstream"]) :]
        name = item["url"].rsplit("/", 1)[-1]
        lines.append(f"curl -fsSL -o {q(str(downloads / name))} {q(local)}")
    for repo in lock["repos"]:
        owner, _, nested = repo["name"].partition(":")
        if not nested:
            tag = repo["ref"].split()[-1]
            lines.append(f"git clone -q --branch {q(tag)} {q(repo['url'])} {q(str(src / owner))}")
        else:
            dest = src / owner / nested
            lines.append(f"git clone -q --no-checkout {q(repo['url'])} {q(str(dest))}")
            lines.append(
                f"git -C {q(str(dest))} -c advice.detachedHead=false checkout -q {repo['commit']}"
            )
    for marker in sorted((reference / ".cannbuild" / "src").glob(".*.checkout.json")):
        owner = marker.name[1 : -len(".checkout.json")]
        for dest in json.loads(marker.read_text())["third_party"]:
            target = src / owner / dest
            lines.append(f"mkdir -p {q(str(target.parent))}")
            lines.append(f"cp {q(str(downloads / target.name))} {q(str(target))}")
    for step in plan["steps"]:
        command = step["command"]
        if step["name"] == "opbase-install":
            # by hand, opbase goes into the toolkit itself (cannbuild stages it and
            # overlays the toolkit instead): this script runs on a sandbox of its own
            command = re.sub(r"--install-path=\S+", '--install-path="$ASCEND_HOME_PATH"', command)
        if "<output of" in command:  # the install steps take the package the build made
            repo = "opbase" if "opbase" in step["name"] else "ops-transformer"
            name = (
                "cann-opbase_*.run"
                if repo == "opbase"
                else "cann-ops-transformer-custom_linux-*.run"
            )
            command = command.replace(
                q(f"<output of {step['name'].replace('install', 'build')}>"),
                f"$(ls {src}/{repo}/build_out/{name})",
            )
        lines.append(f"( cd {q(step['cwd'])} && {command} )")
    path = cwd.parent / f"{cwd.name}-by-hand.sh"
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--part",
        choices=("all", "setup", "noop", "overhead", "instructions", "derive"),
        default="all",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="--part noop, derive: also time the cannbuild checked out in this folder",
    )
    parser.add_argument(
        "--real", type=Path, help="--part derive: a real ops-transformer tree to derive from too"
    )
    args = parser.parse_args()
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="cannbuild-bench-pipeline-"))
    sb85, sb85_hand, sb90 = tmp / "sb-A2-8.5.0", tmp / "sb-A2-8.5.0-by-hand", tmp / "sb-A3-9.0.0"
    if args.part == "derive":
        derive_part(tmp, sb90, args)
        shutil.rmtree(tmp)
        return
    needed = [sandbox_create_argv(sb85)]
    if args.part != "noop":
        needed += [sandbox_create_argv(sb85_hand), sandbox_create_argv(sb90, "A3", "9.0.0")]
    for argv in needed:
        subprocess.run(argv, check=True, capture_output=True)

    if args.part in ("all", "setup"):
        setup_timings(tmp, sb85, args.runs)
    if args.part == "noop":
        noop_timings(tmp, sb85, args.runs, args.baseline)
    if args.part in ("all", "overhead"):
        overhead_timings(tmp, sb85, sb85_hand, "A2", "8.5.0", args.runs)
        overhead_timings(tmp, sb90, sb90, "A3", "9.0.0", args.runs)
    if args.part in ("all", "instructions"):
        overhead_instructions(tmp, sb85, sb85_hand, "A2", "8.5.0")
    shutil.rmtree(tmp)


def derive_part(tmp: Path, sb90: Path, args: argparse.Namespace) -> None:
    subprocess.run(sandbox_create_argv(sb90, "A3", "9.0.0"), check=True, capture_output=True)
    env = env_for(sb90)
    derive_costs.in_process(tmp, sb90, env, args.runs, args.real)
    if args.baseline is not None:
        derive_costs.end_to_end(tmp, sb90, env, args.runs, args.baseline)


def setup_timings(tmp: Path, sb85: Path, runs: int) -> None:
    cold: List[float] = []
    noop: List[float] = []
    validate: List[float] = []
    for i in range(runs):
        ws = tmp / f"setup{i}"
        ws.mkdir()
        cold.append(cb(ws, env_for(sb85), "setup", "--sandbox"))
        noop.append(cb(ws, env_for(sb85), "setup", "--sandbox"))
        validate.append(cb(ws, env_for(sb85), "validate", "--sandbox"))
    cold_s, noop_s = summary(cold), summary(noop)
    print(fmt("setup --sandbox A2 8.5.0, cold", cold_s))
    print(fmt("setup --sandbox, no-op rerun", noop_s, cold_s))
    print(fmt("validate --sandbox", summary(validate)))


def noop_workspace(folder: Path, env: Dict[str, str]) -> Path:
    """A workspace whose `setup --sandbox` has run twice: the second fills the caches a
    run that acts keeps (templates, renders, third-party files)."""
    folder.mkdir()
    cb(folder, env, "setup", "--sandbox")  # cold, not counted
    cb(folder, env, "setup", "--sandbox")
    return folder


def noop_timings(tmp: Path, sb85: Path, runs: int, baseline: Optional[Path]) -> None:
    """The no-op `setup --sandbox` (the target: under 0.3 s median) beside its floors,
    interleaved so load moves all of them alike; wall and CPU (user + sys, children too)."""
    env = env_for(sb85)
    ws = noop_workspace(tmp / "noop", env)
    argvs = {
        "python -c pass (floor)": ([sys.executable, "-c", "pass"], ws, env),
        "cannbuild --version (CLI floor)": (cannbuild_argv("--version"), ws, env),
        "setup --sandbox, no-op": (cannbuild_argv("setup", "--sandbox"), ws, env),
    }
    old_name = ""
    if baseline is not None:
        baseline = baseline.resolve()
        compile_package(baseline)
        old = env_for(tmp / "sb-baseline")
        old["PYTHONPATH"] = os.pathsep.join([str(baseline), os.environ.get("PYTHONPATH", "")])
        subprocess.run(
            sandbox_create_argv(tmp / "sb-baseline"), check=True, capture_output=True, env=old
        )
        old_name = f"setup --sandbox, no-op ({baseline.name})"
        argvs[old_name] = (
            cannbuild_argv("setup", "--sandbox"),
            noop_workspace(tmp / "old", old),
            old,
        )
    wall: Dict[str, List[float]] = {k: [] for k in argvs}
    cpu: Dict[str, List[float]] = {k: [] for k in argvs}
    parts: List[Dict[str, Any]] = []
    for _ in range(runs):
        for name, (argv, cwd, run_env) in argvs.items():
            w, c = run_measured(argv, cwd=cwd, env=run_env, capture_output=True)
            wall[name].append(w)
            cpu[name].append(c)
        parts.append(in_process_parts(ws, env))
    floor = summary(wall["python -c pass (floor)"])
    for name in argvs:
        print(fmt(name, summary(wall[name]), floor))
        print(fmt(f"  cpu of {name}", summary(cpu[name])))
    print_parts(parts, summary(wall["setup --sandbox, no-op"])["median_s"])
    if baseline is not None:
        for kind, times in (("wall", wall), ("cpu", cpu)):
            pairs = zip(times["setup --sandbox, no-op"], times[old_name])
            ratio = statistics.median(new / old for new, old in pairs)
            print(f"no-op, this checkout / {baseline.name}: {ratio:.2f}x {kind} (median per round)")


def in_process_parts(ws: Path, env: Dict[str, str]) -> Dict[str, Any]:
    """One no-op run through bench/noop_parts.py: its time after interpreter start-up,
    and the part of it the cyclic collector took."""
    script = Path(__file__).resolve().parent / "noop_parts.py"
    proc = subprocess.run(
        [sys.executable, str(script), "setup", "--sandbox"],
        cwd=ws,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    parts = json.loads(proc.stdout.strip().splitlines()[-1])
    if parts["exit"] not in (0, None):
        raise SystemExit(f"the no-op under noop_parts.py exited {parts['exit']}")
    return parts


def print_parts(parts: List[Dict[str, Any]], wall: Optional[float] = None) -> None:
    total = statistics.median(p["total_s"] for p in parts)
    spent = statistics.median(p["gc_s"] for p in parts)
    line = (
        f"in-process no-op (imports and the task, after start-up): median {total * 1000:.1f} ms,"
        f" of which {int(parts[0]['collections'])} collections {spent * 1000:.1f} ms;"
        f" {int(parts[0]['modules'])} cannbuild modules loaded"
    )
    if wall is not None:
        line += f"; start-up and exit (wall minus that) {(wall - total) * 1000:.1f} ms"
    print(line)


def sandbox_flags(variant: str, cann: str) -> Tuple[str, ...]:
    return ("--sandbox", "--variant", variant, "--cann", cann)


def reference_for(tmp: Path, hand_sandbox: Path, variant: str, cann: str) -> Path:
    """A workspace `cannbuild fetch` filled, once and untimed: what the by-hand script clones."""
    reference = tmp / f"reference-{variant}-{cann}"
    if not reference.is_dir():
        reference.mkdir()
        cb(reference, env_for(hand_sandbox), "fetch", *sandbox_flags(variant, cann))
    return reference


def cold_build(
    label: str,
    ws: Path,
    sandbox: Path,
    hand_sandbox: Path,
    reference: Path,
    variant: str,
    cann: str,
) -> Tuple[List[str], Dict[str, str]]:
    """argv and env of a cold build in the empty `ws`: cannbuild's ("tool") or by hand."""
    if label == "tool":
        return cannbuild_argv("install", *sandbox_flags(variant, cann)), env_for(sandbox)
    env = env_for(hand_sandbox)
    return ["bash", str(script_for(ws, env, reference, variant, cann))], env


def check_installed(ws: Path, label: str) -> None:
    """Both must have done the whole job, or the comparison means nothing."""
    assert list((ws / ".cannbuild" / "opp" / "vendors").glob("*/op_api/lib/*.so")), label


def overhead_timings(
    tmp: Path, sandbox: Path, hand_sandbox: Path, variant: str, cann: str, runs: int
) -> None:
    """Cold `cannbuild install` on `sandbox` vs the same job by hand on `hand_sandbox`
    (the same emulated host; its own where the by-hand script installs into the toolkit)."""
    reference = reference_for(tmp, hand_sandbox, variant, cann)
    wall: Dict[str, List[float]] = {"tool": [], "hand": []}
    cpu: Dict[str, List[float]] = {"tool": [], "hand": []}
    fixed: List[float] = []
    for i in range(runs):
        # alternate which goes first, so neither always meets a warmer page cache
        for label in ("tool", "hand") if i % 2 == 0 else ("hand", "tool"):
            ws = tmp / f"{label}-{variant}-{cann}-{i}"
            ws.mkdir()
            argv, env = cold_build(label, ws, sandbox, hand_sandbox, reference, variant, cann)
            took, work = run_measured(argv, cwd=ws, env=env, capture_output=True)
            wall[label].append(took)
            cpu[label].append(work)
            if label == "tool":
                steps = sum(
                    json.loads(p.read_text())["duration_s"]
                    for p in (ws / ".cannbuild" / "stamps").glob("*.json")
                )
                fixed.append(took - steps)
            check_installed(ws, label)
    ours, hand, ours_cpu, hand_cpu = wall["tool"], wall["hand"], cpu["tool"], cpu["hand"]
    hand_s = summary(hand)
    print(fmt(f"by hand: clone + commands ({variant} {cann})", hand_s))
    print(fmt(f"cannbuild install ({variant} {cann}), cold", summary(ours), hand_s))
    print(fmt("  of which outside the steps", summary(fixed)))
    paired_line("  paired ratio, wall", ours, hand)
    hand_cpu_s = summary(hand_cpu)
    print(fmt("  CPU time, by hand", hand_cpu_s))
    print(fmt("  CPU time, cannbuild", summary(ours_cpu), hand_cpu_s))
    paired_line("  paired ratio, CPU time", ours_cpu, hand_cpu)


def callgrind_argv(out: Path, argv: List[str]) -> List[str]:
    return [
        "valgrind",
        "--tool=callgrind",
        "--trace-children=yes",
        f"--callgrind-out-file={out}/cg.%p",
        "-q",
        *argv,
    ]


def instructions_by_process(out: Path) -> Dict[str, int]:
    """Instructions executed, per process (its command line), from callgrind's files."""
    counts: Dict[str, int] = {}
    for path in out.glob("cg.*"):
        command = ""
        with path.open(errors="replace") as f:
            for line in f:
                if line.startswith("cmd:"):
                    command = f"{line[4:].strip()} [{path.name}]"
                elif line.startswith("summary:"):
                    counts[command] = int(line.split()[1])
                    break
    return counts


def overhead_instructions(
    tmp: Path, sandbox: Path, hand_sandbox: Path, variant: str, cann: str
) -> None:
    """One cold `cannbuild install` and one by-hand run, every process under callgrind."""
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed (apt-get install valgrind); skipped")
        return
    reference = reference_for(tmp, hand_sandbox, variant, cann)
    totals: Dict[str, int] = {}
    own = 0
    for label in ("hand", "tool"):
        ws = tmp / f"instr-{label}-{variant}-{cann}"
        out = tmp / f"callgrind-{label}"
        ws.mkdir()
        out.mkdir()
        argv, env = cold_build(label, ws, sandbox, hand_sandbox, reference, variant, cann)
        subprocess.run(callgrind_argv(out, argv), cwd=ws, env=env, check=True, capture_output=True)
        check_installed(ws, label)
        counts = instructions_by_process(out)
        totals[label] = sum(counts.values())
        if label == "tool":  # cannbuild's own process: start-up, host reading, planning
            own = sum(n for cmd, n in counts.items() if "-m cannbuild install" in cmd)
    hand, tool = totals["hand"], totals["tool"]
    print(f"instructions, by hand ({variant} {cann})    {hand / 1e9:7.3f} G")
    print(
        f"instructions, cannbuild install        {tool / 1e9:7.3f} G"
        f"  ratio {tool / hand:.3f}x  (extra {(tool - hand) / 1e9:.3f} G)"
    )
    print(f"  of which cannbuild's own process     {own / 1e9:7.3f} G")


def paired_line(name: str, ours: List[float], hand: List[float]) -> None:
    """Each pair ran back to back: its ratio cancels the drift between pairs."""
    paired = sorted(o / h for o, h in zip(ours, hand))
    print(
        f"{name:<34} median {statistics.median(paired):.3f}x"
        f"  (min {paired[0]:.3f}, max {paired[-1]:.3f}, n={len(paired)})"
    )


if __name__ == "__main__":
    main()
