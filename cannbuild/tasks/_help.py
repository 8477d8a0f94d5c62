"""`cannbuild --help` and `cannbuild help TASK`: cannbuild's tasks, options, environment
variables and exit codes, never invoke's own machinery."""

from __future__ import annotations

import shutil
import textwrap
from typing import Iterable, List, Mapping, Tuple

from ..errors import EXIT_CODES
from ._flags import FLAGS, TaskSpec


def _width() -> int:
    return max(shutil.get_terminal_size((100, 24)).columns, 40)


def _columns(rows: Iterable[Tuple[str, str]], indent: int = 2) -> List[str]:
    """Two columns, the second wrapped to the terminal; nothing is ever cut."""
    rows = list(rows)
    left = min(max((len(a) for a, _ in rows), default=0), 32)
    width = max(_width() - indent - left - 3, 20)
    out: List[str] = []
    for a, b in rows:
        chunks = textwrap.wrap(b, width, break_on_hyphens=False, break_long_words=False) or [""]
        if len(a) > left:
            out.append(" " * indent + a)
            out.extend(" " * (indent + left + 3) + c for c in chunks)
            continue
        out.append(" " * indent + a.ljust(left) + "   " + chunks[0])
        out.extend(" " * (indent + left + 3) + c for c in chunks[1:])
    return out


def program_help(tasks: Mapping[str, TaskSpec]) -> str:
    common = [f for f in FLAGS.values() if f.short] + [FLAGS[n] for n in ("sandbox", "dry_run")]
    env_flags = sorted((f for f in FLAGS.values() if f.env), key=lambda f: f.env or "")
    lines = [
        "Usage: cannbuild TASK [options]      (cannbuild help TASK: the task's options)",
        "",
        "Build, install and validate CANN's opbase and ops-transformer (--repos: its siblings",
        "too) on an Ascend host; --sandbox runs everything on an emulated host (no NPU, no CANN).",
        "",
        "Tasks:",
        *_columns((name, task.summary) for name, task in sorted(tasks.items())),
        "",
        "Common options (same meaning in every task that takes them):",
        *_columns(
            [
                *((f"-{f.short}, {f.option}" if f.short else f.option, f.help) for f in common),
                ("-h, --help", "show help; cannbuild help TASK shows a task's options"),
                ("-V, --version", "show the version"),
                ("--config FILE", "read this config file besides ./invoke.yaml"),
            ]
        ),
        "",
        "Environment (flags beat CANNBUILD_* variables, which beat the `cannbuild:` key of ./invoke.yaml):",
        *_columns(
            [
                *((f.env or "", f.option) for f in env_flags),
                ("CANNBUILD_MIRRORS", "URL prefix rewrites: PREFIX=REPLACEMENT,..."),
                ("CANNBUILD_RETRIES", "retries of a transient network error (default 3)"),
                ("CANNBUILD_SANDBOX_DIR", "where --sandbox keeps the emulated host"),
            ]
        ),
        "",
        "Exit codes:",
        *_columns((str(code), meaning) for code, meaning in EXIT_CODES),
    ]
    return "\n".join(lines)


def task_help(task: TaskSpec) -> str:
    usage = " ".join(
        [
            f"cannbuild {task.name}",
            *(f"[{n.upper()}]" if n in task.optional else n.upper() for n, _ in task.positional),
            "[options]",
        ]
    )
    lines = [f"Usage: {usage}", ""]
    lines += [textwrap.fill(p, min(_width(), 100)) for p in task.doc.split("\n\n") if p.strip()]
    lines.append("")
    rows = [(n.upper(), text) for n, text in task.positional]
    for option in sorted(task.options, key=lambda o: o.name):
        spelled = ", ".join(reversed(option.spellings))
        if option.kind is not bool:
            spelled += "=VALUE" if option.kind is str else "=VALUE (repeatable)"
        rows.append((spelled, option.help))
    lines.append("Options:" if rows else "Options: none")
    lines += _columns(rows)
    return "\n".join(lines)


def task_list(tasks: Mapping[str, TaskSpec]) -> str:
    return "\n".join(["Tasks:", *_columns((n, t.summary) for n, t in sorted(tasks.items()))])
