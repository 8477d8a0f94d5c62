"""The torch_npu route: the validation cases through `torch_npu.npu_fusion_attention`.

That is how users reach FlashAttention: torch_npu finds `aclnnFlashAttentionScore`
by dlopen of `libcust_opapi.so` from the `ASCEND_CUSTOM_OPP_PATH` vendors first.
The route runs in its own process (`worker`) with the package's env (the
toolkit's set_env.sh and the vendor's bin/set_env.bash sourced), as a user's
shell has it; cannbuild's own process never imports torch_npu.  The worker reads
the seeded inputs cannbuild wrote, writes the outputs and says which operator
libraries it had loaded.  Meanwhile cannbuild computes the float64 references;
it judges the outputs with the C API route's judge, and fails the route if the
call did not go through the package's own library.  On the sandbox the real
torch_npu runs on the CPU emulation of the ACL runtime.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct, field

from .. import bounded, safefs
from ..childlog import died, log_error_line
from ..decoded import JSONObject, JSONValue
from ..errors import UsageError
from ..host import compat
from ..host.pystack import PythonStack, read_python_stack
from ..proc import kill_group, popen
from ..signals import deferred
from ..states import Verdict
from ..workspace import write_json_atomic
from . import precision
from .casefiles import judge_files, raw_bytes, read_tensor, write_inputs
from .cases import (
    AUTOLOAD,
    OPEN_TOKENS,
    Case,
    CaseResult,
    reference_once,
    select,
    torch_dtype,
)

if TYPE_CHECKING:
    from torch import Tensor

    Inputs = Tuple[Tensor, Tensor, Tensor, Optional[Tensor]]  # q, k, v and the mask

# Optional, imported where its absence is handled: torch and torch_npu (import_torch_npu(),
# in the worker process only).

RUN_TIMEOUT_S = 600
JOB = "job.json"
RESULT = "result.json"
LOG = "torch_npu.log"
WORKER = "import sys; from cannbuild.validate.torchnpu import worker; sys.exit(worker(sys.argv[1]))"
SERVER = "import sys; from cannbuild.validate.torchnpu import serve; sys.exit(serve(sys.argv[1]))"
# Only lines with this prefix are answers: torch_npu and the runtime may print to stdout too.
REPLY = "BENCH "  # the prefix of the serve worker's answers on stdout


class RouteOutcome(Struct, frozen=True, kw_only=True):
    """What the route found: a verdict, why, and the per-case results."""

    status: str  # PASS | FAIL | SKIPPED
    message: str
    details: Dict[str, object] = field(default_factory=dict)
    results: Tuple[CaseResult, ...] = ()


def start_worker(
    code: str, data: Path, env: Mapping[str, str], log: IO[str]
) -> subprocess.Popen[bytes]:
    """A child Python running `code` with the package's env (cannbuild importable), its
    output to `log`; the bench's `serve` worker (SERVER) also gets a pipe for requests."""
    child_env = dict(env)
    package_root = str(Path(__file__).resolve().parents[2])
    child_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, child_env.get("PYTHONPATH", "")) if p
    )
    child_env.setdefault("OMP_NUM_THREADS", str(len(os.sched_getaffinity(0))))
    argv = [sys.executable, "-c", code, str(data)]
    if code == WORKER:  # its job comes when stdin closes (Started.send)
        return popen(
            argv, env=child_env, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT
        )
    if code != SERVER:
        return popen(argv, env=child_env, stdout=log, stderr=subprocess.STDOUT)
    return popen(argv, env=child_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)


