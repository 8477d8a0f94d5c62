"""The console script's exit skips the interpreter's teardown; nothing a run wrote or
registered may be lost by that."""

import subprocess
import sys
import textwrap


def run_python(body: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(body)], capture_output=True, text=True, timeout=60
    )


def test_leave_keeps_the_exit_code_the_buffered_output_and_the_atexit_handlers(tmp_path):
    marker = tmp_path / "atexit-ran"
    proc = run_python(
        f"""
        import atexit, sys
        from cannbuild.interpreter import leave
        atexit.register(lambda: open({str(marker)!r}, "w").write("yes"))
        sys.stdout.write("x" * 200000)  # more than a pipe holds: still buffered here
        sys.stderr.write("last words")
        leave(5)
        """
    )
    assert proc.returncode == 5
    assert proc.stdout == "x" * 200000 and proc.stderr == "last words"
    assert marker.read_text() == "yes"


def test_leave_waits_for_a_thread_that_is_still_working(tmp_path):
    done = tmp_path / "thread-done"
    proc = run_python(
        f"""
        import threading, time
        from cannbuild.interpreter import leave
        def work():
            time.sleep(0.5)
            open({str(done)!r}, "w").write("done")
        threading.Thread(target=work).start()
        leave(3)
        """
    )
    assert proc.returncode == 3
    assert done.read_text() == "done"


def test_the_console_script_sets_the_collector_and_importing_cannbuild_does_not():
    proc = run_python(
        """
        import gc, runpy, sys
        default = gc.get_threshold()
        import cannbuild.cli, cannbuild.interpreter
        assert gc.get_threshold() == default, "importing changed the collector"
        sys.argv = ["cannbuild", "--version"]
        import atexit
        atexit.register(lambda: print("threshold", gc.get_threshold()[0]))
        runpy.run_module("cannbuild", run_name="__main__")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("cannbuild ")
    assert "threshold 100000" in proc.stdout
