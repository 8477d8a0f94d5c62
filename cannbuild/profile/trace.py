"""trace_view.json (torch_npu) and msprof_*.json (msprof): the device tasks, streamed.

Both are one bare JSON array of Chrome-trace events (profiler-formats.md §1.6, §2.5):
`ts` a string of epoch microseconds, `dur` a float.  Process ids are synthetic: the
device track is the pid whose `process_name` metadata says `Ascend Hardware`, and its
threads are streams (`thread_name` `Stream <n>`).  Metadata may come after the events
and a pid may have no `process_name` at all (Level0 prunes the CANN layer's), so a
device task is recognised by its args too (msprof writes `Task Type` on every one).  msprof's
`Fusion Task` track writes `Task Type` as well, and its name after its events: a file where a
pid taken by its args turns out to be named otherwise is read once more, knowing the names.
"""

from __future__ import annotations

import math
from operator import attrgetter
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

from msgspec import Struct
from msgspec.structs import replace

from ..errors import ProfileFormatError
from .analysis import Analysis, Analyzer, Kernel
from .hostops import FLOW, WATCHED, HostCollector
from .jsonarray import iter_array, locate
from .ops import TypeResolver

# msprof's device track: `{"name":"process_name","pid":2113568,"args":{"name":"Ascend
# Hardware"},"ph":"M"}`; its `process_labels` say `NPU 0` (`NPU` in 2024 files).
DEVICE_PROCESS = "Ascend Hardware"


class TraceInfo(Struct, frozen=True, kw_only=True):
    events: int
    device_tasks: int
    tracks: Tuple[str, ...]  # process names seen, in pid order
    notes: Tuple[str, ...]


class _BadEvent(Exception):
    def __init__(self, index: int, what: str) -> None:
        super().__init__(what)
        self.index = index
        self.what = what


def read_trace(path: Path, windows: bool = True) -> Tuple[Analysis, TraceInfo]:
    try:
        return _read(path, windows)
    except _BadEvent as bad:
        where = locate(path, bad.index)
        raise ProfileFormatError(
            f"{path} line {where.line}: event {bad.index + 1} {bad.what}.",
            "torch_npu and msprof write each event as an object, `ts` a string of "
            "microseconds and `dur` a number: the file is damaged or was edited.",
        ) from None


