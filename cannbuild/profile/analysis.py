"""One pass over device kernels: the op table, fused attention, unfused chains and the
timeline windows, in memory bounded by the number of op types and streams.

Kernels arrive per stream in time order (a file's CSV rows sorted by start, a trace's
events as written).  The chain finder (chains.py) is a small state machine per stream:
a MatMul, the scale, mask and view ops real graphs put there, a Softmax, dropout and
views, and a closing MatMul; anything else on that stream breaks the candidate.
Chains are kept twice: grouped by signature (the ops and the first MatMul's inputs,
for diagnose) and one by one, up to MAX_LISTED of them (the rest are only counted).
"""

from __future__ import annotations

import math
from collections import deque
from functools import reduce
from operator import attrgetter
from typing import Deque, Dict, Iterable, List, Optional, Protocol, Sequence, Tuple, Type, TypeVar

from msgspec import Struct, convert, field
from msgspec.structs import replace

from .affinity import ShapeClass, ShapeTally, sort_classes
from .chains import MAX_CHAIN, Chain, ChainKernel, ChainMatcher
from .hostops import HostOp, merge_host
from .ops import (
    category,
    is_communication,
    is_fused_attention,
    merge_by,
    query_dtype,
    strip_quotes,
)

CONTEXT = 6  # kernels shown before and after the attention ops on a timeline
# Chains listed one by one (a training profile of a few steps has a few hundred: steps x layers);
# all of them are counted and grouped.
MAX_LISTED = 1000
S = TypeVar("S", bound=Struct)


class Kernel(Struct, frozen=True, kw_only=True):
    stream: str
    name: str
    op_type: str
    start_us: float
    dur_us: float
    core: str = ""
    input_shapes: str = ""
    input_dtypes: str = ""
    output_shapes: str = ""


class OpStat(Struct, frozen=True, kw_only=True):
    op_type: str
    count: int
    total_us: float
    max_us: float
    core: str = ""

    @property
    def mean_us(self) -> float:
        return self.total_us / self.count if self.count else 0.0

    def merged(self, other: OpStat) -> OpStat:
        return OpStat(
            op_type=self.op_type,
            count=self.count + other.count,
            total_us=self.total_us + other.total_us,
            max_us=max(self.max_us, other.max_us),
            core=self.core or other.core,
        )


class ChainGroup(Struct, frozen=True, kw_only=True):
    """Unfused chains with one signature: the op types in order and the first MatMul's
    inputs (from which the head dim, sequence length and dtype are read)."""

    stream: str
    ops: Tuple[str, ...]
    input_shapes: str
    input_dtypes: str
    count: int
    total_us: float

    @property
    def dtype(self) -> Optional[str]:
        return query_dtype(self.input_dtypes)

    def dims(self) -> Optional[Tuple[int, int, int]]:
        """(S query, S key, D) from Q·Kᵀ's inputs `...,S,D;...,D,Skv`; None without shapes."""
        # Q·Kᵀ of an unfused chain, as msprof-analyze's 2023 sample prints it:
        # `"12,1024,512;12,512,1024"` -> query (..., S=1024, D=512), key (..., D, Skv=1024).
        parts = [p for p in strip_quotes(self.input_shapes).split(";") if p.strip()]
        if len(parts) < 2:
            return None
        try:
            q = [int(x) for x in parts[0].split(",")]
            k = [int(x) for x in parts[1].split(",")]
        except ValueError:
            return None
        # A rank-1 input has no (rows, columns) to read.
        if len(q) < 2 or len(k) < 2:
            return None
        # K is recorded transposed (..., D, Skv), or as it is (..., Skv, D)
        return q[-2], k[-1] if k[-2] == q[-1] else k[-2], q[-1]

    def problem(self) -> Optional[Tuple[int, int, int]]:
        """(query size, S, D), to be set beside fused calls of the same attention."""
        dims = self.dims()
        if dims is None:
            return None
        query = [int(x) for x in strip_quotes(self.input_shapes).split(";")[0].split(",")]
        return math.prod(query), dims[0], dims[2]

    def merged(self, other: ChainGroup) -> ChainGroup:
        return replace(
            self, count=self.count + other.count, total_us=self.total_us + other.total_us
        )


class Span(Struct, frozen=True, kw_only=True):
    name: str
    op_type: str
    start_us: float
    dur_us: float
    attention: bool = False  # the fused op, or a member of the unfused chain


class Window(Struct, frozen=True, kw_only=True):
    """Kernels of one stream around the first fused call or the first unfused chain."""

    kind: str  # fused | unfused
    stream: str
    spans: Tuple[Span, ...]


