"""Rendering for the task layer: check rows, plans, digests, summaries, JSON.  The core
never prints.

Nothing a user acts on is ever cut: commands, paths and hints are printed whole and
wrapped at spaces to the terminal's width (a word longer than the line stays whole).
"""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import shutil
import sys
import textwrap
from typing import TYPE_CHECKING, Iterable, List, Mapping, Optional, Sequence, TextIO, Type

from .decoded import JSONValue
from .host.check import Check
from .lazy import lazy_module

if TYPE_CHECKING:
    from pathlib import Path

    from rich import console as rich_console
    from rich import markup
    from rich import table as rich_table
    from rich.console import Console

    from . import redact, report_md, ui_validation
    from .build.plan import PlannedStep
    from .build.runner import StepOutcome
    from .build.session import Session
    from .host.doctor import HostReport
    from .sources.state import SourceState
    from .transaction import PipelineRun
    from .validate import ValidationSummary
else:  # only what prints a table pays for rich (a plan or a build's lines for the rest)
    rich_console = lazy_module("rich.console")
    markup = lazy_module("rich.markup")
    rich_table = lazy_module("rich.table")
    ui_validation = lazy_module("cannbuild.ui_validation")
    redact = lazy_module("cannbuild.redact")
    report_md = lazy_module("cannbuild.report_md")

_COLOR = {"pass": "32", "warn": "33", "fail": "1;31", "skip": "2", "PASS": "32", "FAIL": "1;31"}
_COLOR.update({"SKIPPED": "33", "up to date": "32", "needs run": "33"})


def is_terminal(stream: TextIO = sys.stdout) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


def width(stream: TextIO = sys.stdout) -> int:
    """The terminal's width, or $COLUMNS when set; 100 when the output is not a terminal
    (logs, pipes) and $COLUMNS is not set."""
    if not is_terminal(stream) and not os.environ.get("COLUMNS", "").strip().isdigit():
        return 100
    return max(shutil.get_terminal_size((100, 24)).columns, 40)


def paint(text: str, status: str, stream: TextIO = sys.stdout) -> str:
    code = _COLOR.get(status)
    # a dumb terminal (Emacs' shell, a serial console) shows escapes as text
    plain = os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb"
    if not code or not is_terminal(stream) or plain:
        return text
    return f"\033[{code}m{text}\033[0m"


def wrap(text: str, indent: int, first: str = "", stream: TextIO = sys.stdout) -> List[str]:
    """`first` then `text`, wrapped at spaces; continuation lines indented by `indent`."""
    avail = max(width(stream) - indent, 30)
    chunks = textwrap.wrap(text, avail, break_long_words=False, break_on_hyphens=False) or [""]
    return [first + chunks[0], *(" " * indent + c for c in chunks[1:])]


def fit(text: str, stream: TextIO = sys.stdout) -> str:
    """`text` with each line longer than the terminal wrapped at spaces, its continuation
    two past the line's own indent: the terminal would cut it mid-word.  A pipe or a
    file gets each line whole (one fact a line, for grep)."""
    if not is_terminal(stream):
        return text
    limit, out = width(stream), []
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" "))
        fits = len(line) <= limit
        out += [line] if fits else wrap(line.lstrip(" "), indent + 2, " " * indent, stream)
    return "\n".join(out)


@functools.cache
def _console_class() -> Type[Console]:
    class PipeConsole(rich_console.Console):
        def on_broken_pipe(self) -> None:
            """The reader left (`cannbuild validate | head`): rich would exit 1 here; raise
            the BrokenPipeError so the front end ends the run with 141, like every other
            write to a closed pipe."""
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return PipeConsole


def console(stream: TextIO = sys.stdout) -> Console:
    return _console_class()(file=stream, width=width(stream), highlight=False)


def print_json(data: object, stream: TextIO = sys.stdout) -> None:
    stream.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def summary_line(checks: Iterable[Check]) -> str:
    counts = {"pass": 0, "warn": 0, "fail": 0, "skip": 0}
    for check in checks:
        counts[check.status] += 1
    return ", ".join(f"{n} {s}" for s, n in counts.items() if n)


