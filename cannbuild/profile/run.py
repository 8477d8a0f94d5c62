"""`profile --run`: FlashAttention and the unfused chain under the profiler, in a child
process with the package's env (as torchnpu.py runs the validation route).

- On an NPU: `torch_npu.profiler.profile` (CPU + NPU activities) around
  `npu_fusion_attention` and the same attention written as torch ops on NPU tensors
  (matmul -> mul -> softmax -> matmul); torch_npu writes `*_ascend_pt/`.
- On the sandbox the real torch_npu runs on the emulated runtime, which has no
  msprof behind it: the emulated runtime is the profiler.  With
  CANNBUILD_EMU_PROFILE_DIR set it times every kernel it launches (the package's
  FlashAttentionScore, through libnnopbase's executor) and writes the same
  `*_ascend_pt/ASCEND_PROFILER_OUTPUT` files at aclFinalize.  The unfused chain
  cannot run on the emulated device (torch_npu would need the toolkit's own
  operators), so it runs in torch on the CPU and each op is reported to the
  runtime's profiler as the kernel torch_npu launches for it on an NPU
  (aclnnMatmul_BatchMatMulNd_BatchMatMulV2, aclnnMuls_MulAiCore_Mul,
  aclnnSoftmax_SoftmaxAiCore_SoftmaxV2), timed by the runtime on the same stream.
"""

from __future__ import annotations

import ctypes
import json
import math
import subprocess
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, Optional, Tuple, Union

from msgspec import Struct

from .. import safefs
from ..bounded import RUN_FILE, read_json
from ..decoded import JSONValue, to_plain
from ..errors import UsageError, ValidationFailed
from ..host.pystack import read_python_stack
from ..locks import WorkspaceLock
from ..proc import kill_group
from ..validate import inputs_for, torchnpu
from ..validate.cases import FA_OP, Case, make_inputs, to_bnsd
from ..workspace import write_json_atomic
from .shape import AttentionShape

if TYPE_CHECKING:
    from torch import Tensor

    from ..build.session import Session

# Optional, imported where its absence is handled: torch and torch_npu (worker(), in the
# child process only).

RUN_TIMEOUT_S = 900
JOB = "job.json"
RESULT = "result.json"
LOG = "profile_worker.log"
WORKER = "import sys; from cannbuild.profile.run import worker; sys.exit(worker(sys.argv[1]))"
DEFAULTS = {"dtype": "fp16", "layout": "BNSD", "B": 1, "N1": 8, "S": 512, "D": 128}
LEVELS = {"0": "Level0", "1": "Level1", "level0": "Level0", "level1": "Level1"}
# the kernels torch_npu launches on an NPU for the unfused attention's torch ops
# (names as a real 2026 torch_npu run shows them, profiler-formats.md §3)
UNFUSED_KERNELS = (
    ("aclnnMatmul", "aclnnMatmul_BatchMatMulNd_BatchMatMulV2", "BatchMatMulV2", "AI_CORE"),
    ("aclnnMuls", "aclnnMuls_MulAiCore_Mul", "Mul", "AI_VECTOR_CORE"),
    ("aclnnSoftmax", "aclnnSoftmax_SoftmaxAiCore_SoftmaxV2", "SoftmaxV2", "AI_VECTOR_CORE"),
    ("aclnnMatmul", "aclnnMatmul_BatchMatMulNd_BatchMatMulV2", "BatchMatMulV2", "AI_CORE"),
)


class RunOutcome(
    Struct, frozen=True, kw_only=True, rename={"max_abs_diff": "max_abs_diff_fused_vs_unfused"}
):
    output: Path  # the *_ascend_pt folder the profiler wrote
    shape: AttentionShape
    level: str
    fused_ms: Tuple[float, ...]
    unfused_ms: Tuple[float, ...]
    max_abs_diff: Optional[float]
    log: Path

    def to_json(self) -> Dict[str, object]:
        times = {
            key: [round(m, 3) for m in getattr(self, key)] for key in ("fused_ms", "unfused_ms")
        }
        return {**to_plain(self), **times}


def level_name(text: Optional[str]) -> str:
    if not text:
        # Level1 unless asked: Level0, torch_npu's default, leaves Type and the shapes N/A and
        # writes no op_statistic, so diagnose could not name a chain's cause.
        return "Level1"
    level = LEVELS.get(str(text).strip().lower())
    if level is None:
        raise UsageError(
            f"--level {text!r} is not a profiler level.",
            "Use 0 (torch_npu's default: no op types or shapes) or 1 (op types, shapes, dtypes).",
        )
    return level


