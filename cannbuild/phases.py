"""Phase events: what a long core operation (making a sandbox, validating) is doing now.

The core calls a sink with each phase's name as the phase starts, and prints nothing;
the task layer renders the events (`progress.Progress`: a live line on a terminal, a
line per phase otherwise, a heartbeat in CI logs), with the build steps.
"""

from __future__ import annotations

from typing import Callable

PhaseSink = Callable[[str], None]


def no_phases(_phase: str) -> None:
    """The sink of a caller that shows no progress (a library call, a test)."""