class Started:
    """A worker started ahead of its cases: it imports torch and torch_npu (3 s of CPU) while
    the C API route and the example run, and reads its job when `send` closes its stdin.
    `close` stops it if its cases never came (a failed or interrupted run)."""

    def __init__(self, env: Mapping[str, str], workdir: Path) -> None:
        # workdir is <workspace>/validate: nothing below the workspace is written through a link
        safefs.make_dirs(workdir.parent, workdir, "the validation folder")
        self.data = safefs.fresh(
            workdir.parent, workdir / "torch_npu", "the torch_npu validation data"
        )
        self.start = time.monotonic()
        with open(self.data / LOG, "w") as log:  # the child writes to its own copy
            self.child = start_worker(WORKER, self.data, env, log)

    def send(self, selected: Sequence[Case]) -> None:
        (self.data / JOB).write_text(
            json.dumps({"device": "npu:0", "cases": [c.name for c in selected]})
        )
        assert self.child.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it failed to import: its result says why
            self.child.stdin.close()

    def close(self) -> None:
        if self.child.poll() is None:
            kill_group(self.child, grace_s=1.0)


def unavailable(target: Optional[str], no_device_reason: str, stack: PythonStack) -> Optional[str]:
    """Why the route cannot run here (and how to make it run), from package metadata only."""
    if target is None:
        return no_device_reason
    if stack.torch_npu is None:
        want = compat.torch_release(stack.torch) if stack.torch else "<torch's version>"
        return (
            # its first clause stands alone: a repo's summary line shows only that
            "torch_npu is not installed; the route users take "
            f"(torch_npu.npu_fusion_attention) needs it: pip install torch-npu=={want}"
        )
    if stack.torch is None:
        return (
            f"torch_npu {stack.torch_npu} is installed without torch: "
            f"{compat.cpu_torch_command(compat.torch_release(stack.torch_npu))}"
        )
    if not compat.same_torch_line(stack.torch, stack.torch_npu):
        return (
            f"torch_npu {stack.torch_npu} does not match torch {stack.torch} (major.minor.patch must "
            f"be equal): {compat.cpu_torch_command(compat.torch_release(stack.torch_npu))}"
        )
    return None


def run(
    selected: Sequence[Case],
    library: Path,
    env: Mapping[str, str],
    workdir: Path,
    memo: Optional[Dict[str, object]] = None,
    started: Optional[Started] = None,
) -> RouteOutcome:
    """Run every case through torch_npu in a child process (`started` ahead, or now) and
    judge the outputs here (against the references the C API route computed, in `memo`)."""
    stack = read_python_stack()
    with deferred():  # a signal before the try would orphan the worker
        worker = started or Started(env, workdir)
    data, child, start = worker.data, worker.child, worker.start
    try:
        known = {} if memo is None else memo
        tensors = {c.name: write_inputs(c, data, known) for c in selected}
        worker.send(selected)
        # any float64 reference not yet computed is, while torch_npu runs the cases
        expected = {c.name: reference_once(known, c, tensors[c.name]) for c in selected}
        code: Optional[int] = child.wait(timeout=max(RUN_TIMEOUT_S - (time.monotonic() - start), 1))
    except subprocess.TimeoutExpired:
        code = None
    finally:  # a timeout, Ctrl-C, SIGTERM: the worker goes too
        worker.close()
    details: Dict[str, object] = {
        "torch_npu": stack.torch_npu,
        "torch": stack.torch,
        "log": str(data / LOG),
        "duration_s": round(time.monotonic() - start, 3),
    }
    result = read_result(data / RESULT)
    if result is None or "error" in result:
        failed = (
            f"the torch_npu {stack.torch_npu} worker failed: {failure(code, result, data / LOG)} "
            f"(log: {data / LOG})"
        )
        fix = cuda_fix(stack)
        failed += f"; {fix}" if fix else ""
        return RouteOutcome(
            status=Verdict.FAIL,
            message=failed,
            details=details,
            results=tuple(
                CaseResult(case=c, status=Verdict.FAIL, message=failed) for c in selected
            ),
        )
    results: List[CaseResult] = []
    for case in selected:
        run_info = result["cases"].get(case.name, {"ok": False, "error": "not run"})
        if run_info.get("ok"):
            ms = run_info.get("ms")
            results.append(judge_files(case, tensors[case.name], data, ms, expected[case.name]))
        else:
            error = f"npu_fusion_attention failed: {run_info.get('error')}"
            results.append(CaseResult(case=case, status=Verdict.FAIL, message=error))
    loaded = [str(p) for p in result.get("loaded", [])]
    details["loaded_op_libraries"] = loaded
    details["cases"] = [r.to_json() for r in results]
    return _verdict(results, library, loaded, stack.torch_npu or "?", details)


