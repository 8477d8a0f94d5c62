"""Rendering a validation on the terminal: the verdict, then per repository one line per
check with its verdict and why; with --verbose its checks and cases as tables, the rule's and
opbase's verdicts side by side (report.md always has them; the CLI layer)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Dict, List

from .lazy import lazy_module

if TYPE_CHECKING:
    from rich import markup
    from rich import table as rich_table
    from rich import text as rich_text
    from rich.console import Console

    from .validate import ValidationReport, ValidationSummary
else:  # only what prints a table pays for rich
    markup = lazy_module("rich.markup")
    rich_table = lazy_module("rich.table")
    rich_text = lazy_module("rich.text")


_STYLE = {"PASS": "green", "FAIL": "bold red", "SKIPPED": "yellow"}


def _say(out: Console, line: str, style: str = "") -> None:
    """One line (rich markup) wrapped at spaces to the console's width, its continuation
    two past its own indent; a word longer than the line stays whole, as ui.wrap keeps it
    (rich's fold cut `aclnnFlashAttentionScoreV2GetWorkspaceSize` mid-name on 40 columns)."""
    text = rich_text.Text.from_markup(line, style=style)
    indent = len(text.plain) - len(text.plain.lstrip(" "))
    for n, part in enumerate(text.divide(_breaks(text.plain, out.width, indent + 2))):
        part.rstrip()
        if n:
            part = rich_text.Text(" " * (indent + 2)) + part
        out.print(part, soft_wrap=True)  # soft: rich neither folds nor crops it


def _breaks(plain: str, width: int, indent: int) -> List[int]:
    """Where to break `plain` into lines of `width` (continuations `indent` in): at the
    start of each word that would pass the edge, never inside a word."""
    offsets: List[int] = []
    start, room = 0, width
    for word in re.finditer(r"\S+", plain):
        if word.end() - start > room and plain[start : word.start()].strip():
            offsets.append(word.start())
            start, room = word.start(), width - indent
    return offsets


# failed cases named on the terminal before "and N more" (all of them are in report.md)
FAILED_SHOWN = 3
_COUNT = re.compile(r"^(\d+/\d+) (?:cases|examples)\b")


def print_reports(
    summary: ValidationSummary, out: Console, tables: bool = False, stale: str = ""
) -> None:
    """The verdict, then each validated repo's checks (with several, each under a line
    naming the repo, its check and why that operator); `tables`: checks and cases as tables;
    `stale`: why the installed package judged is not the workspace's target (said in the
    verdict line, issue 42)."""
    reports = summary.reports
    marked = (
        f" of a STALE package ({stale}; `cannbuild install` installs this target's build)"
        if stale
        else ""
    )
    if len(reports) == 1:
        show = _print_report if tables else _print_lines
        show(reports[0], out, f"validation: {reports[0].status}{marked}")
    else:
        target = reports[0].target if reports else "none"
        headline = f"validation: {summary.status}{marked} (target {target}, {len(reports)} repos)"
        if summary.reason:
            headline += f": {summary.reason}"
        _say(out, markup.escape(headline), style=_STYLE.get(summary.status, ""))
        for report in reports:
            if not tables:  # one line per repository: each check's verdict, why where not PASS
                _print_repo_line(report, out)
                continue
            why = f"; {report.why}" if report.why else ""
            _print_report(report, out, f"{report.repo} ({report.check}{why}): {report.status}")


def _print_report(report: ValidationReport, out: Console, head: str) -> None:
    style = _STYLE
    headline = f"{head} (target {report.target})"
    if report.reason:
        headline += f": {report.reason}"
    _say(out, markup.escape(headline), style=style.get(report.status, ""))
    checks = rich_table.Table(show_header=True)
    checks.add_column("check", no_wrap=True)
    checks.add_column("status", no_wrap=True)
    checks.add_column("detail", overflow="fold")
    for c in report.checks:
        checks.add_row(c.id, f"[{style.get(c.status, '')}]{c.status}[/]", markup.escape(c.message))
    out.print(checks)
    if report.cases:
        table = rich_table.Table()
        table.add_column("case", overflow="fold")
        # MERE, MARE and the verdict of opbase's standard beside the rule's, which decides.
        for col in ("max err", "bound", "ms", "verdict", "MERE", "MARE", "opbase"):
            table.add_column(col, no_wrap=True)
        for r in report.cases:
            fmt = lambda v: "-" if v is None else f"{v:.3g}"  # noqa: E731
            p = r.precision
            upstream = "-" if p is None else f"[{style.get(p.status, '')}]{p.status}[/]"
            table.add_row(
                r.case.name,
                fmt(r.max_abs_err),
                fmt(r.bound),
                "-" if r.kernel_ms is None else f"{r.kernel_ms:.1f}",
                f"[{style.get(r.status, '')}]{r.status}[/]",
                fmt(None if p is None else p.mere),
                fmt(None if p is None else p.mare),
                # a disagreement between two standards is not a failure: the rule decides
                f"differs ({p.status})" if r.disagree and p is not None else upstream,
            )
        out.print(table)
        _print_failed(report, out, "")
    split = report.disagreements
    if split:
        by_check: Dict[str, List[str]] = {}
        for d in split:
            by_check.setdefault(d["check"], []).append(d["name"])
        names = "; ".join(f"{check}: {', '.join(found)}" for check, found in by_check.items())
        _say(
            out,
            markup.escape(
                f"note: opbase's MERE/MARE standard differs from the rule on {len(split)} "
                f"({names}); the verdict rests on the rule (figures in the report)"
            ),
            style="yellow",
        )


def _print_lines(report: ValidationReport, out: Console, head: str) -> None:
    """One line per check, its verdict and why (so the headline does not say it again);
    failed cases named (a few); where the standards differ, one line; the tables are in
    report.md and under --verbose."""
    headline = f"{head} (target {report.target})"
    _say(out, markup.escape(headline), style=_STYLE.get(report.status, ""))
    for c in report.checks:
        _say(
            out,
            f"  {markup.escape(c.id)} [{_STYLE.get(c.status, '')}]{c.status}[/]: "
            + markup.escape(c.message),
        )
    _print_failed(report, out, "  ")
    split = report.disagreements
    if split:
        _say(
            out,
            f"  opbase's MERE/MARE standard differs from the rule on {len(split)} cases; the "
            "rule decides (each case: report.md, or --verbose)",
            style="yellow",
        )


def _print_repo_line(report: ValidationReport, out: Console) -> None:
    """`ops-math: PASS (library PASS, capi PASS 6/6, example SKIPPED: not run: ...)`: the
    repository's verdict and each check's, with its count, and why where it is not PASS
    (the message's first clause; the whole of it in report.md)."""
    parts = []
    for c in report.checks:
        counted = _COUNT.match(c.message)
        text = f"{c.id} [{_STYLE.get(c.status, '')}]{c.status}[/]"
        if c.status == "PASS":
            text += f" {counted.group(1)}" if counted else ""
        else:
            text += ": " + markup.escape(re.split(r"; | \(", c.message, maxsplit=1)[0])
        parts.append(text)
    failed = [r.case.name for r in report.cases if r.status == "FAIL"]
    if failed:
        shown = ", ".join(failed[:FAILED_SHOWN]) + (" ..." if len(failed) > FAILED_SHOWN else "")
        parts.append(f"failed: {markup.escape(shown)}")
    split = report.disagreements
    if split:
        parts.append(f"opbase's standard differs on {len(split)}, the rule decides")
    _say(
        out,
        f"  {markup.escape(report.repo)}: [{_STYLE.get(report.status, '')}]{report.status}[/] ("
        + ", ".join(parts)
        + ")",
    )


def _print_failed(report: ValidationReport, out: Console, indent: str) -> None:
    """The failed cases, those failing for the same reason said once (issue 42: one cause
    printed for each of 13 cases), a few names each (all in report.md)."""
    causes: Dict[str, List[str]] = {}
    for r in report.cases:
        if r.status == "FAIL":
            causes.setdefault(r.message, []).append(r.case.name)
    for message, names in causes.items():
        shown = ", ".join(names[:FAILED_SHOWN]) + (
            f" and {len(names) - FAILED_SHOWN} more" if len(names) > FAILED_SHOWN else ""
        )
        count = f"{len(names)} cases " if len(names) > 1 else ""
        _say(
            out,
            f"{indent}[bold red]FAIL[/] {count}{markup.escape(shown)}: {markup.escape(message)}",
        )