class Analysis(Struct, frozen=True, kw_only=True):
    ops: Tuple[OpStat, ...] = ()
    kernels: int = 0
    total_us: float = 0.0
    comm_us: float = 0.0  # of total_us, in collectives (is_communication)
    chains: Tuple[ChainGroup, ...] = ()
    chain_list: Tuple[Chain, ...] = ()  # in the order they were found, at most MAX_LISTED
    chains_unlisted: int = 0
    windows: Tuple[Window, ...] = ()
    out_of_order: int = 0
    fused_shapes: Tuple[ShapeClass, ...] = ()  # fused calls per shape class, where shapes are known
    host_ops: Tuple[HostOp, ...] = ()  # watched torch ops (hostops.py), from a trace or a .db

    @property
    def fused(self) -> Tuple[OpStat, ...]:
        return tuple(o for o in self.ops if is_fused_attention(o.op_type))

    @property
    def compute_us(self) -> float:
        """Device time without the collectives: what tells a slow rank from one that waits."""
        return self.total_us - self.comm_us

    @property
    def chain_count(self) -> int:
        return sum(c.count for c in self.chains)

    @property
    def chain_total_us(self) -> float:
        return sum(c.total_us for c in self.chains)

    def merged(self, other: Analysis) -> Analysis:
        chains = merge_by(_chain_key, self.chains, other.chains)
        kinds = {w.kind for w in self.windows}
        # One timeline window of each kind: the first seen wins.
        windows = self.windows + tuple(w for w in other.windows if w.kind not in kinds)
        listed = (self.chain_list + other.chain_list)[:MAX_LISTED]
        unlisted = self.chains_unlisted + other.chains_unlisted
        unlisted += len(self.chain_list) + len(other.chain_list) - len(listed)
        return Analysis(
            ops=_op_table(self.ops, other.ops),
            kernels=self.kernels + other.kernels,
            total_us=self.total_us + other.total_us,
            comm_us=self.comm_us + other.comm_us,
            chains=tuple(sorted(chains, key=lambda c: -c.total_us)),
            chain_list=listed,
            chains_unlisted=unlisted,
            windows=windows,
            out_of_order=self.out_of_order + other.out_of_order,
            fused_shapes=sort_classes(
                merge_by(ShapeClass.key, self.fused_shapes, other.fused_shapes)
            ),
            host_ops=merge_host(self.host_ops, other.host_ops),
        )

    def without_windows(self) -> Analysis:
        return replace(self, windows=())

    def with_windows(self, windows: Sequence[Window]) -> Analysis:
        return replace(self, windows=tuple(windows))


def _as(kind: Type[S], kernel: Kernel) -> S:
    """The fields of `kernel` that `kind` lists, as a `kind`."""
    return convert(kernel, kind, from_attributes=True)


def _chain_key(c: ChainGroup) -> Tuple[str, ...]:
    return (*c.ops, "|", c.input_shapes, c.input_dtypes)


def _op_table(*groups: Iterable[OpStat]) -> Tuple[OpStat, ...]:
    """One OpStat per op type, the most device time first."""
    ops = merge_by(attrgetter("op_type"), *groups)
    return tuple(sorted(ops, key=lambda o: (-o.total_us, o.op_type)))


def op_table_from_statistic(rows: Iterable[OpStat]) -> Analysis:
    """An op_statistic file alone: the table, no order, so no chains and no timeline."""
    # msprof writes one op_statistic row per op type and core type; merged per op type here.
    ops = _op_table(rows)
    return Analysis(
        ops=ops,
        kernels=sum(o.count for o in ops),
        total_us=sum(o.total_us for o in ops),
        comm_us=sum(o.total_us for o in ops if is_communication(o.core, o.op_type)),
    )


class _Pending(Struct, kw_only=True):
    kind: str
    stream: str
    spans: List[Span]
    left: int


class _Stream(Struct, kw_only=True):
    recent: Deque[Kernel] = field(default_factory=lambda: deque(maxlen=CONTEXT + MAX_CHAIN))
    last_start: float = float("-inf")