def cuda_fix(stack: PythonStack) -> str:
    """What to do when torch is a CUDA build beside torch_npu (`import torch_npu` aborts with
    PyPI's CUDA torch 2.13.0; doctor's torch_npu row says the same), else "" (no
    ending stop)."""
    if stack.torch_device is None or stack.torch_npu is None:
        return ""
    want = compat.torch_release(stack.torch_npu)
    return (
        f"torch {stack.torch} is a {stack.torch_device} build and torch_npu needs the CPU "
        f"build: {compat.cpu_torch_fix(want, stack.torch_device)}"
    )


def failure(
    code: Optional[int], result: Optional[JSONObject], log: Path, timeout_s: float = RUN_TIMEOUT_S
) -> str:
    """Why a worker gave no usable result: the error it wrote, else how it ended and the
    first error line of its log (an abort in C++ writes no result: `exited with -6 (SIGABRT)
    and no result: c10::ValueError: ...`)."""
    said = (result or {}).get("error")
    if said:
        return str(said)
    if code is None:
        line = log_error_line(log)
        return f"timed out after {timeout_s:g} s" + (f"; its log says: {line}" if line else "")
    return died(code, log, " and no result")


def _verdict(
    results: Sequence[CaseResult],
    library: Path,
    loaded: Sequence[str],
    version: str,
    details: Dict[str, object],
) -> RouteOutcome:
    failed = [r for r in results if r.status != Verdict.PASS]
    upstream = precision.summary([(r.case.name, r.status, r.precision) for r in results])
    upstream = f"; {upstream}" if upstream else ""
    ours = str(library.resolve())
    status = Verdict.FAIL
    if failed:
        first = failed[0]
        message = (
            f"{len(failed)}/{len(results)} cases FAIL through torch_npu {version} "
            f"npu_fusion_attention; first: {first.case.name}: {first.message}{upstream}"
        )
    # torch_npu takes the first `libcust_opapi.so` exporting the entry point, custom paths first,
    # then the default vendors, then the toolkit's libopapi.so (reference real-host-findings.md
    # §4): passing cases through another vendor prove nothing about this package.
    elif loaded and ours not in loaded:
        message = (
            f"npu_fusion_attention ran, but not through this package: the process loaded "
            f"{', '.join(loaded)}, not {ours}; put the package's vendor first in "
            "ASCEND_CUSTOM_OPP_PATH (source its bin/set_env.bash)"
        )
    else:
        status = Verdict.PASS
        message = (
            f"{len(results)}/{len(results)} cases PASS through torch_npu {version} "
            f"npu_fusion_attention ({library.name} of the package){upstream}"
        )
    return RouteOutcome(status=status, message=message, details=details, results=tuple(results))


def read_result(path: Path) -> Optional[JSONObject]:
    """What a worker wrote (None: nothing readable: it died before, or it was damaged)."""
    data = bounded.read_state(path, bounded.RUN_FILE)
    return data if isinstance(data, dict) else None


# ---- the worker: runs in the child process, with the package's env ----


