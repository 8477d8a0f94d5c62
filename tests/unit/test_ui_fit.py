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


def test_the_validation_summary_wraps_at_spaces_and_keeps_each_name_whole() -> None:
    """rich's fold broke `aclnnFlashAttentionScoreV2GetWorkspaceSize` across two lines on a
    40-column terminal; the summary now wraps at spaces, a longer name on a line of its
    own, its continuation indented under its check."""
    from rich.console import Console

    from cannbuild.ui_validation import print_reports
    from cannbuild.validate.verdict import ValidationCheck, ValidationReport, ValidationSummary

    names = ["aclnnFlashAttentionScoreV2GetWorkspaceSize", "aclnnFlashAttentionScoreV2"]
    check = ValidationCheck(
        id="library",
        status="PASS",
        message=f"libcust_opapi.so exports {', '.join(names)}; all dependencies resolve",
    )
    report = ValidationReport(target="sandbox", checks=[check], cases=[])
    out = io.StringIO()
    print_reports(ValidationSummary(reports=[report]), Console(file=out, width=40))
    lines = out.getvalue().splitlines()
    words = {w.strip(",;") for line in lines for w in line.split()}
    assert set(names) <= words, lines
    assert all(len(x) <= 40 or len(x.split()) == 1 for x in lines), lines
    assert all(x.startswith("    ") for x in lines[2:]), lines


def test_the_plan_fits_its_prose_to_a_terminal_and_keeps_each_command_one_line(
    monkeypatch,
) -> None:
    """On 40 columns the plan's header, toolkit rows and step statuses ran past the edge
    and were cut mid-word; they wrap now, while `cd` and the command stay one line each
    (copy-pasteable)."""
    from pathlib import Path
    from types import SimpleNamespace

    from cannbuild.host.check import Check

    monkeypatch.setenv("COLUMNS", "40")
    recipe = SimpleNamespace(name="cann-8.5", path=Path("8.5.toml"), order=("ops-transformer",))
    session = SimpleNamespace(
        recipe=recipe,
        toolkit=SimpleNamespace(version="8.5.0"),
        soc="ascend910b",
        ws=SimpleNamespace(root=Path("/w/.cannbuild")),
    )
    command = "bash build.sh --pkg --soc=ascend910b --ops=flash_attention_score -j8"
    step = SimpleNamespace(
        name="ops-transformer-build",
        status="up to date",
        reason="built 2026-12-07 15:45:17; inputs unchanged",
        cwd="/w/.cannbuild/src/ops-transformer",
        command=command,
        owner="ops-transformer",
    )
    row = Check(id="recipe.derived.x", status="pass", detail="the 20 lookups of 8 modules are in")
    out = Terminal()
    monkeypatch.setenv("NO_COLOR", "1")
    ui.print_plan(session, [step], [row], stream=out)
    lines = out.getvalue().splitlines()
    assert f"  {command}" in lines
    prose = [x for x in lines if command not in x and not x.startswith("  cd ")]
    assert all(len(x) <= 40 for x in prose), prose


def test_task_help_on_40_columns_puts_each_options_text_under_it(monkeypatch) -> None:
    """`cannbuild setup --help` on 40 columns kept its text column at 37: every line of
    it ran past the edge, three or four words a line."""
    from cannbuild.cli import _columns

    monkeypatch.setenv("COLUMNS", "40")
    rows = [
        ("--accept-stand-in=VALUE (repeatable)", "sandbox only: take the sandbox's stand-in"),
        ("--bundle=VALUE", "offline bundle (from `cannbuild bundle`) to seed the caches from"),
    ]
    lines = _columns(rows)
    assert all(len(x) <= 40 for x in lines), lines
    assert lines[0] == "  --accept-stand-in=VALUE (repeatable)"
    assert lines[1].startswith("      sandbox only:")


def test_a_repo_line_says_torch_npu_is_missing_in_a_whole_clause():
    """With several repos each gets one line, a skipped check shown by its reason's first
    clause: the torch_npu route's read "torch_npu is not installed, and the route users
    take)", a sentence cut in the middle."""
    from rich.console import Console

    from cannbuild.host.pystack import PythonStack
    from cannbuild.ui_validation import print_reports
    from cannbuild.validate.torchnpu import unavailable
    from cannbuild.validate.verdict import ValidationCheck, ValidationReport, ValidationSummary

    why = unavailable("sandbox", "", PythonStack(python=(3, 11), torch=None, torch_npu=None))
    assert why is not None
    reports = [
        ValidationReport(
            target="sandbox",
            repo=repo,
            checks=[ValidationCheck(id="torch_npu", status="SKIPPED", message=why)],
            cases=[],
        )
        for repo in ("ops-transformer", "ops-math")
    ]
    out = io.StringIO()
    print_reports(ValidationSummary(reports=reports), Console(file=out, width=200))
    said = " ".join(out.getvalue().split())
    assert "ops-transformer: SKIPPED (torch_npu SKIPPED: torch_npu is not installed)" in said
