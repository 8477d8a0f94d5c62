"""Run planned steps: one log per step, a digest on failure, stamps only after success.

The child runs in its own process group; Ctrl-C stops the whole group and
leaves no stamp, so the next run starts that step again.  Output is redacted
line by line before it reaches the log.
"""

from __future__ import annotations

import collections
import glob
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Deque, Dict, List, Optional, Protocol, Sequence, Tuple

from .errors import Interrupted, signal_number
from .overlay import build_overlay, staged_root
from .ownership import inside
from .plan import PlannedStep, digest, write_stamp
from .proc import kill_group, popen
from .redact import redact
from .sources.fetch import sha256_file
from .workspace import Workspace, point_link

TAIL_LINES = 30


@dataclass(frozen=True)
class StepOutcome:
    name: str
    status: str  # "ran", "skipped", "failed", "interrupted"
    reason: str
    command: str
    duration_s: float = 0.0
    log: Optional[Path] = None
    exit_code: Optional[int] = None
    tail: Sequence[str] = ()
    hint: Optional[str] = None
    artifacts: Sequence[str] = ()

    def to_json(self) -> Dict[str, Any]:
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
        }


class Progress(Protocol):
    def started(self, step: PlannedStep, log: Path) -> None: ...

    def output(self, line: str) -> None: ...

    def finished(self, outcome: StepOutcome) -> None: ...

    def skipped(self, step: PlannedStep) -> None: ...

    def note(self, text: str) -> None: ...


class NoProgress:
    def started(self, step: PlannedStep, log: Path) -> None:
        pass

    def output(self, line: str) -> None:
        pass

    def finished(self, outcome: StepOutcome) -> None:
        pass

    def skipped(self, step: PlannedStep) -> None:
        pass

    def note(self, text: str) -> None:
        pass


@dataclass
class RunLogs:
    """`<workspace>/logs/<run-id>/` with `logs/latest` pointing at it."""

    ws: Workspace
    run_id: str
    _linked: bool = field(default=False, init=False)

    @property
    def dir(self) -> Path:
        return self.ws.logs / self.run_id

    def for_step(self, name: str) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self._linked:
            point_link(self.ws.logs / "latest", self.run_id)
            self._linked = True
        return self.dir / f"{name}.log"


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"


