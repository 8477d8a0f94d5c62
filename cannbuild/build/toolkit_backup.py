"""--install-into-toolkit, undoable: before an installer writes into the real toolkit,
learn what it installs (run it into a scratch prefix), keep the toolkit files it will
replace, and write restore.sh, the way back."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import List, Sequence, Tuple

from .. import safefs
from ..proc import run as run_process
from ..sources.fetch import sha256_file
from ..workspace import write_atomic, write_json_atomic
from .overlay import staged_root
from .plan import PlannedStep


def _install_path_arg(argv: Sequence[str], path: Path) -> List[str]:
    """`argv` with its `--install-path=` value replaced (CANN .run installers all take it)."""
    swapped = [f"--install-path={path}" if a.startswith("--install-path=") else a for a in argv]
    if swapped == list(argv):
        raise OSError(f"{argv[0]}: no --install-path= argument to probe the installer with")
    return swapped


def back_up_toolkit(
    step: PlannedStep, target: Path, backup: Path, run_id: str, workspace: Path
) -> Tuple[Path, int, int]:
    """Before an installer writes into the real toolkit: run it into a scratch prefix to
    learn what it installs, copy the toolkit files it will replace to
    `<workspace>/toolkit-backup/<run>/files/`, list every file in manifest.json, and write
    restore.sh, the way back.  Returns (backup folder, files written, files replaced).
    Nothing below `workspace` is removed or written through a link (safefs)."""
    scratch = backup / "probe"
    safefs.remove(workspace, scratch, "the installer's probe prefix", ignore_errors=True)
    safefs.make_dirs(workspace, scratch, "the installer's probe prefix")
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
            safefs.make_dirs(workspace, saved.parent, "the toolkit backup")
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
    safefs.remove(workspace, scratch, "the installer's probe prefix")
    write_json_atomic(
        backup / "manifest.json", {"toolkit": str(target), "run_id": run_id, "files": entries}
    )
    write_atomic(backup / "restore.sh", ("\n".join(restore) + "\n").encode())
    (backup / "restore.sh").chmod(0o755)
    return backup, len(entries), sum(1 for e in entries if e["existed"])
