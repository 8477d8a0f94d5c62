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
