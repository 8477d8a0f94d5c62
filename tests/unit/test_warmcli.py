"""The quick loop's forked CLI (tests/warmcli.py) answers as a fresh interpreter would:
the same exit code, stdout and stderr, in the cwd and environment it was given."""

import subprocess
import sys

import pytest
import warmcli

from clirun import clean_env


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("plan", "--jobs", "many"),  # a usage error: exit 2, one paragraph
        ("doctor", "--json", "--sysroot", "{tmp}/empty"),  # reads the cwd's invoke.yaml
    ],
)
def test_a_forked_run_answers_as_a_fresh_interpreter(tmp_path, args):
    (tmp_path / "invoke.yaml").write_text("cannbuild:\n  jobs: [8\n")  # broken: named in the error
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    env = clean_env(COLUMNS="100")
    server = warmcli.server()
    if server is None:
        pytest.skip("CANNBUILD_TEST_SPAWN=1: every case spawns")
    warm = server.run(args, cwd=tmp_path, env=env, timeout=60)
    fresh = subprocess.run(
        [sys.executable, "-m", "cannbuild", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (warm.returncode, warm.stdout, warm.stderr) == (
        fresh.returncode,
        fresh.stdout,
        fresh.stderr,
    )


def test_a_different_start_up_environment_is_left_to_a_fresh_interpreter():
    server = warmcli.server()
    if server is None:
        pytest.skip("CANNBUILD_TEST_SPAWN=1: every case spawns")
    assert server.can_run(clean_env())
    assert not server.can_run(clean_env(PYTHONPATH="/elsewhere"))


def test_a_forked_python_c_answers_as_a_fresh_one_and_keeps_its_memory_cap(tmp_path, monkeypatch):
    """python_c (the render-bound tests' child) gives the code its argv, exit code and
    output, and the address-space cap holds in the fork: a 2 GiB allocation under a 1 GiB
    cap is a MemoryError, not a machine out of memory."""
    monkeypatch.chdir(tmp_path)
    code = "import sys\nprint(sys.argv[1:])\nsys.exit(3)\n"
    warm = warmcli.python_c(code, "a b", "c", timeout=60)
    fresh = subprocess.run([sys.executable, "-c", code, "a b", "c"], capture_output=True, text=True)
    assert (
        (warm.returncode, warm.stdout) == (fresh.returncode, fresh.stdout) == (3, "['a b', 'c']\n")
    )
    capped = warmcli.python_c("b = bytearray(2 << 30)\n", timeout=60, memory_cap=1 << 30)
    assert capped.returncode == 1 and "MemoryError" in capped.stderr
