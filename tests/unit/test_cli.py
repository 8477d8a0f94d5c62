"""The command line: one grammar for every task, help that always works, usage errors
that exit 2 with one paragraph and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict

import pytest

from cannbuild.options import resolve_options
from cannbuild.tasks import GROUPS, all_tasks
from cannbuild.tasks._flags import FLAGS
from cannbuild.tasks._invoke import namespace

from clirun import cannbuild

COMMON_SHORT = {"j": "jobs", "w": "workspace", "v": "verbose"}


def arguments():
    """Every option of every task, as invoke in a checkout parses them (the `cannbuild`
    script reads the same `TaskSpec`s, see test_argv.py)."""
    ns = namespace()
    for name, task in sorted(ns.tasks.items()):
        for arg in task.get_arguments():
            yield name, arg


def test_no_letter_means_two_things_across_tasks():
    meanings = defaultdict(set)
    for _task, arg in arguments():
        for short in (n for n in arg.names if len(n) == 1):
            meanings[short].add(arg.attr_name or arg.name)
    assert {k: v for k, v in meanings.items() if len(v) > 1} == {}
    assert {k: next(iter(v)) for k, v in meanings.items()} == {
        k: v for k, v in COMMON_SHORT.items() if k in meanings
    }


def test_options_that_write_outside_the_workspace_or_force_work_have_no_short_form():
    for _task, arg in arguments():
        if (arg.attr_name or arg.name) in ("install_into_toolkit", "force", "locked", "exec"):
            assert all(len(n) > 1 for n in arg.names), arg.names


def test_every_option_of_every_task_has_help():
    missing = [(t, a.name) for t, a in arguments() if not (a.help or "").strip()]
    assert missing == []


def test_each_task_is_in_the_group_the_script_imports_it_from():
    import importlib

    found = {}
    for group in set(GROUPS.values()):
        for spec in importlib.import_module(f"cannbuild.tasks.{group}").TASKS:
            found[spec.name] = group
    assert found == GROUPS


def test_the_script_and_invoke_offer_the_same_tasks_and_options():
    ns = namespace()
    assert sorted(ns.tasks) == sorted(all_tasks())
    for name, spec in all_tasks().items():
        invoke_names = {a.name.replace("-", "_") for a in ns.tasks[name].get_arguments()}
        assert invoke_names == {o.name for o in spec.options} | {p for p, _ in spec.positional}


def test_the_options_table_names_an_env_variable_for_each_options_field():
    from msgspec.structs import fields

    from cannbuild.options import Options

    names = {f.name for f in fields(Options)}
    assert all(f.field in names for f in FLAGS.values() if f.field)


# With the integration tests: the quick loop runs the same checks (and an empty folder
# after) as the script's route of test_exit_contract's help table, a process pair per task.
@pytest.mark.integration
@pytest.mark.parametrize("task", sorted(GROUPS))
def test_help_works_on_every_task_both_ways(task, tmp_path):
    by_flag = cannbuild(task, "--help", cwd=tmp_path)
    by_word = cannbuild("help", task, cwd=tmp_path)
    assert by_flag.returncode == 0, by_flag.stderr
    assert by_flag.stdout == by_word.stdout
    assert by_flag.stdout.startswith(f"Usage: cannbuild {task}")
    assert not (tmp_path / ".cannbuild").exists()  # help ran nothing


def test_program_help_lists_cannbuild_things_not_invoke_machinery(tmp_path):
    out = cannbuild("--help", cwd=tmp_path).stdout
    for wanted in ("Tasks:", "setup", "-j, --jobs", "CANNBUILD_WORKSPACE", "Exit codes:", "130"):
        assert wanted in out
    for invoke_only in ("--pty", "--hide", "--warn-only", "--prompt-for-sudo-password", "--dry "):
        assert invoke_only not in out


@pytest.mark.parametrize(
    "args, word",
    [
        (["plan", "--jbos", "8"], "--jobs"),
        (["biuld"], "build"),
        (["--dry", "build"], None),
        (["plan", "-n"], None),
    ],
)
def test_a_usage_error_exits_2_in_one_paragraph(args, word, tmp_path):
    proc = cannbuild(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("cannbuild: ")
    if word:
        assert f"Did you mean {word}?" in proc.stderr
    assert not (tmp_path / ".cannbuild").exists()


@pytest.mark.parametrize(
    "config",
    [
        "cannbuild:\n  jobs: [8\n",  # YAML syntax error
        "cannbuild: [1, 2]\n",
        "cannbuild: 5\n",
        "cannbuild:\n  mirrors: 42\n",
        "cannbuild:\n  mirrors: [1, 2, 3]\n",
        "cannbuild:\n  force: 5\n",
        "cannbuild:\n  jobs: many\n",
        "cannbuild:\n  sokc: ascend910b\n",
        b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe",
    ],
)
def test_a_broken_invoke_yaml_is_a_usage_error_not_a_traceback(config, tmp_path):
    target = tmp_path / "invoke.yaml"
    if isinstance(config, bytes):
        target.write_bytes(config)
    else:
        target.write_text(config)
    proc = cannbuild("doctor", "--sysroot", str(tmp_path / "empty"), cwd=tmp_path)
    assert proc.returncode == 2, proc
    assert "Traceback" not in proc.stderr
    assert "cannbuild" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "word, soc",
    [
        ("A2", "ascend910b"),
        ("a3", "ascend910_93"),
        ("910b", "ascend910b"),
        ("910_93", "ascend910_93"),
    ],
)
def test_soc_takes_the_words_users_say(word, soc):
    assert resolve_options({"soc": word}, {}, {}).soc == soc


@pytest.mark.parametrize("args", [("build", "--help"), ("--help",), ("--list",), ("--version",)])
def test_a_reader_that_leaves_early_ends_the_output_quietly(tmp_path, args):
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head` that has already gone: every write meets a closed pipe
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "cannbuild", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert proc.stderr == b"", proc.stderr.decode()  # no traceback, nothing at all
    assert proc.returncode == 141


@pytest.mark.parametrize(
    "args, named",
    [
        (["setup", "--sandbox", "--variant", "A9"], "--variant 'A9'"),
        (["plan", "--jobs", "many"], "--jobs has value 'many'"),
    ],
)
def test_a_bad_value_is_named_by_the_flag_the_user_typed(args, named, tmp_path):
    proc = cannbuild(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc
    assert named in proc.stderr and "--sandbox-variant" not in proc.stderr
    assert not (tmp_path / ".cannbuild").exists()


def test_a_config_file_that_does_not_exist_is_named(tmp_path):
    proc = cannbuild("--config", str(tmp_path / "ci.yaml"), "status", cwd=tmp_path)
    assert proc.returncode == 2, proc
    assert f"--config {tmp_path / 'ci.yaml'}: no such file" in proc.stderr


def test_a_config_file_sets_options_like_invoke_yaml(tmp_path):
    (tmp_path / "ci.yaml").write_text("cannbuild:\n  workspace: elsewhere\n")
    proc = cannbuild("--config", "ci.yaml", "status", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc
    assert json.loads(proc.stdout)["workspace"] == str(tmp_path / "elsewhere")


@pytest.mark.parametrize("extra", [(), ("--dry-run",), ("--json",)])
def test_clean_where_there_is_no_workspace_has_nothing_to_do(tmp_path, extra):
    proc = cannbuild("clean", *extra, cwd=tmp_path)
    assert proc.returncode == 0, proc
    assert "nothing to clean" in proc.stderr and not (tmp_path / ".cannbuild").exists()
    if "--json" in extra:
        assert json.loads(proc.stdout)["remove"] == []


@pytest.mark.parametrize(
    "extra", [(), ("--keep", "1", "--include-sources"), ("--dry-run", "--json")]
)
def test_clean_refuses_a_folder_cannbuild_did_not_make(tmp_path, extra):
    theirs = tmp_path / "theirs"
    (theirs / "logs").mkdir(parents=True)
    (theirs / "logs" / "keep.txt").write_text("someone's\n")
    (theirs / "src" / "mine").mkdir(parents=True)
    (theirs / "src" / "mine" / "main.c").write_text("int main(void) { return 0; }\n")
    proc = cannbuild("clean", *extra, "--workspace", str(theirs), cwd=tmp_path)
    assert proc.returncode == 2, proc
    assert "nothing was removed" in proc.stderr
    assert "would remove" not in proc.stdout + proc.stderr  # a dry run lists nothing either
    assert (theirs / "logs" / "keep.txt").read_text() == "someone's\n"
    assert (theirs / "src" / "mine" / "main.c").is_file()


def test_output_to_a_pipe_takes_its_width_from_columns(tmp_path):
    """`COLUMNS=80 cannbuild doctor | tee log`: 80 wide, not the 100 a pipe gets otherwise."""
    narrow = cannbuild("doctor", cwd=tmp_path, COLUMNS="80").stdout.splitlines()
    # a path longer than the room left (this test's own folder) stands whole on its line
    assert narrow and all(len(line) <= 80 or len(line.split()) == 1 for line in narrow)
    wide = cannbuild("doctor", cwd=tmp_path, COLUMNS="").stdout.splitlines()
    assert any(80 < len(line) <= 100 and len(line.split()) > 1 for line in wide)
