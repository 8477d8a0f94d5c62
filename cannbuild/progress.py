"""Progress for the task layer: the one renderer of what a long run is doing now.

The core prints nothing; it reports events to `Progress`: a build step starts, prints a
line, ends or is skipped (`build.runner.Progress`), a phase of making a sandbox or of
validating starts (`phases.PhaseSink`), a note.  On a terminal they show as one live line
(rich.live: the seconds and what runs now, cut to the width, never wrapped, gone when it
ends) and a line as each step ends.  Otherwise (a pipe, a log, GitHub Actions, NO_COLOR,
TERM=dumb) as plain timestamped lines, only appended, with a heartbeat every HEARTBEAT_S
on a long wait (CI systems kill jobs that print nothing; a reader of the log should never
wait 15 s).  `--verbose` streams every line of the running step (it is logged either
way).  Under GitHub Actions each step's output is a collapsed `::group::`, a failing step
is marked with `::error::`, and report.md is appended to the job summary.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping, Optional, TextIO

from . import ui
from .bounded import RUN_FILE, read_text
from .errors import UsageError
from .lazy import lazy_module

if TYPE_CHECKING:  # what the steps report; `doctor` shows phases without loading the engine
    from rich import console as rich_console
    from rich import live as rich_live
    from rich import text as rich_text

    from .build.plan import PlannedStep
    from .build.runner import StepOutcome
else:  # only a terminal pays for rich: a log, CI and a no-op run write plain lines
    rich_console = lazy_module("rich.console")
    rich_live = lazy_module("rich.live")
    rich_text = lazy_module("rich.text")

_MARK = {"ran": "done", "failed": "FAILED", "interrupted": "interrupted", "skipped": "up to date"}
HEARTBEAT_S = 10.0


def under_github_actions(env: Mapping[str, str] = os.environ) -> bool:
    return env.get("GITHUB_ACTIONS") == "true"


def live_terminal(stream: TextIO, env: Mapping[str, str] = os.environ) -> bool:
    """A live line only where it is redrawn in place and wanted: a terminal, not a CI log,
    no NO_COLOR (a reader who asked for plain output) and a TERM that moves the cursor."""
    plain = under_github_actions(env) or env.get("NO_COLOR") or env.get("TERM") == "dumb"
    return ui.is_terminal(stream) and not plain


class Progress:
    """Steps, phases and notes of one run, rendered as they come (a context manager: leaving
    it, by an error or Ctrl-C too, ends the live line and gives the cursor back).
    `what` names the phases ("sandbox: compiling ...").  `lines=False`: on a terminal a
    phase shows on the live line only (the caller sums up; issue 42: a four-repo setup
    printed 20 phase lines).  `show_skipped=False`: the caller sums up what was up to
    date."""

    def __init__(
        self,
        what: str = "",
        stream: TextIO = sys.stderr,
        live: Optional[bool] = None,
        verbose: bool = False,
        github: Optional[bool] = None,
        heartbeat_s: float = HEARTBEAT_S,
        lines: bool = True,
        show_skipped: bool = True,
    ) -> None:
        self.what, self.stream, self.lines = what, stream, lines
        self.show_skipped, self.heartbeat_s = show_skipped, heartbeat_s
        self.github = under_github_actions() if github is None else github
        self.verbose = verbose or self.github  # a group is collapsed: the output costs nothing
        self.live = (live_terminal(stream) if live is None else live) and not self.verbose
        self._console = (  # a terminal's; a log is written plainly, without rich
            rich_console.Console(file=stream, force_terminal=True, highlight=False)
            if self.live
            else None
        )
        self._lock = threading.Lock()
        self._label = ""  # what runs now ("" between steps)
        self._start = 0.0
        self._last = ""  # the running step's last output line
        self._said = ""  # the line a phase leaves when it ends (on a terminal, with `lines`)
        self._beat: Optional[threading.Event] = None
        self._view: Optional[rich_live.Live] = None

    # the live line, or the plain lines and their heartbeat

    def __rich__(self) -> rich_text.Text:
        """The live line, as rich.live redraws it four times a second: the seconds first,
        so a narrow terminal cuts the label, not the time."""
        with self._lock:
            label, last, elapsed = self._label, self._last, time.monotonic() - self._start
        text = f"  {elapsed:5.1f}s  {label}" + (f"  {last}" if last else "") if label else ""
        return rich_text.Text(ui.printable(text), no_wrap=True, overflow="ellipsis")

    def _line(self, text: str) -> None:
        """A line that stays: above the live line on a terminal, timestamped in a log."""
        if self._console is not None:
            self._console.print(
                rich_text.Text(ui.fit(ui.printable(text), self.stream)), soft_wrap=True
            )
        else:
            self._write(ui.fit(f"[{time.strftime('%H:%M:%S')}] {text}", self.stream) + "\n")

    def _write(self, text: str) -> None:
        with self._lock:
            self.stream.write(text)
            self.stream.flush()

    def _begin(self, label: str, say: Optional[str]) -> None:
        """`label` runs from now: on the live line, or `say` and then a heartbeat."""
        with self._lock:
            self._label, self._start, self._last = label, time.monotonic(), ""
        if self._console is not None and self._view is None:
            # stdout may be a file (`--json > out`): only stray stderr goes above the line
            self._view = rich_live.Live(
                self, console=self._console, transient=True, redirect_stdout=False
            )
            self._view.start(refresh=True)  # shown at once, not a quarter second later
        elif self._view is not None:
            self._view.refresh()
        else:
            if say is not None:
                self._line(say)
            if self._beat is None:
                self._beat = threading.Event()
                threading.Thread(target=self._heartbeat, args=(self._beat,), daemon=True).start()

    def _heartbeat(self, stop: threading.Event) -> None:
        while not stop.wait(self.heartbeat_s):
            with self._lock:
                label, last, elapsed = self._label, self._last, time.monotonic() - self._start
            if label:
                self._line(
                    f"{label}: still running ({elapsed:.0f}s)"
                    + (f"; last line: {last}" if last else "")
                )

    def _end(self) -> None:
        """Nothing runs now: the live line goes (and the cursor comes back), the heartbeat stops."""
        with self._lock:
            self._label = ""
        if self._view is not None:
            self._view.stop()
            self._view = None
        if self._beat is not None:
            self._beat.set()
            self._beat = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, error: Optional[type], *exc: object) -> None:
        ended = self._ended()
        if ended and error is None:  # after an error or Ctrl-C no line says the phase ended
            self._line(ended)
        self._end()

    # phases (`phases.PhaseSink`)

    def __call__(self, phase: str) -> None:
        """A phase starts (the sink the core calls)."""
        ended, self._said = self._ended(), f"{self.what}: {phase}" if self.what else phase
        self._begin(self._said, say=self._said)
        if ended:
            self._line(ended)  # above the live line, which shows the new phase already

    def _ended(self) -> str:
        """The line the phase that ran leaves (on a terminal, with `lines`)."""
        said, self._said = self._said, ""
        keep = said and self.live and self.lines
        return f"  {said} ({time.monotonic() - self._start:.1f}s)" if keep else ""

    # build steps (`build.runner.Progress`)

    def started(self, step: PlannedStep, log: Path) -> None:
        self._said = ""  # a phase before the steps ended without a line
        if self.github:
            self._write(f"::group::{step.name} ({step.reason})\n")
        self._begin(step.name, say=f"{step.name}: started ({step.reason}); log {log}")

    def output(self, line: str) -> None:
        """One line of the running step's output (already redacted)."""
        with self._lock:
            self._last = line
        if self.verbose:
            self._write(line + "\n")

    def finished(self, outcome: StepOutcome) -> None:
        self._end()
        if self.github:
            self._write("::endgroup::\n")
        mark = _MARK.get(outcome.status, outcome.status)
        self._line(f"{outcome.name}: {mark} in {outcome.duration_s:.1f}s")
        if outcome.status == "failed":
            if self.github:
                first = (outcome.hint or "see the log").replace("\n", " ")
                self._write(
                    f"::error title=cannbuild step {outcome.name} failed::exit {outcome.exit_code}; "
                    f"{first} (log {outcome.log})\n"
                )
            self._write("\n" + "\n".join(ui.digest_lines(outcome)) + "\n")

    def skipped(self, step: PlannedStep) -> None:
        if self.show_skipped:
            self._line(f"{step.name}: up to date, skipped")

    def note(self, text: str) -> None:
        self._line(text)


@contextlib.contextmanager
def heartbeat(
    what: str, stream: TextIO = sys.stderr, heartbeat_s: float = HEARTBEAT_S
) -> Iterator[None]:
    """Around a call that may run long without saying anything (doctor importing torch_npu
    in a child): the live line on a terminal; in a log a line every `heartbeat_s` while it
    runs, nothing at all when it ends sooner."""
    with Progress(stream=stream, heartbeat_s=heartbeat_s, lines=False) as progress:
        progress._begin(what, say=None)
        yield


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
