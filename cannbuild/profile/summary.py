"""Find the profiler outputs under a path, read them, and summarise them as plain data.

What is found (profiler-formats.md §1.1, §2.1):
- torch_npu: `*_ascend_pt/ASCEND_PROFILER_OUTPUT/{kernel_details.csv, op_statistic.csv,
  operator_details.csv, trace_view.json}`;
- msprof: `PROF_*/mindstudio_profiler_output/{op_summary_<ts>.csv (and _slice_<i>_),
  op_statistic_<ts>.csv, msprof_<ts>.json}`;
- the folders themselves, a folder holding several runs, or one of those files.
A torch_npu run's own PROF_* copy (kept when data_simplification is off) is not
counted twice.  Per run the kernel table (kernel_details, else op_summary) gives the
op table and the chains, op_statistic stands in when it is all there is, and the
timeline comes from the trace, each of its two panels (fused, unfused) from the kernel
table when the trace lacks those ops.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

from msgspec import Struct, field
from msgspec.structs import replace

from ..bounded import walk
from ..decoded import to_plain
from ..errors import UsageError
from .analysis import Analysis, DeviceSplit, op_table_from_statistic
from .dbread import read_db
from .hostops import merge_host
from .tables import TableInfo, read_kernels, read_operator_details, read_statistic
from .trace import read_trace

TORCH_DIR = "ASCEND_PROFILER_OUTPUT"
MSPROF_DIR = "mindstudio_profiler_output"
KINDS = (
    # torch_npu's kernel_details.csv (a `_<n>` suffix is accepted too); msprof's
    # `op_summary_20260323031749.csv`, split into `op_summary_slice_<i>_<ts>.csv` above 1,000,000
    # rows; torch_npu's own matching regexes accept `^op_summary_\d{1,20}.*\.csv` the same way.
    ("kernel_details", re.compile(r"^kernel_details(_\d+)?\.csv$")),
    ("op_summary", re.compile(r"^op_summary_(slice_\d+_)?\d{1,20}.*\.csv$")),
    # op_statistic.csv (torch_npu's copy) or `op_statistic_<ts>.csv` (msprof's).
    ("op_statistic", re.compile(r"^op_statistic(_\d{1,20}.*)?\.csv$")),
    ("operator_details", re.compile(r"^operator_details(_\d+)?\.csv$")),
    ("trace_view", re.compile(r"^trace_view(_\d+)?\.json$")),
    ("msprof_json", re.compile(r"^msprof_(slice_\d+_)?\d{1,20}.*\.json$")),
    # The SQLite exports (dbread.py): the names msprof-analyze 26.2.0 matches
    # (advisor/common/profiling/op_summary.py OpSummaryDB.file_pattern_list).
    ("db", re.compile(r"^(ascend_pytorch_profiler(_\d+)?|msprof_\d{14})\.db$")),
)
WALK_HINT = (
    "Pass the profiler output itself (*_ascend_pt, PROF_*) or a folder holding only "
    "profiles; symlinked folders are not followed."
)
KERNEL_KINDS = ("kernel_details", "op_summary", "db")
TRACE_KINDS = ("trace_view", "msprof_json")


# A multi-rank profile: one profiler output per rank, `rank<n>_ascend_pt` or any
# `*_ascend_pt` (torch_npu names them `<worker>_<pid>_<time>_ascend_pt`, one per process) or
# `PROF_*` (msprof), each with its own table, and the slowest rank named.
# torch_npu writes profiler_info_<rank>.json in a distributed run (profiler-formats.md §1.1).
_INFO = re.compile(r"^profiler_info_(\d+)\.json$")
_RANK_NAME = re.compile(r"^rank_?(\d+)", re.IGNORECASE)
_DEVICE = re.compile(r"^device_(\d+)$")  # msprof's raw per-device folder in a PROF_*


class RankSummary(Struct, frozen=True, kw_only=True):
    rank: str
    path: Path
    analysis: Analysis
    device: Optional[str] = None  # set when its profiler output holds several devices

    def to_json(self) -> Dict[str, object]:
        a = self.analysis
        device = {} if self.device is None else {"device": _number(self.device)}
        return {
            "rank": self.rank,
            "path": str(self.path),
            **device,
            "kernels": a.kernels,
            "device_total_us": round(a.total_us, 3),
            "communication_us": round(a.comm_us, 3),
            "fused_us": round(sum((f.total_us for f in a.fused), 0.0), 3),
            "unfused_chains": a.chain_count,
            "unfused_us": round(a.chain_total_us, 3),
        }


def _number(text: str) -> object:
    return int(text) if text.isdigit() else text


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


class SourceFile(Struct, frozen=True, kw_only=True):
    """One file a profile was read from; its JSON is its fields, in this order."""

    path: Path
    kind: str
    records: int
    used_for: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = ()


class ProfileSummary(Struct, frozen=True, kw_only=True):
    root: Path
    files: Tuple[SourceFile, ...]
    analysis: Analysis
    notes: Tuple[str, ...] = field(default_factory=tuple)
    ranks: Tuple[RankSummary, ...] = ()  # one per profiler output when there are several

    @property
    def slowest(self) -> Optional[RankSummary]:
        return _slowest(self.ranks) if self.ranks else None

    def opportunity(self) -> Dict[str, object]:
        """What the unfused chains cost, and what they would cost as the forward fused calls
        of the same attention (query size, S, D) that ran in this profile: no estimate for
        chains that have none (`matched_chains` says how many had)."""
        a = self.analysis
        total = a.chain_total_us
        rates: Dict[object, List[float]] = {}
        for c in a.fused_shapes:
            key = c.problem() if direction(c.op_type) == "forward" else None
            if key is not None:
                rate = rates.setdefault(key, [0, 0.0])
                rate[0] += c.count
                rate[1] += c.total_us
        matched, fused_us, saving = 0, 0.0, 0.0
        for group in a.chains:
            found = rates.get(group.problem())
            if found:
                mean = found[1] / found[0]
                matched += group.count
                fused_us += group.count * mean
                saving += group.total_us - group.count * mean
        return {
            "chains_us": round(total, 3),
            "share": round(total / a.total_us, 4) if a.total_us else 0.0,
            "matched_chains": matched,
            "fused_mean_us": round(fused_us / matched, 3) if matched else None,
            # negative where the fused calls of that shape ran slower here
            "estimated_saving_us": round(saving, 3) if matched else None,
            "said": _saving_said(matched, fused_us / max(matched, 1), saving, a.chain_count),
        }

    def to_json(self) -> Dict[str, Any]:
        """`profile --json`: exactly the documented schema (ops sorted by total_us;
        attention.fused with each fused type, attention.unfused_chains with each chain;
        the files read).  The rest (chain groups, the opportunity, notes) is in
        `details()`."""
        a = self.analysis
        total = a.total_us
        fused = a.fused
        data: Dict[str, Any] = {
            "ops": [
                {
                    "type": o.op_type,
                    "count": o.count,
                    "total_us": round(o.total_us, 3),
                    "mean_us": round(o.mean_us, 3),
                    "max_us": round(o.max_us, 3),
                    "share": round(o.total_us / total, 4) if total else 0.0,
                }
                for o in a.ops
            ],
            "attention": {
                # `type` is the heaviest fused type (the schema's first field); `types` has
                # each one, forward and backward apart.
                "fused": {
                    "type": fused[0].op_type if fused else None,
                    "count": sum(f.count for f in fused),
                    "total_us": round(sum((f.total_us for f in fused), 0.0), 3),
                    "types": [
                        {
                            "type": f.op_type,
                            "direction": direction(f.op_type),
                            "count": f.count,
                            "total_us": round(f.total_us, 3),
                        }
                        for f in fused
                    ],
                    # each shape class with its D and S where the shapes tell them (affinity.py)
                    "shapes": [c.to_json() for c in a.fused_shapes],
                },
                "unfused_chains": {
                    "count": a.chain_count,
                    "total_us": round(float(a.chain_total_us), 3),
                    "chains": [c.to_json() for c in a.chain_list],
                    # counted in count and total_us, past the MAX_LISTED listed
                    "unlisted": a.chains_unlisted,
                },
                # torch ops that computed attention off the device (hostops.py)
                "host_fallbacks": [o.to_json() for o in a.host_ops if o.is_fallback],
            },
            "files": to_plain(self.files),
        }
        if self.slowest is not None:  # several profiler outputs (ranks): each one's, the slowest
            data.update(ranks=[r.to_json() for r in self.ranks], slowest_rank=self.slowest.rank)
        return data

    def details(self) -> Dict[str, Any]:
        """What the table view shows: the --json data plus each op's core, each fused
        type, the chain groups, the fusion opportunity and the notes."""
        a = self.analysis
        data = self.to_json()
        cores = {o.op_type: o.core for o in a.ops}
        for op in data["ops"]:
            op["core"] = cores.get(op["type"], "")
        data["attention"]["unfused_chains"]["groups"] = to_plain(a.chains)
        data["attention"]["opportunity"] = self.opportunity()
        data["device_total_us"] = round(a.total_us, 3)
        data["communication_us"] = round(a.comm_us, 3)
        data["kernels"] = a.kernels
        data["notes"] = list(self.notes)
        return data


def _saving_said(matched: int, mean: float, saving: float, chains: int) -> str:
    """What fusing would save, against fused calls of the same shape only, in words."""
    if not matched:
        return (
            "no FlashAttention call of the same shape (query size, S, D) ran in this profile, "
            "so no saving is estimated"
        )
    text = f"{matched} of them set beside FlashAttention calls of the same shape here ({mean:.1f} us per call): "
    text += (
        f"fusing them would save about {saving:.1f} us"
        if saving >= 0.05
        else f"the fused calls were no faster ({-saving:.1f} us more)"
    )
    if matched < chains:
        text += f"; {chains - matched} have no fused call of their shape to compare with"
    return text


def direction(op_type: str) -> str:
    """backward for the gradient kernels (FlashAttentionScoreGrad), forward otherwise."""
    return "backward" if op_type.endswith("Grad") else "forward"


class _Run(Struct, frozen=True, kw_only=True):
    folder: Path
    files: Dict[str, List[Path]]
    notes: Tuple[str, ...] = ()  # what finding the files said (msprof's slices)


# msprof's `op_summary_slice_<i>_<ts>.csv` / `msprof_slice_<i>_<ts>.json`
_SLICE = re.compile(r"_slice_(\d+)_")


def _one_export(kind: str, paths: List[Path]) -> Tuple[List[Path], List[str]]:
    """The files of `kind` that make one export: msprof writes a table whole or, past a
    million rows, as slices 0..n-1; a whole file beside slices is the same kernels again
    (read alone), and a missing slice leaves the table short (said)."""
    sliced = {int(m.group(1)): p for p in paths if (m := _SLICE.search(p.name))}
    whole = [p for p in paths if not _SLICE.search(p.name)]
    if not sliced:
        return paths, []
    if whole:
        return whole, [
            f"{kind}: {len(sliced)} slices beside {whole[0].name}: the same kernels twice; "
            f"{whole[0].name} is read"
        ]
    missing = sorted(set(range(max(sliced) + 1)) - set(sliced))
    notes = (
        [f"{kind}: slice {', '.join(map(str, missing))} of {max(sliced) + 1} is missing: the "
         "kernel table is short"]
        if missing
        else []
    )  # fmt: skip
    return [sliced[i] for i in sorted(sliced)], notes


def find_runs(path: Path) -> List[_Run]:
    """Every profiler output folder under `path` (or the one holding the file `path`)."""
    if not path.exists():
        raise UsageError(
            f"profile: {path} does not exist.",
            "Pass a torch_npu profiler output (*_ascend_pt), an msprof output (PROF_*), a "
            "folder holding them, or one of their files.",
        )
    if not path.is_dir():  # a file, or a FIFO or device the reader then refuses by name
        kind = _kind(path.name)
        if kind is None:
            raise UsageError(
                f"profile: {path} is not a profiler file cannbuild reads.",
                "Pass kernel_details.csv, op_summary_*.csv, op_statistic*.csv, "
                "operator_details.csv, trace_view.json or msprof_*.json, or their folder.",
            )
        return [_Run(folder=path.parent, files={kind: [path]})]
    runs: List[_Run] = []
    for here, names in walk(path, "profile: the folder", WALK_HINT):
        # With data_simplification off, a torch_npu run keeps msprof's raw `PROF_*` copy next to
        # its ASCEND_PROFILER_OUTPUT: the same kernels twice.
        # (mindstudio_profiler_output inside PROF_* inside a *_ascend_pt run with its own tables)
        if here.name == MSPROF_DIR and _torch_run_has_tables(here.parent.parent):
            continue  # a torch_npu run's raw PROF_* copy: its ASCEND_PROFILER_OUTPUT counts
        files: Dict[str, List[Path]] = {}
        for name in names:
            kind = _kind(name)
            if kind is not None:
                files.setdefault(kind, []).append(here / name)
        if "db" in files and _db_has_tables(here):
            del files["db"]  # the same kernels as the CSV tables beside it
        for kind in _merged_kinds(here):
            files.pop(kind, None)  # msprof merged this device's table into the PROF_* output
        said: List[str] = []
        for kind in ("op_summary", "msprof_json"):
            if kind in files:
                files[kind], notes = _one_export(kind, files[kind])
                said += [f"{here}: {note}" for note in notes]
        if files:
            runs.append(_Run(folder=here, files=files, notes=tuple(said)))
    if not runs:
        raise UsageError(
            f"profile: no profiler output under {path}.",
            "Expected torch_npu's *_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv and "
            "trace_view.json, or msprof's PROF_*/mindstudio_profiler_output/op_summary_*.csv; "
            "run `cannbuild profile --run` to make one.",
        )
    return runs


def _kind(name: str) -> Optional[str]:
    for kind, pattern in KINDS:
        if pattern.match(name):
            return kind
    return None


def _torch_run_has_tables(run: Path) -> bool:
    """Whether a torch_npu run's own output holds its kernels (a kernel table, a .db or the
    trace); an unfinished export with only step_trace_time.csv does not, and its raw
    PROF_* copy is then what is read."""
    out = run / TORCH_DIR
    if not (run.name.endswith("_ascend_pt") and out.is_dir()):
        return False
    try:
        return any(_kind(p.name) in (*KERNEL_KINDS, *TRACE_KINDS) for p in out.iterdir())
    except OSError:
        return False


def _merged_kinds(folder: Path) -> Set[str]:
    """For msprof's per-device `PROF_*/device_<n>/summary` and `timeline` folders
    (`op_summary_0_1_1_<ts>.csv`): the kinds of file its export also merged, every device's
    rows, into the PROF_*'s mindstudio_profiler_output (msprof's MsprofOutputSummary, which
    leaves the device files in place): read there, not twice.  An old export with no
    merged copy is read from the device folders."""
    device = folder.parent
    if folder.name not in ("summary", "timeline") or not _DEVICE.match(device.name):
        return set()
    merged = device.parent / MSPROF_DIR
    try:
        return {k for p in merged.iterdir() if (k := _kind(p.name)) is not None}
    except OSError:
        return set()


def _db_has_tables(folder: Path) -> bool:
    """An msprof_<ts>.db whose kernels are read elsewhere: its PROF_* folder's
    mindstudio_profiler_output has op_summary (msprof exported both), or the PROF_* is a
    torch_npu run's raw copy."""
    if not folder.name.startswith("PROF_"):
        return False
    out = folder / MSPROF_DIR
    return (out.is_dir() and any(out.glob("op_summary_*.csv"))) or _torch_run_has_tables(
        folder.parent
    )


