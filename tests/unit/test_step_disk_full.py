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
from cannbuild.errors import StorageError, storage_error
from cannbuild.hints import match_hint
from cannbuild.ownership import claim
from cannbuild.tasks import _frame
from cannbuild.workspace import write_atomic, write_together

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


def test_a_write_on_a_full_disk_names_the_file_and_how_to_free_space(tmp_path):
    """A write() on a full disk names no file: the error said "cannot write: No space
    left on device".  write_atomic puts its path on the error, whose message then says
    which file and that the disk needs room; no temp file of the failed write is left."""
    ws = tmp_path / "ws"
    with tmpfs(ws, "size=64k"):
        fill(ws)
        before = sorted(p.name for p in ws.iterdir())
        with pytest.raises(OSError) as raised:
            write_atomic(ws / "state.json", b"x" * 8192)
        after = sorted(p.name for p in ws.iterdir())
    error = storage_error(raised.value)
    assert error is not None and error.exit_code == 11
    assert str(ws / "state.json") in error.message, error.message
    assert "No space left on device" in error.message
    assert "Free space on that disk" in (error.hint or "")
    assert after == before


def test_clean_runs_on_a_full_disk_and_frees_it(tmp_path):
    """The disk-full hints say to run `cannbuild clean`; it stopped at once, since taking
    the workspace lock writes a record of who holds it, and the disk had no room."""
    ws = tmp_path / "ws"
    with tmpfs(ws, "size=256k"):
        claim(ws, "workspace", "--workspace")  # as a run makes it
        (ws / "tmp").mkdir()
        (ws / "tmp" / "scratch").write_bytes(b"x" * 65536)  # what clean removes
        fill(ws)
        proc = cannbuild("clean", "-w", str(ws), cwd=tmp_path)
        freed = not (ws / "tmp").exists()
    assert proc.returncode == 0, proc.stderr
    assert freed and "Traceback" not in proc.stderr


def test_files_written_together_stay_as_they_were_when_the_disk_fills_midway(tmp_path):
    """`ci` writes the wheel and the workflow naming its sha256 together: the wheel was
    renamed in before the workflow's write failed, so the pair disagreed."""
    ws = tmp_path / "ws"
    with tmpfs(ws, "size=128k"):
        (ws / "wheel").write_bytes(b"old wheel")
        (ws / "reserve").write_bytes(b"x" * 8192)
        fill(ws)
        (ws / "reserve").unlink()  # room for the first file, not the second
        with pytest.raises(OSError) as raised:
            write_together([(ws / "wheel", b"new" * 1000), (ws / "workflow", b"y" * 65536)])
        left = sorted(p.name for p in ws.iterdir())
        wheel = (ws / "wheel").read_bytes()
    assert raised.value.filename == str(ws / "workflow")
    assert wheel == b"old wheel" and left == ["filler", "wheel"]
