"""Host probes that cannot hang doctor or leave processes behind; secrets that never
reach a log; templates that are data, not code."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from cannbuild.errors import UsageError
from cannbuild.host.hardware import NPU_SMI_TIMEOUT_S
from cannbuild.options import resolve_options
from cannbuild.redact import redact
from cannbuild.render.templates import render_value

from hosttree import clean_env, write


def doctor(tree):
    from cannbuild.host.doctor import read_host

    opts = resolve_options(
        {"sysroot": str(tree.root), "workspace": str(tree.root.parent / "ws")}, {}, {}
    )
    return read_host(opts, clean_env())


def alive_with(marker: str):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmd = fh.read().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if marker in cmd:
                found.append(pid)
    return found


def test_a_hung_npu_smi_is_cut_off_with_everything_it_started(tree):
    tree.toolkit_cann("8.5.0")
    tree.pci("d802", 8)
    marker = f"987.{os.getpid()}"  # a sleep nobody else runs (not even a second suite)
    tree.npu_smi(None, body=f"#!/bin/sh\nsleep {marker} &\nwait\n")
    start = time.monotonic()
    report = doctor(tree)
    assert time.monotonic() - start < 30
    # the bound that cut it off is the one it reports, and PCI still answers
    said = f"npu-smi info did not answer within {NPU_SMI_TIMEOUT_S:.0f} s"
    assert said in report.hardware.problems
    assert any(said in c.detail for c in report.checks if c.id == "npu-smi")
    assert report.soc is not None and report.soc.soc == "ascend910b"
    assert alive_with(f"sleep {marker}") == []


def test_a_hung_set_env_is_cut_off_with_everything_it_started(tree):
    from cannbuild.host.toolchain import capture_env

    marker = f"876.{os.getpid()}"
    script = write(tree.root / "set_env.sh", f"sleep {marker} &\nwait\n")
    with pytest.raises(subprocess.TimeoutExpired):
        capture_env(script, clean_env(), timeout=1.0)
    assert alive_with(f"sleep {marker}") == []


def test_a_set_env_that_leaves_a_child_running_is_not_taken_for_a_hung_one(tree):
    """The sourcing shell ends at once; the `sleep &` it started keeps the capture's
    stderr open.  Doctor reads the environment when the shell ends (not after the 30 s
    bound, as a hang), and the child is stopped, not left running."""
    tk = tree.toolkit_cann("8.5.0")
    marker = f"877.{os.getpid()}"
    set_env = tk / "set_env.sh"
    set_env.write_text(set_env.read_text() + f"sleep {marker} &\n")
    start = time.monotonic()
    report = doctor(tree)
    assert time.monotonic() - start < 15
    row = next(c for c in report.checks if c.id == "set_env")
    assert row.status == "pass", row
    assert report.build_env is not None and report.build_env.get("ASCEND_HOME_PATH")
    assert alive_with(f"sleep {marker}") == []


def test_a_member_that_outlives_its_leader_is_waited_for_without_spinning():
    """A member ignoring SIGTERM is given the grace before SIGKILL; the wait sleeps (it
    once called killpg in a tight loop, a core busy for the whole grace)."""
    from cannbuild.proc import kill_group, popen

    marker = f"31.{os.getpid()}"
    argv = ["sh", "-c", f"(trap '' TERM; exec sleep {marker}) & wait"]
    proc = popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not alive_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.01)
    cpu = time.process_time()
    kill_group(proc, grace_s=1.0)
    assert time.process_time() - cpu < 0.3
    assert alive_with(f"sleep {marker}") == []


# A container's PID 1 that reaps no orphan (docker run without --init), played by a
# process that makes itself the subreaper of what it starts and never waits for it: git's
# helpers, orphaned when git is killed, stay zombies of it.
NO_REAPER = """
import ctypes, os, subprocess, sys, time
from cannbuild.proc import kill_group
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
child = subprocess.Popen(["sh", "-c", "sleep 300 & sleep 300 & wait"], start_new_session=True)
time.sleep(0.3)
start = time.monotonic()
kill_group(child, grace_s=float(sys.argv[1]))
print(round(time.monotonic() - start, 3))
"""


def test_a_group_left_as_zombies_nobody_reaps_is_not_waited_for():
    """In a container whose PID 1 reaps no orphan, a killed group's members stayed
    zombies, which signal 0 still finds: every timeout and Ctrl-C waited out SIGTERM's
    grace and SIGKILL's (10 s by default).  A zombie runs nothing: it is not waited for."""
    proc = subprocess.run(
        [sys.executable, "-c", NO_REAPER, "4"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) < 2.0, proc.stdout  # before: 8 s, both 4 s graces


def test_a_fifo_where_a_version_file_should_be_does_not_hang_doctor(tree):
    latest = tree.toolkit_farm("8.3.RC2")
    cfg = latest / "version.cfg"
    cfg.unlink()
    os.mkfifo(cfg)
    start = time.monotonic()
    report = doctor(tree)
    assert time.monotonic() - start < 30
    assert report.toolkit is not None  # the version came from the install info instead


@pytest.mark.parametrize(
    "text, secret",
    [
        ("https://x/y?token=abc123&z=1", "abc123"),
        ("curl -H 'PRIVATE-TOKEN: glzz9876abcd' https://gitlab.example/api", "glzz9876abcd"),
        ("export GITHUB_TOKEN=ghs_abcdefghij0123456789", "abcdefghij0123456789"),
        ("password: hunter2hunter2", "hunter2hunter2"),
        ("https://alice:p@ss@w0rd@mirror.example/x.git", "w0rd"),
        ("X-Api-Key: k3yk3yk3y", "k3yk3yk3y"),
    ],
)
def test_the_secrets_a_log_holds_are_redacted(text, secret):
    assert secret not in redact(text)


@pytest.mark.parametrize(
    "line",
    [
        "@" + "a" * 1_000_000,
        "a" * 1_000_000 + "@",
        "a" * 1_000_000 + "https://u:s3cr3t@h/x",
        "-" * 1_000_000 + " --password s3cr3t",
        "--" + "a" * 1_000_000 + " --token s3cr3t",
        'TOKEN="s3cr3t" password: "' + "x" * 1_000_000 + "\n" + "y" * 1_000_000,
    ],
    ids=[
        "at-first",
        "at-last",
        "url-after-a-long-run",
        "option-after-a-rule",
        "long-option",
        "unclosed-quote",
    ],
)
def test_a_long_build_log_line_is_redacted_in_linear_time(line):
    """Every line a step prints is redacted as it is read: a 1 MB run of letters with an @
    in it must not stall the build (it took an hour when a URL's scheme was unbounded)."""
    start = time.monotonic()
    out = redact(line)
    assert time.monotonic() - start < 20  # a hang guard: linear is milliseconds
    assert "s3cr3t" not in out and len(out) >= 1_000_000


@pytest.mark.parametrize("plain", ["author: Alice", "tokenizer: fast", "set(OPBASE_TAG_ID 1a2b)"])
def test_redaction_leaves_ordinary_words_alone(plain):
    assert redact(plain) == plain


def test_a_recipe_value_cannot_reach_python(tmp_path):
    evil = "{{ cycler.__init__.__globals__.os.system('touch " + str(tmp_path / "X") + "') }}"
    with pytest.raises(UsageError, match="does not render"):
        render_value(evil, {}, "[repos.opbase] tag")
    assert not (tmp_path / "X").exists()


def test_a_tools_version_is_remembered_until_its_binary_changes(tmp_path):
    import json
    import os
    import shutil

    from cannbuild.host.toolchain import ToolSpec, probe_tools, read_tool_memo, remember_tools

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    make = bin_dir / "make"
    shutil.copy2(shutil.which("make") or "/usr/bin/make", make)  # a real ELF binary
    spec = ToolSpec(name="make", version_args=("--version",))
    memo = tmp_path / "tools.json"
    env = {"PATH": str(bin_dir)}
    (first,) = probe_tools(env, (spec,), read_tool_memo(memo))
    assert first.version and first.version[0].isdigit()
    assert not memo.exists()  # probing writes nothing; host reading remembers
    remember_tools(memo, [first], {})
    remembered = json.loads(memo.read_text())
    assert list(remembered.values()) == [first.version]
    # what the memo says is what is reported: the binary is not asked again ...
    memo.write_text(json.dumps({k: "0.1" for k in remembered}))
    assert probe_tools(env, (spec,), read_tool_memo(memo))[0].version == "0.1"
    # ... until the file changes (an upgrade replaces it): then it is asked again
    os.utime(make, ns=(0, make.stat().st_mtime_ns + 1_000_000_000))
    assert probe_tools(env, (spec,), read_tool_memo(memo))[0].version == first.version


def test_a_script_is_asked_every_time(tmp_path):
    from cannbuild.host.toolchain import ToolSpec, binary_key

    shim = tmp_path / "python3"
    shim.write_text("#!/bin/sh\necho Python 3.9.1\n")
    shim.chmod(0o755)
    assert binary_key(ToolSpec(name="python3", version_args=("--version",)), str(shim)) is None


def test_a_pyenv_shim_is_answered_by_the_interpreter_pyenv_would_pick(tmp_path, monkeypatch):
    """The shim itself (a script: about 40 processes a call) is never run where its pick
    can be read: PYENV_VERSION, else the nearest .python-version, else the global file;
    and the pick is remembered as any binary is, so a changed pick is seen."""
    import sys

    from cannbuild.host.toolchain import ToolSpec, probe_tools, read_tool_memo, remember_tools

    root = tmp_path / "pyenv"
    (root / "shims").mkdir(parents=True)
    ran = tmp_path / "shim-ran"
    shim = root / "shims" / "python3"
    shim.write_text(f"#!/bin/sh\necho ran > {ran}\necho Python 0.0.1\n")
    shim.chmod(0o755)
    for version in ("3.9.1", "3.10.2"):
        (root / "versions" / version / "bin").mkdir(parents=True)
        (root / "versions" / version / "bin" / "python3").symlink_to(sys.executable)
    (root / "version").write_text("3.9.1\n")
    project = tmp_path / "project" / "sub"
    project.mkdir(parents=True)
    monkeypatch.chdir(project)
    spec = ToolSpec(name="python3", version_args=("--version",))
    env = {"PATH": str(root / "shims"), "PYENV_ROOT": str(root)}
    mine = ".".join(map(str, sys.version_info[:3]))

    (found,) = probe_tools(env, (spec,))
    assert (found.path, found.binary) == (str(shim), str(root / "versions/3.9.1/bin/python3"))
    assert found.version == mine and not ran.exists()
    (tmp_path / "project" / ".python-version").write_text("3.10.2\n")
    assert probe_tools(env, (spec,))[0].binary == str(root / "versions/3.10.2/bin/python3")
    memo = tmp_path / "tools.json"
    remember_tools(memo, [probe_tools(env, (spec,))[0]], {})
    known = read_tool_memo(memo)
    assert probe_tools(env, (spec,), known)[0].version == mine
    # what pyenv's own rules decide (several versions, `system`, one not installed): the shim
    for version in ("3.9.1:3.10.2", "system", "3.12.0"):
        (found,) = probe_tools({**env, "PYENV_VERSION": version}, (spec,), known)
        assert (found.binary, found.version) == (None, "0.0.1") and ran.exists()
        ran.unlink()