def print_checks(
    checks: Sequence[Check], title: Optional[str] = None, stream: TextIO = sys.stdout
) -> None:
    """One row per check: status, id, detail, and the fix below it, all whole; on a narrow
    terminal the id on a line of its own and the text below it."""
    lines: List[str] = [title] if title else []
    id_width = min(max((len(c.id) for c in checks), default=0), 22)
    if width(stream) < 2 + 5 + id_width + 2 + 30:  # narrow: no room for a column of ids
        id_width = 0
    indent = 2 + 5 + id_width + 2 if id_width else 4
    for check in checks:
        status = paint(check.status.ljust(4), check.status, stream)
        head = f"  {status} {check.id.ljust(id_width)}  "
        if len(check.id) > id_width:
            lines.append(f"  {status} {check.id}")
            head = " " * indent
        # a row may quote what a file holds (a profile's op names): no control character
        lines += wrap(printable(check.detail), indent, head, stream)
        if check.status != "pass" and check.hint:
            lines += wrap(printable(check.hint), indent + 5, " " * indent + "fix: ", stream)
    lines.append(summary_line(checks))
    stream.write("\n".join(lines) + "\n")


def note(text: str, stream: TextIO = sys.stderr) -> None:
    stream.write(fit(printable(text.rstrip()), stream) + "\n")
    stream.flush()


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with control characters (ESC...) written as escapes: no record read from disk
    clears the screen."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def waiting(who: str) -> None:
    note(f"waiting for {who} to release the workspace ...")


def print_plan(
    session: Session,
    steps: Sequence[PlannedStep],
    rows: Sequence[Check] = (),
    sharing: Sequence[str] = (),
    stream: TextIO = sys.stdout,
) -> None:
    """What the checkouts need of the toolkit (the derived rows), then each step's status
    and why, its command and cwd in full (copy-pasteable); with several repos, under a
    line per repo, and whether the sources they pin are shared."""
    recipe = session.recipe
    lines: List[str] = []

    def say(text: str) -> None:  # prose fits the terminal; a cd or a command stays one line
        lines.extend(fit(text, stream).split("\n"))

    say(
        f"recipe {recipe.name} ({recipe.path.name}) for CANN {session.toolkit.version}, "
        f"--soc={session.soc}, workspace {session.ws.root}"
    )
    lines.append("")
    for row in rows:
        say(f"toolkit: {paint(row.status, row.status, stream)} {row.id}: {row.detail}")
        if row.hint and row.status != "pass":
            say(f"  hint: {row.hint}")
    if rows:
        lines.append("")
    several = len(recipe.order) > 1
    if several:
        say(f"repos: {', '.join(recipe.order)} (ASCEND_CUSTOM_OPP_PATH order, first wins)")
        for line in sharing:
            say(f"pinned {line}")
        lines.append("")
    owner: Optional[str] = None
    for step in steps:
        if several and step.owner != owner:
            owner = step.owner
            what = (
                "a source"
                if owner not in recipe.order
                else "ops " + (session.values["repos"][owner]["ops"] or "(all)")
            )
            say(f"== {owner or 'the workspace'} ({what})")
        say(f"{step.name}: {paint(step.status, step.status, stream)} ({step.reason})")
        lines.append(f"  cd {step.cwd}")
        lines.append(f"  {redact.redact(step.command)}")
        lines.append("")
    stream.write("\n".join(lines))


def print_sources(state: SourceState, lock_file: Path) -> None:
    for note_text in state.notes:
        note(note_text)
    for repo in state.lock.repos:
        note(f"{repo.name:<40} {repo.ref:<34} {repo.commit[:12]}")
    for archive in state.lock.third_party:
        kind = "stand-in sha256" if archive.stand_in else "sha256"
        note(f"{archive.name:<40} {kind:<34} {archive.sha256[:12]}")
    changed = ", ".join(state.changed) or "none"
    written = "written" if state.lock_written else "unchanged"
    note(f"lock {lock_file} {written}; checkouts updated: {changed}")