def _read(
    path: Path, windows: bool, named: Optional[Mapping[object, str]] = None, unordered: int = 0
) -> Tuple[Analysis, TraceInfo]:
    """`named`: every pid's `process_name` (from a first reading), for a file whose names
    come after the events they name.  `unordered`: how many device tasks a first reading
    found out of time order on their stream; this reading sorts them by start first, as the
    tables are (chains are matched in time order)."""
    resolve = TypeResolver()
    held: List[Kernel] = []  # the device tasks, when they are sorted before matching
    analyzer = Analyzer(windows=windows)
    process: Dict[object, str] = {}  # pid -> name (pids and tids as the file has them)
    labels: Dict[object, str] = {}
    threads: Dict[Tuple[object, object], str] = {}
    device_pids: set = set()
    other_pids: set = set()
    if named:
        device_pids = {pid for pid, name in named.items() if name == DEVICE_PROCESS}
        other_pids = set(named) - device_pids
    by_args: set = set()  # pids taken for device tracks by their args, before any name
    host = HostCollector()
    events = device = 0
    for index, event in enumerate(iter_array(path)):
        events += 1
        if not isinstance(event, dict):
            raise _BadEvent(index, f"is {type(event).__name__}, not an object")
        ph = event.get("ph")
        if ph == "X":
            pid = event.get("pid")
            # torch ops: `{"ph": "X", "name": "aten::bmm", ..., "cat": "cpu_op"}` on the Python track.
            if event.get("cat") == "cpu_op" and event.get("name") in WATCHED:
                host.op(
                    (pid, event.get("tid")),
                    str(event["name"]),
                    _float(event, "ts", index),
                    _float(event, "dur", index),
                )
                continue
            # Python, CANN and Overlap Analysis events are `X` events too (`aten::matmul`,
            # `AscendCL@aclnnMatmul`, `Computing`); their pids are skipped once named.
            if pid in other_pids:
                continue
            args = event.get("args")
            # Before its `process_name` is seen, a device task is known by its args, which msprof
            # writes on every NPU task:
            #   "args": {"Model Id": 4294967295, "Task Type": "MIX_AIC", "Physic Stream Id": 46}
            if pid not in device_pids:
                if not (isinstance(args, dict) and "Task Type" in args):
                    continue
                by_args.add(pid)
            device += 1
            name = event.get("name")
            if not isinstance(name, str):
                raise _BadEvent(index, "has no name")
            (held.append if unordered else analyzer.add)(
                Kernel(
                    # One stream per (pid, tid): on the device track `tid` is the logic stream id.
                    stream=_stream_key(pid, event.get("tid")),
                    name=name,
                    # `ts` is a string of epoch microseconds, `"1774232269411629.250"`; as a float
                    # it keeps 0.25 us steps at such values (2**50 < ts < 2**51); `dur` is a float
                    # already.
                    op_type=resolve(name),
                    start_us=_float(event, "ts", index),
                    dur_us=_float(event, "dur", index),
                    core=str(args.get("Task Type", "")) if isinstance(args, dict) else "",
                )
            )
        elif ph == "M":
            _meta(event, process, labels, threads, device_pids, other_pids)
        elif ph == "s" and event.get("name") == FLOW:
            # The flow starts inside the torch op that launched the kernel, on its thread.
            host.flow((event.get("pid"), event.get("tid")), _float(event, "ts", index))
    if named is None and any(process.get(pid, DEVICE_PROCESS) != DEVICE_PROCESS for pid in by_args):
        return _read(path, windows, process, unordered)
    if unordered:  # by stream, then time, as tables.read_kernels sorts (two stable sorts)
        held.sort(key=attrgetter("start_us"))
        held.sort(key=attrgetter("stream"))
        for kernel in held:
            analyzer.add(kernel)
    analyzer.host_ops = host.result()
    analysis = analyzer.result()
    if analysis.out_of_order and not unordered:
        return _read(path, windows, named, analysis.out_of_order)
    # Streams are shown as `<labels or process name> / <thread name>`: `NPU 0 / Stream 2`.
    rename = {
        _stream_key(pid, tid): f"{labels.get(pid) or process.get(pid) or f'pid {pid}'} / {name}"
        for (pid, tid), name in threads.items()
    }
    if rename:
        analysis = _relabel(analysis, rename)
    notes = []
    # At Level0 torch_npu drops the CANN `process_name` but keeps that pid's `process_labels` and
    # `thread_name`: it prunes by event name, not by pid (profiler-formats.md §1.6).
    unnamed = sorted(str(p) for p in labels if p not in process)
    if unnamed:
        notes.append(f"pids without a process_name (Level0 pruning): {', '.join(unnamed)}")
    if unordered:
        notes.append(
            f"{unordered} device tasks out of time order on their stream in the file: "
            "sorted by start time before chains were matched"
        )
    if analysis.host_ops and not host.flows:
        notes.append("no torch_to_npu flows: which torch ops ran on the host cannot be told")
    if not device:
        notes.append("no device tasks (no Ascend Hardware track): was the NPU activity on?")
    tracks = tuple(process[p] for p in sorted(process, key=str))
    return analysis, TraceInfo(
        events=events, device_tasks=device, tracks=tracks, notes=tuple(notes)
    )


def _stream_key(pid: object, tid: object) -> str:
    return f"pid {pid} tid {tid}"


def _float(event: Mapping[str, object], key: str, index: int) -> float:
    value = event.get(key)
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise _BadEvent(index, f"has {key} {value!r}, not a number of 0 or more")
    return number


def _meta(
    event: Mapping[str, object],
    process: Dict[object, str],
    labels: Dict[object, str],
    threads: Dict[Tuple[object, object], str],
    device_pids: set,
    other_pids: set,
) -> None:
    args = event.get("args")
    if not isinstance(args, dict):
        return
    kind = event.get("name")
    pid = event.get("pid")
    # `process_sort_index` and the other metadata only order tracks in a viewer.
    if kind == "process_name":
        name = str(args.get("name", ""))
        process[pid] = name
        (device_pids if name == DEVICE_PROCESS else other_pids).add(pid)
    elif kind == "process_labels":
        labels[pid] = str(args.get("labels", ""))
    elif kind == "thread_name":
        threads[(pid, event.get("tid"))] = str(args.get("name", ""))


def _relabel(analysis: Analysis, rename: Dict[str, str]) -> Analysis:
    def label(key: str) -> str:
        return rename.get(key, key)

    return replace(
        analysis,
        chains=tuple(replace(c, stream=label(c.stream)) for c in analysis.chains),
        chain_list=tuple(replace(c, stream=label(c.stream)) for c in analysis.chain_list),
        windows=tuple(replace(w, stream=label(w.stream)) for w in analysis.windows),
    )
