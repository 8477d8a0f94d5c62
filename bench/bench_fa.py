"""CPU FlashAttention of the sandbox operator vs torch's scaled_dot_product_attention.

Same shape (B=1, N=8, S=1024, D=64, fp32) and the same thread count for both.
The operator is timed inside fa_check (GetWorkspaceSize + run + stream sync,
medians of --runs calls in one process); torch with torch.utils.benchmark.
Peak memory at S=8192 is the fa_check process's max RSS, next to the size one
S x S fp32 score matrix per head would need.

    python bench/bench_fa.py [--runs 7] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import cannbuild_argv  # noqa: E402


def installed_workspace(tmp: Path) -> Path:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "CANNBUILD_"))}
    subprocess.run(
        cannbuild_argv("install", "--sandbox"),
        cwd=tmp,
        env=env,
        check=True,
        capture_output=True,
    )
    return tmp / ".cannbuild"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    from cannbuild.host.toolchain import capture_env
    from cannbuild.validate import capi, casefiles, cases

    torch = cases.reference_torch()  # not `import torch`: that would auto-load torch_npu
    import torch.utils.benchmark as tb

    tmp = Path(tempfile.mkdtemp(prefix="cannbuild-bench-fa-"))
    ws = installed_workspace(tmp)
    vendor = ws / "opp/vendors/custom_transformer"
    base = capture_env(
        ws / "sandbox/sysroot/usr/local/Ascend/cann/set_env.sh", dict(os.environ)
    ).env
    env = capture_env(vendor / "bin/set_env.bash", base).env
    env["OMP_NUM_THREADS"] = str(args.threads)
    compiled = capi.compile_check(vendor, env, tmp / "fa")

    case = cases.Case(
        name="bench", dtype="fp32", layout="BNSD", B=1, N1=8, N2=8, S=1024, D=64, causal=False
    )
    tensors = casefiles.write_inputs(case, tmp / "data")
    manifest = tmp / "m.txt"
    manifest.write_text((casefiles.manifest_line(case, tmp / "data") + "\n") * args.runs)
    out = subprocess.run(
        [str(compiled.binary), str(manifest)], env=env, capture_output=True, text=True, check=True
    ).stdout
    ours = [float(line.split()[3]) for line in out.splitlines() if line.startswith("CASE bench OK")]
    ours_ms = statistics.median(ours[1:] if len(ours) > 1 else ours)

    torch.set_num_threads(args.threads)
    q, k, v = (t.float() for t in (tensors["q"], tensors["k"], tensors["v"]))
    timer = tb.Timer(
        "f(q, k, v)",
        globals={"f": torch.nn.functional.scaled_dot_product_attention, "q": q, "k": k, "v": v},
        num_threads=args.threads,
    )
    torch_ms = timer.blocked_autorange(min_run_time=1.0).median * 1000
    flops = 4 * case.B * case.N1 * case.S * case.S * case.D
    print(f"B=1 N=8 S=1024 D=64 fp32, {args.threads} threads")
    print(
        f"  sandbox operator   median {ours_ms:8.2f} ms  ({flops / ours_ms / 1e6:6.1f} GFLOP/s, n={len(ours)})"
    )
    print(
        f"  torch SDPA (CPU)   median {torch_ms:8.2f} ms  ({flops / torch_ms / 1e6:6.1f} GFLOP/s)"
    )
    print(f"  ratio operator / torch: {ours_ms / torch_ms:.2f}x (target <= 3x)")

    long_case = cases.Case(
        name="long", dtype="fp32", layout="BNSD", B=1, N1=1, N2=1, S=8192, D=64, causal=False
    )
    casefiles.write_inputs(long_case, tmp / "long")
    long_manifest = tmp / "long.txt"
    long_manifest.write_text(casefiles.manifest_line(long_case, tmp / "long") + "\n")
    probe = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, capture_output=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    peak = int(
        subprocess.run(
            [sys.executable, "-c", probe, str(compiled.binary), str(long_manifest)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    io_mib = 8 * 8192 * 64 * 4 / 2**20  # q, k, v, out: host and device copies
    print(
        f"S=8192 D=64 fp32: fa_check peak RSS {peak / 1024:.1f} MiB (its q/k/v/out host+device copies alone are "
        f"{io_mib:.0f} MiB); one S x S fp32 score matrix would be {8192 * 8192 * 4 / 2**20:.0f} MiB"
    )


if __name__ == "__main__":
    main()