class Analyzer:
    """Feed kernels with `add`; `result()` gives the Analysis."""

    def __init__(self, windows: bool = True) -> None:
        self._ops: Dict[str, List[float]] = {}  # type -> [count, total, max]
        self._cores: Dict[str, str] = {}
        self._streams: Dict[str, _Stream] = {}
        self._chains: Dict[Tuple[str, ...], ChainGroup] = {}
        self._matcher: ChainMatcher[Kernel] = ChainMatcher()
        self._listed: List[Chain] = []
        self._unlisted = 0
        self._pending: List[_Pending] = []
        self._windows: List[Window] = []
        self._want_windows = {"fused", "unfused"} if windows else set()
        self._shapes = ShapeTally()
        self.host_ops: Tuple[HostOp, ...] = ()
        self.kernels = 0
        self.total_us = 0.0
        self.comm_us = 0.0
        self.out_of_order = 0

    def add(self, k: Kernel) -> None:
        self.kernels += 1
        self.total_us += k.dur_us
        if is_communication(k.core, k.op_type):
            self.comm_us += k.dur_us
        stat = self._ops.get(k.op_type)
        if stat is None:
            self._ops[k.op_type] = [1, k.dur_us, k.dur_us]
            if k.core:
                self._cores[k.op_type] = k.core
        else:
            stat[0] += 1
            stat[1] += k.dur_us
            if k.dur_us > stat[2]:
                stat[2] = k.dur_us
        st = self._streams.get(k.stream)
        if st is None:
            st = self._streams[k.stream] = _Stream()
        # File order is kept (chains are matched in it); a task that starts before the previous one
        # on its stream is only counted, for the report's note.
        if k.start_us < st.last_start:
            self.out_of_order += 1
        st.last_start = k.start_us
        if self._pending:
            self._feed_pending(k)
        st.recent.append(k)
        if k.input_shapes and category(k.op_type) == "fused":
            self._shapes.add(k.op_type, k.input_shapes, k.output_shapes, k.input_dtypes, k.dur_us)
        # The first fused call opens the "fused" timeline window; later ones only count.
        if "fused" in self._want_windows and category(k.op_type) == "fused":
            self._open_window("fused", st, [k])
        done = self._matcher.step(k.stream, k)
        if done is not None:
            self._emit(st, done)

    def _emit(self, st: _Stream, chain: List[Kernel]) -> None:
        first = chain[0]
        if len(self._listed) < MAX_LISTED:
            kernels = tuple(_as(ChainKernel, c) for c in chain)
            self._listed.append(Chain(stream=first.stream, kernels=kernels))
        else:
            self._unlisted += 1
        group = ChainGroup(
            stream=first.stream,
            ops=tuple(c.op_type for c in chain),
            input_shapes=first.input_shapes,
            input_dtypes=first.input_dtypes,
            count=1,
            total_us=sum(c.dur_us for c in chain),
        )
        key = _chain_key(group)
        old = self._chains.get(key)
        self._chains[key] = old.merged(group) if old else group
        if "unfused" in self._want_windows:
            self._open_window("unfused", st, chain)

    def _open_window(self, kind: str, st: _Stream, members: List[Kernel]) -> None:
        self._want_windows.discard(kind)
        recent = list(st.recent)
        # The latest occurrence of the chain's first kernel in the recent buffer: the buffer holds
        # CONTEXT kernels before the chain plus the chain itself.
        first = next(i for i in range(len(recent) - 1, -1, -1) if recent[i] is members[0])
        inside = {id(m) for m in members}
        spans = [
            replace(_as(Span, k), attention=id(k) in inside)
            for k in recent[max(0, first - CONTEXT) :]
        ]
        self._pending.append(
            _Pending(kind=kind, stream=members[0].stream, spans=spans, left=CONTEXT)
        )

    def _feed_pending(self, k: Kernel) -> None:
        for pending in self._pending:
            if pending.stream == k.stream and pending.left > 0:
                pending.spans.append(_as(Span, k))
                pending.left -= 1
        done = [p for p in self._pending if p.left == 0]
        for p in done:
            self._windows.append(Window(kind=p.kind, stream=p.stream, spans=tuple(p.spans)))
        self._pending = [p for p in self._pending if p.left > 0]

    def result(self) -> Analysis:
        windows = self._windows + [
            Window(kind=p.kind, stream=p.stream, spans=tuple(p.spans)) for p in self._pending
        ]
        ops = [
            OpStat(
                op_type=t, count=int(s[0]), total_us=s[1], max_us=s[2], core=self._cores.get(t, "")
            )
            for t, s in self._ops.items()
        ]
        return Analysis(
            ops=_op_table(ops),
            kernels=self.kernels,
            total_us=self.total_us,
            comm_us=self.comm_us,
            chains=tuple(sorted(self._chains.values(), key=lambda c: -c.total_us)),
            chain_list=tuple(self._listed),
            chains_unlisted=self._unlisted,
            windows=tuple(sorted(windows, key=lambda w: w.kind)),
            out_of_order=self.out_of_order,
            fused_shapes=self._shapes.result(),
            host_ops=self.host_ops,
        )


class KernelSink(Protocol):
    def add(self, k: Kernel) -> None: ...


class DeviceSplit:
    """One Analyzer per device (the `device <n>` a kernel's stream key starts with): one
    kernel table can hold several devices (msprof run on a multi-device application merges
    device_0..7 into one op_summary, each row with its Device_id), each a rank of its own."""

    def __init__(self, windows: bool = True) -> None:
        self._windows = windows
        self._parts: Dict[str, Analyzer] = {}
        self._by_stream: Dict[str, Analyzer] = {}  # a table has a few streams, many kernels
        self.host_ops: Tuple[HostOp, ...] = ()

    def add(self, k: Kernel) -> None:
        part = self._by_stream.get(k.stream)
        if part is None:
            device = k.stream.split(" stream ", 1)[0]
            part = self._parts.get(device)
            if part is None:
                part = self._parts[device] = Analyzer(windows=self._windows)
            self._by_stream[k.stream] = part
        part.add(k)

    def result(self) -> Tuple[Analysis, Dict[str, Analysis]]:
        """All devices' Analysis (with one device exactly its Analyzer's) and each one's."""
        parts = {d: a.result() for d, a in self._parts.items()} or {"": Analyzer().result()}
        whole = reduce(Analysis.merged, parts.values())
        return replace(whole, host_ops=self.host_ops), parts
