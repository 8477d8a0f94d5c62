"""On a narrow terminal the plain lines (status, notes, a run's closing lines) are wrapped
at spaces, never cut mid-word by the terminal; a pipe gets each line whole."""

from __future__ import annotations

import io

from cannbuild import ui

STATUS = {
    "workspace": "/w/.cannbuild",
    "exists": True,
    "target": {
        "host": "the sandbox (A2, CANN 8.5.0)",
        "soc": "ascend910b",
        "set_by": "cannbuild setup",
        "set_at": "2026-12-07 15:37 UTC",
    },
    "lock": None,
    "steps": [],
    "installed": [],
    "validation": {"status": "PASS", "run_id": "20261207-154515-18536", "reason": ""},
    "last_build": {"status": "ok", "command": "cannbuild setup", "finished": "2026-12-07"},
}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_status_and_notes_fit_a_40_column_terminal(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    out = Terminal()
    ui.print_status(STATUS, out)
    ui.note("validation: PASS reused from run 20261207-154515-18536 (nothing changed)", out)
    lines = out.getvalue().splitlines()
    assert lines and all(len(line) <= 40 for line in lines), lines
    assert "flags override it" in " ".join(" ".join(lines).split())


def test_a_pipe_gets_each_status_line_whole(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")  # a narrow terminal piped into a file
    out = io.StringIO()
    ui.print_status(STATUS, out)
    assert any(
        x.startswith("target: ") and x.endswith("flags override it)")
        for x in out.getvalue().splitlines()
    )


def test_a_dumb_terminal_gets_no_colour_escapes(monkeypatch) -> None:
    """doctor's pass/fail words were painted with ANSI escapes that TERM=dumb shows as text."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert "\033[" in ui.paint("fail", "fail", Terminal())
    monkeypatch.setenv("TERM", "dumb")
    assert ui.paint("fail", "fail", Terminal()) == "fail"
