"""One progress for steps, phases and silent waits: on a terminal a live line redrawn in
place (rich.live), cut to the width and gone at the end; in a log, CI or under
NO_COLOR/TERM=dumb plain timestamped lines with a heartbeat; the core only calls the
sink."""

from __future__ import annotations

import io
import os
import re
import time

import pytest
from terminal import screen_rows

from cannbuild.progress import HEARTBEAT_S, Progress, heartbeat, live_terminal
from cannbuild.validate import ValidationInputs, run_validation
from cannbuild.workspace import Workspace

from tinyrecipe import build_step, run_alone, tiny_recipe

HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"


def cursor_shown(text: str) -> bool:
    return text.rfind(SHOW_CURSOR) > text.rfind(HIDE_CURSOR) >= 0


def test_without_a_terminal_each_phase_is_one_timestamped_line():
    out = io.StringIO()
    with Progress("sandbox", stream=out, live=False) as phases:
        phases("compiling")
        phases("laying out")
    lines = out.getvalue().splitlines()
    assert [re.sub(r"^\[\d\d:\d\d:\d\d\] ", "", line) for line in lines] == [
        "sandbox: compiling",
        "sandbox: laying out",
    ]
    assert "\r" not in out.getvalue() and "\033" not in out.getvalue()


def test_a_long_phase_without_a_terminal_has_a_heartbeat():
    out = io.StringIO()
    with Progress("validation", stream=out, live=False, heartbeat_s=0.05) as phases:
        phases("capi: compiling fa_check")
        time.sleep(0.3)
    beats = [line for line in out.getvalue().splitlines() if "still running" in line]
    assert beats and all("validation: capi: compiling fa_check: still running" in b for b in beats)


def _frames(text: str, label: str):
    """The seconds on each drawing of the live line showing `label`."""
    return re.findall(rf" +(\d+\.\d)s  {re.escape(label)}", text)


def test_on_a_terminal_the_live_line_updates_in_place_and_each_phase_ends_in_a_line():
    out = io.StringIO()
    with Progress("sandbox", stream=out, live=True) as phases:
        phases("compiling")
        shown = _frames(out.getvalue(), "sandbox: compiling")
        assert len(shown) == 1 and float(shown[0]) < 0.5  # at once, not at the first redraw
        time.sleep(0.8)
        phases("laying out")
    text = out.getvalue()
    assert float(_frames(text, "sandbox: compiling")[-1]) > float(shown[0])  # redrawn as it runs
    rows = [row for row in screen_rows(text) if row]
    assert len(rows) == 2, rows  # the live line is gone; the phases' lines stay
    assert re.fullmatch(r"  sandbox: compiling \(\d+\.\ds\)", rows[0])
    assert re.fullmatch(r"  sandbox: laying out \(\d+\.\ds\)", rows[1])
    assert cursor_shown(text)  # the cursor comes back


def test_a_live_line_on_a_narrow_terminal_is_cut_to_one_row(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    out = io.StringIO()
    long = "making an A2 host with CANN 8.5.0 at /a/rather/long/workspace/path/sandbox"
    with Progress("sandbox", stream=out, live=True, lines=False) as phases:
        phases(long)
        time.sleep(0.4)
    drawn = re.split(r"[\r\n]", re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()))
    assert any(re.match(r" +0\.[1-9]s  sandbox: making", d) for d in drawn), drawn  # the time shows
    shown = [d for d in drawn if d.strip()]
    assert all(re.match(r" +\d+\.\ds  sandbox: making.*…$", d) for d in shown), (
        drawn
    )  # one row, cut
    assert max(len(d) for d in drawn) <= 40, drawn
    assert screen_rows(out.getvalue(), 40) == []  # with lines=False nothing stays


def test_ctrl_c_mid_phase_leaves_the_terminal_clean():
    out = io.StringIO()
    with pytest.raises(KeyboardInterrupt), Progress("sandbox", stream=out, live=True) as phases:
        phases("compiling")
        raise KeyboardInterrupt
    text = out.getvalue()
    assert cursor_shown(text)
    time.sleep(0.5)
    assert out.getvalue() == text  # the redrawing stopped
    assert [row for row in screen_rows(text) if row.strip()] == []  # nothing claims it ended


def test_nothing_is_written_when_nothing_happens():
    out = io.StringIO()
    with Progress("sandbox", stream=out, live=True):
        pass  # a sandbox found up to date: no phase
    assert out.getvalue() == ""


