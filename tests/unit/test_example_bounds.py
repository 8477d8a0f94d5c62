"""The repository's example run is bounded by what it does, not by a short clock (issue 38
item 4): 9.1.0's build.sh forks `date` for every line it prints, so a sound run on a loaded
host takes long but never stops talking; a hung one goes silent.  Small stand-in scripts, run
for real, with the bounds made small."""

from __future__ import annotations

import time
from pathlib import Path
from typing import List

from cannbuild.proc import IDLE, WALL, WORK, Bounds, run_bounded
from cannbuild.validate import example


def running(pid: int) -> bool:
    """Whether the process is alive (a zombie left for its reaper is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


BOUNDS = Bounds(idle_s=0.5, max_lines=10_000, max_bytes=1 << 20, wall_s=60.0)


def test_a_slow_steady_printer_runs_past_the_inactivity_bound_to_its_end():
    script = "for i in $(seq 1 12); do echo line $i; echo err $i >&2; sleep 0.06; done; exit 3"
    heard: List[str] = []
    ran = run_bounded(["bash", "-c", script], BOUNDS, on_line=heard.append)
    assert ran.stopped == "" and ran.code == 3
    assert ran.seconds > BOUNDS.idle_s  # longer than the silence it is allowed, and not stopped
    assert ran.stdout == heard == [f"line {i}" for i in range(1, 13)]
    assert ran.stderr == [f"err {i}" for i in range(1, 13)]


def test_a_silent_child_is_stopped_by_inactivity_with_its_whole_group(tmp_path):
    marker = tmp_path / "pid"
    start = time.monotonic()
    ran = run_bounded(["bash", "-c", f"echo started; sleep 30 & echo $! > {marker}; wait"], BOUNDS)
    assert (ran.stopped, ran.why, ran.code) == (IDLE, "no output for 0.5 s", None)
    assert time.monotonic() - start < 10
    assert ran.stdout == ["started"]
    assert not running(int(marker.read_text()))  # the sleep it started is gone too


def test_a_last_line_without_newline_is_kept_when_a_grandchild_holds_the_pipe():
    """The child ended; a process it left holds the pipe, so no end-of-file comes and the
    run ends on the child's exit: its last words, with no newline, were dropped."""
    heard: List[str] = []
    ran = run_bounded(
        ["bash", "-c", "sleep 2 & echo one; printf done"], BOUNDS, on_line=heard.append
    )
    assert (ran.stopped, ran.code) == ("", 0)
    assert ran.stdout == heard == ["one", "done"]


def test_a_runaway_printer_is_stopped_by_total_work_and_a_long_one_by_the_wall_clock():
    flood = run_bounded(["yes"], BOUNDS)
    assert flood.stopped == WORK and flood.why == "printed more than 10,000 lines or 1 MiB"
    assert len(flood.stdout) <= BOUNDS.max_lines + 1 << 16  # at most one read past the bound
    endless = Bounds(idle_s=0.5, max_lines=10_000, max_bytes=1 << 20, wall_s=0.8)
    ran = run_bounded(["bash", "-c", "while true; do echo tick; sleep 0.1; done"], endless)
    assert (ran.stopped, ran.why) == (WALL, "still running after 0.8 s")
    assert 0.8 <= ran.seconds < 6


# build.sh at 9.1.0: every line stamped by a `date` of its own, then the example's values
STAMPED = """\
#!/bin/bash
stamp() { while IFS= read -r line; do echo "[$(date '+%Y-%m-%d %H:%M:%S')] $line"; done; }
main() {
  echo "Start compile and run example file: ../examples/test_aclnn_tiny.cpp"
  for i in $(seq 0 VALUES); do echo "mean result[$i] is: 1.000000"; sleep 0.04; done
  AFTER
  echo "run test_aclnn_tiny, execute samples success"
}
main "$@" | stamp
"""


def stand_in(tmp_path: Path, values: int = 20, after: str = "") -> Path:
    text = STAMPED.replace("VALUES", str(values - 1)).replace("AFTER", after)
    (tmp_path / "build.sh").write_text(text)
    return tmp_path


def test_an_example_run_longer_than_its_silence_bound_passes_and_shows_its_progress(tmp_path):
    phases: List[str] = []
    result = example.run_example(
        "bash build.sh --run_example tiny",
        ["bash", "build.sh"],
        stand_in(tmp_path),
        {"PATH": "/usr/bin:/bin"},
        phases=phases.append,
        bounds=BOUNDS,
        progress_s=0.2,
    )
    assert result.status == "PASS", result.message
    assert result.stopped_by == "" and result.exit_code == 0
    assert result.message.startswith("1/1 examples PASS")
    assert phases[0] == "example 1: test_aclnn_tiny.cpp"
    assert any(
        p.startswith("example 1: test_aclnn_tiny.cpp: ") and p.endswith(" values")
        for p in phases[1:]
    )


def test_an_example_that_goes_silent_fails_naming_the_inactivity_bound(tmp_path):
    start = time.monotonic()
    result = example.run_example(
        "bash build.sh --run_example tiny",
        ["bash", "build.sh"],
        stand_in(tmp_path, values=2, after="sleep 30"),
        {"PATH": "/usr/bin:/bin"},
        bounds=BOUNDS,
    )
    assert time.monotonic() - start < 15
    assert result.status == "FAIL" and result.stopped_by == IDLE
    assert result.message.startswith("stopped by its inactivity bound (no output for 0.5 s) after ")
    assert "1 example(s) started" in result.message
    assert result.tail[-1].endswith("mean result[1] is: 1.000000")