def first_lines(exc: BaseException) -> str:
    """The first three lines of the error's text, on one line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return " | ".join(lines[:3])[:600] or type(exc).__name__


def _op_libraries() -> List[str]:
    """The operator API libraries this process has mapped (Linux), to show which package ran."""
    try:
        maps = bounded.read_text(Path("/proc/self/maps"), bounded.PROC_FILE)
    except UsageError:
        return []
    # A /proc/self/maps line: `<range> <perms> <offset> <dev> <inode>  <path>`; the sixth field is
    # the mapped file.
    found = {
        line.split(None, 5)[5].strip()
        for line in maps.splitlines()
        # `libcust_opapi.so` of a vendor, the toolkit's `libopapi.so` or `libopapi_*.so`.
        if len(line.split(None, 5)) == 6 and "opapi" in line.rsplit("/", 1)[-1]
    }
    return sorted(os.path.realpath(p) for p in found)


def _load(torch: ModuleType, case: Case, directory: Path, key: str) -> Tensor:
    path = directory / f"{case.name}.{key}"
    if key == "mask":
        # The causal mask file is uint8 [S, S]; the worker passes it on as a bool tensor.
        return read_tensor(path, torch.uint8).reshape(case.S, case.S)
    return read_tensor(path, torch_dtype(torch, case.dtype)).reshape(case.shape(key))


def _inputs(torch: ModuleType, case: Case, directory: Path, device: str) -> Inputs:
    q, k, v = (_load(torch, case, directory, key).to(device) for key in ("q", "k", "v"))
    mask = None
    if case.causal:
        mask = _load(torch, case, directory, "mask").bool().to(device)
    return q, k, v, mask


def _call(torch_npu: ModuleType, case: Case, inputs: Inputs) -> Tuple[Tensor, ...]:
    q, k, v, mask = inputs
    # TND: the cumulative ends, as the VarLen APIs take them; torch_npu then calls
    # aclnnFlashAttentionVarLenScore (op-plugin FlashAttentionKernelNpuOpApi.cpp, the torch_npu
    # 2.13 line; VarLenScoreV4 only with softmax_layout="TND").
    varlen = (
        {"actual_seq_qlen": list(case.cu_seq_q), "actual_seq_kvlen": list(case.cu_seq_kv)}
        if case.varlen
        else {}
    )
    # (attention_out, softmax_max, softmax_sum): the first three of the seven outputs.
    return tuple(
        torch_npu.npu_fusion_attention(
            q,
            k,
            v,
            case.N1,
            case.layout,
            atten_mask=mask,
            scale=case.scale,
            keep_prob=1.0,
            pre_tockens=OPEN_TOKENS,  # torch_npu's spelling
            next_tockens=case.next_tokens,
            **varlen,
        )[:3]
    )


def _write_outputs(case: Case, directory: Path, outputs: Tuple[Tensor, ...]) -> None:
    out, *stats = (t.cpu() for t in outputs)
    if case.varlen:
        # softmax_max / softmax_sum come back as [T, N, 8] tensors holding the NTD order, the
        # default softmax_layout (op-plugin docs torch_npu-npu_fusion_attention.md): written
        # as the C API route writes them, [T, N, 8] in TND order
        T, N = case.S, case.N1
        stats = [s.reshape(N, T, 8).permute(1, 0, 2) for s in stats]
    for suffix, tensor in zip(("out", "smax", "ssum"), (out, *stats)):
        (directory / f"{case.name}.{suffix}").write_bytes(raw_bytes(tensor))


def _run_case(
    torch: ModuleType, torch_npu: ModuleType, case: Case, directory: Path, device: str
) -> float:
    inputs = _inputs(torch, case, directory, device)
    torch.npu.synchronize()
    start = time.perf_counter()
    outputs = _call(torch_npu, case, inputs)
    torch.npu.synchronize()
    elapsed_ms = (time.perf_counter() - start) * 1000.0
    _write_outputs(case, directory, outputs)
    return elapsed_ms


def import_torch_npu() -> Tuple[ModuleType, ModuleType]:
    """torch, then torch_npu explicitly: with auto-loading, a torch_npu that fails to load
    fails `import torch` with torch's generic message in place of the cause."""
    # Set before `import torch`, which reads it once at import.
    os.environ[AUTOLOAD] = "0"  # this worker process only
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch
        import torch_npu
    return torch, torch_npu


