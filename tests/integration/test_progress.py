"""No silent minute: making a sandbox and validating announce each phase, on a terminal (a
live line, through a real pty) and without one (a line per phase).  The first line's time
is measured by bench/bench_first_line.py, not asserted here."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import base_env
from terminal import run_on_terminal, screen_rows

SANDBOX_PHASES = (
    "making an A2 host with CANN 8.5.0 at ",
    "compiling the emulated ACL runtime",
    "laying out the toolkit",
    "laying out the A2 hardware",
    "making the stand-in source repositories",
)
CASE = "fp32_bsh_s128_d64_gqa"


def _create_argv(directory) -> list:
    return [sys.executable, "-m", "cannbuild", "sandbox", "create", "--dir", str(directory)]


def test_sandbox_creation_without_a_terminal_prints_a_line_per_phase(tmp_path):
    proc = subprocess.run(
        _create_argv(tmp_path / "sb"), capture_output=True, text=True, env=base_env()
    )
    assert proc.returncode == 0, proc.stderr
    lines = [re.sub(r"^\[\d\d:\d\d:\d\d\] ", "", line) for line in proc.stderr.splitlines()]
    phases = [
        line[len("sandbox: ") :]
        for line in lines
        if line.startswith("sandbox: ") and ": still running (" not in line  # heartbeats
    ]
    assert len(phases) == len(SANDBOX_PHASES), proc.stderr
    for phase, expected in zip(phases, SANDBOX_PHASES):
        assert phase.startswith(expected), proc.stderr
    assert "\033" not in proc.stderr
    again = subprocess.run(
        _create_argv(tmp_path / "sb"), capture_output=True, text=True, env=base_env()
    )
    assert again.returncode == 0 and "compiling" not in again.stderr  # reused: no phases


def test_sandbox_creation_on_a_terminal_shows_each_phase_on_a_live_line(tmp_path):
    code, text = run_on_terminal(_create_argv(tmp_path / "sb"), base_env(), str(tmp_path), cols=200)
    assert code == 0, text
    rows = screen_rows(text, 200)
    for phase, expected in zip(rows, SANDBOX_PHASES):
        assert re.search(rf" +\d+\.\ds  sandbox: {re.escape(expected)}", text), text  # live
        assert re.fullmatch(rf"  sandbox: {re.escape(expected)}.* \(\d+\.\ds\)", phase), rows
    assert rows[len(SANDBOX_PHASES)].startswith("sandbox created: A2"), rows  # the live line gone


def test_ctrl_c_mid_step_on_a_terminal_erases_the_live_line_and_shows_the_cursor(cli):
    assert cli("build").returncode == 0
    before = cli.cmake_cache()
    argv = [*_create_argv(cli.cwd)[:3], "build", "--force", "ops-transformer-build"]
    argv += ["--sandbox", "--variant", cli.variant, "--cann", cli.cann]
    code, text = run_on_terminal(
        argv,
        cli.env(),
        str(cli.cwd),
        cols=100,
        ctrl_c_when=lambda: cli.cmake_cache() not in (None, before),
    )
    assert code == 130, text
    assert re.search(r" +\d+\.\ds  ops-transformer-build", text), text  # it ran on the live line
    rows = screen_rows(text, 100)
    assert not any(re.match(r" +\d+\.\ds  ", row) for row in rows), rows  # which is gone
    assert any("interrupted during ops-transformer-build" in row for row in rows), rows
    assert text.rfind("\x1b[?25h") > text.rfind("\x1b[?25l") >= 0  # the cursor is back


def test_validation_without_a_terminal_announces_each_check(installed):
    proc = installed("validate", "--cases", CASE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    phases = [
        re.sub(r"^\[\d\d:\d\d:\d\d\] validation: ", "", line)
        for line in proc.stderr.splitlines()
        # a phase past its first seconds says so again (a heartbeat): not a phase of its own
        if re.match(r"^\[\d\d:\d\d:\d\d\] validation: ", line) and ": still running (" not in line
    ]
    assert phases[:4] == [
        "reading the package's set_env.bash",
        "library: libcust_opapi.so (ELF, exports, dependencies)",
        "capi: compiling fa_check against the package",
        "capi: 1 FlashAttention cases against a float64 reference",
    ], proc.stderr
    assert any(p.startswith("example: ") for p in phases), proc.stderr
