"""A build step that stopped on a full disk is exit 11 with a disk hint, as the README
says, wherever in its log the disk-full message is: a parallel build prints one
compiler's `No space left on device` and goes on printing for many more lines."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from fulldisk import fill, tmpfs

from cannbuild import transaction
from cannbuild.build.runner import Outcome, StepOutcome
from cannbuild.errors import StorageError
from cannbuild.hints import match_hint
from cannbuild.ownership import claim
from cannbuild.tasks import _frame

from clirun import cannbuild

FULL = (
    "/ws/tmp/ccErrWfr.s: Fatal error: CMakeFiles/cust_opapi.dir/fa_checks.cpp.o: "
    "No space left on device"
)
TAIL = tuple(f"[2026-12-07 15:46:45] [ {n}%] No install step for 'protobuf'" for n in range(30))


def test_a_step_whose_first_errors_say_the_disk_is_full_is_exit_11(tmp_path, monkeypatch):
    failed = StepOutcome(
        name="ops-transformer-build",
        status=Outcome.FAILED,
        reason="",
        command="bash build.sh --pkg",
        log=tmp_path / "ops-transformer-build.log",
        tail=TAIL,
        errors=((87, FULL),),
    )
    run = SimpleNamespace(failed=failed, notes=(), report_dir=tmp_path)
    monkeypatch.setattr(transaction, "run_pipeline", lambda *args: run)
    with pytest.raises(StorageError, match="disk is full"):
        _frame.run_build(SimpleNamespace(), transaction.RunRequest(command="build"))


def test_the_hint_for_a_full_disk_is_the_disk_not_the_sources(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hint = match_hint([*TAIL[:5], FULL, "foo.cpp:3:1: error: frobnicator exploded", *TAIL])
    assert hint is not None and "disk" in hint and "compiler error" not in hint


def test_a_full_disk_at_the_workspace_root_names_the_file_and_how_to_free_space(tmp_path):
    """A workspace whose disk filled since it was made: the run's first write there (the
    lock's holder record) says which file, and that the disk needs room, not just
    "No space left on device"; no temp file of the failed write is left beside it."""
    ws = tmp_path / "ws"
    with tmpfs(ws, "size=64k"):
        claim(ws, "workspace", "--workspace")  # as a run makes it
        fill(ws)
        before = sorted(p.name for p in ws.iterdir())
        proc = cannbuild("clean", "-w", str(ws), cwd=tmp_path)
        after = sorted(p.name for p in ws.iterdir() if p.name not in before)
    assert proc.returncode == 11, proc
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert "No space left on device" in proc.stderr
    assert f"cannot write {ws}/" in proc.stderr, proc.stderr
    assert "Free space on that disk" in proc.stderr
    assert [name for name in after if name.startswith(".") and name != ".lock"] == []
