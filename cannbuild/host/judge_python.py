"""doctor rows about the Python stack: torch, torch_npu, their pairing with each other
and with CANN, and whether a plain `import torch` works here (read without importing
torch)."""

from __future__ import annotations

from typing import Iterator, Mapping, Optional, Tuple

from . import compat
from .check import FAIL, PASS, SKIP, WARN, Check
from .pystack import AUTOLOAD, PythonStack, plain_import_problem
from .toolkit import Toolkit
from .versions import CannVersion


def python_stack_checks(
    stack: PythonStack,
    tk: Optional[Toolkit],
    env: Optional[Mapping[str, str]] = None,
    sandbox: bool = False,
) -> Iterator[Check]:
    """torch / torch_npu rows from package metadata and `env` (the shell's), never importing
    torch.  A hint names the torch to install: the installed torch_npu's, else the one the
    sources pair with this CANN through torch_npu (on the sandbox: the tested one)."""
    cann = None if sandbox or tk is None else tk.version
    want = compat.torch_to_install(stack.torch_npu, cann)
    if stack.torch is None:
        yield Check(
            id="torch",
            status=SKIP,
            detail="torch not installed",
            hint="Needed only for the validation reference: " + compat.cpu_torch_fix(want),
        )
    else:
        yield _torch_check(stack.torch, stack.python)
    if stack.torch_npu is None:
        yield Check(
            id="torch_npu",
            status=SKIP,
            detail="torch_npu not installed",
            hint="Only the torch_npu validation route needs it: pip install "
            f"torch-npu=={_torch_npu_for(stack.torch, cann)}.",
        )
        return
    # A torch_npu wheel pins its torch (`Requires-Dist: torch==2.13.0.*` in torch-npu 2.13.0).
    if stack.torch is None:
        yield Check(
            id="torch_npu",
            status=FAIL,
            detail=f"torch_npu {stack.torch_npu} is installed without torch",
            hint=compat.cpu_torch_fix(want),
        )
        return
    # torch_npu is built against torch's CPU build (Ascend/pytorch@9e73e708:README.md:85);
    # beside PyPI's CUDA torch 2.13.0, `import torch_npu` 2.13.0 aborts (issue 30).
    if stack.torch_device is not None:
        yield Check(
            id="torch_npu",
            status=FAIL,
            detail=f"torch {stack.torch} is a {stack.torch_device} build beside torch_npu "
            f"{stack.torch_npu}, which needs the CPU build of torch {want} (with PyPI's CUDA "
            "torch 2.13.0, importing torch_npu 2.13.0 aborts)",
            hint=compat.cpu_torch_fix(want, stack.torch_device),
        )
        return
    # A torch / torch_npu ABI mismatch surfaces at import as `libtorch_npu.so: undefined symbol:
    # _ZN5torch10ValueErrorC1EPKcz` (Ascend/pytorch issue 35).
    if not compat.same_torch_line(stack.torch, stack.torch_npu):
        yield Check(
            id="torch_npu",
            status=FAIL,
            detail=f"torch_npu {stack.torch_npu} does not match torch {stack.torch}",
            hint="torch_npu's major.minor.patch must equal torch's (else 'undefined symbol' "
            f"at import): {compat.cpu_torch_fix(want)}",
        )
        return
    yield _plain_import_check(stack, tk, env or {})
    # An internal CANN build has no table row; the torch line check above is all there is.
    if tk is None or tk.version is None or not tk.version.comparable:
        yield Check(
            id="torch_npu", status=PASS, detail=f"torch_npu {stack.torch_npu} matches torch"
        )
        return
    yield _torch_npu_check(stack.torch_npu, tk.version)


def _torch_check(torch: str, python: Tuple[int, int]) -> Check:
    """Pass where a source pairs torch's line with this Python; warn where the sources pair it
    with others only, or where none lists this torch line (host/pairings.py)."""
    py = f"{python[0]}.{python[1]}"
    verdict = compat.python_verdict(torch, python)
    if verdict.ok:
        paired = " and ".join(verdict.sources)
        return Check(
            id="torch", status=PASS, detail=f"torch {torch} on Python {py}: paired by {paired}"
        )
    hint = (
        f"Use a Python the sources pair with torch {torch} (this is {py})."
        if verdict.ok is False
        else f"No source publishes the Python versions of torch {torch} yet; it installed, so it "
        "may work all the same."
    )
    return Check(
        id="torch", status=WARN, detail=f"{verdict.detail} (installed: torch {torch})", hint=hint
    )


def _torch_npu_check(torch_npu: str, cann: CannVersion) -> Check:
    """Pass where any source pairs torch_npu with this CANN, naming it; never fail on a pairing:
    warn where the sources pair it otherwise, or where none publishes one (2.13.0 has no row in
    any source; the official table stops at 2.12.0)."""
    verdict = compat.torch_npu_verdict(cann, torch_npu)
    if verdict.ok:
        return Check(id="torch_npu", status=PASS, detail=verdict.detail)
    paired = "; ".join(
        f"{', '.join(versions)} ({name})"
        for name, versions in compat.paired_torch_npu(cann.release)
    )
    if verdict.ok is False:
        hint = f"Install a torch_npu paired with CANN {cann.release}: {paired}"
    else:
        hint = (f"Paired with CANN {cann.release}: {paired}. " if paired else "") + (
            "An unpublished pairing may work: cannbuild validate's torch_npu route checks it "
            "on this host."
        )
    return Check(id="torch_npu", status=WARN, detail=verdict.detail, hint=hint)


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


def _torch_npu_for(torch: Optional[str], cann: Optional[CannVersion]) -> str:
    """The torch_npu to name: the installed torch's release (torch_npu's major.minor.patch
    is torch's), else the newest some source pairs with this CANN, else a placeholder."""
    if torch:
        return compat.torch_release(torch)
    paired = [v[0] for _, v in compat.paired_torch_npu(cann.release)] if cann is not None else []
    return max(paired, key=compat.version_key) if paired else "<version for this CANN>"
