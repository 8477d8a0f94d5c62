"""doctor's `torch.import` row: what `import torch` (then `import torch_npu`) really does
here, tried in a fresh Python and judged by how that child ended and what it printed.

Package metadata cannot see a pairing that aborts at import (PyPI's CUDA torch 2.13.0 beside
torch-npu 2.13.0: `c10::ValueError: Duplicated key 'pinned_reserve_segment_size_mb' ...`,
then SIGABRT; issue 30), so doctor asks a child process, bounded in time, and reads its exit
status and the error line of its stderr.  doctor's own process never imports torch (it takes
seconds, and an abort there would take doctor with it).
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional

from msgspec import Struct

from ..bounded import RUN_FILE, decode_json
from ..errors import UsageError
from ..lazy import lazy_module
from ..proc import run
from . import compat
from .check import FAIL, PASS, WARN, Check
from .pystack import AUTOLOAD, PythonStack, plain_import_problem
from .versions import CannVersion

if TYPE_CHECKING:
    from .. import childlog
else:  # only a probe that ran reads a child's stderr
    childlog = lazy_module("cannbuild.childlog")

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
        error=childlog.error_line(stderr.decode("utf-8", "replace")) if code != 0 else None,
    )


def _text(value: object) -> Optional[str]:
    return value if isinstance(value, str) else None


ROW = "torch.import"


def import_checks(
    stack: PythonStack,
    env: Mapping[str, str],
    where: str,
    cann: Optional[CannVersion] = None,
    timeout: float = PROBE_TIMEOUT_S,
    sourced: bool = False,
) -> List[Check]:
    """Import torch, then torch_npu, where torch_npu is installed and the CANN libraries it
    links are on the loader path of `env` (`where` says whose environment that is;
    `sourced`: the toolkit's set_env.sh gave it).  Only there can the pair abort in a way
    package metadata does not show (a C++ registry clash once torch_npu's library loads), so
    only there is the child worth its seconds; elsewhere no row (the torch and torch_import
    rows say what metadata shows, and validate's reference import says the rest)."""
    if stack.torch is None or stack.torch_npu is None:
        return []
    if plain_import_problem(stack, {**env, AUTOLOAD: "1"}, sourced) is not None:
        return []
    probe = probe_imports(env, with_npu=True, timeout=timeout)
    return [judge_probe(probe, stack, where, None, cann, timeout)]


def judge_probe(
    probe: ImportProbe,
    stack: PythonStack,
    where: str,
    no_npu: Optional[str],
    cann: Optional[CannVersion],
    timeout: float = PROBE_TIMEOUT_S,
) -> Check:
    torch_npu = probe.torch_npu or stack.torch_npu
    version = compat.torch_to_install(torch_npu, cann)
    device = probe.torch_device or stack.torch_device
    if probe.code is None:
        return Check(
            id=ROW,
            status=WARN,
            detail=f"{_what(probe, stack, where)} did not finish in {timeout:g} s",
            hint="A loaded machine can be that slow; otherwise run the import by hand to see where "
            f"it stops: {AUTOLOAD}=0 python -c 'import torch, torch_npu'.",
        )
    if not probe.ok:
        said = probe.error or "nothing on stderr"
        return Check(
            id=ROW,
            status=FAIL,
            detail=f"{_what(probe, stack, where)} {childlog.exit_words(probe.code)}: {said}",
            hint=_fix(probe, device, torch_npu, version, cann),
        )
    # Reported here only when package metadata did not show it (the torch_npu row does then).
    if device and torch_npu and not stack.torch_device:
        return Check(
            id=ROW,
            status=FAIL,
            detail=f"torch {probe.torch} imports as a {device} build beside torch_npu {torch_npu}, "
            f"which needs the CPU build of torch {version}",
            hint=compat.cpu_torch_fix(version, device),
        )
    done = f"torch {probe.torch}" + (f" and torch_npu {probe.torch_npu}" if probe.npu_tried else "")
    skipped = f"; torch_npu not tried: {no_npu}" if no_npu else ""
    return Check(
        id=ROW,
        status=PASS,
        detail=f"a fresh Python imports {done} ({where}, {probe.seconds:.1f} s){skipped}",
    )


def _what(probe: ImportProbe, stack: PythonStack, where: str) -> str:
    failed = probe.failed_import
    if failed == "torch":
        return f"importing torch {stack.torch or ''} in a fresh Python ({where})".replace("  ", " ")
    if failed == "torch_npu":
        return (
            f"importing torch_npu {stack.torch_npu} (after torch {probe.torch}) in a fresh Python "
            f"({where})"
        )
    npu = f" and torch_npu {probe.torch_npu}" if probe.npu_tried else ""
    return f"a fresh Python ({where}) imported torch {probe.torch}{npu}, then"


# Whose library a torch_npu import misses (cann-environment.md 4.3): CANN's (`undefined
# symbol: MsprofSysCycleTime`, torch_npu 2.7.1 on CANN 9.0.0), NNAL's ATB
# (`_ZN3atb15CreateOperation...`, `_ZN3Mki2Dl...`, `libatb.so: cannot open`); anything else
# (`_ZN5torch...`, `_ZN3c10...`) is torch's, the default hint.
_CANN_SYMBOL = re.compile(r"undefined symbol: (?:Msprof|acl|rt[A-Z]|Hccl|_ZN2ge|_ZN4gert)")
_NNAL_SYMBOL = re.compile(r"undefined symbol: _ZN(?:3atb|3Mki)|lib(?:atb|asdops)\.so")


def _library_owner(error: str) -> str:
    if _NNAL_SYMBOL.search(error):
        return "NNAL"
    return "CANN" if _CANN_SYMBOL.search(error) else ""


def _fix(
    probe: ImportProbe,
    device: Optional[str],
    torch_npu: Optional[str],
    version: str,
    cann: Optional[CannVersion] = None,
) -> str:
    see = (
        f"`{AUTOLOAD}=0 python -c 'import torch, torch_npu'` (after sourcing set_env.sh) "
        "prints the whole message"
        if probe.npu_tried
        else "`python -c 'import torch'` prints the whole message"
    )
    if device and torch_npu:
        return f"torch is a {device} build; torch_npu needs the CPU build: " + compat.cpu_torch_fix(
            version, device
        )
    if probe.failed_import == "torch":
        return f"Reinstall torch ({see}): " + compat.cpu_torch_fix(version)
    owner = _library_owner(probe.error or "")
    if owner == "NNAL" and probe.failed_import == "torch_npu":
        return (
            f"torch_npu {torch_npu} loads NNAL's ATB, which is missing or of another release "
            f"({see}): source NNAL's set_env.sh (`source /usr/local/Ascend/nnal/atb/set_env.sh`) "
            "and install the NNAL of the same CANN release as the toolkit."
        )
    if owner == "CANN" and probe.failed_import == "torch_npu":
        release = cann.release if cann is not None else "this toolkit's"
        paired = [v for _, versions in compat.paired_torch_npu(release) for v in versions[:1]]
        pick = f" ({', '.join(dict.fromkeys(paired))})" if paired else ""
        return (
            f"torch_npu {torch_npu} was built for another CANN: the symbol it misses is a CANN "
            f"library's, not torch's ({see}). Install a torch_npu paired with CANN "
            f"{release}{pick}, or use the CANN release that torch_npu {torch_npu} is paired with."
        )
    return (
        f"torch and torch_npu {torch_npu} must be a published pair, torch's CPU build ({see}): "
        + compat.cpu_torch_fix(version)
    )