def digest_lines(outcome: StepOutcome) -> List[str]:
    lines = [
        f"step {outcome.name} FAILED (exit {outcome.exit_code}) after {outcome.duration_s:.1f}s",
        f"  command: {redact.redact(outcome.command)}",
        f"  log:     {outcome.log}",
    ]
    errors = getattr(outcome, "errors", ())
    if errors:
        lines.append("  first errors in the log:")
        lines += [f"    line {number}: {text}" for number, text in errors]
    lines.append(f"  last {len(outcome.tail)} lines:")
    lines += [f"    {line}" for line in outcome.tail]
    lines.append(f"  hint: {outcome.hint}")
    lines.append("  Run the same command again to resume at this step.")
    return lines


def print_made(run: PipelineRun, stream: TextIO = sys.stderr) -> None:
    """The closing lines of build/install/setup: each step, what was made, how to use it."""
    lines: List[str] = []  # each step said its line as it ended (progress.py)
    for step, path, _sha in run.made.packages:
        lines.append(f"package ({step}): {path}")
    several = len(run.made.vendors) > 1
    folders = {os.path.dirname(str(vendor)) for _, vendor in run.made.vendors}
    if several and len(folders) == 1:
        names = ", ".join(os.path.basename(str(vendor)) for _, vendor in run.made.vendors)
        lines.append(f"installed: {names} in {folders.pop()}")
    else:
        for repo, vendor in run.made.vendors:
            lines.append(f"installed ({repo}): {vendor}" if several else f"installed: {vendor}")
    if run.made.set_env is not None:
        order = " > ".join(repo for repo, _ in run.made.vendors)
        lines.append(
            f"to use them: source {run.made.set_env} (ASCEND_CUSTOM_OPP_PATH: {order}, first wins)"
            if several
            else f"to use it: source {run.made.set_env}"
        )
    if run.made.stale:
        lines.append(
            f"not installed: {run.made.stale_dir} holds an older package "
            f"({'; '.join(run.made.stale)}); `cannbuild install` installs this build"
        )
    lines.append(f"report: {run.report_dir}/report.md")
    stream.write(fit("\n".join(lines), stream) + "\n")
    stream.flush()


def print_validation(
    summary: ValidationSummary,
    report_dir: Optional[Path] = None,
    built_from: Optional[Mapping[str, JSONValue]] = None,
    stream: TextIO = sys.stdout,
    tables: bool = False,
    stale: str = "",
) -> None:
    """The verdict, then each validated repo's checks (with `tables` its cases too:
    ui_validation.py), the build it judged and the report."""
    ui_validation.print_reports(summary, console(stream), tables, stale)
    print_built_from(built_from, stream)
    if report_dir is not None:
        stream.write(f"report: {report_dir}/report.md\n")


def show_validation(
    run: PipelineRun, as_json: bool = False, report_line: bool = True, tables: bool = False
) -> None:
    """A validation run: its verdict and checks (`tables`: and cases), the build it
    judged, the report."""
    validation = run.validation
    assert validation is not None  # a run that validated
    directory = run.report_dir if report_line else None
    if as_json:
        print_json({**validation.validation, "built_from": run.built_from})
    elif validation.report is not None:
        stale = "; ".join(run.made.stale)
        print_validation(validation.report, directory, run.built_from, tables=tables, stale=stale)
    else:
        verdict = validation.validation
        reason = verdict.get("reason")
        note(
            f"validation: {verdict.get('status')} reused from run {validation.reused_from} "
            f"(nothing it checks has changed){f': {reason}' if reason else ''}"
        )
        print_built_from(run.built_from)
        if directory is not None:
            note(f"report: {directory}/report.md")


def print_built_from(
    built_from: Optional[Mapping[str, JSONValue]], stream: TextIO = sys.stdout
) -> None:
    """The build behind the package judged, as report.md says it."""
    for text in report_md.built_from_text(built_from) if built_from else []:
        stream.write("\n".join(wrap(text.replace("`", ""), 2, "", stream)) + "\n")


def print_doctor_summary(host: HostReport) -> None:
    """setup's first lines: the host in one line, then every check that is not pass."""
    facts = host.facts
    note(
        f"host: CANN {facts['cann']['version']} ({facts['cann']['layout']}) at {facts['cann']['path']}; "
        f"--soc={facts['soc']}; {facts['npu_count']} NPUs; driver {facts['driver']['version'] or 'none'}"
    )
    for check in host.checks:
        if check.status == "fail":
            note(f"  doctor fail: {check.id}: {check.detail} ({check.hint})")
    warned = [c.id for c in host.checks if c.status == "warn"]
    if warned:  # each with its detail and fix: `cannbuild doctor` (and report.md)
        note(
            f"  doctor: {len(warned)} warning{'s' if len(warned) > 1 else ''} "
            f"({', '.join(warned)}): `cannbuild doctor` says each with its fix"
        )


