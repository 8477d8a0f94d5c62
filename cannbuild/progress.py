"""Step progress for the task layer.

On a terminal: one live line per step showing the time and the log's last line.
Without a terminal: timestamped lines, and a heartbeat every 10 s on long steps (CI
systems kill jobs that print nothing, and a reader of the log should never wait 15 s).  The phases of making a sandbox and of
validating (`PhaseProgress`, the sink of `phases.PhaseSink`) are shown the same way.  `--verbose` streams every line of the
running step (it is logged either way).  Under GitHub Actions each step's output is a
collapsed `::group::`, a failing step is marked with `::error::`, and report.md is
appended to the job summary.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional, TextIO

from . import ui
from .bounded import RUN_FILE, read_text
from .errors import UsageError

if TYPE_CHECKING:  # what the steps report; `doctor` shows phases without loading the engine
    from .build.plan import PlannedStep
    from .build.runner import StepOutcome

_MARK = {"ran": "done", "failed": "FAILED", "interrupted": "interrupted", "skipped": "up to date"}
HEARTBEAT_S = 10.0


def under_github_actions(env: Mapping[str, str] = os.environ) -> bool:
    return env.get("GITHUB_ACTIONS") == "true"


class ConsoleProgress:
    def __init__(
        self,
        stream: TextIO = sys.stderr,
        live: Optional[bool] = None,
        verbose: bool = False,
        github: Optional[bool] = None,
        heartbeat_s: float = HEARTBEAT_S,
        show_skipped: bool = True,
    ) -> None:
        self.stream = stream
        self.show_skipped = show_skipped  # False: the caller sums up what was up to date
        self.github = under_github_actions() if github is None else github
        self.verbose = verbose or self.github  # a group is collapsed: the output costs nothing
        self.live = (stream.isatty() if live is None else live) and not self.verbose
        self.heartbeat_s = heartbeat_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._name = ""
        self._start = 0.0
        self._last = ""

    def _write(self, text: str) -> None:
        with self._lock:
            self.stream.write(text)
            self.stream.flush()

    def _line(self, text: str) -> None:
        if self.live:
            self._write("\r\033[K" + text + "\n")
        else:
            self._write(f"[{time.strftime('%H:%M:%S')}] {text}\n")

    def _ticker(self) -> None:
        """The live line, or (no terminal) a heartbeat every `heartbeat_s`."""
        period = 0.25 if self.live else self.heartbeat_s
        while not self._stop.wait(period):
            elapsed = time.monotonic() - self._start
            if self.live:
                room = max(ui.width(self.stream) - len(self._name) - 14, 10)
                last = self._last[-room:] if len(self._last) > room else self._last
                self._write(f"\r\033[K  {self._name}  {elapsed:6.1f}s  {last}")
            else:
                self._line(f"{self._name}: still running ({elapsed:.0f}s); last line: {self._last}")

    def started(self, step: PlannedStep, log: Path) -> None:
        self._name = step.name
        self._start = time.monotonic()
        self._last = ""
        if self.github:
            self._write(f"::group::{step.name} ({step.reason})\n")
        if not self.live:
            self._line(f"{step.name}: started ({step.reason}); log {log}")
        if self.live or not self.verbose:
            self._stop.clear()
            self._thread = threading.Thread(target=self._ticker, daemon=True)
            self._thread.start()

    def output(self, line: str) -> None:
        """One line of the running step's output (already redacted)."""
        self._last = line
        if self.verbose:
            self._write(line + "\n")

    def finished(self, outcome: StepOutcome) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        if self.github:
            self._write("::endgroup::\n")
        self._line(
            f"{outcome.name}: {_MARK.get(outcome.status, outcome.status)} in {outcome.duration_s:.1f}s"
        )
        if outcome.status == "failed":
            if self.github:
                first = outcome.hint or "see the log"
                self._write(
                    f"::error title=cannbuild step {outcome.name} failed::exit {outcome.exit_code}; "
                    f"{first.replace(chr(10), ' ')} (log {outcome.log})\n"
                )
            with self._lock:
                ui.print_digest(outcome, self.stream)

    def skipped(self, step: PlannedStep) -> None:
        if self.show_skipped:
            self._line(f"{step.name}: up to date, skipped")

    def note(self, text: str) -> None:
        self._line(text)


