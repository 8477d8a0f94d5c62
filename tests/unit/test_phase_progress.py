"""Phases of making a sandbox and of validating, rendered like the build steps: a live line
on a terminal, a line per phase otherwise, a heartbeat in CI logs; the core only calls the
sink."""

from __future__ import annotations

import io
import re
import time

from cannbuild.progress import PhaseProgress
from cannbuild.validate import ValidationInputs, run_validation


def test_without_a_terminal_each_phase_is_one_timestamped_line():
    out = io.StringIO()
    with PhaseProgress("sandbox", stream=out, live=False) as phases:
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
    with PhaseProgress("validation", stream=out, live=False, heartbeat_s=0.05) as phases:
        phases("capi: compiling fa_check")
        time.sleep(0.3)
    beats = [line for line in out.getvalue().splitlines() if "still running" in line]
    assert beats and all("validation: capi: compiling fa_check: still running" in b for b in beats)


def test_on_a_terminal_the_live_line_shows_the_phase_at_once_and_each_phase_ends_in_a_line():
    out = io.StringIO()
    with PhaseProgress("sandbox", stream=out, live=True) as phases:
        phases("compiling")
        assert out.getvalue().startswith("\r\033[K  sandbox: compiling    0.0s")  # no wait
        time.sleep(0.6)
        phases("laying out")
    text = out.getvalue()
    assert re.search(
        r"\r\033\[K  sandbox: compiling +(?!0\.0s)\d+\.\ds", text
    )  # redrawn as it runs
    done = [line.split("\r\033[K")[-1] for line in text.split("\n") if line]
    assert re.fullmatch(r"  sandbox: compiling \(\d+\.\ds\)", done[0])
    assert re.fullmatch(r"  sandbox: laying out \(\d+\.\ds\)", done[1])
    assert text.endswith("\n")  # the next output starts on a line of its own


def test_nothing_is_written_when_nothing_happens():
    out = io.StringIO()
    with PhaseProgress("sandbox", stream=out, live=True):
        pass  # a sandbox found up to date: no phase
    assert out.getvalue() == ""


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
    import time

    from cannbuild.progress import HEARTBEAT_S, Heartbeat

    assert HEARTBEAT_S < 15
    out = io.StringIO()
    with Heartbeat("doctor: reading the host", stream=out, heartbeat_s=0.05):
        time.sleep(0.3)
    beats = out.getvalue().splitlines()
    assert len(beats) >= 2 and all("doctor: reading the host: still running" in b for b in beats)
    quiet = io.StringIO()
    with Heartbeat("doctor", stream=quiet, heartbeat_s=5):
        pass
    assert quiet.getvalue() == ""
