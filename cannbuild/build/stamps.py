"""Step stamps: what a finished step recorded, and whether what it made is still there.

A stamp (`<workspace>/stamps/<step>.json`) is written atomically by the runner after a
step succeeded, and only then; the plan only reads them.  It holds the step's input
hash and inputs (to explain a rerun), its artifacts with size, mtime and sha256, the
paths it needs to stay up to date, and the run that made it.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..bounded import ARCHIVE, STAMP, read_state
from ..bounded import digest as file_digest
from ..decoded import JSONObject, JSONValue
from ..workspace import Workspace, write_json_atomic


def stamp_path(ws: Workspace, step: str) -> Path:
    return ws.stamps / f"{step}.json"


def read_stamp(ws: Workspace, step: str) -> Optional[JSONObject]:
    # A stamp that is not a JSON object (hand-edited, truncated) counts as no stamp: rebuild.
    return read_state(stamp_path(ws, step), STAMP, Dict[str, Any])  # type: ignore[no-any-return]


def digest(data: object) -> str:
    """The hash of plain data, stable across runs (sorted keys)."""
    # default=str: a Path or another non-JSON value hashes by its text.
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def artifact_record(path: Path) -> Dict[str, object]:
    st = path.stat()
    return {
        "path": str(path),
        "sha256": file_digest(path, ARCHIVE),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
    }


def write_stamp(
    ws: Workspace,
    step: str,
    *,
    run_id: str,
    input_hash: str,
    inputs: Mapping[str, object],
    artifacts: Sequence[Mapping[str, object]],
    requires: Sequence[str],
    duration_s: float,
    log: Path,
) -> None:
    # The step's outputs are its artifacts' contents; a step without artifacts (an install) passes
    # on its input hash, so steps after it still notice a change upstream of it.
    outputs: List[str] = [str(a["sha256"]) for a in artifacts] or [input_hash]
    write_json_atomic(
        stamp_path(ws, step),
        {
            "step": step,
            "run_id": run_id,
            "input_hash": input_hash,
            "inputs": dict(inputs),
            "artifacts": [dict(a) for a in artifacts],
            "outputs_digest": digest(outputs),
            "requires_paths": list(requires),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
            "duration_s": round(duration_s, 3),
            "log": str(log),
        },
    )


def outputs_gone(stamp: Mapping[str, JSONValue]) -> Optional[str]:
    """Why what the stamped step made is no longer as it made it, or None."""
    for artifact in stamp.get("artifacts", []):
        path = Path(artifact["path"])
        try:
            st = path.stat()
        except OSError:
            return f"its output {path.name} is gone"
        # Size and mtime, not the sha256: checking costs a stat per artifact, so a no-op plan stays
        # fast; a rebuilt artifact of the same size still gets a new mtime.
        if st.st_size != artifact.get("size") or st.st_mtime_ns != artifact.get("mtime_ns"):
            return f"its output {path.name} was changed since it was built"
    # Paths the step's result lives in besides its artifacts: the toolkit overlay an opbase install
    # made (actions.py); deleting it reruns the step.
    for extra in stamp.get("requires_paths", []):
        if not Path(extra).exists():
            return f"{extra} is gone"
    return None