def _also(source: SourceFile, use: str) -> SourceFile:
    return replace(source, used_for=(*source.used_for, use))


def summarise(path: Path, timeline: bool = True) -> ProfileSummary:
    runs = find_runs(path)
    total = Analysis()
    sources: List[SourceFile] = []
    notes: List[str] = []
    per_root: Dict[Path, Analysis] = {}
    # each output's devices ("device 3"; "" where the kernels' device is not known)
    per_device: Dict[Path, Dict[str, Analysis]] = {}
    for run in runs:
        analysis, devices, files, run_notes = _summarise_run(run, timeline)
        total = total.merged(analysis)
        root = profile_root(run.folder)
        per_root[root] = per_root[root].merged(analysis) if root in per_root else analysis
        mine = per_device.setdefault(root, {})
        for device, a in devices.items():
            mine[device] = mine[device].merged(a) if device in mine else a
        sources += files
        notes += run_notes
    # A rank per profiler output, or per device where one holds several (msprof's merged
    # op_summary of device_0..7, or its device_<n> folders read one by one).
    rows = [
        (root, device)
        for root in sorted(per_root, key=str)
        for device in (
            sorted(per_device[root], key=lambda d: (len(d), d))
            if len(per_device[root]) > 1 and "" not in per_device[root]
            else [None]
        )
    ]
    ranks: Tuple[RankSummary, ...] = ()
    if len(rows) > 1:
        ranks = tuple(
            RankSummary(
                rank=rank_name(root) if device is None else (
                    device if len(per_root) == 1 else f"{rank_name(root)} {device}"
                ),
                path=root,
                analysis=(per_root[root] if device is None else per_device[root][device])
                .without_windows(),
                device=None if device is None else device.split()[-1],
            )
            for root, device in rows
        )  # fmt: skip
        slowest = _slowest(ranks)
        split = [r for r in ranks if r.device is not None]
        found = (
            f"{len(ranks)} profiler outputs (ranks) found"
            if not split
            else f"{len(ranks)} ranks found ({len(split)} of them the devices of a profiler "
            "output whose kernel table holds several Device_id values: a row each)"
        )
        notes.insert(
            0,
            f"{found}; the tables add them up; the slowest "
            f"is {slowest.rank} ({slowest.analysis.compute_us:.1f} us of device time outside "
            "collectives: a rank waiting in one for the others is not the slow one)",
        )
        names = [r.rank for r in ranks]
        for twice in sorted({n for n in names if names.count(n) > 1}):
            where = ", ".join(str(r.path) for r in ranks if r.rank == twice)
            notes.insert(
                1,
                f"{twice} is in {names.count(twice)} outputs ({where}): one rank profiled "
                "twice, or one run exported twice (a CSV and a .db); the tables count it "
                "each time: pass one of them",
            )
    elif len(runs) > 1:
        notes.insert(0, f"{len(runs)} profiler outputs found; their kernels are added together")
    # a rank whose export did not finish holds no table: left out of the sums, so said
    empty = sorted(d.name for d in _rank_folders(path) if d not in per_root) if per_root else []
    if empty:
        notes.insert(
            1 if ranks else 0,
            f"{len(empty)} profiler output{'s' if len(empty) > 1 else ''} without tables, left "
            f"out of the sums (an export that did not finish?): {', '.join(empty[:5])}"
            + (f" and {len(empty) - 5} more" if len(empty) > 5 else ""),
        )
    return ProfileSummary(
        root=path, files=tuple(sources), analysis=total, notes=tuple(notes), ranks=ranks
    )