def print_status(data: Mapping[str, JSONValue], stream: TextIO = sys.stdout) -> None:
    lines = [
        f"workspace {data['workspace']}"
        + (
            ""
            if data["exists"]
            else " (does not exist yet: a workspace is per folder, .cannbuild in the one you "
            "run in; -w/--workspace names another)"
        )
    ]
    target = data.get("target")
    if target:
        soc = f", --soc={target['soc']}" if target.get("soc") else ""
        lines.append(
            f"target: {target['host']}{soc} (set by {target['set_by']} on {target['set_at']}; "
            "flags override it)"
        )
        unknown = target.get("unknown_repos") or []
        if unknown:
            names = ", ".join(unknown[:5]) + (
                f" and {len(unknown) - 5} more" if unknown[5:] else ""
            )
            lines.append(f"  it names repos no recipe here lists: {names} (a build refuses them)")
    lock = data.get("lock")
    if lock:
        lines.append(
            f"lock {lock['file']}: recipe {lock['recipe']}, CANN {lock['cann']}, --soc={lock['soc']}"
        )
        lines += [f"  {r['name']}  {r['ref']}  {r['commit'][:12]}" for r in lock["repos"]]
        lines += [f"  stand-in {a['name']}: {a['why']}" for a in lock.get("stand_ins") or ()]
    else:
        lines.append("no lock yet (cannbuild fetch or lock writes one)")
    if data["steps"]:
        lines.append("built:")
        for s in data["steps"]:
            commit = f" from {s['commit'][:12]}" if s.get("commit") else ""
            state = s.get("state", "built")
            why = f": {s['reason']} (the next build reruns it)" if s.get("reason") else ""
            lines.append(
                f"  {s['step']}: {state}{why}, {s['finished']}{commit} (run {s['run_id'] or '?'})"
            )
            for a in s["artifacts"]:
                gone = "" if a["present"] else "  (gone: the next build reruns this step)"
                lines.append(f"    {a['path']}{gone}")
    else:
        lines.append("nothing built yet")
    install = data.get("install")
    if install and install["state"] != "installed":
        why = "; ".join([install["reason"], *install.get("stale", [])])
        lines.append(f"not installed: {install['step']} must run again ({why})")
    source = data.get("source")
    for item in data["installed"]:
        lines.append(f"installed: {item['vendor']}" + (" (stale)" if item.get("stale") else ""))
        if item.get("repo"):
            commit = f" at {item['commit'][:12]}" if item.get("commit") else ""
            ops = ", ".join(item.get("ops") or []) or "no op_impl config"
            lines.append(f"  from {item['repo']}{commit}; ships {ops}")
        if item.get("stale"):
            lines.append(
                f"  stale: {'; '.join(item['stale'])} (`cannbuild install` installs the "
                "current build)"
            )
        if not source:
            lines.append(f"  to use it: source {item['set_env']}")
    if source:
        order = " > ".join(str(i.get("repo") or i["vendor"]) for i in data["installed"])
        lines.append(f"to use them: source {source} (ASCEND_CUSTOM_OPP_PATH: {order}, first wins)")
    v = data.get("validation")
    if v:
        reason = f": {v['reason']}" if v.get("reason") else ""
        stale = f"; stale: {v['stale']}" if v.get("stale") else ""
        lines.append(f"validation: {v['status']} (run {v['run_id']}){reason}{stale}")
    last = data.get("last_build")
    if last:
        failed = f" at {last['failed_step']}" if last.get("failed_step") else ""
        when = last.get("finished") or f"started {last.get('started')}"
        detail = f": {last['detail']}" if last.get("detail") else ""
        lines.append(
            f"last build attempt: {last.get('status')}{failed} ({last.get('command')}, "
            f"{when}){detail}"
        )
    if data.get("latest_report"):
        lines.append(f"latest report: {data['latest_report']}")
    stream.write(fit(printable("\n".join(lines)), stream) + "\n")


