"""How a run meets SIGTERM and SIGHUP, on both routes (the `cannbuild` script and
`invoke TASK`): as Ctrl-C, so the same cleanup runs."""

from __future__ import annotations

import signal
from types import FrameType
from typing import List, Optional

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
