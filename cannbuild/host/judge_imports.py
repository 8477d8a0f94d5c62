"""doctor's `torch.import` row: torch (and torch_npu) imported in a fresh Python, judged by
how that child ended and what it printed (host/import_probe.py)."""

from __future__ import annotations

from typing import List, Mapping, Optional

from ..childlog import exit_words
from . import compat
from .check import FAIL, PASS, WARN, Check
from .import_probe import PROBE_TIMEOUT_S, ImportProbe, probe_imports
from .pystack import AUTOLOAD, PythonStack, plain_import_problem
from .versions import CannVersion

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
            detail=f"{_what(probe, stack, where)} {exit_words(probe.code)}: {said}",
            hint=_fix(probe, device, torch_npu, version),
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


def _fix(probe: ImportProbe, device: Optional[str], torch_npu: Optional[str], version: str) -> str:
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
    return (
        f"torch and torch_npu {torch_npu} must be a published pair, torch's CPU build ({see}): "
        + compat.cpu_torch_fix(version)
    )