def run_shape(shape: AttentionShape) -> AttentionShape:
    """The user's shape with the defaults filled in, checked to be one FA can run."""
    full = shape.with_defaults(**DEFAULTS)
    if full.layout == "TND":
        raise UsageError(
            "--layout TND is the VarLen APIs' layout; profile --run calls npu_fusion_attention.",
            "Use BNSD, BSND, BSH or SBH.",
        )
    if full.dtype not in ("fp16", "bf16", "fp32"):
        raise UsageError(
            f"--dtype {full.dtype}: profile --run runs FlashAttention in fp16, bf16 or fp32.",
            "Pass --dtype fp16, bf16 or fp32 (cannbuild diagnose says what the operator supports).",
        )
    assert full.N1 is not None and full.N2 is not None
    if full.N1 % full.N2:
        raise UsageError(
            f"--heads {full.N1} is not a multiple of --kv-heads {full.N2}.",
            "FlashAttention's GQA needs N1 / N2 to be a whole number.",
        )
    return full


def start(
    shape: AttentionShape,
    level: str,
    iterations: int,
    env: Mapping[str, str],
    out: Path,
    sandbox: bool,
    work: Path,
) -> RunOutcome:
    """Run the worker (its job, result and log in `work`, <workspace>/tmp/profile-run)
    writing the profile into `out`; returns where the profiler wrote."""
    out.mkdir(parents=True, exist_ok=True)
    # the workspace's scratch folder: removed and remade without following a link
    safefs.fresh(work.parent.parent, work, "profile --run's work folder")
    before = set(out.glob("*_ascend_pt"))
    job = {
        "device": "npu:0",
        "sandbox": sandbox,
        "level": level,
        "iterations": iterations,
        "shape": to_plain(shape),
        "out": str(out),
    }
    (work / JOB).write_text(json.dumps(job))
    child_env = dict(env)
    # The emulated runtime's own profiler switches: where it writes *_ascend_pt and at what level.
    if sandbox:
        child_env["CANNBUILD_EMU_PROFILE_DIR"] = str(out)
        child_env["CANNBUILD_EMU_PROFILE_LEVEL"] = level
    log = work / LOG
    with open(log, "w") as fh:
        child = torchnpu.start_worker(WORKER, work, child_env, fh)
        try:
            code: Optional[int] = child.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            kill_group(child, grace_s=1.0)
            code = None
        except BaseException:  # Ctrl-C, SIGTERM: the worker and its group go too
            kill_group(child, grace_s=1.0)
            raise
    result = torchnpu.read_result(work / RESULT)
    if result is None or "error" in result:
        why = torchnpu.failure(code, result, log, RUN_TIMEOUT_S)
        fix = torchnpu.cuda_fix(read_python_stack())
        raise ValidationFailed(
            f"profile --run: the torch_npu worker failed: {why} (log: {log}).",
            f"{fix[0].upper()}{fix[1:].rstrip('.')}."
            if fix
            else "The same route is checked by `cannbuild validate`: run it to see whether the "
            "package works through torch_npu at all.",
        )
    # The profiler names its folder `<host>_<pid>_<timestamp>_ascend_pt`; this run's is the new
    # one.
    made = sorted(set(out.glob("*_ascend_pt")) - before)
    if not made:
        raise ValidationFailed(
            f"profile --run: the run finished but no profiler output appeared in {out} "
            f"(log: {log}).",
            "On an NPU host check that torch_npu's profiler can write there; on the sandbox "
            "rebuild it (its runtime writes the files at aclFinalize).",
        )
    return RunOutcome(
        output=made[-1],
        shape=shape,
        level=level,
        fused_ms=tuple(result.get("fused_ms", ())),
        unfused_ms=tuple(result.get("unfused_ms", ())),
        max_abs_diff=result.get("max_abs_diff"),
        log=log,
    )


def _fa_repo(session: Session) -> str:
    """The selected repo that ships FlashAttention (ops-transformer, by the recipe)."""
    return session.repo_for_op(FA_OP, "profile --run")


def check_profiler(session: Session, env: Mapping[str, str]) -> None:
    """torch_npu on an NPU or the sandbox, or exit 2 saying why not (before any build)."""
    inp = inputs_for(session, env, package_env=False, repo=_fa_repo(session))
    why_not = torchnpu.unavailable(inp.target, inp.no_device_reason, read_python_stack())
    if why_not:
        raise UsageError(f"profile --run needs torch_npu on an NPU or the sandbox: {why_not}.")


