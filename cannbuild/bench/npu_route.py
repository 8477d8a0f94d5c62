"""The torch_npu route of the bench: `torch_npu.npu_fusion_attention` in the validation's
own torch_npu child process (validate/torchnpu.py, the package's env), started once per run
and asked one shape at a time, so torch_npu is imported once.  Its output is judged like
the C API's, and a call that did not go through the package's own library is not timed."""

from __future__ import annotations

import json
import select
import subprocess
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple

import msgspec

from ..bounded import RUN_FILE, decode_json
from ..childlog import died
from ..decoded import JSONObject
from ..errors import UsageError
from ..proc import kill_group
from ..states import Verdict
from ..validate import torchnpu
from ..validate.casefiles import judge_files
from ..validate.cases import CaseResult, Reference
from .routes import RouteError
from .shapes import BenchShape
from .timing import WARMUP, Timing

if TYPE_CHECKING:
    from torch import Tensor

REQUEST_TIMEOUT_S = 600  # the import, or one request
EXIT_WAIT_S = 5.0  # from the worker's stdout closing to its exit status

_WORKER = RUN_FILE.named("reply of the torch_npu worker on")


class NpuWorker:
    """The child process; `why_not` says why the route is not run (then nothing is started)."""

    def __init__(self, why_not: Optional[str], library: Path, env: Mapping[str, str], data: Path):
        self.why_not = why_not
        self.library = library.resolve()
        self.data = data
        self._child: Any = None
        self._log: Optional[IO[str]] = None
        self._buffer = b""
        self._ready = False
        self.waited_s = 0.0  # for torch_npu's import: not a cost of the shape being measured
        if why_not is None:
            data.mkdir(parents=True, exist_ok=True)
            self._log = open(data / torchnpu.LOG, "w")  # noqa: SIM115 (closed in close())
            self._child = torchnpu.start_worker(torchnpu.SERVER, data, env, self._log)

    def close(self) -> None:
        if self._child is not None:
            if self._child.stdin:
                self._child.stdin.close()
            try:
                self._child.wait(timeout=10)
            except Exception:  # a stuck worker goes with its group
                kill_group(self._child, grace_s=1.0)
            if self._child.stdout:
                self._child.stdout.close()
            self._child = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def _fail(self, why: str) -> RouteError:
        """A dead or unusable worker: the route is not run for the rest of the sweep."""
        self.why_not = f"{why} (log: {self.data / torchnpu.LOG})"
        self.close()
        return RouteError(self.why_not)

    def _answer(self) -> JSONObject:
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        out = self._child.stdout
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                text = line.decode(errors="replace")
                if text.startswith(torchnpu.REPLY):
                    reply = text[len(torchnpu.REPLY) :].encode()
                    try:
                        return dict(decode_json(reply, "stdout", _WORKER, dict))
                    except UsageError as exc:
                        raise self._fail(exc.message) from None
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._fail(f"the torch_npu worker did not answer in {REQUEST_TIMEOUT_S} s")
            ready, _, _ = select.select([out], [], [], left)
            chunk = out.read1(1 << 16) if ready else b""
            if ready and not chunk:
                raise self._fail(f"the torch_npu worker {self._ended()}")
            self._buffer += chunk

    def _ended(self) -> str:
        """How the worker that closed its stdout ended: its status (it is reaped first: a
        closed pipe comes just before the exit) and its log's first error line."""
        try:
            code: Optional[int] = self._child.wait(timeout=EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            code = None
        if self._log is not None:
            self._log.flush()
        return died(code, self.data / torchnpu.LOG)

    def unavailable(self) -> Optional[str]:
        """Why the route cannot run (waits for the worker's import the first time)."""
        if self.why_not is None and not self._ready:
            began = time.monotonic()
            try:
                hello = self._answer()
            except RouteError:
                return self.why_not
            finally:
                self.waited_s += time.monotonic() - began
            if "error" in hello:
                self._fail(f"torch_npu cannot run here: {hello['error']}")
            self._ready = True
        return self.why_not

    def ask(self, shape: BenchShape, reps: int) -> JSONObject:
        if self.unavailable() is not None:
            raise RouteError(str(self.why_not))
        request = {
            "case": msgspec.structs.asdict(shape),
            "data": str(self.data),
            "reps": reps,
            "warmup": WARMUP,
        }
        try:
            self._child.stdin.write((json.dumps(request) + "\n").encode())
            self._child.stdin.flush()
        except OSError:
            raise self._fail(f"the torch_npu worker {self._ended()}") from None
        answer = self._answer()
        if not answer.get("ok"):
            raise RouteError(f"npu_fusion_attention failed: {answer.get('error')}")
        return answer


def npu_check(
    worker: NpuWorker,
    shape: BenchShape,
    tensors: Dict[str, Tensor],
    expected: Reference,
) -> Tuple[CaseResult, Optional[float], Optional[int]]:
    """One call, judged with softmax statistics; a call that ran another package's kernel
    fails the check (it would time the wrong thing)."""
    answer = worker.ask(shape, 0)
    result = judge_files(shape, tensors, worker.data, answer["ms"], expected)
    loaded = [str(p) for p in answer.get("loaded", [])]
    if result.status == Verdict.PASS and loaded and str(worker.library) not in loaded:
        result = msgspec.structs.replace(
            result,
            status=Verdict.FAIL,
            message=(
                f"npu_fusion_attention ran {', '.join(loaded)}, not the package's "
                f"{worker.library}; put its vendor first in ASCEND_CUSTOM_OPP_PATH"
            ),
        )
    return result, answer["ms"], answer.get("peak_memory_bytes")


def npu_time(worker: NpuWorker, shape: BenchShape, reps: int) -> Timing:
    times = tuple(float(t) for t in worker.ask(shape, reps)["times"])
    if len(times) != reps:
        raise RouteError(f"torch_npu answered {len(times)} timings for {reps} calls")
    return Timing(times_ms=times)
