"""What `profile` reports: the summary, the timeline picture (when it can be drawn) and
the lines that go with it.  The task layer only prints this."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from msgspec import Struct

from .. import safefs
from ..ownership import claim
from . import chart
from .run import RunOutcome
from .summary import ProfileSummary


class ProfileReport(Struct, frozen=True, kw_only=True):
    summary: ProfileSummary
    timeline: Optional[Path]  # the PNG written, None when none was
    notes: Tuple[str, ...]  # why there is no picture, what a dry run would write
    run: Optional[RunOutcome] = None

    def to_json(self) -> Dict[str, Any]:
        """`--json`: the documented schema only (the summary's)."""
        return self.summary.to_json()

    def details(self) -> Dict[str, Any]:
        """The table view's data: the summary's details, the run, the timeline."""
        data = self.summary.details()
        data["notes"] += list(self.notes)
        data["timeline"] = str(self.timeline) if self.timeline else None
        if self.run is not None:
            data["run"] = self.run.to_json()
        return data

    def side_notes(self) -> List[str]:
        """With --json, what does not fit the schema, for stderr: the run, the timeline,
        the notes (one line each)."""
        lines: List[str] = []
        if self.run is not None:
            r = self.run
            diff = "n/a" if r.max_abs_diff is None else f"{r.max_abs_diff:.3g}"
            lines.append(
                f"run: profiler output {r.output}; fused {_ms(r.fused_ms)} ms, unfused "
                f"{_ms(r.unfused_ms)} ms per call; outputs differ by at most {diff}"
            )
        lines += [f"note: {n}" for n in (*self.summary.notes, *self.notes)]
        if self.timeline:
            lines.append(f"timeline: {self.timeline}")
        return lines


def _ms(values: Tuple[float, ...]) -> str:
    return ", ".join(f"{m:.1f}" for m in values)


def make_report(
    summary: ProfileSummary,
    target: Path,
    dry_run: bool = False,
    run: Optional[RunOutcome] = None,
    claim_workspace: Optional[Path] = None,
    claim_out: bool = False,
) -> ProfileReport:
    """Draw the timeline into `target` when there is something to draw and matplotlib is
    there; otherwise say why not (and how to get it).  `claim_workspace`: the default
    output folder is inside the workspace, which is marked as cannbuild's first (and
    the folder made without following a link in it).  `claim_out`: `target` is --out,
    cannbuild's as a profile output (a folder holding files it did not write: exit 2)."""
    notes: List[str] = []
    timeline: Optional[Path] = None
    why_not = chart.missing()
    if not summary.analysis.windows:
        notes.append("no timeline: no attention op (fused or unfused) on a device stream")
    elif why_not:
        notes.append(f"no timeline PNG: {why_not}")
    elif dry_run:
        notes.append(f"dry run: would write {target / 'timeline.png'}; nothing was changed")
    else:
        if claim_workspace is not None:
            claim(claim_workspace, "workspace", "--workspace")
            safefs.make_dirs(claim_workspace, target, "the profile folder")
        elif claim_out:
            claim(target, "profile-output", "--out")
        timeline = chart.draw_timeline(summary.analysis.windows, target / "timeline.png")
    return ProfileReport(summary=summary, timeline=timeline, notes=tuple(notes), run=run)