def run_profile(
    session: Session,
    env: Mapping[str, str],
    shape: AttentionShape,
    level: str,
    iterations: int,
    out: Path,
    command: str,
) -> RunOutcome:
    """Profile the installed package's FlashAttention and the unfused chain, under the
    workspace lock (an install replacing the package mid-run would mix two builds)."""
    inp = inputs_for(session, env, repo=_fa_repo(session))
    if not inp.library.is_file():
        raise UsageError(
            f"profile --run: no package is installed in {session.ws.root} ({inp.library} is missing).",
            "Build and install it first: cannbuild install"
            + (" --sandbox" if session.sandbox is not None else ""),
        )
    check_profiler(session, env)
    with WorkspaceLock(session.ws, command, session.options.wait, None):
        work = session.ws.tmp / "profile-run"
        return start(shape, level, iterations, inp.env, out, inp.target == "sandbox", work)


# ---- the worker: runs in the child process, with the package's env ----


class _Recorder:
    """The emulated runtime's profiler, for ops that run in torch on the CPU."""

    def __init__(self) -> None:
        # The emulated runtime's kernel record, matching the C struct its aclemuKernelEnd
        # takes.
        class Desc(ctypes.Structure):
            _fields_ = [
                ("name", ctypes.c_char_p),
                ("opType", ctypes.c_char_p),
                ("coreType", ctypes.c_char_p),
                ("blockDim", ctypes.c_uint32),
                ("mixBlockDim", ctypes.c_uint32),
                ("inputShapes", ctypes.c_char_p),
                ("inputDtypes", ctypes.c_char_p),
                ("inputFormats", ctypes.c_char_p),
                ("outputShapes", ctypes.c_char_p),
                ("outputDtypes", ctypes.c_char_p),
                ("outputFormats", ctypes.c_char_p),
            ]

        self.Desc = Desc
        lib = ctypes.CDLL("libascendcl.so")  # the runtime torch_npu has loaded
        lib.aclemuKernelBegin.restype = ctypes.c_uint64
        lib.aclemuKernelBegin.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        lib.aclemuKernelRun.argtypes = [ctypes.c_uint64]
        lib.aclemuKernelEnd.argtypes = [ctypes.c_uint64, ctypes.POINTER(Desc)]
        self.lib = lib

    def run(
        self,
        kernel: Tuple[str, str, str, str],
        stream: int,
        fn: Callable[..., Tensor],
        *inputs: Union[Tensor, float],
    ) -> Tensor:
        api, name, op_type, core = kernel
        token = self.lib.aclemuKernelBegin(api.encode(), stream)
        self.lib.aclemuKernelRun(token)
        result = fn(*inputs)
        shapes = ";".join(_dims(t) for t in inputs)
        dtypes = ";".join(_dtype(t) for t in inputs)
        desc = self.Desc(
            name.encode(),
            op_type.encode(),
            core.encode(),
            # Block Dim / Mix Block Dim 0: nothing to report for an op that ran on the CPU.
            0,
            0,
            shapes.encode(),
            dtypes.encode(),
            ";".join("ND" for _ in inputs).encode(),
            _dims(result).encode(),
            _dtype(result).encode(),
            b"ND",
        )
        self.lib.aclemuKernelEnd(token, desc)
        return result


def _dims(t: Union[Tensor, float]) -> str:
    return ",".join(str(d) for d in t.shape) if hasattr(t, "shape") else ""


def _dtype(t: Union[Tensor, float]) -> str:
    if not hasattr(t, "dtype"):
        return "FLOAT"  # a Python scalar (Muls' scale)
    # The dtype words real kernel_details files use: FLOAT16, DT_BF16, FLOAT.
    return {"torch.float16": "FLOAT16", "torch.bfloat16": "DT_BF16", "torch.float32": "FLOAT"}.get(
        str(t.dtype), str(t.dtype).replace("torch.", "").upper()
    )


def _unfused(
    torch: ModuleType,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    scale: float,
    rec: Optional[_Recorder],
    stream: int,
) -> Tensor:
    """softmax(q·kᵀ·scale)·v as separate ops (BNSD, k/v already repeated for GQA)."""
    kt = k.transpose(-1, -2)
    if rec is None:
        return torch.matmul(torch.softmax(torch.matmul(q, kt) * scale, dim=-1), v)
    scores = rec.run(UNFUSED_KERNELS[0], stream, torch.matmul, q, kt)
    scaled = rec.run(UNFUSED_KERNELS[1], stream, lambda x, s: x * s, scores, scale)
    probs = rec.run(UNFUSED_KERNELS[2], stream, lambda x: torch.softmax(x, dim=-1), scaled)
    return rec.run(UNFUSED_KERNELS[3], stream, torch.matmul, probs, v)


