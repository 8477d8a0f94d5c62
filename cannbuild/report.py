"""The run report: report.json and report.md under <workspace>/reports/<run-id>/.

How the build went (a failed step with its digest), host facts from doctor, the lock,
each step with its duration and log, the packages with their sha256, the build behind
what was validated, every validation case with its figures and verdict;
`reports/latest` points at the newest run.  Everything passes through redaction;
files are written atomically.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence

import msgspec

from . import __version__
from .build.compile_cache import summary_line
from .build.stamps import read_stamp
from .redact import redact_data
from .report_md import render_markdown
from .workspace import Workspace, point_link, write_atomic, write_json_atomic

if TYPE_CHECKING:
    from .build.runner import StepOutcome
    from .sources.lock import Lock


def build_report(
    *,
    run_id: str,
    host: Mapping[str, object],
    recipe: Mapping[str, object],
    lock: Optional[Lock],
    steps: Sequence[Mapping[str, object]],
    validation: Optional[Mapping[str, object]],
    sandbox: Optional[Mapping[str, object]] = None,
    build: Optional[Mapping[str, object]] = None,
    built_from: Optional[Mapping[str, object]] = None,
    artifacts: Sequence[Mapping[str, object]] = (),
    cache: Optional[Mapping[str, object]] = None,
    package: Optional[Mapping[str, object]] = None,
) -> Dict[str, object]:
    return redact_data(
        {
            "cannbuild": __version__,
            "run_id": run_id,
            "created": time.strftime("%Y-%m-%d %H:%M:%S"),
            "build": dict(build) if build else None,
            "built_from": dict(built_from) if built_from else None,
            "artifacts": [dict(a) for a in artifacts],
            "cache": {**cache, "line": summary_line(cache)} if cache else None,
            "package": dict(package) if package else None,
            "host": dict(host),
            "sandbox": dict(sandbox) if sandbox else None,
            "recipe": dict(recipe),
            "lock": msgspec.to_builtins(lock) if lock is not None else None,
            "steps": list(steps),
            "validation": dict(validation) if validation else None,
        }
    )


def write_report(ws: Workspace, run_id: str, report: Mapping[str, object]) -> Path:
    directory = ws.reports / run_id
    write_json_atomic(directory / "report.json", report)
    write_atomic(directory / "report.md", render_markdown(report).encode("utf-8"))
    point_link(ws.reports / "latest", run_id)
    return directory


def step_records(
    ws: Workspace, outcomes: Optional[Sequence[StepOutcome]], names: Sequence[str]
) -> List[Dict[str, object]]:
    """This run's outcomes, or (for a standalone validate) what the stamps say."""
    if outcomes:
        return [o.to_json() for o in outcomes]
    records = []
    for name in names:
        stamp = read_stamp(ws, name) or {}
        records.append(
            {
                "name": name,
                "status": "built" if stamp else "not built",
                "finished": stamp.get("finished"),
                "duration_s": stamp.get("duration_s"),
                "log": stamp.get("log"),
                "artifacts": [a["path"] for a in stamp.get("artifacts", [])],
            }
        )
    return records
