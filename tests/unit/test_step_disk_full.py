"""A build step that stopped on a full disk is exit 11 with a disk hint, as the README
says, wherever in its log the disk-full message is: a parallel build prints one
compiler's `No space left on device` and goes on printing for many more lines."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from cannbuild import transaction
from cannbuild.build.runner import Outcome, StepOutcome
from cannbuild.errors import StorageError
from cannbuild.hints import match_hint
from cannbuild.tasks import _frame

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
