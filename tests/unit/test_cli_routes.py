"""Both routes, one interface (issue 30): `invoke` in a checkout lists, helps and refuses
exactly as the `cannbuild` script does.  Each case is a real process through both routes
(clirun.run_route); the invoke route's cases run with the integration tests, as
ROUTE_PARAMS has it, and its output must equal the script's byte for byte."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, List

import pytest
from invoke.util import helpline

from cannbuild.tasks import all_tasks
from cannbuild.tasks._invoke import namespace

from clirun import ROUTE_PARAMS, run_route

INVOKE_ONLY = pytest.mark.integration  # a process of invoke's: twice the script's start-up


def listed(text: str) -> Dict[str, str]:
    """Each task's listed line of a two-column listing, its wrapping undone."""
    rows: Dict[str, List[str]] = {}
    name = ""
    for line in text.splitlines():
        head = re.match(r"^  (\S+)\s{2,}(\S.*)$", line)
        if head:
            name = head.group(1)
            rows[name] = [head.group(2)]
        elif name and line.startswith("   ") and line.strip():
            rows[name].append(line.strip())
        else:
            name = ""
    return {n: " ".join(words) for n, words in rows.items()}


def summaries() -> Dict[str, str]:
    return {name: spec.summary for name, spec in all_tasks().items()}


# --- the task list -----------------------------------------------------------------------


def test_a_summary_of_several_lines_is_one_paragraph_to_list():
    """The case the issue saw: summaries wrapped in the docstring (a cut would show)."""
    assert any("\n" in spec.doc.split("\n\n", 1)[0] for spec in all_tasks().values())
    assert all("\n" not in text for text in summaries().values())


@pytest.mark.parametrize("route", ROUTE_PARAMS)
def test_the_task_list_gives_each_summary_whole_on_both_routes(route, tmp_path):
    proc = run_route(route, "--list", cwd=tmp_path, COLUMNS="80")
    assert proc.returncode == 0, proc.stderr
    assert listed(proc.stdout) == summaries()
    assert proc.stdout == run_route("cannbuild", "--list", cwd=tmp_path, COLUMNS="80").stdout


def test_the_invoke_collection_lists_each_first_paragraph_whole():
    """invoke lists a docstring's first line (invoke/util.py helpline)."""
    ns = namespace()
    assert {name: helpline(task) for name, task in ns.tasks.items()} == summaries()


@INVOKE_ONLY
@pytest.mark.parametrize("fmt", ["flat", "nested"])
def test_invokes_own_listing_formats_give_each_summary_whole(fmt, tmp_path):
    proc = run_route("invoke", "--list", "--list-format", fmt, cwd=tmp_path, COLUMNS="80")
    assert proc.returncode == 0, proc.stderr
    assert listed(proc.stdout) == summaries()


@INVOKE_ONLY
def test_invokes_json_listing_gives_each_summary_and_its_own_line_whole(tmp_path):
    proc = run_route("invoke", "--list", "--list-format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {t["name"]: t["help"] for t in data["tasks"]} == summaries()
    assert data["help"].endswith(".")  # tasks.py's own first line is a whole sentence


# --- a task's help -----------------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTE_PARAMS)
@pytest.mark.parametrize(
    "args",
    [["--help", "setup"], ["-h", "setup"], ["setup", "--help"], ["help", "setup"]],
    ids=" ".join,
)
def test_a_tasks_help_is_the_scripts_in_every_spelling_on_both_routes(route, args, tmp_path):
    proc = run_route(route, *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == run_route("cannbuild", "help", "setup", cwd=tmp_path).stdout
    rows = proc.stdout.splitlines()
    # a value option says VALUE, a repeatable one says so, a switch takes none
    for spelled in ("--force", "--with-step"):
        assert any(r.strip().startswith(f"{spelled}=VALUE (repeatable)") for r in rows), spelled
    assert any(r.strip().startswith("-j, --jobs=VALUE ") for r in rows)
    assert any(re.match(r"^\s+--sandbox\s{2,}\S", r) for r in rows)
    assert not any(re.match(r"^\s+--(force|with-step)\s{2,}", r) for r in rows)
    assert list(tmp_path.iterdir()) == []  # help ran nothing


@pytest.mark.parametrize("route", ROUTE_PARAMS)
@pytest.mark.parametrize("args", [["help"], []], ids=["help", "nothing"])
def test_the_program_help_is_the_scripts_on_both_routes(route, args, tmp_path):
    proc = run_route(route, *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == run_route("cannbuild", "--help", cwd=tmp_path).stdout


@INVOKE_ONLY
@pytest.mark.parametrize("args, says", [(["--version"], "Invoke "), (["--help"], "--search-root")])
def test_a_bare_help_or_version_stays_invokes_own(args, says, tmp_path):
    """invoke answers these before it reads tasks.py (Program.parse_core and
    parse_collection): the README names `invoke help` for cannbuild's help.  Should
    invoke ever hand them to tasks.py, this fails and the README is to be changed."""
    proc = run_route("invoke", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert says in proc.stdout


# --- a mistyped word -----------------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTE_PARAMS)
@pytest.mark.parametrize(
    "args, meant",
    [
        (["setpu"], "setup"),
        (["--help", "setpu"], "setup"),
        (["help", "setpu"], "setup"),
        (["--list", "setpu"], "setup"),
        (["setup", "--forse", "build"], "--force"),
        (["setup", "--with-stpe", "x"], "--with-step"),
        (["plan", "--jbos", "8"], "--jobs"),
        (["--lsit"], "--list"),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, list) else a,
)
def test_a_typo_gets_the_scripts_did_you_mean_and_exit_2_on_both_routes(
    route, args, meant, tmp_path
):
    proc = run_route(route, *args, cwd=tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cannbuild: "), proc.stderr
    assert f"Did you mean {meant}?" in proc.stderr
    assert proc.stderr == run_route("cannbuild", *args, cwd=tmp_path).stderr
    assert list(tmp_path.iterdir()) == []


@INVOKE_ONLY
@pytest.mark.parametrize(
    "args, says",
    [
        (["--list", "--list-format", "xml"], "--list-format takes flat, nested, json, not 'xml'"),
        (["-l", "-F", "jsno"], "Did you mean json?"),
        (["--list", "-F", "json", "-D", "1"], "-D does not go with --list-format json"),
        (["--list", "setup", "-F", "flat"], "'setup' names no sub-collection"),
        (["-e", "doctor"], "'-e' is not a cannbuild option"),  # the word the user typed
    ],
    ids=lambda a: " ".join(a) if isinstance(a, list) else None,
)
def test_a_wrong_word_for_invokes_own_options_is_exit_2_in_one_paragraph(
    args, says, tmp_path: Path
):
    proc = run_route("invoke", *args, cwd=tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cannbuild: "), proc.stderr
    assert says in proc.stderr