@pytest.mark.parametrize(
    "env, live",
    [
        ({"TERM": "xterm"}, True),
        ({"TERM": "xterm", "GITHUB_ACTIONS": "true"}, False),
        ({"TERM": "xterm", "NO_COLOR": "1"}, False),
        ({"TERM": "dumb"}, False),
    ],
)
def test_a_live_line_only_on_a_terminal_that_redraws_and_wants_it(env, live):
    main, side = os.openpty()
    try:
        with open(side, "w", closefd=False) as tty:
            assert live_terminal(tty, env) is live
        assert live_terminal(io.StringIO(), {"TERM": "xterm"}) is False  # a pipe, a log
    finally:
        os.close(main)
        os.close(side)


def test_validation_announces_the_checks_it_runs_and_not_those_it_skips(tmp_path):
    heard = []
    report = run_validation(
        ValidationInputs(
            vendor_dir=tmp_path / "opp",
            library=tmp_path / "libcust_opapi.so",
            symbols=("aclnnFlashAttentionScoreV2",),
            env={},
            workdir=tmp_path / "validate",
            target=None,
            no_device_reason="no NPU here",
        ),
        heard.append,
    )
    assert report.status == "FAIL"  # the library is missing
    assert heard == ["library: libcust_opapi.so (ELF, exports, dependencies)"]


def test_a_long_silent_call_beats_in_a_pipe_and_a_short_one_says_nothing():
    """doctor's torch_npu import child ran 17 s without a line in a CI log (issue 42)."""
    assert HEARTBEAT_S < 15
    out = io.StringIO()
    with heartbeat("doctor: reading the host", stream=out, heartbeat_s=0.05):
        time.sleep(0.3)
    beats = out.getvalue().splitlines()
    assert len(beats) >= 2 and all("doctor: reading the host: still running" in b for b in beats)
    quiet = io.StringIO()
    with heartbeat("doctor", stream=quiet, heartbeat_s=5):
        pass
    assert quiet.getvalue() == ""


def _step(tmp_path, script: str):
    """The tiny recipe's build step running `script` in bash, and its workspace."""
    folder = tmp_path / "recipes"
    (folder / "steps").mkdir(parents=True)
    (folder / "steps" / "build.j2").write_text(f"bash -c {{{{ {script!r} | q }}}}\n")
    (folder / "tiny.toml").write_text(tiny_recipe('CC = "gcc"'))
    ws = Workspace(root=tmp_path / "ws")
    return build_step(folder / "tiny.toml", ws), ws


def test_a_failing_step_under_github_actions_is_plain_lines_in_a_group_and_an_error(tmp_path):
    step, ws = _step(tmp_path, "echo configuring; sleep 0.4; echo 'error: no gawk'; exit 3")
    out = io.StringIO()
    with Progress(stream=out, github=True, heartbeat_s=0.1) as progress:
        outcome = run_alone(step, ws, tmp_path / "toolkit", progress)
    assert outcome.exit_code == 3
    text = out.getvalue()
    assert "\r" not in text and "\033" not in text
    lines = text.splitlines()
    assert lines[0].startswith("::group::build (") and "::endgroup::" in lines
    assert "configuring" in lines and "error: no gawk" in lines  # streamed in the group
    assert any(re.fullmatch(r"\[\d\d:\d\d:\d\d\] build: still running \(0s\).*", x) for x in lines)
    assert any(re.fullmatch(r"\[\d\d:\d\d:\d\d\] build: FAILED in \d+\.\ds", x) for x in lines)
    assert any(x.startswith("::error title=cannbuild step build failed::exit 3;") for x in lines)
    assert "step build FAILED (exit 3)" in text and "    line " in text  # the digest


def test_a_step_on_a_terminal_shows_its_last_line_live_and_leaves_one_line(tmp_path):
    step, ws = _step(tmp_path, r"echo configuring; sleep 0.6; printf '\033[2Jcleared\n'; sleep 0.6")
    out = io.StringIO()
    with Progress(stream=out, live=True) as progress:
        outcome = run_alone(step, ws, tmp_path / "toolkit", progress)
    assert outcome.exit_code == 0
    assert re.search(r" +\d+\.\ds  build  configuring", out.getvalue())  # its last log line
    assert "build  \\x1b[2Jcleared" in out.getvalue()  # shown, escaped: a log line does not
    assert "\x1b[2J" not in out.getvalue()  # clear the screen
    assert [row for row in screen_rows(out.getvalue()) if row] == [
        f"build: done in {outcome.duration_s:.1f}s"
    ]
