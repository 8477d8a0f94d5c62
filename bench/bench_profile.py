"""`cannbuild profile` on a large torch_npu profile, beside msprof-analyze (issue 28).

Generates a torch_npu-style run folder `bench_<pid>_<time>_ascend_pt/`: `profiler_info.json`
and `ASCEND_PROFILER_OUTPUT/` with a `trace_view.json` of about --mb MB (a bare array:
torch ops on the Python track with their `torch_to_npu` flows, the CANN layer's
HostToDevice flows, the Ascend Hardware track with FlashAttentionScore, unfused
MatMul -> Mul -> Softmax -> MatMul chains and other kernels) and the `kernel_details.csv`
of the same kernels (torch_npu's Level1 header, TAB-suffixed start times, quoted shapes,
CRLF), the files both tools read (layouts: ../shared/reference/profiler-formats.md).

Then, on that one folder, each in a fresh child process (wall, CPU and peak RSS of the
command and everything it waited for), the median of several runs:
- `cannbuild profile DIR --json` (the CLI end to end, timeline PNG included), --runs times;
- `msprof-analyze advisor all -d DIR` (when msprof-analyze is installed: --msprof-analyze
  PATH, else $MSPROF_ANALYZE, else on PATH), --msprof-runs times (it takes minutes).
  `advisor all` is the command comparable to `cannbuild profile`: it is the one that reads
  a torch_npu folder whole and reports what profile does, the operator table's analyses
  (computation: AI CPU, operator bound, block dim, dynamic shape, from kernel_details)
  and the fusion advice that names unfused attention (schedule: the aten-level
  `matmul-...-softmax-...-matmul` -> `torch_npu.npu_fusion_attention` rule of
  timeline_fusion_ops.yaml, from trace_view.json). `msprof-analyze -m all` is the cluster
  analyser (communication and step times across ranks), and `compare` needs two runs.
Both tools' findings are printed, so a run that parsed nothing shows. Without
msprof-analyze it says so and measures cannbuild only. The machine may be shared: CPU
time moves less with the other cores' load than wall time does.

    python bench/bench_profile.py [--mb 100] [--runs 3] [--msprof-runs 1] [--keep]
                                  [--msprof-analyze PATH]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from llamaprofile import KERNEL_HEADER  # noqa: E402  torch_npu 2.13's Level1 kernel_details header

from common import cannbuild_argv, compile_package, measure_peak  # noqa: E402

DEVICE, CANN, PY = 800, 43767502, 437675
QKV = "1,8,1024,64"
SCORES = "1,8,1024,1024"


class Kernel(NamedTuple):
    name: str
    torch_op: str  # the torch op that launches it
    core: str
    dur: float  # us
    inputs: str  # Input Shapes
    outputs: str


KERNELS = (
    Kernel(
        "aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore",
        "npu::npu_fusion_attention",
        "MIX_AIC",
        30.16,
        f"{QKV};{QKV};{QKV};;;;;;;;;",
        f"1,8,1024,8;1,8,1024,8;;{QKV}",
    ),
    Kernel(
        "aclnnMatmul_BatchMatMulNd_BatchMatMulV2",
        "aten::matmul",
        "AI_CORE",
        12.5,
        f"{QKV};1,8,64,1024",
        SCORES,
    ),
    Kernel("aclnnMuls_MulAiCore_Mul", "aten::mul", "AI_VECTOR_CORE", 4.1, f"{SCORES};", SCORES),
    Kernel(
        "aclnnSoftmax_SoftmaxAiCore_SoftmaxV2",
        "aten::softmax",
        "AI_VECTOR_CORE",
        9.8,
        SCORES,
        SCORES,
    ),
    Kernel(
        "aclnnMatmul_BatchMatMulNd_BatchMatMulV2",
        "aten::matmul",
        "AI_CORE",
        11.9,
        f"{SCORES};{QKV}",
        QKV,
    ),
    Kernel(
        "aclnnAdd_AddAiCore_Add",
        "aten::add",
        "AI_VECTOR_CORE",
        2.0,
        "1024,512;1024,512",
        "1024,512",
    ),
    Kernel(
        "aclnnRmsNorm_RmsNormAiCore_RmsNorm",
        "npu::npu_rms_norm",
        "AI_VECTOR_CORE",
        6.5,
        "1024,512;512",
        "1024,512;1024,1",
    ),
    Kernel(
        "aclnnMatmul_MatMulV3Common_MatMulV3",
        "aten::matmul",
        "AI_CORE",
        40.2,
        "1024,512;512,2048",
        "1024,2048",
    ),
)


def _events(task: int, ts: float, host_ts: float, kernel: Kernel) -> List[Dict[str, object]]:
    """The kernel at `ts` on stream 3, launched by its torch op at `host_ts` (earlier: the
    host runs ahead of the device), the two joined by a torch_to_npu flow."""
    flow = str(38654705663 + task)
    npu_flow = int(ts * 1000)
    return [
        {
            "ph": "X",
            "name": kernel.torch_op,
            "pid": PY,
            "tid": PY,
            "ts": f"{host_ts:.3f}",
            "dur": 10.25,
            "cat": "cpu_op",
            "args": {"Sequence number": task, "Fwd thread id": 0},
        },
        {
            "ph": "s",
            "bp": "e",
            "name": "torch_to_npu",
            "id": npu_flow,
            "pid": PY,
            "tid": PY,
            "ts": f"{host_ts + 5:.3f}",
            "cat": "async_npu",
        },
        {
            "name": f"HostToDevice{flow}",
            "ph": "s",
            "cat": "HostToDevice",
            "id": flow,
            "pid": CANN,
            "tid": PY,
            "ts": f"{ts - 6:.3f}",
        },
        {
            "name": kernel.name,
            "pid": DEVICE,
            "tid": 3,
            "ts": f"{ts:.3f}",
            "dur": kernel.dur,
            "args": {
                "Model Id": 4294967295,
                "Task Type": kernel.core,
                "Physic Stream Id": 3,
                "Task Id": task,
                "Batch Id": 0,
                "Subtask Id": 4294967295,
                "connection_id": task,
            },
            "ph": "X",
        },
        {
            "name": f"HostToDevice{flow}",
            "ph": "f",
            "id": flow,
            "ts": f"{ts:.3f}",
            "cat": "HostToDevice",
            "pid": DEVICE,
            "tid": 3,
            "bp": "e",
        },
        {
            "ph": "f",
            "bp": "e",
            "name": "torch_to_npu",
            "id": npu_flow,
            "pid": DEVICE,
            "tid": 3,
            "ts": f"{ts:.3f}",
            "cat": "async_npu",
        },
    ]


def _kernel_row(task: int, ts: float, kernel: Kernel) -> List[str]:
    """Its kernel_details.csv row (the type is the name's last segment, as at Level0)."""
    core = kernel.core
    n_in, n_out = kernel.inputs.count(";") + 1, kernel.outputs.count(";") + 1
    return [
        "1",
        "0",
        "4294967295",
        str(task),
        "3",
        kernel.name,
        kernel.name.rsplit("_", 1)[1],
        "dynamic",
        core,
        f"{ts:.3f}\t",
        str(kernel.dur),
        "1.5",
        "20" if core != "AI_VECTOR_CORE" else "40",
        "40" if core == "MIX_AIC" else "0",
        "NO",
        f'"{kernel.inputs}"',
        f'"{";".join(["FLOAT16"] * n_in)}"',
        f'"{";".join(["ND"] * n_in)}"',
        f'"{kernel.outputs}"',
        f'"{";".join(["FLOAT16"] * n_out)}"',
        f'"{";".join(["ND"] * n_out)}"',
        "N/A",
    ]


def _profiler_info() -> Dict[str, object]:
    """The keys torch_npu's `_dump_profiler_info` writes (profiler-formats.md §1.7)."""
    return {
        "config": {
            "common_config": {
                "activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
                "schedule": {"wait": 0, "warmup": 0, "active": 1, "repeat": 1, "skip_first": 0},
                "record_shapes": True,
                "profile_memory": False,
                "with_stack": False,
                "with_flops": False,
                "with_modules": False,
            },
            "experimental_config": {
                "_profiler_level": "Level1",
                "_aic_metrics": "ACL_AICORE_NONE",
                "_l2_cache": False,
                "_data_simplification": True,
                "_export_type": ["text"],
            },
        },
        "start_info": {"syscnt_enable": False, "freq": 100, "start_cnt": 0, "start_monotonic": 0},
        "end_info": {"collectionTimeEnd": "0", "MonotonicTimeEnd": "0"},
        "torch_npu_version": "2.1.0.post10",
        "cann_version": "8.0.0",
    }


def generate(root: Path, megabytes: int) -> Dict[str, object]:
    """A run folder whose trace_view.json is about `megabytes` MB."""
    run = root / f"bench_{os.getpid()}_{time.strftime('%Y%m%d%H%M%S')}000_ascend_pt"
    out_dir = run / "ASCEND_PROFILER_OUTPUT"
    out_dir.mkdir(parents=True)
    (run / "profiler_info.json").write_text(json.dumps(_profiler_info(), indent=4))
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
    target = megabytes * 1024 * 1024
    ts = 1736413971411629.125
    host_ts = ts - 30
    count, task = len(meta), 0
    trace = out_dir / "trace_view.json"
    with open(trace, "w") as out, open(out_dir / "kernel_details.csv", "w", newline="") as kd:
        table = csv.writer(kd)  # excel dialect: CRLF, as torch_npu writes it
        table.writerow(KERNEL_HEADER)
        out.write(json.dumps(meta)[:-1])
        while out.tell() < target:
            events: List[Dict[str, object]] = []
            for kernel in KERNELS:
                task += 1
                events.extend(_events(task, ts, host_ts, kernel))
                table.writerow(_kernel_row(task, ts, kernel))
                ts += kernel.dur + 1.5
                host_ts += 12.0
            out.write(", " + json.dumps(events)[1:-1])
            count += len(events)
        out.write("]")
    size = sum(p.stat().st_size for p in run.rglob("*") if p.is_file())
    return {
        "run": run,
        "trace_mb": trace.stat().st_size / 1024 / 1024,
        "folder_mb": size / 1024 / 1024,
        "events": count,
        "kernels": task,
    }


# The summariser alone (no CLI start-up, no timeline PNG): the memory bound of the reading.
SUMMARISE = """
import sys
from pathlib import Path
from cannbuild.profile.summary import summarise
s = summarise(Path(sys.argv[1]), timeline=True)
print(s.analysis.kernels, s.analysis.chain_count)
"""


def _msprof_analyze(given: Optional[str]) -> Optional[str]:
    if given:
        if not (Path(given).is_file() and os.access(given, os.X_OK)):
            raise ValueError(
                f"--msprof-analyze {given}: not an executable file. Pass the msprof-analyze "
                "script of the venv it is installed in (e.g. /tmp/msprof-venv/bin/msprof-analyze)."
            )
        return given
    return os.environ.get("MSPROF_ANALYZE") or shutil.which("msprof-analyze")


def _median(results: List[Dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in results)


def _row(name: str, results: List[Dict[str, float]]) -> str:
    walls = [r["wall_s"] for r in results]
    return (
        f"  {name:<34} {_median(results, 'wall_s'):8.2f} s  (min {min(walls):.2f}, "
        f"max {max(walls):.2f}, n={len(results)})  CPU {_median(results, 'cpu_s'):7.2f} s  "
        f"peak RSS {_median(results, 'peak_mb'):7.0f} MB"
    )


def _cannbuild_findings(stdout: Path) -> str:
    data = json.loads(stdout.read_text())
    attention = data["attention"]
    return (
        f"cannbuild found {sum(op['count'] for op in data['ops'])} kernels in {len(data['ops'])} "
        f"types, {attention['fused']['count']} FlashAttention calls, "
        f"{attention['unfused_chains']['count']} unfused chains"
    )


def _msprof_findings(out: Path) -> str:
    pages = sorted(out.glob("mstt_advisor_*.html"))
    if not pages:
        return f"msprof-analyze wrote no mstt_advisor_*.html into {out}: see its log there"
    text = pages[-1].read_text(errors="replace")
    said = [
        word
        for word in ("npu_fusion_attention", "FlashAttentionScore", "MatMulV3", "SoftmaxV2")
        if word in text
    ]
    return (
        f"msprof-analyze's report ({pages[-1].name}) names: {', '.join(said) or 'none of the ops'}"
    )


def bench(tmp: Path, megabytes: int, runs: int, msprof: Optional[str], msprof_runs: int) -> None:
    made = generate(tmp / f"{megabytes}mb", megabytes)
    run = Path(str(made["run"]))
    print(
        f"profile: {run}\n  trace_view.json {made['trace_mb']:.1f} MB ({made['events']} events), "
        f"folder {made['folder_mb']:.1f} MB with kernel_details.csv ({made['kernels']} kernels)"
    )
    ours: List[Dict[str, float]] = []
    inner: List[Dict[str, float]] = []
    for i in range(runs):
        log = tmp / f"cannbuild-{megabytes}-{i}.json"
        argv = cannbuild_argv("profile", str(run), "--json", "--out", str(tmp / f"out-{megabytes}"))
        ours.append(measure_peak(argv, log))
        argv = [sys.executable, "-c", SUMMARISE, str(run)]
        inner.append(measure_peak(argv, tmp / f"summarise-{megabytes}-{i}.txt"))
    print(f"  {_cannbuild_findings(log)}")
    theirs: List[Dict[str, float]] = []
    if msprof is None:
        print(
            "  msprof-analyze: not installed (no --msprof-analyze, $MSPROF_ANALYZE or PATH): not run"
        )
    for i in range(msprof_runs if msprof else 0):
        out = tmp / f"msprof-{megabytes}-{i}"
        out.mkdir()
        argv = [str(msprof), "advisor", "all", "-d", str(run), "-o", str(out), "-l", "en"]
        theirs.append(measure_peak(argv, out / "stdout.log"))
        print(f"  {_msprof_findings(out)}")
    print(_row("summarise() alone (no CLI, no PNG)", inner))
    print(_row("cannbuild profile DIR --json", ours))
    if theirs:
        print(_row("msprof-analyze advisor all -d DIR", theirs))
        print(
            f"  msprof-analyze / cannbuild: wall "
            f"{_median(theirs, 'wall_s') / _median(ours, 'wall_s'):.1f}x, CPU "
            f"{_median(theirs, 'cpu_s') / _median(ours, 'cpu_s'):.1f}x, peak RSS "
            f"{_median(theirs, 'peak_mb') / _median(ours, 'peak_mb'):.1f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mb",
        type=int,
        nargs="+",
        default=[100],
        help="trace sizes in MB (several: RSS must not grow)",
    )
    parser.add_argument("--runs", type=int, default=3, help="cannbuild runs per size")
    parser.add_argument("--msprof-runs", type=int, default=1, help="msprof-analyze runs per size")
    parser.add_argument("--msprof-analyze", metavar="PATH", help="the msprof-analyze to run")
    parser.add_argument(
        "--keep", action="store_true", help="keep the generated folders and outputs"
    )
    args = parser.parse_args()
    if args.runs < 1 or args.msprof_runs < 0:
        parser.error("--runs must be at least 1 and --msprof-runs at least 0")
    try:
        msprof = _msprof_analyze(args.msprof_analyze)
    except ValueError as error:
        parser.error(str(error))  # exit 2
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="cannbuild-bench-profile-"))
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start")
    if msprof:
        # Only its version line: the build info below it names the repository with a token.
        out = subprocess.run([msprof, "--version"], capture_output=True, text=True)
        lines = (out.stdout + out.stderr).splitlines()
        version = next((x for x in lines if x.startswith("msprof-analyze ")), "version unknown")
        print(f"msprof-analyze: {msprof} ({version.strip()})")
    for megabytes in args.mb:
        bench(tmp, megabytes, args.runs, msprof, args.msprof_runs)
    if args.keep:
        print(f"kept: {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
