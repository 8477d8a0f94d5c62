"""Two bench result files side by side (issue 28 item 6): `bench --compare OLD.json
NEW.json`, so a run can be checked against the last one.  Rows are matched by variant,
implementation and shape (docs/bench.md, `"schema": "cannbuild-bench/1"`).

A median against a median cannot tell a change from noise (issue 40: two runs of one build
on a loaded host read -99.4 % and +46,841.6 %), so each pair of timings is compared as two
samples: a Mann-Whitney U test on the recorded times (exact for the sizes bench records,
3 to 25 calls, without ties; the normal approximation with the tie correction otherwise) and
the interquartile ranges.  A row is faster or slower only when the test says so (two-sided
p < ALPHA), the two IQRs do not overlap and the medians differ by MIN_CHANGE or more (less
is what two runs of one build differ by on a shared host); within noise when any of these
fails; no verdict when the samples are too few for the test to ever say so, spread too wide
to read (an IQR over MAX_SPREAD of its median), or taken on a host loaded past its cores
(results.json `host.loaded_shapes`).  Each row says how many samples back it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..bounded import BENCH_RESULTS, read_json, refusal
from .timing import quartiles

SCHEMA = "cannbuild-bench/1"
ALPHA = 0.05
MAX_SPREAD = 0.5  # an IQR wider than half its median: no verdict
MIN_CHANGE = 0.1  # a smaller change of the median is run-to-run noise
EXACT_MAX = 30  # each side's size up to which the U distribution is counted exactly
FASTER, SLOWER, NOISE, NONE = "faster", "slower", "within noise", "no verdict"


def load_results(path: Path, flag: str) -> Dict[str, Any]:
    kind = BENCH_RESULTS.named(f"{flag} {BENCH_RESULTS.what}")
    data = read_json(path, kind)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise refusal(path, kind, f'has no "schema": "{SCHEMA}", so it is not one cannbuild wrote')
    if not isinstance(data.get("results"), list):
        raise refusal(path, kind, 'has no "results" list')
    return data


def _times(row: Mapping[str, object]) -> List[float]:
    timing = row.get("timing") if row.get("status") == "timed" else None
    times = timing.get("times_ms") if isinstance(timing, dict) else None
    if not isinstance(times, list):
        return []
    return [float(t) for t in times if isinstance(t, (int, float)) and t > 0]


def _key(row: Dict[str, Any]) -> Tuple[str, str, str]:
    return (str(row.get("variant")), str(row.get("impl")), str(row.get("shape")))


def _u_counts(n: int, m: int) -> List[int]:
    """How many of the C(n+m, n) orderings of two samples give each U (0..n*m)."""
    # U counts the pairs where the first sample's value is the larger.  Of i + j values the
    # largest is either the first sample's (j more pairs: counts[i-1][j] shifted by j) or the
    # second's (counts[i][j-1] as it is).
    row = [[1] for _ in range(m + 1)]  # i = 0: U is 0 whatever j
    for i in range(1, n + 1):
        new = [[1]]  # j = 0
        for j in range(1, m + 1):
            counts = [0] * (i * j + 1)
            for u, c in enumerate(row[j]):
                counts[u + j] += c
            for u, c in enumerate(new[j - 1]):
                counts[u] += c
            new.append(counts)
        row = new
    return row[m]


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sided p-value of the Mann-Whitney U test of samples a and b."""
    n, m = len(a), len(b)
    pooled = sorted([(x, 0) for x in a] + [(y, 1) for y in b])
    ranks = [0.0] * len(pooled)
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        t = j - i + 1
        ties += t**3 - t
        i = j + 1
    u = sum(r for r, (_v, side) in zip(ranks, pooled) if side == 0) - n * (n + 1) / 2
    low = min(u, n * m - u)
    if not ties and n <= EXACT_MAX and m <= EXACT_MAX:
        counts = _u_counts(n, m)
        tail = sum(counts[: int(low) + 1]) / math.comb(n + m, n)
        return min(1.0, 2 * tail)
    variance = n * m / 12 * ((n + m + 1) - ties / ((n + m) * (n + m - 1)))
    if variance <= 0:
        return 1.0  # every value the same
    z = (n * m / 2 - low - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


def smallest_p(n: int, m: int) -> float:
    """The smallest two-sided p the exact test can give for these sizes."""
    return 2 / math.comb(n + m, n)


def judge(old: Sequence[float], new: Sequence[float]) -> Tuple[str, str, Optional[float]]:
    """The verdict on one pair of samples, why, and the test's p (None where it was not
    run)."""
    if len(old) < 2 or len(new) < 2 or smallest_p(len(old), len(new)) >= ALPHA:
        return NONE, f"too few samples for a rank test at p < {ALPHA}", None
    (o1, om, o3), (n1, nm, n3) = quartiles(old), quartiles(new)
    spread = max((o3 - o1) / om, (n3 - n1) / nm)
    p = mann_whitney(old, new)
    if spread > MAX_SPREAD:
        return NONE, f"the timings spread too wide to read (an IQR {spread:.0%} of its median)", p
    if p >= ALPHA:
        return NOISE, f"p = {p:.2g}", p
    if n3 >= o1 and o3 >= n1:
        return NOISE, f"p = {p:.2g} but the IQRs overlap", p
    if abs(nm / om - 1) < MIN_CHANGE:
        return NOISE, f"p = {p:.2g} but the medians differ by less than {MIN_CHANGE:.0%}", p
    return (FASTER if nm < om else SLOWER), f"p = {p:.2g}", p


def compare_results(old: Dict[str, Any], new: Dict[str, Any]) -> Dict[str, Any]:
    """`{"rows": [...], "only_old": [...], "only_new": [...], "verdict": str}`."""
    before = {_key(r): r for r in old["results"] if isinstance(r, dict)}
    after = {_key(r): r for r in new["results"] if isinstance(r, dict)}
    rows: List[Dict[str, Any]] = []
    ratios: List[float] = []
    tally = {FASTER: 0, SLOWER: 0, NOISE: 0, NONE: 0}
    loaded = _loaded(old) | _loaded(new)
    samples: List[Tuple[int, int]] = []
    for key in sorted(set(before) & set(after)):
        b, a = _times(before[key]), _times(after[key])
        b_med: Optional[float] = quartiles(b)[1] if b else None
        a_med: Optional[float] = quartiles(a)[1] if a else None
        row = {
            "variant": key[0],
            "impl": key[1],
            "shape": key[2],
            "old_median_ms": b_med,
            "new_median_ms": a_med,
            "change": round(a_med / b_med - 1.0, 4) if a_med and b_med else None,
            "old_status": before[key].get("status"),
            "new_status": after[key].get("status"),
        }
        if b and a:
            verdict, why, p = judge(b, a)
            if key[2] in loaded:
                verdict, why = NONE, "timed on a host loaded past its cores"
            row.update(old_n=len(b), new_n=len(a), verdict=verdict, why=why)
            row["p"] = None if p is None else round(p, 4)
            tally[verdict] += 1
            samples.append((len(b), len(a)))
            ratios.append(b_med / a_med)  # type: ignore[operator]
        rows.append(row)
    verdict = (
        f"{len(ratios)} timings compared: {tally[FASTER]} faster, {tally[SLOWER]} slower, "
        f"{tally[NOISE]} within noise, {tally[NONE]} without a verdict (a Mann-Whitney U test "
        f"at p < {ALPHA} with the IQRs apart"
    )
    if samples:
        low, high = min(min(pair) for pair in samples), max(max(pair) for pair in samples)
        verdict += f", {low if low == high else f'{low} to {high}'} samples a side"
    verdict += ")"
    logs = [math.log(r) for r in ratios if 0 < r < math.inf]  # a hand-edited 1e308 ms: 0
    if logs:
        mean = math.exp(sum(logs) / len(logs))
        verdict += f"; geometric mean speedup of the medians {mean:.3f}x"
    verdict += _conditions(old, new)
    return {
        "rows": rows,
        "only_old": [" ".join(k) for k in sorted(set(before) - set(after))],
        "only_new": [" ".join(k) for k in sorted(set(after) - set(before))],
        "verdict": verdict,
    }


def _loaded(data: Mapping[str, object]) -> Set[str]:
    """The shapes a run timed while the load average was above its cores."""
    host = data.get("host")
    shapes = host.get("loaded_shapes") if isinstance(host, dict) else None
    return {str(s) for s in shapes} if isinstance(shapes, list) else set()


def _conditions(old: Mapping[str, object], new: Mapping[str, object]) -> str:
    """The same package or not, and a run timed on a loaded host."""

    def part(data: Mapping[str, object], key: str, name: str) -> object:
        found = data.get(key)
        return found.get(name) if isinstance(found, dict) else None

    text = ""
    sha = [part(d, "package", "sha256") for d in (old, new)]
    if isinstance(sha[0], str) and sha[0] == sha[1]:
        text += f"; one build (package sha256 {sha[0][:12]}...) in both"
    loaded = [name for name, d in (("old", old), ("new", new)) if part(d, "host", "loaded")]
    if loaded:
        text += f"; the {' and '.join(loaded)} run timed on a loaded host"
    return text
