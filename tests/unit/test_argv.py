"""The `cannbuild` script reads its command line itself: the grammar invoke's parser has
(so `invoke TASK` in a checkout reads the same words), without importing invoke."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cannbuild.tasks import GROUPS, task
from cannbuild.tasks._argv import ArgvError, parse, values_for


def find(name):
    return task(name) if name in GROUPS else None


def one(*argv):
    invocation = parse(list(argv), find)
    assert len(invocation.calls) == 1
    return invocation.calls[0]


@pytest.mark.parametrize(
    "argv",
    [
        ("plan", "--jobs", "8"),
        ("plan", "--jobs=8"),
        ("plan", "-j", "8"),
        ("plan", "-j8"),
        ("plan", "-j=8"),
    ],
)
def test_an_option_value_is_read_in_every_spelling(argv):
    assert one(*argv).values == {"jobs": "8"}


def test_a_switch_is_true_and_the_rest_keep_their_defaults():
    values = values_for(one("setup", "--sandbox", "-v"))
    assert values["sandbox"] is True and values["verbose"] is True
    assert values["locked"] is False and values["soc"] is None and values["force"] == []


def test_a_repeatable_option_collects_every_value():
    call = one("build", "--force", "opbase-build", "--force=ops-transformer-build")
    assert call.values["force"] == ["opbase-build", "ops-transformer-build"]


def test_a_positional_argument_is_taken_by_place_or_by_name():
    assert one("bundle", "out.tar", "--dry-run").args == ["out.tar"]
    assert one("bundle", "--out", "out.tar").args == ["out.tar"]
    assert one("sandbox", "create", "--dir=x").values == {"dir": "x"}


def test_tasks_follow_one_another():
    invocation = parse(["fetch", "--sandbox", "build", "-j", "2"], find)
    assert [c.task.name for c in invocation.calls] == ["fetch", "build"]
    assert invocation.calls[1].values == {"jobs": "2"}


def test_core_options_come_before_the_task():
    invocation = parse(["--config", "c.yaml", "--debug", "status"], find)
    assert invocation.core == {"config": "c.yaml", "debug": True}
    assert parse(["--help", "build"], find).core == {"help": "build"}
    assert parse(["--help"], find).core == {"help": True}


@pytest.mark.parametrize(
    "argv, says, choice",
    [
        (["plan", "--jbos", "8"], "plan does not take '--jbos'", "--jobs"),
        (["plan", "-n"], "plan does not take '-n'", None),
        (["biuld"], "there is no task 'biuld'", None),
        (["--dry", "build"], "'--dry' is not a cannbuild option", None),
        (["plan", "--jobs"], "'--jobs' of plan needs a value", None),
        (["plan", "--json=yes"], "'--json' is a switch and takes no value", None),
        (["profile"], "profile needs PATH", None),
        (["status", "extra"], "status takes no argument 'extra'", None),
        (["--config"], "'--config' needs a value", None),
        (["build", "--", "x"], "no task takes words after '--' (got 'x')", None),
    ],
)
def test_a_wrong_word_is_named(argv, says, choice):
    with pytest.raises(ArgvError) as caught:
        parse(argv, find)
    assert says in str(caught.value)
    if choice:
        assert choice in caught.value.choices


def test_words_after_a_double_dash_go_to_the_completion_only():
    invocation = parse(["--complete", "--", "cannbuild", "bu"], find)
    assert invocation.remainder == ["cannbuild", "bu"] and not invocation.calls


def test_running_a_task_from_the_script_does_not_import_invoke(tmp_path):
    """invoke's import was about 0.2 s of every run; only `invoke TASK` needs it."""
    code = (
        "import sys\n"
        "from cannbuild.cli import run\n"
        "code = run(['status', '--workspace', sys.argv[1], '--json'])\n"
        "print(code, 'invoke' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "ws")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.stdout.strip().splitlines()[-1] == "0 False", proc.stderr
