"""Peak memory of one torch call on the CPU: how far the process's resident set grew.

Linux keeps a high-water mark of the resident set (VmHWM) that writing "5" to
/proc/self/clear_refs resets to the current size, so the peak during a call is
VmHWM after it minus VmRSS before it.  Pages the allocator would reuse from earlier
calls are already resident and would not count, so glibc first returns its free pages
(malloc_trim); what reuse remains makes this a lower bound of what the call needs
beyond its inputs.  None where the kernel does not offer this."""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Callable, Optional, Tuple, TypeVar

from ..bounded import proc_value

T = TypeVar("T")


def proc_kib(name: str, key: str) -> Optional[int]:
    """A /proc file's `key` in KiB (`VmRSS:       123456 kB`, `MemAvailable: ... kB`)."""
    value = proc_value(name, key)
    return int(value) if value and value.isdigit() else None


def _return_free_pages() -> None:
    """glibc's malloc_trim(0): free heap pages back to the kernel (elsewhere: nothing)."""
    name = ctypes.util.find_library("c")
    try:
        trim = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        trim = None
    if trim is not None:
        trim(0)


def _reset_high_water_mark() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            # "5" resets the peak resident set (VmHWM) to the current size (proc(5), clear_refs).
            f.write("5")
        return True
    except OSError:
        return False


def rss_growth(call: Callable[[], T]) -> Tuple[T, Optional[int]]:
    """call()'s result and the bytes the resident set grew by at its peak (None: unknown)."""
    _return_free_pages()
    reset = _reset_high_water_mark()
    before = proc_kib("self/status", "VmRSS")
    result = call()
    peak = proc_kib("self/status", "VmHWM")
    if not reset or before is None or peak is None:
        return result, None
    # Both are KiB: the growth over the call, never negative.
    return result, max(peak - before, 0) * 1024
