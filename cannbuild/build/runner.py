"""Run planned steps: one log per step, a digest on failure, stamps only after success.

The child runs in its own process group; Ctrl-C stops the whole group and
leaves no stamp, so the next run starts that step again.  Output is redacted
line by line before it reaches the log.
"""

from __future__ import annotations

import collections
import glob
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Deque, Dict, List, Optional, Protocol, Sequence, Tuple

from msgspec import Struct

from .. import safefs
from ..errors import Interrupted, signal_name, signal_number
from ..hints import match_hint
from ..locks import note_step
from ..proc import kill_group, popen
from ..redact import redact, redact_env
from ..sources.checkout import PlacedCopy, placed_copies
from ..states import Outcome
from ..workspace import Workspace, point_link
from .actions import ActionContext, ActionFailed, action_of
from .plan import PlannedStep, pattern_folder
from .stamps import artifact_record, stamp_path, write_stamp

# The digest's tail; the first errors are searched in the whole log.
TAIL_LINES = 30
FIRST_ERRORS = 3  # error blocks shown in the digest
ERROR_CONTEXT = 6  # indented lines that continue an error (CMake's and the compiler's do)
# What a real failure looks like, wherever it sits in the log: ops-transformer v8.5.0+
# pipes only stdout through block-buffered gawk, so stderr (the CMake error) comes first
# and the last lines of the log are the harmless stdout that was held back.
# What each alternative catches:
#   CMake Error at cmake/dependencies.cmake:56 (find_package):
#   flash_attention_score_def.cpp:1:10: fatal error: register/op_def_registry.h: No such ...
#   Could NOT find dlog (missing: dlog_TRANSFORMER_INCLUDE_DIR)
#   error: downloading '...' failed / Each download failed!  (CMake's download step)
#   -- MD5 hash of  (the download step rejecting a file, as a STATUS line without `error:`:
#                    cmake 3.25 Modules/ExternalProject/download.cmake.in:29)
ERROR_LINE = re.compile(
    r"CMake Error|\berror:|Could NOT find|Each download failed|No such file or directory"
    r"|^-- (?:MD5|SHA\w+) hash of\s*$"
)


LINE_LIMIT = 300  # characters of one log line shown in the digest


