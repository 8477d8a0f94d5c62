"""Two bench result files side by side (issue 28 item 6): `bench --compare OLD.json
NEW.json`, so a run can be checked against the last one.  Rows are matched by variant,
implementation and shape (docs/bench.md, `"schema": "cannbuild-bench/1"`); each timed pair
gets its medians and the change, and one verdict line sums them up."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..bounded import BENCH_RESULTS, read_json, refusal

SCHEMA = "cannbuild-bench/1"
# A change within this fraction of the old median is noise on a shared host.
NOISE = 0.05


def load_results(path: Path, flag: str) -> Dict[str, Any]:
    kind = BENCH_RESULTS.named(f"{flag} {BENCH_RESULTS.what}")
    data = read_json(path, kind)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise refusal(path, kind, f'has no "schema": "{SCHEMA}", so it is not one cannbuild wrote')
    if not isinstance(data.get("results"), list):
        raise refusal(path, kind, 'has no "results" list')
    return data


def _median(row: Dict[str, Any]) -> Optional[float]:
    timing = row.get("timing") if row.get("status") == "timed" else None
    value = timing.get("median_ms") if isinstance(timing, dict) else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _key(row: Dict[str, Any]) -> Tuple[str, str, str]:
    return (str(row.get("variant")), str(row.get("impl")), str(row.get("shape")))


def compare_results(old: Dict[str, Any], new: Dict[str, Any]) -> Dict[str, Any]:
    """`{"rows": [...], "only_old": [...], "only_new": [...], "verdict": str}`."""
    before = {_key(r): r for r in old["results"] if isinstance(r, dict)}
    after = {_key(r): r for r in new["results"] if isinstance(r, dict)}
    rows: List[Dict[str, Any]] = []
    ratios: List[float] = []
    faster = slower = 0
    for key in sorted(set(before) & set(after)):
        b, a = _median(before[key]), _median(after[key])
        change = (a / b - 1.0) if a is not None and b is not None else None
        if change is not None:
            ratios.append(b / a)  # type: ignore[operator]
            faster += change < -NOISE
            slower += change > NOISE
        rows.append(
            {
                "variant": key[0],
                "impl": key[1],
                "shape": key[2],
                "old_median_ms": b,
                "new_median_ms": a,
                "change": round(change, 4) if change is not None else None,
                "old_status": before[key].get("status"),
                "new_status": after[key].get("status"),
            }
        )
    verdict = (
        f"{len(ratios)} timings compared: {faster} faster, {slower} slower, "
        f"{len(ratios) - faster - slower} within {NOISE:.0%}"
    )
    if ratios:
        mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        verdict += f"; geometric mean speedup {mean:.3f}x"
    return {
        "rows": rows,
        "only_old": [" ".join(k) for k in sorted(set(before) - set(after))],
        "only_new": [" ".join(k) for k in sorted(set(after) - set(before))],
        "verdict": verdict,
    }
