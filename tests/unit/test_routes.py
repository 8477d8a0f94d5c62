"""Both routes are one program (issue 39): `invoke TASK` in a checkout hands its command line
to the program the `cannbuild` script runs (tasks.py calls cli.take_over), so the two answer
every task, flag, typo and --help alike.  The parity test runs a table of command lines
through both in this process (invoke's own Program loading tasks.py, and CannbuildProgram:
the real code of each route, without an interpreter start per line), and two real processes
per route show the routes end to end."""

from __future__ import annotations

import shutil
import signal
import sys
from pathlib import Path
from typing import List, Tuple

import pytest
from invoke.main import program as invoke_program

from cannbuild.cli import CannbuildProgram
from cannbuild.tasks import all_tasks

from clirun import CHECKOUT, argv_for, clean_env

Answer = Tuple[int, str, str]  # exit code, stdout, stderr


def _typo(option: str) -> str:
    """`--jobs` -> `--jbos`: two letters swapped, as fingers do."""
    return option[:3] + option[4] + option[3] + option[5:]


def command_lines() -> List[List[str]]:
    """Help, listings and typos, and for every task its help in each spelling, every flag it
    takes (then an unknown one, so nothing runs), a value left out and a mistyped flag."""
    lines = [
        [],
        ["help"],
        ["--list"],
        ["-l", "--list-format", "json"],
        ["--list", "--list-format", "nested"],
        ["--list", "--list-format", "xml"],
        ["setpu"],
        ["--lsit"],
        ["--help", "setpu"],
        ["help", "setpu"],
        ["--list", "setpu"],
        ["--dry", "build"],
        ["-e", "doctor"],
        ["doctor", "--", "extra"],
        ["fetch", "biuld"],
    ]
    for name, spec in all_tasks().items():
        given = ["x" for _ in spec.positional]  # optional ones too: else they take the next word
        every = [
            w
            for o in spec.options
            for s in o.spellings
            for w in (s, "x")[: 1 + (o.kind is not bool)]
        ]
        lines += [[name, "--help"], ["help", name], ["-h", name], [name, *given, "-h"]]
        lines.append([name, *given, *every, "--no-such-flag"])
        needs_value = [o.option for o in spec.options if o.kind is not bool]
        lines.append([name, *given, *every, *needs_value[-1:]])
        lines.append([name, *given, _typo(spec.options[0].option)])
        if len(spec.optional) < len(spec.positional):
            lines.append([name])
    return lines


@pytest.fixture
def in_process(monkeypatch, capsys, tmp_path):
    """Run a command line through one route in this process; what a run changes of the
    process (signal handlers, sys.path, the loaded tasks module, bytecode writing) is put
    back after the test."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "dont_write_bytecode", sys.dont_write_bytecode)
    monkeypatch.delitem(sys.modules, "tasks", raising=False)
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}

    def run(route: str, args: List[str], project: Path = CHECKOUT) -> Answer:
        capsys.readouterr()
        if route == "cannbuild":
            code = CannbuildProgram(Path.cwd()).run(["cannbuild", *args], exit=False)
        else:
            with pytest.raises(SystemExit) as ended:
                invoke_program.run(["invoke", "--search-root", str(project), *args])
            code = ended.value.code
        out = capsys.readouterr()
        return code, out.out, out.err

    yield run
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def test_both_routes_answer_every_task_flag_typo_and_help_alike(in_process, tmp_path):
    answers = {}
    for args in command_lines():
        script, invoke = in_process("cannbuild", args), in_process("invoke", args)
        assert invoke == script, args
        answers[" ".join(args)] = script
    # and what they answer is the contract: help and listings exit 0, the rest 2, nothing ran
    for line, (code, out, err) in answers.items():
        assert code in (0, 2), (line, code, err)
        assert (code == 0) == (err == ""), (line, err)
        assert "Traceback" not in out + err
        if code == 2:
            assert err.startswith("cannbuild: ") and len(err.splitlines()) == 1, (line, err)
    assert all("Did you mean" in answers[line][2] for line in ("setpu", "--lsit", "fetch biuld"))
    assert "Usage: cannbuild setup" in answers["setup --help"][1]
    assert list(tmp_path.iterdir()) == []
    # a broken project invoke.yaml: the cwd's for the script, the one beside tasks.py for invoke
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(CHECKOUT / "tasks.py", project)
    for config in ("cannbuild:\n  jobs: [8\n", "cannbuild:\n  sokc: A2\n"):
        (project / "invoke.yaml").write_text(config)
        args = ["doctor", "--sysroot", str(tmp_path / "empty")]
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(project)
            script = in_process("cannbuild", args)
        invoke = in_process("invoke", args, project)
        assert invoke == script and script[0] == 2 and "invoke" in script[2], script


@pytest.mark.parametrize("args", [["--list"], ["plan", "--jbos", "8"]], ids=" ".join)
def test_the_real_processes_of_both_routes_answer_alike(args, tmp_path):
    import subprocess

    answers = [
        subprocess.run(
            argv_for(route, args),
            cwd=tmp_path,
            env=clean_env(COLUMNS="80"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        for route in ("cannbuild", "invoke")
    ]
    script, invoke = ((p.returncode, p.stdout, p.stderr) for p in answers)
    assert invoke == script
    assert answers[0].returncode == (0 if args == ["--list"] else 2)


@pytest.mark.parametrize("args, says", [(["--version"], "Invoke "), (["--help"], "--search-root")])
def test_a_bare_help_or_version_stays_invokes_own(in_process, args, says):
    """invoke answers these before it reads tasks.py (Program.parse_core and
    parse_collection): the README names `invoke help` for cannbuild's help.  Should
    invoke ever hand them to tasks.py, this fails and the README is to be changed."""
    code, out, _ = in_process("invoke", args)
    assert code == 0 and says in out


def test_python_m_cannbuild_ignores_an_invoke_py_in_the_current_folder(tmp_path):
    """`python -m` puts the current folder first on sys.path: a project's own invoke.py
    (or jinja2.py) there stood in for the library, and every command exited 1 with its
    message."""
    import subprocess

    (tmp_path / "invoke.py").write_text('raise SystemExit("a project file, not invoke")\n')
    proc = subprocess.run(
        argv_for("cannbuild", ["--version"]),
        cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stdout.startswith("cannbuild "), proc.stderr
