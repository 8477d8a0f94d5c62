"""Summarising a large trace_view.json (issue: 100 MB in under 10 s, bounded memory).

Generates a torch_npu-style trace (a bare array: Python ops, the CANN API layer,
flows, the Ascend Hardware track with FlashAttentionScore, unfused
MatMul -> Mul -> Softmax -> MatMul chains and other kernels), then times
`cannbuild profile FILE --json` (the CLI end to end, timeline PNG included) and
the summariser alone in a fresh process, reporting the median of --runs runs and
the peak RSS next to the file size, wall and CPU time (the machine may be shared).
Several sizes show the memory stays bounded: RSS does not grow with the file.

    python bench/bench_profile.py [--mb 25 100] [--runs 5] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import cannbuild_argv, compile_package  # noqa: E402

DEVICE, CANN, PY = 800, 43767502, 437675
KERNELS = (  # name, core, duration us
    ("aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "MIX_AIC", 30.16),
    ("aclnnMatmul_BatchMatMulNd_BatchMatMulV2", "AI_CORE", 12.5),
    ("aclnnMuls_MulAiCore_Mul", "AI_VECTOR_CORE", 4.1),
    ("aclnnSoftmax_SoftmaxAiCore_SoftmaxV2", "AI_VECTOR_CORE", 9.8),
    ("aclnnMatmul_BatchMatMulNd_BatchMatMulV2", "AI_CORE", 11.9),
    ("aclnnAdd_AddAiCore_Add", "AI_VECTOR_CORE", 2.0),
    ("aclnnRmsNorm_RmsNormAiCore_RmsNorm", "AI_VECTOR_CORE", 6.5),
    ("aclnnMatmul_MatMulV3Common_MatMulV3", "AI_CORE", 40.2),
)


def generate(path: Path, megabytes: int) -> int:
    """A trace of about `megabytes` MB; returns the number of events."""
    target = megabytes * 1024 * 1024
    meta = [
        {"ph": "M", "name": "process_name", "pid": PY, "tid": 0, "args": {"name": "Python"}},
        {"ph": "M", "name": "process_labels", "pid": CANN, "tid": 0, "args": {"labels": "CPU"}},
        {
            "name": "process_name",
            "pid": DEVICE,
            "tid": 0,
            "args": {"name": "Ascend Hardware"},
            "ph": "M",
        },
        {"name": "process_labels", "pid": DEVICE, "tid": 0, "args": {"labels": "NPU 0"}, "ph": "M"},
        {"name": "thread_name", "pid": DEVICE, "tid": 3, "args": {"name": "Stream 3"}, "ph": "M"},
    ]
    ts = 1736413971411629.125
    count = 0
    task = 0
    with open(path, "w") as out:
        out.write(json.dumps(meta)[:-1])
        count += len(meta)
        while out.tell() < target:
            events = []
            for name, core, dur in KERNELS:
                task += 1
                flow = str(38654705663 + task)
                events.append(
                    {
                        "ph": "X",
                        "name": "aten::" + name.split("_")[0][5:].lower(),
                        "pid": PY,
                        "tid": PY,
                        "ts": f"{ts - 30:.3f}",
                        "dur": 12.25,
                        "cat": "cpu_op",
                        "args": {"Sequence number": task, "Fwd thread id": 0},
                    }
                )
                events.append(
                    {
                        "name": f"HostToDevice{flow}",
                        "ph": "s",
                        "cat": "HostToDevice",
                        "id": flow,
                        "pid": CANN,
                        "tid": PY,
                        "ts": f"{ts - 6:.3f}",
                    }
                )
                events.append(
                    {
                        "name": name,
                        "pid": DEVICE,
                        "tid": 3,
                        "ts": f"{ts:.3f}",
                        "dur": dur,
                        "args": {
                            "Model Id": 4294967295,
                            "Task Type": core,
                            "Physic Stream Id": 3,
                            "Task Id": task,
                            "Batch Id": 0,
                            "Subtask Id": 4294967295,
                            "connection_id": task,
                        },
                        "ph": "X",
                    }
                )
                events.append(
                    {
                        "name": f"HostToDevice{flow}",
                        "ph": "f",
                        "id": flow,
                        "ts": f"{ts:.3f}",
                        "cat": "HostToDevice",
                        "pid": DEVICE,
                        "tid": 3,
                        "bp": "e",
                    }
                )
                ts += dur + 1.5
            out.write(", " + json.dumps(events)[1:-1])
            count += len(events)
        out.write("]")
    return count


SUMMARISE = """
import json, resource, sys, time
from pathlib import Path
start = time.perf_counter()
from cannbuild.profile.summary import summarise
s = summarise(Path(sys.argv[1]), timeline=True)
me = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"s": time.perf_counter() - start, "cpu_s": me.ru_utime + me.ru_stime,
                  "rss_mb": me.ru_maxrss / 1024,
                  "kernels": s.analysis.kernels, "chains": s.analysis.chain_count}))
"""


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _spread(values: List[float]) -> str:
    return (
        f"median {statistics.median(values):.2f} s (min {min(values):.2f}, "
        f"max {max(values):.2f}, n={len(values)})"
    )


def bench(tmp: Path, megabytes: int, runs: int) -> None:
    trace = tmp / f"{megabytes}mb" / "trace_view.json"
    trace.parent.mkdir()
    events = generate(trace, megabytes)
    size = trace.stat().st_size / 1024 / 1024
    print(f"trace: {size:.1f} MB, {events} events ({trace})")
    inner, inner_cpu, rss, cli, cli_cpu = [], [], [], [], []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", SUMMARISE, str(trace)],
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(out.stdout)
        inner.append(result["s"])
        inner_cpu.append(result["cpu_s"])
        rss.append(result["rss_mb"])
        cpu0, start = _cpu_of_children(), time.perf_counter()
        subprocess.run(
            cannbuild_argv("profile", str(trace), "--json", "--out", str(trace.parent / "out")),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        cli.append(time.perf_counter() - start)
        cli_cpu.append(_cpu_of_children() - cpu0)
    print(f"  kernels {result['kernels']}, unfused chains {result['chains']}")
    print(f"  summarise (python start-up + import + read), wall: {_spread(inner)}")
    print(f"  summarise, CPU (user+sys): {_spread(inner_cpu)}")
    print(f"  summarise, peak RSS: median {statistics.median(rss):.0f} MB for a {size:.0f} MB file")
    print(f"  cannbuild profile FILE --json (CLI, timeline PNG), wall: {_spread(cli)}")
    print(f"  cannbuild profile FILE --json, CPU (user+sys): {_spread(cli_cpu)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--mb", type=int, nargs="+", default=[100], help="trace sizes (several: RSS must not grow)"
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the generated traces")
    args = parser.parse_args()
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="cannbuild-bench-profile-"))
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start")
    for megabytes in args.mb:
        bench(tmp, megabytes, args.runs)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
