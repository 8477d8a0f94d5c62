"""`clean` and `status`: what a workspace holds, and pruning what it no longer needs.

Both read the workspace only (no host reading, no toolkit): they work anywhere, fast.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional

from .errors import CannbuildError
from .ownership import remove_inside
from .workspace import Workspace, read_json

# What build.sh leaves in a checkout besides the packages (build_out/ keeps those, so
# the steps stay up to date after a clean).
BUILD_TREES = ("build", "output")


def _runs(folder: Path) -> List[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []


def _latest(folder: Path) -> Optional[str]:
    link = folder / "latest"
    return os.readlink(link) if link.is_symlink() else None


def clean_plan(root: Path, keep: int, sources: bool = False, sandbox: bool = False) -> List[Path]:
    """The paths `clean` removes: build trees, tmp and validation scratch, the logs and
    reports of all but the last `keep` runs (and never the latest); with `sources` the
    checkouts and caches, with `sandbox` the workspace's sandbox."""
    ws = Workspace(root)
    targets: List[Path] = []
    if ws.src.is_dir() and not sources:
        for checkout in sorted(ws.src.iterdir()):
            if checkout.name.startswith(".") or not checkout.is_dir():
                continue
            targets += [checkout / t for t in BUILD_TREES if (checkout / t).exists()]
    targets += [p for p in (ws.tmp, ws.validate) if p.exists()]
    for folder in (ws.logs, ws.reports):
        runs = _runs(folder)
        latest = _latest(folder)
        targets += [r for r in runs[: max(len(runs) - keep, 0)] if r.name != latest]
    if sources:
        targets += [p for p in (ws.src, ws.git_cache, ws.downloads) if p.exists()]
    if sandbox and (ws.root / "sandbox").exists():
        targets.append(ws.root / "sandbox")
    return targets


def remove(root: Path, targets: List[Path]) -> int:
    return remove_inside(root, targets, "workspace")


def workspace_status(root: Path, lock_file: Path) -> Dict[str, Any]:
    """What is built, installed and validated in the workspace, and from which commits."""
    from .sources.lock import read_lock

    ws = Workspace(root)
    steps = []
    for stamp_path in sorted(ws.stamps.glob("*.json")) if ws.stamps.is_dir() else []:
        stamp = read_json(stamp_path)
        if not isinstance(stamp, dict) or "input_hash" not in stamp:
            continue
        source = (stamp.get("inputs") or {}).get("source") or {}
        steps.append(
            {
                "step": stamp.get("step", stamp_path.stem),
                "finished": stamp.get("finished"),
                "run_id": stamp.get("run_id"),
                "commit": source.get("commit"),
                "artifacts": [
                    {"path": a.get("path"), "present": Path(a.get("path", "")).is_file()}
                    for a in stamp.get("artifacts", [])
                ],
            }
        )
    validation = read_json(ws.stamps / "validate.json") or {}
    try:
        lock = read_lock(lock_file)
    except CannbuildError:  # a broken lock is reported by the tasks that use it
        lock = None
    vendors = (
        sorted(p for p in (ws.opp / "vendors").glob("*") if p.is_dir()) if ws.opp.is_dir() else []
    )
    return {
        "workspace": str(ws.root),
        "exists": ws.root.is_dir(),
        "lock": {
            "file": str(lock_file),
            "recipe": lock.recipe,
            "cann": lock.toolkit_version,
            "soc": lock.soc,
            "repos": [{"name": r.name, "ref": r.ref, "commit": r.commit} for r in lock.repos],
        }
        if lock
        else None,
        "steps": steps,
        "installed": [
            {"vendor": str(v), "set_env": str(v / "bin" / "set_env.bash")}
            for v in vendors
            if (v / "bin" / "set_env.bash").is_file()
        ],
        "validation": {
            "status": (validation.get("validation") or {}).get("status"),
            "run_id": validation.get("run_id"),
            "reason": (validation.get("validation") or {}).get("reason"),
        }
        if validation
        else None,
        "last_build": read_json(ws.reports / "last-build.json"),
        "latest_report": str(ws.reports / "latest" / "report.md")
        if (ws.reports / "latest").exists()
        else None,
    }
