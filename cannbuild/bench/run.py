"""A bench run on an installed workspace: programs, the sweep, results.json, report.md,
charts.  It builds nothing: the bench task brings the workspace up to date first."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from msgspec import Struct

from .. import __version__, safefs
from ..build.session import Session
from ..errors import UsageError
from ..host.pystack import read_python_stack
from ..ownership import claim
from ..profile import chart
from ..sources.fetch import sha256_file
from ..transaction import built_from
from ..validate import torchnpu, validation_env
from ..validate.cases import FA_OP, RULE, why_no_torch
from ..workspace import point_link, write_atomic, write_json_atomic
from . import charts, report
from .npu_route import NpuWorker
from .routes import Program, RouteError, compile_program
from .shapes import BenchShape
from .sweep import BASELINE, SweepResult, SweepSettings, run_sweep


class BenchRequest(Struct, frozen=True, kw_only=True):
    shapes: Tuple[BenchShape, ...]
    settings: SweepSettings
    out: Optional[Path]  # default <workspace>/bench/<run>
    run_id: str


class BenchOutcome(Struct, frozen=True, kw_only=True):
    out: Path
    results: Dict[str, Any]
    result: SweepResult


def baseline_repo(session: Session) -> str:
    """The selected repo that ships FlashAttention (what bench times)."""
    return session.repo_for_op(FA_OP, "cannbuild bench")


def baseline_vendor(session: Session) -> Path:
    """The vendor folder of the repo that ships FlashAttention."""
    return session.vendor_dir_of(baseline_repo(session))


def installed_baseline(session: Session) -> Tuple[Path, Dict[str, Any]]:
    """The FlashAttention library bench times, and the build of its repo's package alone
    (with `--repos ops-math,ops-transformer`, not ops-math's)."""
    repo = baseline_repo(session)
    record = built_from(session, repo)
    library = session.vendor_dir_of(repo) / "op_api" / "lib" / "libcust_opapi.so"
    if record is None or not library.is_file():
        raise UsageError(
            f"nothing to benchmark: no installed package in {session.ws.root} "
            f"({library} is missing).",
            "Build and install it first: cannbuild install (with the same --sandbox/--workspace).",
        )
    return library, record


def check_torch() -> None:
    """torch is every route's reference: without it, exit 2 before anything is built."""
    missing = why_no_torch()
    if missing:
        raise UsageError(f"cannbuild bench: {missing}.", "Install torch as said, then rerun.")


def _output_folder(session: Session, request: BenchRequest) -> Path:
    """--out is cannbuild's as a bench output (ownership.claim: a folder holding files
    cannbuild did not write is refused, exit 2); the default <workspace>/bench/<run> is
    made without following a link in the workspace (safefs)."""
    if request.out is not None:
        return claim(request.out, "bench-output", "--out")
    return safefs.make_dirs(
        session.ws.root, session.ws.root / "bench" / request.run_id, "the bench folder"
    )


def run_bench(
    session: Session,
    request: BenchRequest,
    variants: Sequence[Any],
    note: Callable[[str], None],
) -> BenchOutcome:
    """variants: `BuiltVariant`s, built and validated (one without a vendor dir failed and
    is reported, not timed); the baseline is the workspace's own install."""
    check_torch()
    library, record = installed_baseline(session)
    out = _output_folder(session, request)
    work = session.ws.tmp / "bench"
    safefs.make_dirs(session.ws.root, work / "data" / request.run_id, "the bench scratch folder")
    safefs.make_dirs(session.ws.root, work / "programs", "the bench scratch folder")
    programs: List[Tuple[str, Program]] = []
    timed = [(v.name, v.vendor) for v in variants if v.vendor is not None]
    for name, vendor in [(BASELINE, baseline_vendor(session)), *timed]:
        env = validation_env(session, vendor=vendor)
        try:
            programs.append((name, compile_program(vendor, env, work / "programs" / name)))
        except RouteError as exc:
            if name == BASELINE:
                raise UsageError(
                    f"cannbuild bench: {exc}.", "Rerun cannbuild validate to see why."
                ) from None
            note(f"variant {name}: {exc}; not timed")
    stack = read_python_stack()
    data_dir = work / "data" / request.run_id
    npu = None
    if request.settings.with_torch:
        target = "sandbox" if session.sandbox is not None else "npu"
        why_not = torchnpu.unavailable(target, "", stack)
        npu = NpuWorker(why_not, library, programs[0][1].env, data_dir)
    try:
        result = run_sweep(request.shapes, programs, data_dir, request.settings, note, npu)
    finally:
        if npu is not None:
            npu.close()
    meta = {
        "run_id": request.run_id,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "target": "sandbox" if session.sandbox is not None else "npu",
        "machine": {
            "system": platform.system(),
            "machine": platform.machine(),
            "cpu_count": len(os.sched_getaffinity(0)),
            "python": platform.python_version(),
            "soc": session.soc,
        },
        "versions": {
            "cannbuild": __version__,
            "cann": session.toolkit.version_text,
            "torch": stack.torch,
            "torch_npu": stack.torch_npu,
        },
        "package": {
            "library": str(library),
            "sha256": sha256_file(library),
            "built": record.get("finished"),
        },
        "commits": dict(record.get("commits", {})),
        "rule": RULE,
        "settings": {
            "budget_s": request.settings.budget_s,
            "target_s": request.settings.target_s,
            "warmup": 1,
        },
    }
    how = {"how": "the workspace's install", "build": "installed"}
    variant_rows = [{"name": BASELINE, **how, "validation": "checked per shape"}]
    variant_rows += [dict(v.info, name=v.name) for v in variants]
    missing_charts = chart.missing()
    made = (
        []
        if missing_charts
        else charts.write_charts(result, out, bool(variants), session.sandbox is not None)
    )
    data = report.results_json(result, meta, variant_rows if variants else [], made, missing_charts)
    write_json_atomic(out / "results.json", data)
    write_atomic(out / "report.md", report.report_md(data).encode())
    if request.out is None:
        point_link(session.ws.root / "bench" / "latest", request.run_id)
    return BenchOutcome(out=out, results=data, result=result)
