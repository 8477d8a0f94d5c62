"""How a run meets SIGTERM and SIGHUP, on both routes (the `cannbuild` script and
`invoke TASK`): as Ctrl-C, so the same cleanup runs."""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType
from typing import Iterator, List, Optional

from .errors import SignalInterrupt


def on_termination() -> None:
    """SIGTERM and SIGHUP end a run as Ctrl-C does (see errors.SignalInterrupt); a second
    signal during that cleanup is ignored, so the cleanup finishes.  A signal ignored when
    cannbuild started stays ignored: `nohup cannbuild setup` must outlive its terminal."""
    seen: List[int] = []

    def handler(signum: int, _frame: Optional[FrameType]) -> None:
        if seen:
            return
        seen.append(signum)
        raise SignalInterrupt(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP held until the block ends, then delivered as they would
    have been: a child started inside (`Popen` forks before it returns) is in the hands of
    whoever stops it before the signal's cleanup runs, never orphaned in between.  Off the
    main thread (where no handler can be set) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: List[int] = []
    replaced = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        handler = signal.getsignal(sig)
        if handler not in (signal.SIG_IGN, signal.SIG_DFL, None):
            replaced[sig] = handler
            signal.signal(sig, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        for sig, handler in replaced.items():
            signal.signal(sig, handler)
        if caught:
            signal.raise_signal(caught[0])