def worker(folder: str) -> int:
    """The child process: run the job in `folder`, write result.json; 3 if torch_npu cannot load."""
    directory = Path(folder)
    try:
        torch, torch_npu = import_torch_npu()
    except Exception as exc:  # any import failure is the verdict, reported, never a traceback
        write_json_atomic(directory / RESULT, {"error": f"import torch_npu: {first_lines(exc)}"})
        return 3
    sys.stdin.read()  # started ahead of its cases: the job is written when stdin closes
    if not (directory / JOB).is_file():  # cannbuild stopped before sending it
        return 2
    job = bounded.read_json(directory / JOB, bounded.RUN_FILE)
    runs: Dict[str, Dict[str, object]] = {}
    for case in select(job["cases"]):
        try:
            runs[case.name] = {
                "ok": True,
                "ms": _run_case(torch, torch_npu, case, directory, job["device"]),
            }
        except Exception as exc:  # torch_npu raises RuntimeError with the ACL message
            runs[case.name] = {"ok": False, "error": first_lines(exc)}
    write_json_atomic(
        directory / RESULT,
        {"torch_npu": torch_npu.__version__, "cases": runs, "loaded": _op_libraries()},
    )
    return 0


# ---- the bench's worker: one request a line on stdin, one REPLY line each on stdout ----


def _reply(answer: Mapping[str, object]) -> None:
    sys.stdout.write(REPLY + json.dumps(answer) + "\n")
    sys.stdout.flush()


def _bench_request(
    torch: ModuleType,
    torch_npu: ModuleType,
    case: Case,
    inputs: Inputs,
    request: Mapping[str, JSONValue],
) -> Dict[str, object]:
    """reps 0: one call, outputs written for judging, the peak of torch_npu's allocator
    beyond the inputs; else `warmup` calls, then `reps` each between two NPU events."""
    reps = int(request.get("reps", 0))
    if reps == 0:
        torch.npu.synchronize()
        torch.npu.reset_peak_memory_stats()
        before = torch.npu.memory_allocated()
        start = time.perf_counter()
        outputs = _call(torch_npu, case, inputs)
        torch.npu.synchronize()
        ms = (time.perf_counter() - start) * 1000.0
        peak = torch.npu.max_memory_allocated() - before
        _write_outputs(case, Path(request["data"]), outputs)
        return {"ok": True, "ms": ms, "peak_memory_bytes": peak, "loaded": _op_libraries()}
    for _ in range(int(request.get("warmup", 1))):
        _call(torch_npu, case, inputs)
    # NPU events time the device work alone, without the host's launch overhead.
    begin, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    times: List[float] = []
    for _ in range(reps):
        begin.record()
        _call(torch_npu, case, inputs)
        end.record()
        end.synchronize()
        times.append(float(begin.elapsed_time(end)))
    return {"ok": True, "times": times}


def serve(folder: str) -> int:
    """The bench's child process: torch_npu imported once, then requests until stdin closes."""
    del folder  # each request names its data folder
    try:
        torch, torch_npu = import_torch_npu()
    except Exception as exc:  # reported to the bench, never a traceback
        _reply({"error": f"import torch_npu: {first_lines(exc)}"})
        return 3
    _reply({"ready": True, "torch_npu": torch_npu.__version__})
    held: Optional[Tuple[str, Inputs]] = None
    for line in sys.stdin:
        request = bounded.decode_json(line.encode(), "stdin", bounded.RUN_FILE.named("request"))
        case = Case(**request["case"])
        try:
            if held is None or held[0] != case.name:
                # Dropped before the next case's tensors are made, so two shapes never share device
                # memory.
                held = None  # the previous shape's tensors go first
                held = (case.name, _inputs(torch, case, Path(request["data"]), "npu:0"))
            answer = _bench_request(torch, torch_npu, case, held[1], request)
        except Exception as exc:  # torch_npu raises RuntimeError with the ACL message
            answer = {"ok": False, "error": first_lines(exc)}
        _reply(answer)
    return 0
