"""Stream the elements of a top-level JSON array (trace_view.json, msprof_*.json).

The profilers write one bare array of Chrome-trace events, often hundreds of MB:
`json.load` would hold the whole document (several times the file size) in memory.
This reader holds one chunk at a time.  Fast path: cut the chunk at the last
`}, {` and parse the complete events in it with one `json.loads` (C speed); a cut
that falls inside a string or a nested object cannot parse (its braces or quotes do
not balance), and then the chunk is read element by element with `raw_decode`,
which also gives the exact line and column of a syntax error.

Quirks accepted: a trailing `,]` (torch_npu appends the CANN part with `,{...}`
after dropping the framework part's `]`; an empty CANN part leaves `,]`), a UTF-8
BOM, any whitespace between events.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator, List, Optional, Tuple, Union

from msgspec import Struct

from ..bounded import PROFILE_TRACE, GiB, open_text
from ..decoded import JSONValue
from ..errors import ProfileFormatError

CHUNK_CHARS = 1 << 22  # 4 Mi characters per read
MAX_ELEMENT_CHARS = 1 << 24  # one event larger than this is a broken file, not a big event
# Between two events: torch_npu's json.dumps writes `}, {`, msprof's writer `},{`.
_BOUNDARY = re.compile(r"\}\s*,\s*\{")
_SPACE = re.compile(r"\s*")
_DECODER = json.JSONDecoder()


class Position(Struct, frozen=True, kw_only=True):
    line: int
    column: int


class _Source:
    """The file's text, read in chunks; tracks the line of the buffer's first char."""

    def __init__(self, path: Path, chunk_chars: int) -> None:
        self.path = path
        self.chunk_chars = chunk_chars
        # newline="" leaves `\r\n` untranslated, so columns count what the file holds.
        self.fh = open_text(path, PROFILE_TRACE, newline="")
        self.chars = 0  # read so far: a file growing past the bound while read stops too
        self.buf = ""
        self.pos = 0  # next unread char of buf
        self.base_line = 1  # line number of buf[0]
        self.base_col = 1  # column of buf[0]
        self.eof = False

    def close(self) -> None:
        self.fh.close()

    def fill(self) -> bool:
        """Read another chunk (dropping what was consumed); False at end of file."""
        if self.eof:
            return False
        try:
            chunk = self.fh.read(self.chunk_chars)
        except UnicodeDecodeError as exc:
            where = self.where(len(self.buf))
            raise ProfileFormatError(
                f"{self.path}: not UTF-8 text near line {where.line} ({exc.reason}).",
                "The profiler writes UTF-8 JSON: the file is damaged or not a profiler trace.",
            ) from None
        self._drop()
        self.chars += len(chunk)
        if self.chars > (PROFILE_TRACE.max_bytes or 0):
            raise ProfileFormatError(
                f"{self.path}: grew past {(PROFILE_TRACE.max_bytes or 0) // GiB} GiB while it "
                "was read.",
                PROFILE_TRACE.hint,
            )
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def _drop(self) -> None:
        consumed = self.buf[: self.pos]
        newlines = consumed.count("\n")
        if newlines:
            self.base_line += newlines
            self.base_col = len(consumed) - consumed.rfind("\n")
        else:
            self.base_col += len(consumed)
        self.buf = self.buf[self.pos :]
        self.pos = 0

    def where(self, index: int) -> Position:
        head = self.buf[:index]
        newlines = head.count("\n")
        if newlines:
            return Position(line=self.base_line + newlines, column=len(head) - head.rfind("\n"))
        return Position(line=self.base_line, column=self.base_col + len(head))

    def skip_space(self) -> None:
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf) or not self.fill():
                return

    def peek(self) -> str:
        self.skip_space()
        return self.buf[self.pos] if self.pos < len(self.buf) else ""

    def error(self, index: int, what: str, hint: Optional[str] = None) -> ProfileFormatError:
        where = self.where(index)
        return ProfileFormatError(
            f"{self.path} line {where.line} column {where.column}: {what}.",
            hint
            or "The profiler writes a JSON array of events: the file is damaged or was cut "
            "short (was the profiler still writing it?).",
        )


# an element's place: its index, or with exact positions (index, where it starts)
Where = Union[int, Tuple[int, Position]]


def iter_array(path: Path, chunk_chars: int = CHUNK_CHARS) -> Iterator[JSONValue]:
    """Yield the elements of the top-level JSON array in `path`, holding one chunk."""
    for element, _index in _elements(path, chunk_chars, exact=False):
        yield element


def locate(path: Path, index: int) -> Position:
    """Line and column where element `index` (0-based) starts: for error messages about
    an event the fast path parsed without positions."""
    for _element, where in _elements(path, CHUNK_CHARS, exact=True):
        if isinstance(where, tuple) and where[0] == index:  # exact: always (index, where)
            return where[1]
    return Position(line=0, column=0)


def _elements(path: Path, chunk_chars: int, exact: bool) -> Iterator[Tuple[JSONValue, Where]]:
    src = _Source(path, chunk_chars)
    try:
        yield from _walk(src, exact)
    finally:
        src.close()


def _walk(src: _Source, exact: bool) -> Iterator[Tuple[JSONValue, Where]]:
    src.fill()
    # A UTF-8 BOM before the `[`.
    if src.buf.startswith("\ufeff"):
        src.pos = 1
    first = src.peek()
    if first != "[":
        if first == "":
            raise src.error(src.pos, "the file is empty, expected a JSON array of trace events")
        what = (
            "expected a bare JSON array of trace events, found an object (a Chrome trace "
            "with a traceEvents key is not what torch_npu or msprof write)"
            if first == "{"
            else f"expected a JSON array of trace events, found {first!r}"
        )
        raise src.error(src.pos, what)
    src.pos += 1
    index = 0
    expect_element = True  # after '[' or ','
    while True:
        char = src.peek()
        if char == "]":
            src.pos += 1
            break  # '[]', '[...]' and the ',]' quirk all end here
        if char == "":
            raise src.error(
                src.pos, "the file ends inside the event array (no closing ']'): it was cut short"
            )
        if not expect_element:
            if char != ",":
                raise src.error(src.pos, f"expected ',' or ']' after an event, found {char!r}")
            src.pos += 1
            expect_element = True
            continue
        if not exact and char == "{":
            batch = _fast_batch(src)
            if batch:
                for element in batch:
                    yield element, index
                    index += 1
                expect_element = False
                continue
        element, start = _one(src)
        yield element, ((index, src.where(start)) if exact else index)
        index += 1
        expect_element = False
    src.skip_space()
    if src.pos < len(src.buf):
        raise src.error(src.pos, "unexpected text after the closing ']' of the event array")


def _fast_batch(src: _Source) -> List[JSONValue]:
    """The complete events from the read position to the last `}, {` in the buffer,
    parsed at once; [] when that does not parse (the slow path then takes over)."""
    buf = src.buf
    start = src.pos
    # Only the buffer's last 64 KiB is searched: an event is far smaller, so a boundary is there
    # unless the chunk ends inside one huge event (then the slow path reads it).
    window = max(start, len(buf) - (1 << 16))
    last = None
    for last in _BOUNDARY.finditer(buf, window):  # noqa: B007 - the last match is wanted
        pass
    if last is None or last.start() < start:
        return []
    # Keep the `}` of the last complete event; the `, {` after it starts the next batch.
    cut = last.start() + 1
    try:
        batch = json.loads("[" + buf[start:cut] + "]")  # bounded: a chunk of open_text's
    except (ValueError, RecursionError):
        return []  # the slow path says where
    src.pos = cut
    return batch  # type: ignore[no-any-return]


def _one(src: _Source) -> Tuple[JSONValue, int]:
    """One element at the read position, reading more of the file while it is cut."""
    while True:
        start = src.pos
        try:
            element, end = _DECODER.raw_decode(src.buf, start)
        except RecursionError:
            raise src.error(
                start, "an event nested too deeply to be a trace event (thousands of levels)"
            ) from None
        except json.JSONDecodeError as exc:
            # A parse error may only mean the event continues past the chunk: read more, up to
            # MAX_ELEMENT_CHARS for one event.
            if not src.eof and len(src.buf) - start < MAX_ELEMENT_CHARS:
                src.fill()  # the element may continue in the next chunk
                continue
            if src.eof and _runs_to_end(src.buf, exc):
                raise src.error(
                    start, "the file ends in the middle of an event: it was cut short"
                ) from None
            raise src.error(exc.pos, f"invalid JSON: {exc.msg}") from None
        src.pos = end
        return element, start


def _runs_to_end(buf: str, exc: json.JSONDecodeError) -> bool:
    """True when the JSON error is the end of the text (a cut file), not bad syntax."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(buf.rstrip())
