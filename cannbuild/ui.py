"""Rendering for the task layer: tables, digests, JSON.  The core never prints."""

from __future__ import annotations

import json
import sys
from typing import Any, Iterable, Optional, Sequence, TextIO

from .host.check import Check

_STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


def is_terminal(stream: TextIO = sys.stdout) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


def console(stream: TextIO = sys.stdout) -> Any:
    from rich.console import Console

    return Console(file=stream, width=None if is_terminal(stream) else 120, highlight=False)


def print_json(data: Any, stream: TextIO = sys.stdout) -> None:
    stream.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def checks_table(checks: Sequence[Check], title: Optional[str] = None) -> Any:
    from rich.table import Table

    table = Table(title=title, show_lines=False, expand=False)
    table.add_column("status", no_wrap=True)
    table.add_column("check", no_wrap=True)
    table.add_column("detail")
    table.add_column("fix")
    for check in checks:
        style = _STATUS_STYLE.get(check.status, "")
        table.add_row(
            f"[{style}]{check.status}[/]" if style else check.status,
            check.id,
            _escape(check.detail),
            _escape(check.hint or ""),
        )
    return table


def summary_line(checks: Iterable[Check]) -> str:
    counts = {"pass": 0, "warn": 0, "fail": 0, "skip": 0}
    for check in checks:
        counts[check.status] += 1
    return ", ".join(f"{n} {s}" for s, n in counts.items() if n)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def note(text: str, stream: TextIO = sys.stderr) -> None:
    stream.write(text.rstrip() + "\n")
    stream.flush()


def waiting(who: str) -> None:
    note(f"waiting for {who} to release the workspace ...")


def print_plan(session: Any, steps: Sequence[Any]) -> None:
    from rich.table import Table

    from .redact import redact

    out = console()
    recipe = session.recipe
    out.print(
        f"recipe [bold]{recipe.name}[/] ({recipe.path.name}) for CANN {session.toolkit.version}, "
        f"--soc={session.soc}, workspace {session.ws.root}"
    )
    table = Table(show_lines=True)
    table.add_column("step", no_wrap=True)
    table.add_column("status")
    table.add_column("command / cwd")
    for step in steps:
        style = "green" if step.status == "up to date" else "yellow"
        body = f"{_escape(redact(step.command))}\n[dim]in {_escape(str(step.cwd))}[/]"
        table.add_row(step.name, f"[{style}]{step.status}[/]\n[dim]{_escape(step.reason)}[/]", body)
    out.print(table)


def print_sources(state: Any, lock_file: Any) -> None:
    for note_text in state.notes:
        note(note_text)
    for repo in state.lock.repos:
        note(f"{repo.name:<40} {repo.ref:<34} {repo.commit[:12]}")
    for archive in state.lock.third_party:
        note(f"{archive.name:<40} {'sha256':<34} {archive.sha256[:12]}")
    changed = ", ".join(state.changed) or "none"
    written = "written" if state.lock_written else "unchanged"
    note(f"lock {lock_file} {written}; checkouts updated: {changed}")


def print_digest(outcome: Any, stream: TextIO = sys.stderr) -> None:
    from .redact import redact

    lines = [
        "",
        f"step {outcome.name} FAILED (exit {outcome.exit_code}) after {outcome.duration_s:.1f}s",
        f"  command: {redact(outcome.command)}",
        f"  log:     {outcome.log}",
    ]
    errors = getattr(outcome, "errors", ())
    if errors:
        lines.append("  first errors in the log:")
        lines += [f"    {redact(f'line {n}: {text}')}" for n, text in errors]
    lines.append(f"  last {len(outcome.tail)} lines:")
    lines += [f"    {line}" for line in outcome.tail]
    lines.append(f"  hint: {outcome.hint}")
    lines.append("  Run the same command again to resume at this step.")
    stream.write("\n".join(lines) + "\n")
    stream.flush()


def print_validation(report: Any, report_dir: Any = None) -> None:
    from rich.table import Table

    out = console()
    style = {"PASS": "green", "FAIL": "bold red", "SKIPPED": "yellow"}
    checks = Table(title=f"validation: {report.status} (target {report.target})")
    checks.add_column("check", no_wrap=True)
    checks.add_column("status", no_wrap=True)
    checks.add_column("detail")
    for c in report.checks:
        checks.add_row(c.id, f"[{style.get(c.status, '')}]{c.status}[/]", _escape(c.message))
    out.print(checks)
    if report.cases:
        table = Table()
        for col in ("case", "max err", "bound", "ms", "verdict"):
            table.add_column(col, no_wrap=col != "case")
        for r in report.cases:
            fmt = lambda v: "-" if v is None else f"{v:.3g}"  # noqa: E731
            table.add_row(
                r.case.name,
                fmt(r.max_abs_err),
                fmt(r.bound),
                "-" if r.kernel_ms is None else f"{r.kernel_ms:.1f}",
                f"[{style.get(r.status, '')}]{r.status}[/]",
            )
        out.print(table)
        for r in report.cases:
            if r.status == "FAIL":
                out.print(f"[bold red]FAIL[/] {r.case.name}: {_escape(r.message)}")
    if report_dir is not None:
        out.print(f"report: {report_dir}/report.md")


def print_doctor_summary(host: Any) -> None:
    """setup's first lines: the host in one line, then every check that is not pass."""
    facts = host.facts
    note(
        f"host: CANN {facts['cann']['version']} ({facts['cann']['layout']}) at {facts['cann']['path']}; "
        f"--soc={facts['soc']}; {facts['npu_count']} NPUs; driver {facts['driver']['version'] or 'none'}"
    )
    for check in host.checks:
        if check.status in ("warn", "fail"):
            note(f"  doctor {check.status}: {check.id}: {check.detail} ({check.hint})")
