"""Tasks that read what the package does: profile (a profiler run read back, fused vs
unfused attention, a timeline picture) and diagnose (why FlashAttention is not used)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Optional, Sequence

from .. import ui
from ..decoded import to_plain
from ..errors import DiagnoseFailed, DryRun, UsageError
from ..lazy import lazy_module
from ..ownership import check_replaceable
from ..workspace import Workspace
from ._flags import SESSION_FLAGS, FlagValue, cli_task
from ._frame import Frame, bring_up_to_date, would_bring_up_to_date

if TYPE_CHECKING:
    from .. import diagnose as diagnosis
    from .. import ui_compare
    from ..diagnose import offhost
    from ..host import pystack
    from ..host.check import Check
    from ..profile import compare as profile_compare
    from ..profile import report as profile_report
    from ..profile import run as profile_run
    from ..profile import shape as profile_shape
    from ..profile import summary as profile_summary
    from ..profile.run import RunOutcome
    from ..profile.shape import AttentionShape
else:  # only the task that runs loads its core (`cannbuild --help` loads every task module)
    diagnosis = lazy_module("cannbuild.diagnose")
    offhost = lazy_module("cannbuild.diagnose.offhost")
    pystack = lazy_module("cannbuild.host.pystack")
    profile_report = lazy_module("cannbuild.profile.report")
    profile_compare = lazy_module("cannbuild.profile.compare")
    ui_compare = lazy_module("cannbuild.ui_compare")
    profile_run = lazy_module("cannbuild.profile.run")
    profile_shape = lazy_module("cannbuild.profile.shape")
    profile_summary = lazy_module("cannbuild.profile.summary")

# profile --run and diagnose bring the workspace up to date first: the build's own flags
ANALYZE_FLAGS = SESSION_FLAGS
SHAPE_FLAGS = ("dtype", "layout", "batch", "heads", "kv_heads", "seq_len", "head_dim")


@cli_task(
    *ANALYZE_FLAGS,
    *SHAPE_FLAGS,
    "json",
    "out",
    "dry_run",
    positional=[
        (
            "path",
            "a torch_npu (*_ascend_pt) or msprof (PROF_*) output, a folder of them, or one of "
            "their files; with --run, the folder the new profile is written to",
        )
    ],
    help={
        "out": "where the timeline PNG goes (default: PATH with --run, else <workspace>/profile)",
    },
    extra=[
        (
            "run",
            False,
            "first run FlashAttention and the unfused chain under the profiler (NPU or "
            "--sandbox), writing into PATH, then read it",
        ),
        ("level", None, "profiler level for --run: 1 (op types, shapes; default) or 0"),
        ("iterations", None, "calls of each for --run (default 3)"),
        (
            "compare",
            None,
            "BEFORE: compare the profile BEFORE with PATH (after): per op type the time delta, "
            "fused and unfused attention before and after, a verdict line",
        ),
    ],
)
def profile(
    frame: Frame,
    path: str,
    json: bool = False,
    out: Optional[str] = None,
    run: bool = False,
    level: Optional[str] = None,
    iterations: Optional[str] = None,
    compare: Optional[str] = None,
    **flags: FlagValue,
) -> None:
    """Read a profiler run: operator types by device time, fused FlashAttention vs unfused
    MatMul->Softmax->MatMul chains (and what fusing them would save), a timeline PNG.

    `profile --run [--sandbox] [--dtype ... --head-dim ...] PATH` makes the run first:
    npu_fusion_attention and the same attention as torch ops, under torch_npu's profiler
    (on the sandbox the emulated runtime writes the same files), into PATH, after
    bringing the workspace up to date (as `cannbuild install`), saying so."""
    if compare:
        _compare(Path(compare), Path(path), json, run)
        return
    # --out follows the ownership rule: refused before the profile is read or run
    target = check_replaceable(Path(out), "profile-output", "--out") if out else None
    if run and target == Path(os.path.abspath(path)):  # --out PATH: where --run writes anyway
        target = None
    outcome = _run(frame, flags, Path(path), level, iterations, json) if run else None
    workspace = None if outcome else frame.options.workspace  # a profile read: <ws>/profile
    report = profile_report.make_report(
        profile_summary.summarise(outcome.output if outcome else Path(path)),
        target or (workspace / "profile" if workspace else Path(path).resolve()),
        frame.dry_run,
        outcome,
        claim_workspace=None if target else workspace,
        claim_out=target is not None,
    )
    if json:
        ui.print_json(report.to_json())
        for line in report.side_notes():
            ui.note(line)
    else:
        details = report.details()
        ui.print_profile(details)
        ui_compare.print_ranks(details)


def _compare(before: Path, after: Path, as_json: bool, run: bool) -> None:
    """`profile --compare BEFORE AFTER`: both read as `profile` reads one, no timeline."""
    if run:
        raise UsageError(
            "profile: --compare reads two existing profiles; --run makes a new one.",
            "Run `cannbuild profile --run PATH` first, then `cannbuild profile --compare BEFORE PATH`.",
        )
    result = profile_compare.ProfileCompare(
        before=profile_summary.summarise(before, timeline=False),
        after=profile_summary.summarise(after, timeline=False),
    )
    if as_json:
        ui.print_json(result.to_json())
    else:
        ui_compare.print_profile_compare(result.to_json())


def _run(
    frame: Frame,
    flags: Dict[str, FlagValue],
    path: Path,
    level: Optional[str],
    iterations: Optional[str],
    as_json: bool,
) -> RunOutcome:
    shape = profile_run.run_shape(profile_shape.shape_from_flags(flags))
    lvl = profile_run.level_name(level)
    try:
        count = int(iterations) if iterations else 3
    except ValueError:
        count = 0
    if not 1 <= count <= 1000:
        raise UsageError(
            f"--iterations {iterations!r} is not a count from 1 to 1000.", "Example: --iterations 5"
        )
    if path.exists() and not path.is_dir():
        raise UsageError(
            f"profile --run: {path} is a file; --run writes a new profile into a folder.",
            "Pass a folder (new or existing; nothing in it is removed).",
        )
    session = frame.session(builds=True)
    what = (
        f"({shape.dtype} {shape.layout} B={shape.B} N={shape.N1}/{shape.N2} S={shape.S} "
        f"D={shape.D}, {count} calls each, {lvl}) into {path.resolve()}"
    )
    if frame.dry_run:
        vendor = session.vendor_dir_of(session.repo_for_op(diagnosis.FA_OP, "profile --run"))
        raise DryRun(f"would profile {vendor} {what}; {would_bring_up_to_date(session)}")
    profile_run.check_profiler(session, os.environ)  # before a build it would not use
    bring_up_to_date(session, "cannbuild profile --run", as_json)
    ui.note(f"profiling FlashAttention and the unfused chain {what}")
    return profile_run.run_profile(
        session, os.environ, shape, lvl, count, path.resolve(), "cannbuild profile --run"
    )


@cli_task(*ANALYZE_FLAGS, *SHAPE_FLAGS, "profile", "json", "dry_run")
def diagnose(
    frame: Frame, json: bool = False, profile: Optional[str] = None, **flags: FlagValue
) -> None:
    """Why FlashAttention would not be used here: registration (package, env, SoC config,
    exports, which library torch_npu would load), dtype, shape limits (from the
    operator's docs in the checkout), and with --profile the cause of each unfused chain.

    The workspace is brought up to date first (as `cannbuild install`), saying so. The
    env rows read this shell's environment: run it where the framework runs. Exit 1
    when a row fails.  With --profile on a machine without a CANN toolkit (a profile
    copied off the cluster) the profile is analysed and the registration rows are marked
    as not checkable here; nothing is built."""
    shape = profile_shape.shape_from_flags(flags)
    # the profile first: a bad one is exit 2 naming it, before the host is probed
    summary = profile_summary.summarise(Path(profile), timeline=False) if profile else None
    if profile and summary is not None:
        # off the NPU host nothing is built: the target's lines in that wording, said once
        # (on the host, open_session says them as building for it)
        options = frame.targeted.options
        why = offhost.no_toolkit(options, os.environ)
        if why is not None:
            for line in frame.targeted.notes(builds=False):
                ui.note(line)
            checks = offhost.off_host_checks(
                why,
                shape,
                Path(profile),
                summary,
                diagnosis.fa_checkout(Workspace(root=options.workspace)),
                options.soc,
            )
            _report(checks, shape, None, options.soc, json, off_host=why)
            return
    session = frame.session(builds=True)
    repo = session.repo_for_op(diagnosis.FA_OP, "cannbuild diagnose")
    if frame.dry_run:
        raise DryRun(
            f"would diagnose FlashAttention in {session.vendor_dir_of(repo)}; "
            f"{would_bring_up_to_date(session)}"
        )
    bring_up_to_date(session, frame.command, json)
    toolkit_env = session.host.build_env or {}
    inputs = diagnosis.DiagnoseInputs(
        vendor_dir=session.vendor_dir_of(repo),
        soc=session.soc,
        checkout=session.ws.checkout(repo),
        vendors=tuple(session.vendor_dirs.items()),
        env=dict(os.environ),
        opp_path=toolkit_env.get("ASCEND_OPP_PATH") or os.environ.get("ASCEND_OPP_PATH"),
        shape=shape,
        profile=Path(profile) if profile else None,
        profile_summary=summary,
        torch_npu=pystack.read_python_stack().torch_npu,
    )
    checks = diagnosis.diagnose(inputs)
    _report(checks, shape, str(inputs.vendor_dir), session.soc, json)


def _report(
    checks: Sequence[Check],
    shape: AttentionShape,
    vendor: Optional[str],
    soc: Optional[str],
    as_json: bool,
    off_host: Optional[str] = None,
) -> None:
    """The rows (or --json), then exit 1 when one failed.  `off_host`: why there is no
    toolkit here (said on stderr; `vendor` is None, `soc` the --soc given or None)."""
    failed = any(check.status == "fail" for check in checks)
    if off_host:
        ui.note(
            "diagnose: no CANN toolkit here, so nothing is built: the profile is analysed and "
            "the registration rows are marked as not checkable here"
        )
    if as_json:
        ui.print_json(
            {
                "checks": to_plain(checks),
                "shape": to_plain(shape),
                "vendor": vendor,
                "soc": soc,
                "failed": failed,
                "off_host": off_host is not None,
            }
        )
    else:
        ui.print_checks(checks, title="cannbuild diagnose")
    if failed:
        raise DiagnoseFailed()


TASKS = (profile, diagnose)