def _stream(step: PlannedStep, log_path: Path, progress: Progress) -> tuple:
    tail: Deque[str] = collections.deque(maxlen=TAIL_LINES)
    every: List[str] = []
    with open(log_path, "w", encoding="utf-8", buffering=1) as log:  # line-buffered: tail -f works
        log.write(f"# step: {step.name}\n# command: {redact(step.command)}\n# cwd: {step.cwd}\n")
        for key, value in sorted(step.env_delta.items()):
            log.write(f"# env: {key}={redact(value)}\n")
        log.write("\n")
        log.flush()
        proc = popen(
            step.argv,
            cwd=step.cwd,
            env=step.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = redact(raw.decode("utf-8", "replace").rstrip("\n"))
                log.write(line + "\n")
                progress.output(line)
                tail.append(line)
                if len(every) < 200_000:
                    every.append(line)
            code = proc.wait()
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP
            kill_group(proc)
            why = {2: "the user (Ctrl-C)", 15: "SIGTERM", 1: "SIGHUP"}.get(
                signal_number(exc), "a signal"
            )
            log.write(f"\n# interrupted by {why}: no stamp written\n")
            raise
    return code, list(tail), every


@dataclass(frozen=True)
class ActionContext:
    """What the post-run actions need: where the toolkit and the overlay are."""

    toolkit_home: Path
    overlay: Path
    stage: Path
    opp: Path
    vendor_dir: Path
    overlay_enabled: bool = True
    # --install-into-toolkit: the toolkit the installer writes into, and where the files
    # it replaces are kept
    toolkit_target: Optional[Path] = None
    toolkit_backup: Optional[Path] = None


def _install_path_arg(argv: Sequence[str], path: Path) -> List[str]:
    """`argv` with its `--install-path=` value replaced (CANN .run installers all take it)."""
    swapped = [f"--install-path={path}" if a.startswith("--install-path=") else a for a in argv]
    if swapped == list(argv):
        raise OSError(f"{argv[0]}: no --install-path= argument to probe the installer with")
    return swapped


def back_up_toolkit(
    step: PlannedStep, actions: ActionContext, run_id: str
) -> Tuple[Path, int, int]:
    """Before an installer writes into the real toolkit: run it into a scratch prefix to
    learn what it installs, copy the toolkit files it will replace to
    `<workspace>/toolkit-backup/<run>/files/`, list every file in manifest.json, and write
    restore.sh, the way back.  Returns (backup folder, files written, files replaced)."""

    from .proc import run as run_process
    from .sources.fetch import sha256_file
    from .workspace import write_atomic, write_json_atomic

    assert actions.toolkit_target is not None and actions.toolkit_backup is not None
    target = actions.toolkit_target
    backup = actions.toolkit_backup / run_id
    scratch = backup / "probe"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    argv = _install_path_arg(step.argv, scratch)
    probe = run_process(argv, cwd=step.cwd, env=step.env, timeout=1800, merge_stderr=True)
    if probe.returncode != 0:
        tail = probe.stdout.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise OSError(f"probing the installer into {scratch} failed: {' | '.join(tail)}")
    scratch_root = staged_root(scratch)  # where it put them: as it would in the toolkit
    entries = []
    restore = [
        "#!/bin/bash",
        f"# Undo cannbuild's --install-into-toolkit (run {run_id}) in {target}.",
        "set -e",
    ]
    for path in sorted(p for p in scratch_root.rglob("*") if p.is_file() or p.is_symlink()):
        rel = path.relative_to(scratch_root)
        live = target / rel
        existed = live.is_symlink() or live.exists()
        entry = {"path": str(rel), "existed": existed}
        if existed and not live.is_dir():
            saved = backup / "files" / rel
            saved.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(live, saved, follow_symlinks=False)
            entry["sha256"] = sha256_file(live) if live.is_file() else None
            restore.append(f"cp -a -- {shlex.quote(str(saved))} {shlex.quote(str(live))}")
        elif not existed:
            restore.append(f"rm -f -- {shlex.quote(str(live))}")
        entries.append(entry)
    new_dirs = sorted(
        (
            d.relative_to(scratch_root)
            for d in scratch_root.rglob("*")
            if d.is_dir() and not d.is_symlink()
        ),
        key=lambda rel: -len(rel.parts),
    )
    for rel in new_dirs:
        if not (target / rel).exists():
            restore.append(f"rmdir --ignore-fail-on-non-empty -- {shlex.quote(str(target / rel))}")
    shutil.rmtree(scratch)
    write_json_atomic(
        backup / "manifest.json", {"toolkit": str(target), "run_id": run_id, "files": entries}
    )
    write_atomic(backup / "restore.sh", ("\n".join(restore) + "\n").encode())
    (backup / "restore.sh").chmod(0o755)
    return backup, len(entries), sum(1 for e in entries if e["existed"])


def run_step(
    step: PlannedStep,
    ws: Workspace,
    logs: RunLogs,
    actions: ActionContext,
    progress: Progress,
    patterns: Sequence[str],
) -> StepOutcome:
    log_path = logs.for_step(step.name)
    progress.started(step, log_path)
    start = time.monotonic()
    for pattern in patterns:
        for match in glob.glob(pattern):
            if os.path.isfile(match):
                os.unlink(inside(ws.root, Path(match), f"an output of {step.name}"))
    if step.spec.action == "overlay" and actions.overlay_enabled:
        shutil.rmtree(actions.stage, ignore_errors=True)
        actions.stage.mkdir(parents=True)
    if step.spec.action == "overlay" and actions.toolkit_target is not None:
        try:
            backup, written, replaced = back_up_toolkit(step, actions, logs.run_id)
        except OSError as exc:
            outcome = StepOutcome(
                step.name,
                "failed",
                step.reason,
                step.command,
                time.monotonic() - start,
                log_path,
                1,
                (f"cannbuild: {exc}",),
                "Nothing was written to the toolkit. Fix the installer error, or drop "
                "--install-into-toolkit to use the workspace overlay.",
            )
            progress.finished(outcome)
            return outcome
        progress.note(
            f"--install-into-toolkit: {step.name} writes {written} files into "
            f"{actions.toolkit_target} ({replaced} replace existing ones, kept in {backup}/files); "
            f"to undo it: bash {backup}/restore.sh"
        )
    if step.spec.action == "vendor":
        shutil.rmtree(actions.vendor_dir, ignore_errors=True)
        actions.opp.mkdir(parents=True, exist_ok=True)
    ws.tmp.mkdir(parents=True, exist_ok=True)
    try:
        code, tail, lines = _stream(step, log_path, progress)
    except KeyboardInterrupt as exc:
        outcome = StepOutcome(
            step.name, "interrupted", step.reason, step.command, time.monotonic() - start, log_path
        )
        progress.finished(outcome)
        raise Interrupted(
            f"interrupted during {step.name}; its processes were stopped and no stamp was "
            "written, so the next run starts it again.",
            f"The log so far is {log_path}.",
            signum=signal_number(exc),
        ) from None
    except OSError as exc:
        code, tail, lines = 127, [f"cannot start {step.argv[0]}: {exc}"], []
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(tail[0] + "\n")
    duration = time.monotonic() - start

    def failed(
        code: Optional[int],
        tail: Sequence[str],
        extra: Optional[str] = None,
        fallback: str = "See the log for the first error.",
    ) -> StepOutcome:
        if extra:
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(f"\n# cannbuild: {extra}\n")
            tail = [*tail, f"cannbuild: {extra}"][-TAIL_LINES:]
        from .hints import match_hint  # only a failure pays for the hint table

        outcome = StepOutcome(
            step.name,
            "failed",
            step.reason,
            step.command,
            duration,
            log_path,
            code,
            tuple(tail),
            match_hint(lines or tail) or fallback,
        )
        progress.finished(outcome)
        return outcome

    if code != 0:
        return failed(code, tail)
    artifacts: List[Dict[str, Any]] = []
    for pattern in patterns:
        matches = sorted((p for p in glob.glob(pattern) if os.path.isfile(p)), key=os.path.getmtime)
        if not matches:
            produced = sorted(glob.glob(str(Path(pattern).parent / "*")))
            shown = ", ".join(Path(p).name for p in produced) or "nothing"
            return failed(
                0,
                tail,
                f"the step exited 0 but produced no {Path(pattern).name} (found: {shown})",
                "The build did not make the expected package; check --soc and the log.",
            )
        path = Path(matches[-1])
        st = path.stat()
        artifacts.append(
            {
                "path": str(path),
                "sha256": sha256_file(path),
                "size": st.st_size,
                "mtime_ns": st.st_mtime_ns,
            }
        )
    requires: List[str] = []
    try:
        if step.spec.action == "overlay" and actions.overlay_enabled:
            root = staged_root(actions.stage)
            count = build_overlay(actions.toolkit_home, root, actions.overlay)
            requires.append(str(actions.overlay))
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(
                    f"\n# cannbuild: overlaid {count} staged files from {root} on {actions.toolkit_home} at {actions.overlay}\n"
                )
        if step.spec.action == "vendor":
            set_env = actions.vendor_dir / "bin" / "set_env.bash"
            if not set_env.is_file():
                return failed(0, tail, f"the install finished but {set_env} is missing")
            requires.append(str(set_env))
    except OSError as exc:
        return failed(0, tail, str(exc))
    outputs = [a["sha256"] for a in artifacts] or [step.input_hash]
    write_stamp(
        ws,
        step.name,
        {
            "step": step.name,
            "run_id": logs.run_id,
            "input_hash": step.input_hash,
            "inputs": step.inputs,
            "artifacts": artifacts,
            "outputs_digest": digest(outputs),
            "requires_paths": requires,
            "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
            "duration_s": round(duration, 3),
            "log": str(log_path),
        },
    )
    outcome = StepOutcome(
        step.name,
        "ran",
        step.reason,
        step.command,
        duration,
        log_path,
        0,
        tuple(tail),
        None,
        tuple(a["path"] for a in artifacts),
    )
    progress.finished(outcome)
    return outcome


def skip(step: PlannedStep, progress: Progress) -> StepOutcome:
    progress.skipped(step)
    return StepOutcome(step.name, "skipped", step.reason, step.command)
