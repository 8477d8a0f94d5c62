"""A multi-rank profile (issue 28 item 5): one profiler output per rank, `rank<n>_ascend_pt`
or any `*_ascend_pt` (torch_npu names them `<worker>_<pid>_<time>_ascend_pt`, one per
process) or `PROF_*` (msprof), each with its own table, and the slowest rank named."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Optional

from msgspec import Struct

from .analysis import Analysis

# torch_npu writes profiler_info_<rank>.json in a distributed run (profiler-formats.md §1.1).
_INFO = re.compile(r"^profiler_info_(\d+)\.json$")
_RANK_NAME = re.compile(r"^rank_?(\d+)", re.IGNORECASE)


class RankSummary(Struct, frozen=True, kw_only=True):
    rank: str
    path: Path
    analysis: Analysis

    def to_json(self) -> Dict[str, object]:
        a = self.analysis
        return {
            "rank": self.rank,
            "path": str(self.path),
            "kernels": a.kernels,
            "device_total_us": round(a.total_us, 3),
            "fused_us": round(sum((f.total_us for f in a.fused), 0.0), 3),
            "unfused_chains": a.chain_count,
            "unfused_us": round(a.chain_total_us, 3),
        }


def profile_root(folder: Path) -> Path:
    """The profiler output a run folder belongs to: its nearest `*_ascend_pt` or `PROF_*`
    ancestor (a torch_npu run's raw PROF_* copy belongs to the run), else the folder."""
    found: Optional[Path] = None
    for here in (folder, *folder.parents):
        if here.name.endswith("_ascend_pt"):
            return here
        if found is None and here.name.startswith("PROF_"):
            found = here
    return found or folder


def rank_name(root: Path) -> str:
    """`rank 3` from profiler_info_3.json or a `rank3_...` folder, else the folder's name."""
    try:
        for entry in sorted(p.name for p in root.iterdir()):
            match = _INFO.match(entry)
            if match:
                return f"rank {match.group(1)}"
    except OSError:
        pass
    match = _RANK_NAME.match(root.name)
    return f"rank {match.group(1)}" if match else root.name