class PhaseProgress:
    """The phases of one long operation (making the sandbox, validating), rendered as the
    steps are: on a terminal a live line (the phase and its seconds, redrawn four times a
    second) and a line when each phase ends; otherwise a timestamped line as each phase
    starts and a heartbeat every `heartbeat_s`.  Used as a context manager around the
    core call it is passed to as the sink (`phases.PhaseSink`).  `lines=False`: on a
    terminal the live line only, gone at the end (the caller sums up; issue 42: a
    four-repo setup printed 20 phase lines)."""

    def __init__(
        self,
        what: str,
        stream: TextIO = sys.stderr,
        live: Optional[bool] = None,
        heartbeat_s: float = HEARTBEAT_S,
        lines: bool = True,
    ) -> None:
        self.what = what
        self.lines = lines
        self.stream = stream
        self.live = stream.isatty() if live is None else live
        self.heartbeat_s = heartbeat_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._phase = ""
        self._start = 0.0

    def _write(self, text: str) -> None:
        with self._lock:
            self.stream.write(text)
            self.stream.flush()

    def _ticker(self) -> None:
        period = 0.25 if self.live else self.heartbeat_s
        while not self._stop.wait(period):
            with self._lock:
                phase, elapsed = self._phase, time.monotonic() - self._start
            if self.live:
                self._write(self._live_text(phase, elapsed))
            else:
                stamp = time.strftime("%H:%M:%S")
                self._write(f"[{stamp}] {self.what}: {phase}: still running ({elapsed:.0f}s)\n")

    def _live_text(self, phase: str, elapsed: float) -> str:
        room = max(ui.width(self.stream) - len(self.what) - 14, 10)
        shown = phase if len(phase) <= room else phase[: room - 3] + "..."
        return f"\r\033[K  {self.what}: {shown}  {elapsed:5.1f}s"

    def _end_phase(self, last: bool = False) -> None:
        if self._phase and self.live and self.lines:
            took = time.monotonic() - self._start
            self._write(f"\r\033[K  {self.what}: {self._phase} ({took:.1f}s)\n")
        elif self._phase and self.live and last:
            self._write("\r\033[K")

    def __call__(self, phase: str) -> None:
        """A phase starts (the sink the core calls)."""
        self._end_phase()
        with self._lock:
            self._phase, self._start = phase, time.monotonic()
        if self.live:
            self._write(self._live_text(phase, 0.0))
        else:
            self._write(f"[{time.strftime('%H:%M:%S')}] {self.what}: {phase}\n")
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._ticker, daemon=True)
            self._thread.start()

    def __enter__(self) -> PhaseProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        self._end_phase(last=True)
        self._phase = ""


class Heartbeat:
    """Around a call that may run long without saying anything (doctor importing torch_npu
    in a child): without a terminal, a line every `heartbeat_s` while it runs, nothing at
    all when it ends sooner; on a terminal nothing (the rows follow)."""

    def __init__(self, what: str, stream: TextIO = sys.stderr, heartbeat_s: float = HEARTBEAT_S):
        self.what = what
        self.stream = stream
        self.heartbeat_s = heartbeat_s
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _beat(self) -> None:
        start = time.monotonic()
        while not self._stop.wait(self.heartbeat_s):
            elapsed = time.monotonic() - start
            self.stream.write(
                f"[{time.strftime('%H:%M:%S')}] {self.what}: still running ({elapsed:.0f}s)\n"
            )
            self.stream.flush()

    def __enter__(self) -> Heartbeat:
        if not self.stream.isatty():
            self._thread = threading.Thread(target=self._beat, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()


def publish_summary(report_dir: Path, env: Mapping[str, str] = os.environ) -> None:
    """Append report.md to the GitHub Actions job summary, when there is one."""
    target = env.get("GITHUB_STEP_SUMMARY")
    if not target or not under_github_actions(env):
        return
    try:
        text = read_text(report_dir / "report.md", RUN_FILE, errors="replace")
        with open(target, "a", encoding="utf-8") as out:
            out.write(text + "\n")
    except (OSError, UsageError):
        pass  # a summary is a courtesy; the report itself is on disk