def _inputs(shape: Mapping[str, JSONValue]) -> Tuple[Dict[str, Tensor], Tensor, Tensor, Tensor]:
    dims = {key: shape[key] for key in ("dtype", "layout", "B", "N1", "N2", "S", "D")}
    case = Case(name="profile", causal=False, **dims)
    t = make_inputs(case)
    B, N1, N2, S, D = case.B, case.N1, case.N2, case.S, case.D
    qb = to_bnsd(t["q"], case.layout, B, N1, S, D).contiguous()
    kb = to_bnsd(t["k"], case.layout, B, N2, S, D)
    vb = to_bnsd(t["v"], case.layout, B, N2, S, D)
    if N1 != N2:
        kb = kb.repeat_interleave(N1 // N2, dim=1)
        vb = vb.repeat_interleave(N1 // N2, dim=1)
    return t, qb, kb.contiguous(), vb.contiguous()


def worker(folder: str) -> int:
    """The child process: run the job in `folder`, write result.json."""
    directory = Path(folder)
    job = read_json(directory / JOB, RUN_FILE)
    shape = job["shape"]
    try:
        torch, torch_npu = torchnpu.import_torch_npu()
    except Exception as exc:  # an import failure is the verdict, reported, never a traceback
        error = f"import torch_npu: {torchnpu.first_lines(exc)}"
        write_json_atomic(directory / RESULT, {"error": error})
        return 3
    try:
        result = _profile(torch, torch_npu, job, shape)
    except Exception as exc:  # torch_npu raises RuntimeError with the ACL message
        write_json_atomic(directory / RESULT, {"error": torchnpu.first_lines(exc)})
        return 1
    write_json_atomic(directory / RESULT, result)
    return 0


def _profile(
    torch: ModuleType,
    torch_npu: ModuleType,
    job: Mapping[str, JSONValue],
    shape: Mapping[str, JSONValue],
) -> Dict[str, object]:
    device = job["device"]
    torch.npu.set_device(device)
    t, qb, kb, vb = _inputs(shape)
    scale = 1.0 / math.sqrt(shape["D"])
    q, k, v = (t[name].to(device) for name in ("q", "k", "v"))
    fused_ms: List[float] = []
    unfused_ms: List[float] = []

    def fused() -> Tensor:
        begin = time.perf_counter()
        # npu_fusion_attention returns (attention_out, softmax_max, softmax_sum, softmax_out,
        # seed, offset, mask_len); only the output is compared.
        out = torch_npu.npu_fusion_attention(
            q, k, v, shape["N1"], shape["layout"], scale=scale, keep_prob=1.0
        )[0]
        torch.npu.synchronize()
        fused_ms.append((time.perf_counter() - begin) * 1000.0)
        return out

    if job["sandbox"]:
        rec = _Recorder()
        stream = int(torch.npu.current_stream().npu_stream)
        for _ in range(job["iterations"]):
            out = fused()
        for _ in range(job["iterations"]):
            begin = time.perf_counter()
            ref = _unfused(torch, qb, kb, vb, scale, rec, stream)
            unfused_ms.append((time.perf_counter() - begin) * 1000.0)
    else:
        prof = torch_npu.profiler
        # No PMU columns (AiCoreNone): the op table and the chains need none.
        config = prof._ExperimentalConfig(
            profiler_level=getattr(prof.ProfilerLevel, job["level"]),
            aic_metrics=prof.AiCMetrics.AiCoreNone,
        )
        qn, kn, vn = (x.to(device) for x in (qb, kb, vb))
        with prof.profile(
            activities=[prof.ProfilerActivity.CPU, prof.ProfilerActivity.NPU],
            # Shapes only above Level0: at Level0 the shape cells are N/A whatever is recorded.
            record_shapes=job["level"] != "Level0",
            experimental_config=config,
            on_trace_ready=prof.tensorboard_trace_handler(job["out"]),
        ):
            for _ in range(job["iterations"]):
                out = fused()
            for _ in range(job["iterations"]):
                begin = time.perf_counter()
                ref = _unfused(torch, qn, kn, vn, scale, None, 0)
                torch.npu.synchronize()
                unfused_ms.append((time.perf_counter() - begin) * 1000.0)
    fused_bnsd = to_bnsd(
        out.cpu(), shape["layout"], shape["B"], shape["N1"], shape["S"], shape["D"]
    )
    diff = (fused_bnsd.float() - ref.cpu().float()).abs().max().item()
    return {
        "torch_npu": getattr(torch_npu, "__version__", "?"),
        "fused_ms": fused_ms,
        "unfused_ms": unfused_ms,
        "max_abs_diff": diff,
    }
