"""doctor rows about the Python stack: torch, torch_npu, their pairing with each other
and with CANN, and whether a plain `import torch` works here (read without importing
torch)."""

from __future__ import annotations

from typing import List, Mapping, Optional

from . import compat
from .check import FAIL, PASS, SKIP, WARN, Check
from .pystack import AUTOLOAD, PythonStack, plain_import_problem
from .toolkit import Toolkit


def python_stack_checks(
    stack: PythonStack, tk: Optional[Toolkit], env: Optional[Mapping[str, str]] = None
) -> List[Check]:
    """torch / torch_npu rows from package metadata and `env` (the shell's), never importing torch."""
    checks: List[Check] = []
    py = f"{stack.python[0]}.{stack.python[1]}"
    if stack.torch is None:
        checks.append(
            Check(
                id="torch",
                status=SKIP,
                detail="torch not installed",
                hint="Needed only for the validation reference: pip install torch (CPU is enough).",
            )
        )
    else:
        verdict = compat.python_verdict(stack.torch, stack.python)
        if verdict.ok is False:
            checks.append(
                Check(
                    id="torch",
                    status=WARN,
                    detail=f"torch {stack.torch}: {verdict.detail}",
                    hint=f"Use a Python torch supports (this is {py}).",
                )
            )
        else:
            checks.append(
                Check(id="torch", status=PASS, detail=f"torch {stack.torch} on Python {py}")
            )
    if stack.torch_npu is None:
        checks.append(
            Check(
                id="torch_npu",
                status=SKIP,
                detail="torch_npu not installed",
                hint="Only the torch_npu validation route needs it: pip install torch-npu==<version "
                "for this CANN>.",
            )
        )
        return checks
    # A torch_npu wheel pins its torch (`Requires-Dist: torch==2.13.0.*` in torch-npu 2.13.0).
    if stack.torch is None:
        checks.append(
            Check(
                id="torch_npu",
                status=FAIL,
                detail=f"torch_npu {stack.torch_npu} is installed without torch",
                hint=f"pip install torch=={_torch_for(stack.torch_npu)}",
            )
        )
        return checks
    # A torch / torch_npu ABI mismatch surfaces at import as `libtorch_npu.so: undefined symbol:
    # _ZN5torch10ValueErrorC1EPKcz` (Ascend/pytorch issue 35).
    if not compat.same_torch_line(stack.torch, stack.torch_npu):
        checks.append(
            Check(
                id="torch_npu",
                status=FAIL,
                detail=f"torch_npu {stack.torch_npu} does not match torch {stack.torch}",
                hint="torch_npu's major.minor.patch must equal torch's (else 'undefined symbol' "
                f"at import): pip install torch=={_torch_for(stack.torch_npu)}",
            )
        )
        return checks
    checks.append(_plain_import_check(stack, tk, env or {}))
    # An internal CANN build has no table row; the torch line check above is all there is.
    if tk is None or tk.version is None or not tk.version.comparable:
        checks.append(
            Check(id="torch_npu", status=PASS, detail=f"torch_npu {stack.torch_npu} matches torch")
        )
        return checks
    verdict = compat.torch_npu_verdict(tk.version, stack.torch_npu)
    # The public table stops at torch_npu 2.12.0 (CANN 9.1.0); 2.13 and 2.14 exist on PyPI with no
    # row, so "not listed" only warns (reference real-host-findings.md §4).
    if not compat.in_table(stack.torch_npu):
        listed = compat.TORCH_NPU_FOR_CANN.get(tk.version.release, ())
        checks.append(
            Check(
                id="torch_npu",
                status=WARN,
                detail=verdict.detail,
                hint=(
                    f"The tested ones for CANN {tk.version.release}: {', '.join(listed)}. "
                    if listed
                    else ""
                )
                + "An untested pairing may work: cannbuild validate's torch_npu route checks it "
                "on this host.",
            )
        )
    elif verdict.ok is False:
        listed = compat.TORCH_NPU_FOR_CANN.get(tk.version.release, ())
        checks.append(
            Check(
                id="torch_npu",
                status=WARN,
                detail=verdict.detail,
                hint=f"Install a torch_npu tested with CANN {tk.version.release}: "
                + ", ".join(listed),
            )
        )
    elif verdict.ok is None:
        checks.append(
            Check(
                id="torch_npu",
                status=SKIP,
                detail=verdict.detail,
                hint="Check Ascend/pytorch COMPATIBILITY for this CANN.",
            )
        )
    else:
        checks.append(Check(id="torch_npu", status=PASS, detail=verdict.detail))
    return checks


def _plain_import_check(stack: PythonStack, tk: Optional[Toolkit], env: Mapping[str, str]) -> Check:
    """With torch_npu installed, `import torch` loads it: say whether that works in this shell."""
    version = stack.torch_npu
    # torch then skips loading torch_npu, whose absent CANN libraries would fail the import with
    # `Failed to load the backend extension: torch_npu ... TORCH_DEVICE_BACKEND_AUTOLOAD=0`.
    if env.get(AUTOLOAD) == "0":
        return Check(
            id="torch_import",
            status=PASS,
            detail=f"{AUTOLOAD}=0: `import torch` does not load torch_npu {version}",
        )
    problem = plain_import_problem(stack, env)
    if problem is None:
        return Check(
            id="torch_import",
            status=PASS,
            detail=f"`import torch` can load torch_npu {version} in this environment",
        )
    source = (
        f"source {tk.set_env}" if tk is not None and tk.set_env is not None else "source set_env.sh"
    )
    return Check(
        id="torch_import",
        status=WARN,
        detail=f"a plain `import torch` fails in this shell: it auto-loads torch_npu {version}, and {problem}",
        hint=f"{source} before using torch_npu, or set {AUTOLOAD}=0 to import torch without torch_npu "
        "(cannbuild itself does both where it needs to).",
    )


def _torch_for(torch_npu: str) -> str:
    return compat.torch_release(torch_npu)
