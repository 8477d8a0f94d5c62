"""Why a child process died, in one line: its exit status in words and the line of its
output that names the cause.

A torch_npu worker that aborts in C++ writes no result: all cannbuild knows is the
status (-6) and the log.  `exited with -6` alone sends the user digging; the log's
`c10::ValueError: Duplicated key 'pinned_reserve_segment_size_mb' ...` (PyPI's CUDA
torch 2.13.0 beside torch-npu 2.13.0, issue 30) says what to fix.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import List, Optional

from .bounded import LOG, open_binary
from .errors import UsageError

# A log is read at its start (where the first error is) and its end, never whole: a worker
# that loops printing must not cost memory.
HEAD_BYTES = 1 << 20
TAIL_BYTES = 256 << 10
LINE_CHARS = 400

# `RuntimeError: ...`, `ImportError: ...`, `c10::ValueError: ...`, `torch.OutOfMemoryError: ...`
_RAISED = re.compile(r"^(?:[A-Za-z_][\w.]*::)*[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b:?")
# A C++ exception nobody caught: `terminate called after throwing an instance of 'c10::Error'`
# then `  what():  <message>` (libstdc++'s verbose terminate handler).
_TERMINATE = re.compile(r"terminate called after throwing an instance of '([^']+)'")
_WHAT = re.compile(r"^\s*what\(\):\s*(.*)$")
# Lines that name a failure without Python's or C++'s shape: `Fatal Python error: Aborted`,
# CANN's `[ERROR] RUNTIME(...)`, `EZ9999: Inner Error!`, `Segmentation fault`.
_ERRORISH = re.compile(
    r"\berror\b|\bfatal\b|\baborted\b|segmentation fault|cannot open shared object|"
    r"undefined symbol|\bE[A-Z]\d{4}\b",
    re.IGNORECASE,
)
# Not causes: Python's traceback scaffolding, C++ frame listings, warnings.
_NOISE = re.compile(
    r"^(?:Traceback \(most recent call last\)|The above exception was the direct cause|"
    r"During handling of the above exception|Exception raised from |frame #\d+|"
    r"(?:\S+:\d+: )?\w*Warning\b|\s*warnings\.warn\(|\[W[ \d]|\[WARN)"
)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "…"


def error_line(text: str) -> Optional[str]:
    """The first line that names an error (an uncaught C++ exception as `Type: message`, a
    Python exception, another error-looking line), else the last line that is not
    traceback scaffolding or a warning; None for an empty log."""
    lines = text.splitlines()
    for i, raw in enumerate(lines):
        terminate = _TERMINATE.search(raw)
        if terminate:
            what = next((m for m in (_WHAT.match(x) for x in lines[i + 1 : i + 4]) if m), None)
            message = what.group(1) if what else ""
            return _clip(f"{terminate.group(1)}: {message}" if message else raw.strip())
        # Python's own lines are flush left; indented ones are source shown in a traceback.
        if raw[:1].isspace() or not raw.strip() or _NOISE.match(raw):
            continue
        if _RAISED.match(raw) or _ERRORISH.search(raw):
            return _clip(raw)
    meaningful = [x for x in lines if x.strip() and not _NOISE.match(x.strip())]
    return _clip(meaningful[-1]) if meaningful else None


def read_log(path: Path) -> str:
    """The log's start and end (bounded), or "" when it cannot be read."""
    try:
        with open_binary(path, LOG) as fh:
            head = fh.read(HEAD_BYTES)
            fh.seek(0, 2)
            size = fh.tell()
            tail = b""
            if size > HEAD_BYTES:
                fh.seek(max(size - TAIL_BYTES, HEAD_BYTES))
                tail = fh.read(TAIL_BYTES)
    except (OSError, UsageError):
        return ""
    return (head + (b"\n" + tail if tail else b"")).decode("utf-8", "replace")


def log_error_line(path: Path) -> Optional[str]:
    return error_line(read_log(path))


def exit_words(code: Optional[int]) -> str:
    """`exited with 3`, `exited with -6 (SIGABRT)`, or `had not exited` for None."""
    if code is None:
        return "had not exited"
    if code < 0:
        try:
            return f"exited with {code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"exited with {code} (signal {-code})"
    return f"exited with {code}"


def died(code: Optional[int], log: Path, extra: str = "") -> str:
    """`exited with -6 (SIGABRT)<extra>: <the log's error line>`, the line left out when the
    log has none."""
    line = log_error_line(log)
    parts: List[str] = [exit_words(code) + extra]
    if line:
        parts.append(line)
    return ": ".join(parts)