def print_profile(
    data: Mapping[str, JSONValue], stream: TextIO = sys.stdout, top: int = 20
) -> None:
    """`profile`: the files read, the op table by device time, the attention picture and
    where the timeline went; paths and notes whole (wrapped, never cut)."""
    out = console(stream)
    head: List[str] = []
    for f in data["files"]:
        used = ", ".join(f["used_for"]) or "checked"
        notes = f"; {'; '.join(f['notes'])}" if f["notes"] else ""
        head += wrap(
            f"{f['kind']} ({f['records']} records, {used}{notes}): {f['path']}", 4, "", stream
        )
    stream.write(printable("\n".join(head)) + "\n")  # names read from the profile
    ops = data["ops"]
    total = data["device_total_us"]
    table = rich_table.Table(
        title=f"{data['kernels']} device kernels, {total:.1f} us", title_justify="left"
    )
    table.add_column("op type", overflow="fold")
    for col in ("count", "total us", "mean us", "max us", "share"):
        table.add_column(col, justify="right", no_wrap=True)
    for op in ops[:top]:
        table.add_row(
            markup.escape(printable(op["type"])),
            str(op["count"]),
            f"{op['total_us']:.1f}",
            f"{op['mean_us']:.1f}",
            f"{op['max_us']:.1f}",
            f"{op['share'] * 100:.1f}%",
        )
    out.print(table)
    if len(ops) > top:
        out.print(f"... {len(ops) - top} more op types (--json lists them all)")
    comm = data.get("communication_us") or 0.0
    if comm:  # a collective's time is waiting as much as work: said apart, as msprof-analyze does
        stream.write(
            f"collectives: {comm:.1f} us of it ({comm / total:.0%}); computing {total - comm:.1f} us\n"
        )
    att = data["attention"]
    fused, chains, gain = att["fused"], att["unfused_chains"], att["opportunity"]
    lines = ["attention:"]

    def say(label: str, text: str, indent: int = 4) -> None:
        lines.extend(wrap(text, indent, label, stream))

    if fused["count"]:
        say(
            "  fused:   ",
            ", ".join(
                f"{t['type']} x{t['count']} {t['direction']} ({t['total_us']:.1f} us)"
                for t in fused["types"]
            ),
        )
    else:
        lines.append("  fused:   none (no FlashAttention-family kernel)")
    if chains["count"]:
        for g in chains["groups"][:5]:
            shapes = (
                f", inputs {g['input_shapes']} {g['input_dtypes']}" if g["input_shapes"] else ""
            )
            ops = " > ".join(g["ops"])
            say(
                "  unfused: ",
                f"{g['count']} x {ops} on {g['stream']}, {g['total_us']:.1f} us{shapes}",
            )
        say(
            "  gain:    ",
            f"the chains took {gain['chains_us']:.1f} us, {gain['share'] * 100:.1f}% of device "
            f"time; {gain['said']} (cannbuild diagnose --profile says why they were not fused)",
        )
    else:
        lines.append("  unfused: no MatMul -> Softmax -> MatMul chain on any stream")
    for c in fused.get("shapes", [])[:5]:
        dims = f" D={c['D']} S={c['S']}" if "D" in c else ""
        inputs = c["input_shapes"]
        say(
            "  shapes:  ",
            f"{c['type']} x{c['count']} ({c['total_us']:.1f} us){dims}, inputs {inputs}",
        )
    for h in att.get("host_fallbacks", []):
        say("  host:    ", f"{h['cause']} ({h['count']} calls, {h['total_us']:.1f} us)")
    run = data.get("run")
    if run:
        say(
            "",
            f"run: fused {', '.join(f'{m:.1f}' for m in run['fused_ms'])} ms, unfused "
            f"{', '.join(f'{m:.1f}' for m in run['unfused_ms'])} ms per call; outputs differ by at "
            f"most {run['max_abs_diff_fused_vs_unfused']:.3g}; profiler output {run['output']}",
            2,
        )
    for note_text in data["notes"]:
        say("note: ", note_text, 2)
    if data.get("timeline"):
        lines.append(f"timeline: {data['timeline']}")
    stream.write(printable("\n".join(lines)) + "\n")
