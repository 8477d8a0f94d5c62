"""What `import torch` (then `import torch_npu`) really does here: tried in a fresh Python.

Package metadata cannot see a pairing that aborts at import (PyPI's CUDA torch 2.13.0 beside
torch-npu 2.13.0: `c10::ValueError: Duplicated key 'pinned_reserve_segment_size_mb' ...`,
then SIGABRT; issue 30), so doctor asks a child process, bounded in time, and reads its exit
status and the error line of its stderr.  doctor's own process never imports torch (it takes
seconds, and an abort there would take doctor with it).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from typing import Dict, Mapping, Optional

from msgspec import Struct

from ..bounded import RUN_FILE, decode_json
from ..childlog import error_line
from ..errors import UsageError
from ..proc import run
from .pystack import AUTOLOAD

PROBE_TIMEOUT_S = 60.0
REPLY = "CANNBUILD-IMPORT "
_PROBE = RUN_FILE.named("reply of the import probe on")
# torch_npu explicitly, after torch with auto-loading off: the failing import is then named
# (with auto-loading, a torch_npu that fails to load fails `import torch` with torch's
# generic "Failed to load the backend extension").
# An abort leaves no core file behind in the cwd.
CODE = f"""
import json, os, resource, sys
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
os.environ[{AUTOLOAD!r}] = "0"
def say(**kw):
    sys.stdout.write({REPLY!r} + json.dumps(kw) + "\\n"); sys.stdout.flush()
import torch
v = getattr(torch, "version", None)
say(torch=str(torch.__version__), cuda=getattr(v, "cuda", None), hip=getattr(v, "hip", None),
    xpu=getattr(v, "xpu", None))
if sys.argv[1] == "npu":
    import torch_npu
    say(torch_npu=str(getattr(torch_npu, "__version__", "?")))
"""
_BUILD_NAMES = (("cuda", "CUDA"), ("hip", "ROCm"), ("xpu", "XPU"))


class ImportProbe(Struct, frozen=True, kw_only=True):
    """One child's answer: what imported, what it said it is, and how it ended."""

    code: Optional[int]  # None: still running at the timeout (then killed)
    seconds: float
    npu_tried: bool  # whether torch_npu was imported after torch
    torch: Optional[str] = None  # torch.__version__ as imported
    torch_device: Optional[str] = None  # `CUDA 13.0`; None for the CPU build
    torch_npu: Optional[str] = None
    error: Optional[str] = None  # the error line of the child's stderr

    @property
    def ok(self) -> bool:
        return self.code == 0

    @property
    def failed_import(self) -> str:
        """The import that did not finish: `torch`, `torch_npu`, or `` when both did (the
        child died at exit)."""
        if self.torch is None:
            return "torch"
        if self.npu_tried and self.torch_npu is None:
            return "torch_npu"
        return ""


def probe_imports(
    env: Mapping[str, str], with_npu: bool, timeout: float = PROBE_TIMEOUT_S
) -> ImportProbe:
    """Import torch (and torch_npu when `with_npu`) in a child Python with `env`."""
    argv = [sys.executable, "-c", CODE, "npu" if with_npu else "torch"]
    began = time.monotonic()
    try:
        proc = run(argv, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        return _probe(None, began, with_npu, exc.stdout or b"", exc.stderr or b"")
    except OSError as exc:  # the interpreter itself cannot start
        return ImportProbe(
            code=127, seconds=time.monotonic() - began, npu_tried=with_npu, error=str(exc)
        )
    return _probe(proc.returncode, began, with_npu, proc.stdout, proc.stderr)


def _probe(
    code: Optional[int], began: float, with_npu: bool, stdout: bytes, stderr: bytes
) -> ImportProbe:
    said: Dict[str, object] = {}
    for line in stdout.decode("utf-8", "replace").splitlines():
        if line.startswith(REPLY):
            with contextlib.suppress(UsageError):
                said.update(decode_json(line[len(REPLY) :].encode(), "stdout", _PROBE, dict))
    device = next((f"{name} {said[key]}" for key, name in _BUILD_NAMES if said.get(key)), None)
    return ImportProbe(
        code=code,
        seconds=time.monotonic() - began,
        npu_tried=with_npu,
        torch=_text(said.get("torch")),
        torch_device=device,
        torch_npu=_text(said.get("torch_npu")),
        error=error_line(stderr.decode("utf-8", "replace")) if code != 0 else None,
    )


def _text(value: object) -> Optional[str]:
    return value if isinstance(value, str) else None