def _slowest(ranks: Tuple[RankSummary, ...]) -> RankSummary:
    """The rank with the most device time outside collectives: the fast ranks spend theirs
    waiting in the all-reduce for the slow one, so counting it would name them instead."""
    return max(ranks, key=lambda r: r.analysis.compute_us)


def _rank_folders(path: Path) -> List[Path]:
    """The `*_ascend_pt` and `PROF_*` folders directly in `path` (a folder of ranks)."""
    if not path.is_dir():
        return []
    try:
        return [
            d
            for d in path.iterdir()
            if (d.name.endswith("_ascend_pt") or d.name.startswith("PROF_")) and d.is_dir()
        ]
    except OSError:
        return []


def _summarise_run(
    run: _Run, timeline: bool
) -> Tuple[Analysis, Dict[str, Analysis], List[SourceFile], List[str]]:
    """The run's Analysis, each device's (`device 3`; `""` where not known), files, notes."""
    files: List[SourceFile] = []
    notes: List[str] = list(run.notes)
    # kernel_details first: at Level0 its names carry the types, and it is what survives
    # torch_npu's default data_simplification (which deletes PROF_*/mindstudio_profiler_output).
    kernel_kind = next((k for k in KERNEL_KINDS if k in run.files), None)
    trace_kind = next((k for k in TRACE_KINDS if k in run.files), None)
    analysis: Optional[Analysis] = None
    devices: Dict[str, Analysis] = {}
    kernel_files: List[SourceFile] = []
    if kernel_kind is not None:
        # Its timeline windows are kept too: a trace may lack the attention ops (cut short, or
        # only part of the run), and then the panels it lacks come from here.
        analyzer = DeviceSplit(windows=timeline)
        for path in run.files[kernel_kind]:
            if kernel_kind == "db":
                db = read_db(path, analyzer)
                analyzer.host_ops = merge_host(analyzer.host_ops, db.host_ops)
                info = TableInfo(rows=db.rows, notes=db.notes)
            else:
                kernels, info = read_kernels(path)
                for k in kernels:
                    analyzer.add(k)
            kernel_files.append(
                SourceFile(
                    path=path,
                    kind=kernel_kind,
                    records=info.rows,
                    notes=info.notes,
                    used_for=("ops", "chains"),
                )
            )
        analysis, devices = analyzer.result()
        # msprof's per-device `device_<n>/summary` table (read when no merged copy) has no
        # Device_id column: its device is its folder's
        folder_device = _DEVICE.match(run.folder.parent.name)
        if folder_device and len(devices) == 1:
            devices = {f"device {folder_device.group(1)}": analysis}
    trace_files: List[SourceFile] = []
    if trace_kind is not None:
        trace_total = Analysis()
        for path in run.files[trace_kind]:
            part, tinfo = read_trace(path, windows=timeline)
            trace_total = trace_total.merged(part)
            trace_files.append(
                SourceFile(
                    path=path,
                    kind=trace_kind,
                    records=tinfo.device_tasks,
                    notes=tinfo.notes,
                    used_for=() if analysis is not None else ("ops", "chains"),
                )
            )
        if analysis is None:
            analysis = trace_total
        else:
            # The device's own stream order draws the timeline: the trace's panels first.
            drawn = {w.kind for w in trace_total.windows}
            analysis = analysis.with_windows(
                trace_total.windows + tuple(w for w in analysis.windows if w.kind not in drawn)
            )
            # The torch ops: the trace's (a CSV kernel table holds device tasks only).
            if trace_total.host_ops or kernel_kind != "db":
                analysis = replace(analysis, host_ops=trace_total.host_ops)
    if timeline and analysis is not None and analysis.windows:
        kinds = {w.kind for w in trace_total.windows} if trace_kind is not None else set()
        if trace_files and kinds:
            trace_files = [_also(f, "timeline") for f in trace_files]
        if kernel_files and {w.kind for w in analysis.windows} - kinds:
            kernel_files = [_also(f, "timeline") for f in kernel_files]
    files += kernel_files + trace_files
    # op_statistic comes only from Level1/Level2 runs; it is the op table only when no kernel table
    # or trace is there, since its totals cannot give order or chains.
    for path in run.files.get("op_statistic", []):
        stats, info = read_statistic(path)
        used = analysis is None
        analysis = op_table_from_statistic(stats) if used else analysis
        files.append(
            SourceFile(
                path=path,
                kind="op_statistic",
                records=info.rows,
                notes=info.notes if used else (),
                used_for=("ops",) if used else (),
            )
        )
    for path in run.files.get("operator_details", []):
        info = read_operator_details(path)
        files.append(SourceFile(path=path, kind="operator_details", records=info.rows))
    if analysis is None:
        analysis = Analysis()
        notes.append(f"{run.folder}: only host-side tables, no device kernels")
    # torch_npu writes an empty `analyse.done` once parsing has finished.
    if run.folder.name == TORCH_DIR and not (run.folder / "analyse.done").exists():
        notes.append(f"{run.folder}: no analyse.done: torch_npu may not have finished parsing")
    if not devices or devices.keys() == {""}:
        devices = {"": analysis}  # trace or op_statistic only: the device is not known
    return analysis, devices, files, notes
