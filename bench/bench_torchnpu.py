"""Time the torch_npu validation route adds on the sandbox (issue: <= 10 s).

The route is what `cannbuild validate` runs after the C API route: a child process
with the package's env imports the real torch_npu and runs the 12 cases on the
emulated NPU while this process computes the float64 references, then the outputs
are judged.  torch is imported once beforehand, as the C API route already did in
a real validation.  Whole validations (library, C API, torch_npu; no example) are
timed too, for context.  CPU time is printed next to wall time: on a shared 2-core
machine it moves far less with the other processes' load.  Needs torch and torch-npu:

    python bench/bench_torchnpu.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_fa import installed_workspace  # noqa: E402

from common import fmt, summary  # noqa: E402


def cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from cannbuild.host.pystack import read_python_stack
    from cannbuild.host.toolchain import capture_env
    from cannbuild.validate import ValidationInputs, cases, run_validation, torchnpu

    stack = read_python_stack()
    if stack.torch_npu is None:
        sys.exit("torch-npu is not installed: pip install torch-npu==<torch's version>")
    cases.reference_torch()
    tmp = Path(tempfile.mkdtemp(prefix="cannbuild-bench-torchnpu-"))
    ws = installed_workspace(tmp)
    vendor = ws / "opp/vendors/custom_transformer"
    base = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_")}
    toolkit = capture_env(ws / "sandbox/sysroot/usr/local/Ascend/cann/set_env.sh", base).env
    env = dict(capture_env(vendor / "bin/set_env.bash", toolkit).env)
    library = vendor / "op_api/lib/libcust_opapi.so"
    torchnpu.run(cases.CASES, library, env, tmp / "warm")  # page cache, compiled .pyc
    walls, child_cpu, own_cpu, child_wall = [], [], [], []
    for i in range(args.runs):
        before = (cpu(resource.RUSAGE_CHILDREN), cpu(resource.RUSAGE_SELF))
        start = time.perf_counter()
        outcome = torchnpu.run(cases.CASES, library, env, tmp / f"route{i}")
        walls.append(time.perf_counter() - start)
        child_cpu.append(cpu(resource.RUSAGE_CHILDREN) - before[0])
        own_cpu.append(cpu(resource.RUSAGE_SELF) - before[1])
        child_wall.append(outcome.details["duration_s"])
        assert outcome.status == "PASS", outcome.message
    inputs = ValidationInputs(
        vendor_dir=vendor,
        library=library,
        symbols=("aclnnFlashAttentionScoreV2",),
        env=env,
        workdir=tmp / "validate",
        target="sandbox",
        no_device_reason="",
    )
    totals = []
    for _ in range(max(args.runs // 2, 1)):
        start = time.perf_counter()
        report = run_validation(inputs)
        totals.append(time.perf_counter() - start)
        assert report.status == "PASS", [c.to_json() for c in report.checks]
    print(f"torch {stack.torch}, torch_npu {stack.torch_npu}, 12 cases, {os.cpu_count()} CPUs")
    print(fmt("torch_npu route (added time)", summary(walls)))
    print(fmt("  of which the child process", summary(child_wall)))
    print(
        f"  CPU time (user + sys) median: child {statistics.median(child_cpu):.1f} s, "
        f"this process (references, judging) {statistics.median(own_cpu):.1f} s"
    )
    print(fmt("whole validation (for context)", summary(totals)))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
