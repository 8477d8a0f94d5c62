"""Step progress for the task layer: one live line per step on a terminal,
plain timestamped lines otherwise (CI logs)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Optional, TextIO

from .plan import PlannedStep
from .runner import StepOutcome

_MARK = {"ran": "done", "failed": "FAILED", "interrupted": "interrupted", "skipped": "up to date"}


class ConsoleProgress:
    def __init__(self, stream: TextIO = sys.stderr, live: Optional[bool] = None) -> None:
        self.stream = stream
        self.live = stream.isatty() if live is None else live
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._name = ""
        self._start = 0.0

    def _line(self, text: str) -> None:
        if self.live:
            self.stream.write("\r\033[K" + text + "\n")
        else:
            self.stream.write(f"[{time.strftime('%H:%M:%S')}] {text}\n")
        self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(0.25):
            self.stream.write(f"\r\033[K  {self._name}  {time.monotonic() - self._start:6.1f}s")
            self.stream.flush()

    def started(self, step: PlannedStep, log: Path) -> None:
        self._name = step.name
        self._start = time.monotonic()
        if self.live:
            self._stop.clear()
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        else:
            self._line(f"{step.name}: started ({step.reason}); log {log}")

    def finished(self, outcome: StepOutcome) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        self._line(
            f"{outcome.name}: {_MARK.get(outcome.status, outcome.status)} in {outcome.duration_s:.1f}s"
        )

    def skipped(self, step: PlannedStep) -> None:
        self._line(f"{step.name}: up to date, skipped")

    def note(self, text: str) -> None:
        self._line(text)