def _clip(line: str) -> str:
    """A log line for the digest: at most LINE_LIMIT characters, always including the
    error itself (interleaved stdout can put long paths in front of it), with `...`
    where the front was cut."""
    text = line.strip()
    if len(text) <= LINE_LIMIT:
        return text
    match = ERROR_LINE.search(text)
    if match is None or match.end() <= LINE_LIMIT:
        return text[:LINE_LIMIT]
    # A third of the window before the error, for the path or file it names.
    start = max(0, match.start() - LINE_LIMIT // 3)
    return "..." + text[start : start + LINE_LIMIT - 3]


def first_errors(lines: Sequence[str], first_line: int = 1) -> Tuple[Tuple[int, str], ...]:
    """The first error-looking lines, each with the indented lines that continue it, as
    (line number in the log, text); `first_line` is the log line of lines[0]."""
    found: List[Tuple[int, str]] = []
    blocks = 0
    i = 0
    while i < len(lines) and blocks < FIRST_ERRORS:
        if not ERROR_LINE.search(lines[i]):
            i += 1
            continue
        blocks += 1
        found.append((first_line + i, _clip(lines[i])))
        i += 1
        taken = 0
        # CMake indents the lines that explain an error under it; a blank line may sit between.
        while (
            i < len(lines)
            and taken < ERROR_CONTEXT
            and (not lines[i].strip() or lines[i][:1].isspace())
        ):
            if lines[i].strip():
                found.append((first_line + i, _clip(lines[i])))
                taken += 1
            i += 1
    return tuple(found)


class StepOutcome(Struct, frozen=True, kw_only=True):
    name: str
    status: Outcome
    reason: str
    command: str
    duration_s: float = 0.0
    log: Optional[Path] = None
    exit_code: Optional[int] = None
    tail: Sequence[str] = ()
    hint: Optional[str] = None
    artifacts: Sequence[str] = ()
    errors: Sequence[Tuple[int, str]] = ()  # first error-looking lines: (log line, text)

    def to_json(self) -> Dict[str, object]:
        return {
            "name": self.name,
            "status": self.status,
            "reason": self.reason,
            "command": redact(self.command),
            "duration_s": round(self.duration_s, 3),
            "log": str(self.log) if self.log else None,
            "exit_code": self.exit_code,
            "hint": self.hint,
            "artifacts": list(self.artifacts),
            "first_errors": [{"line": n, "text": redact(t)} for n, t in self.errors],
        }


class Progress(Protocol):
    """What hears a run's steps; each method does nothing unless an implementation says
    otherwise (NoProgress is this protocol as it is)."""

    def started(self, step: PlannedStep, log: Path) -> None:
        return None

    def output(self, line: str) -> None:
        return None

    def finished(self, outcome: StepOutcome) -> None:
        return None

    def skipped(self, step: PlannedStep) -> None:
        return None

    def note(self, text: str) -> None:
        return None


class NoProgress(Progress):
    """A run nobody watches."""


class RunLogs(Struct, kw_only=True):
    """`<workspace>/logs/<run-id>/` with `logs/latest` pointing at it."""

    ws: Workspace
    run_id: str
    _linked: bool = False

    @property
    def dir(self) -> Path:
        return self.ws.logs / self.run_id

    def for_step(self, name: str) -> Path:
        safefs.make_dirs(self.ws.root, self.dir, "the run's log folder")
        if not self._linked:
            point_link(self.ws.logs / "latest", self.run_id)
            self._linked = True
        return self.dir / f"{name}.log"


def new_run_id() -> str:
    # Seconds are not unique enough for two runs started together; the pid is.
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"


def _stream(step: PlannedStep, log_path: Path, progress: Progress, ws_root: Path) -> Streamed:
    tail: Deque[str] = collections.deque(maxlen=TAIL_LINES)
    every: List[str] = []
    with open(log_path, "w", encoding="utf-8", buffering=1) as log:  # line-buffered: tail -f works
        header = [
            f"# step: {step.name}",
            f"# command: {redact(step.command)}",
            f"# cwd: {step.cwd}",
        ]
        header += [f"# env: {k}={v}" for k, v in sorted(redact_env(step.env_delta).items())]
        log.write("\n".join(header) + "\n\n")
        log.flush()
        proc = popen(
            step.argv,
            cwd=step.cwd,
            env=step.env,
            stdout=subprocess.PIPE,
            # One stream: the log keeps the order the child wrote in, stderr beside stdout (its
            # CMake errors often come first, since gawk holds back only stdout).
            stderr=subprocess.STDOUT,
        )
        try:
            note_step(ws_root, proc.pid, Path(step.cwd))
            assert proc.stdout is not None
            for raw in proc.stdout:
                # Compiler and build.sh output is not always UTF-8 (locale-dependent messages).
                line = redact(raw.decode("utf-8", "replace").rstrip("\n"))
                log.write(line + "\n")
                progress.output(line)
                tail.append(line)
                # Enough for a whole FA example run, which prints 73,728 or 110,592 `mean result`
                # lines (reference real-host-findings.md §1); beyond that only the log has them.
                if len(every) < 200_000:
                    every.append(line)
            code = proc.wait()
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP
            kill_group(proc)
            log.write(f"\n# interrupted by {signal_name(exc)}: no stamp written\n")
            raise
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
    # The header lines and the blank line after them come before the command's first line.
    return Streamed(code=code, tail=list(tail), lines=every, first_line=len(header) + 2)


class Streamed(Struct, frozen=True, kw_only=True):
    """What the command left: its exit code, the log's tail, every line (for the hint and
    the first errors) and the log line of the first output line."""

    code: int
    tail: Sequence[str]
    lines: Sequence[str]
    first_line: int = 1


def run_step(
    step: PlannedStep,
    ws: Workspace,
    logs: RunLogs,
    actions: ActionContext,
    progress: Progress,
    patterns: Sequence[str],
) -> StepOutcome:
    """Clear the step's old outputs, prepare its action, run its command, collect the
    package it made, finish its action, and only then write its stamp."""
    log_path = logs.for_step(step.name)
    progress.started(step, log_path)
    start = time.monotonic()
    action = action_of(step)
    _check_folders(step, ws, patterns)
    if action is not None:
        # the action's prepare removes what the old stamp vouches for (the installed
        # package): a run killed from here on must leave "never built", not "up to
        # date" (status and plan read the stamps).  A build step's stamp stays: its
        # package is removed below, which the plan sees, and the stamp says which
        # commits the installed package came from.
        safefs.remove(ws.root, stamp_path(ws, step.name), f"{step.name}'s stamp")
    _clear_outputs(step, ws, patterns)
    try:
        notes = action.prepare(step, actions, logs.run_id) if action else []
    except ActionFailed as exc:
        return _failed(
            step,
            ws,
            log_path,
            progress,
            start,
            Streamed(code=1, tail=(), lines=()),
            exc.message,
            exc.hint,
        )
    for text in notes:
        progress.note(text)
    safefs.make_dirs(ws.root, ws.tmp, f"{step.name}'s TMPDIR")
    streamed = _execute(step, log_path, progress, start, ws.root)
    if streamed.code != 0:
        return _failed(step, ws, log_path, progress, start, streamed)
    try:
        artifacts = _collect(step, patterns)
        notes, requires = action.finish(step, actions) if action else ([], [])
    except ActionFailed as exc:
        return _failed(step, ws, log_path, progress, start, streamed, exc.message, exc.hint)
    _log(log_path, notes)
    duration = time.monotonic() - start
    write_stamp(
        ws,
        step.name,
        run_id=logs.run_id,
        input_hash=step.input_hash,
        inputs=step.inputs,
        artifacts=artifacts,
        requires=requires,
        duration_s=duration,
        log=log_path,
    )
    outcome = StepOutcome(
        name=step.name,
        status=Outcome.RAN,
        reason=step.reason,
        command=step.command,
        duration_s=duration,
        log=log_path,
        exit_code=0,
        tail=tuple(streamed.tail),
        artifacts=tuple(str(a["path"]) for a in artifacts),
    )
    progress.finished(outcome)
    return outcome


def _check_folders(step: PlannedStep, ws: Workspace, patterns: Sequence[str]) -> None:
    """The folders the step writes into (its checkout, the scratch folders its command
    removes and makes again, where its packages go) are real folders of the workspace,
    not links, before its command runs: the command writes where they lead.  (An
    action's install folders: actions.py.)"""
    what = f"a folder {step.name} writes into"
    if ws.root in step.cwd.parents:
        safefs.check_below(ws.root, step.cwd, what, folder=True)
        for name in step.spec.scratch:
            safefs.check_below(ws.root, step.cwd / name, what, folder=True)
    for pattern in patterns:
        safefs.check_below(ws.root, pattern_folder(Path(pattern)), what, folder=True)


def _clear_outputs(step: PlannedStep, ws: Workspace, patterns: Sequence[str]) -> None:
    """A package left from an earlier build must not pass for this one's."""
    # ops-transformer's build.sh deletes build/ and output/ but keeps build_out/, so packages of
    # earlier builds would pile up there and one of them could pass for this run's.
    for pattern in patterns:
        for match in glob.glob(pattern):
            if os.path.isfile(match):
                safefs.remove(ws.root, Path(match), f"an output of {step.name}")


def _execute(
    step: PlannedStep, log_path: Path, progress: Progress, start: float, ws_root: Path
) -> Streamed:
    try:
        return _stream(step, log_path, progress, ws_root)
    except KeyboardInterrupt as exc:
        outcome = StepOutcome(
            name=step.name,
            status=Outcome.INTERRUPTED,
            reason=step.reason,
            command=step.command,
            duration_s=time.monotonic() - start,
            log=log_path,
        )
        progress.finished(outcome)
        raise Interrupted(
            f"interrupted during {step.name}; its processes were stopped and no stamp was "
            "written, so the next run starts it again.",
            f"The log so far is {log_path}.",
            signum=signal_number(exc),
        ) from None
    except OSError as exc:
        message = f"cannot start {step.argv[0]}: {exc}"
        _log(log_path, [message])
        # 127, as a shell reports a command it cannot find or run.
        return Streamed(code=127, tail=(message,), lines=())


class _NoPackage(ActionFailed):
    pass


def _collect(step: PlannedStep, patterns: Sequence[str]) -> List[Dict[str, object]]:
    """The newest file matching each `produces` pattern, recorded; none is a failure
    (8.3's build.sh exits 0 on every failure)."""
    artifacts: List[Dict[str, object]] = []
    for pattern in patterns:
        # The newest, should one pattern match more than one file of this run.
        matches = sorted((p for p in glob.glob(pattern) if os.path.isfile(p)), key=os.path.getmtime)
        if not matches:
            produced = sorted(glob.glob(str(Path(pattern).parent / "*")))
            shown = ", ".join(Path(p).name for p in produced) or "nothing"
            raise _NoPackage(
                f"the step exited 0 but produced no {Path(pattern).name} (found: {shown})",
                "The build did not make the expected package; check --soc and the log.",
            )
        artifacts.append(artifact_record(Path(matches[-1])))
    return artifacts


def _log(log_path: Path, notes: Sequence[str]) -> None:
    if notes:
        with open(log_path, "a", encoding="utf-8") as log:
            log.write("".join(f"\n# cannbuild: {text}\n" for text in notes))


def _failed(
    step: PlannedStep,
    ws: Workspace,
    log_path: Path,
    progress: Progress,
    start: float,
    streamed: Streamed,
    extra: Optional[str] = None,
    hint: Optional[str] = None,
) -> StepOutcome:
    """The failed outcome with its digest: the tail, the first errors anywhere in the log
    and the hint matched from the known CANN messages (a rejected archive judged against
    the copies the checkouts' markers say cannbuild put in)."""
    tail = list(streamed.tail)
    if extra:
        _log(log_path, [extra])
        tail = [*tail, f"cannbuild: {extra}"][-TAIL_LINES:]
    lines = streamed.lines
    errors = first_errors(lines, streamed.first_line) if lines else first_errors(tail)
    outcome = StepOutcome(
        name=step.name,
        status=Outcome.FAILED,
        reason=step.reason,
        command=step.command,
        duration_s=time.monotonic() - start,
        log=log_path,
        exit_code=streamed.code,
        tail=tuple(tail),
        hint=match_hint(lines or tail, _copies(ws)) or hint or "See the log for the first error.",
        errors=errors,
    )
    progress.finished(outcome)
    return outcome


def _copies(ws: Workspace) -> Optional[Tuple[PlacedCopy, ...]]:
    # a damaged src/ must not cost the digest its hint: then the copies are unknown
    try:
        return placed_copies(ws)
    except OSError:
        return None


def skip(step: PlannedStep, progress: Progress) -> StepOutcome:
    progress.skipped(step)
    return StepOutcome(
        name=step.name, status=Outcome.SKIPPED, reason=step.reason, command=step.command
    )
