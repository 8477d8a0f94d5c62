"""The command line: one grammar for every task (invoke's parser, the Program in
cannbuild/cli.py), help that always works, usage errors that exit 2 with one paragraph
and no traceback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from invoke.util import helpline

from cannbuild.cli import CannbuildProgram, namespace
from cannbuild.options import resolve_options
from cannbuild.tasks import all_tasks
from cannbuild.tasks._flags import FLAGS

from clirun import cannbuild, clean_env

COMMON_SHORT = {"j": "jobs", "w": "workspace", "v": "verbose"}


def arguments():
    """Every option of every task, as the parser reads them."""
    for name, task in sorted(namespace().tasks.items()):
        for arg in task.get_arguments():
            yield name, arg


def parsed(*argv):
    """The tasks `cannbuild ARGV` would run, each with the values it would be given."""
    program = CannbuildProgram(Path.cwd())
    program.parse_core(["cannbuild", *argv])
    program.parse_collection()
    program.parse_tasks()
    return [(context.name, context.as_kwargs) for context in program.tasks]


@pytest.mark.parametrize(
    "argv", [("-j", "8"), ("-j8",), ("-j=8",), ("--jobs", "8"), ("--jobs=8",)], ids=" ".join
)
def test_an_option_value_is_read_in_every_spelling(argv):
    assert parsed("plan", *argv)[0][1]["jobs"] == "8"


def test_switches_repeatable_options_positionals_and_several_tasks():
    [(_, setup)] = parsed("setup", "--sandbox", "-v")
    assert setup["sandbox"] is True and setup["verbose"] is True
    assert setup["locked"] is False and setup["soc"] is None and setup["force"] == []
    [(_, build)] = parsed("build", "--force", "opbase-build", "--force=ops-transformer-build")
    assert build["force"] == ["opbase-build", "ops-transformer-build"]
    assert parsed("bundle", "a.tar")[0][1]["out"] == parsed("bundle", "--out", "a.tar")[0][1]["out"]
    fetch, build = parsed("fetch", "--sandbox", "build", "-j", "2")
    assert (fetch[0], fetch[1]["sandbox"], build[0], build[1]["jobs"]) == (
        "fetch",
        True,
        "build",
        "2",
    )
    assert parsed("recipe", "draft", "--ref", "v9.1.0")[0][1]["recipe"] is None  # optional


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


def test_the_options_table_names_an_env_variable_for_each_options_field():
    from msgspec.structs import fields

    from cannbuild.options import Options

    names = {f.name for f in fields(Options)}
    assert all(f.field in names for f in FLAGS.values() if f.field)


def test_program_help_lists_cannbuild_things_not_invoke_machinery(tmp_path):
    out = cannbuild("--help", cwd=tmp_path).stdout
    for wanted in ("Tasks:", "setup", "-j, --jobs", "CANNBUILD_WORKSPACE", "Exit codes:", "130"):
        assert wanted in out
    # the README's configuration names it as cache.remote's variable
    assert "CANNBUILD_CACHE_REMOTE" in out
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
    "args, said",
    [
        (["build", "--cann-path"], "'--cann-path' of build needs a value"),
        (["doctor", "--soc=A2", "--soc=A3"], "doctor was given --soc twice (the second time 'A3')"),
        (["doctor", "--soc", "A2", "--soc", "A3"], "doctor was given --soc twice"),
        (["doctor", "A3"], "doctor takes no argument 'A3'"),
        # tasks with positional arguments: invoke would take the mistyped option for their value
        (["bench", "--jsn"], "bench does not take '--jsn'. Did you mean --json?"),
        (["profile", "--jsn"], "profile does not take '--jsn'. Did you mean --json?"),
        (
            ["bundle", "--lock-fil", "x"],
            "bundle does not take '--lock-fil'. Did you mean --lock-file?",
        ),
        (["recipe", "draft", "--reff", "v9"], "recipe does not take '--reff'. Did you mean --ref?"),
        # the program's own flags, a later task's, a repeatable flag: none is the mistake
        (["doctor", "--debug", "foo"], "doctor takes no argument 'foo'"),
        (["doctor", "foo", "build", "--ops", "x"], "doctor takes no argument 'foo'"),
        (["doctor", "--soc", "A2", "--soc", "A3", "--debug"], "doctor was given --soc twice"),
        (
            ["build", "--force", "opbase-build", "--force", "ops-transformer-build", "x"],
            "build takes no argument 'x'",
        ),
    ],
)
def test_a_usage_error_names_the_flag_as_the_user_spells_it(args, said, tmp_path):
    proc = cannbuild(*args, cwd=tmp_path)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert "_" not in proc.stderr.split(".")[0].replace("doctor", "")  # no `--cann_path`


@pytest.mark.parametrize(
    "config, said, fix",
    [
        # YAML reads an unquoted version as a number (9.10 as 9.1): say to quote it
        ("cannbuild:\n  recipe: 9.0\n", "cannbuild.recipe is a number", 'recipe: "9.0"'),
        ("cannbuild:\n  ops_release: 9.10\n", "(read as 9.1)", "unquoted, 9.10 reads as 9.1"),
        # a YAML boolean is not called a number
        ("cannbuild:\n  soc: yes\n", "has value True (bool)", "one word, number or path"),
        # an empty path is no folder (it was taken as the current one)
        ('cannbuild:\n  workspace: ""\n', "cannbuild.workspace is empty", "Give cannbuild."),
    ],
)
def test_a_number_or_empty_path_in_invoke_yaml_says_how_to_write_it(config, said, fix, tmp_path):
    (tmp_path / "invoke.yaml").write_text(config)
    proc = cannbuild("doctor", "--sysroot", str(tmp_path / "empty"), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc
    assert said in proc.stderr and fix in proc.stderr, proc.stderr
    assert not (tmp_path / ".cannbuild-owned").exists()


@pytest.mark.parametrize("flag", ["-w", "--cann-path"])
def test_an_empty_path_flag_is_a_usage_error_naming_it(flag, tmp_path):
    proc = cannbuild("plan", "--sandbox", flag, "", cwd=tmp_path)
    long = "--workspace" if flag == "-w" else flag
    assert proc.returncode == 2 and f"{long} is empty" in proc.stderr, proc
    assert list(tmp_path.iterdir()) == []  # the current folder was not taken as a workspace


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


def test_an_invoke_json_with_a_byte_order_mark_is_told_how_to_save_it(tmp_path):
    """invoke reads invoke.json itself and its JSON reader takes no BOM (Notepad writes one):
    the hint speaks of JSON and of the mark, not of YAML."""
    (tmp_path / "invoke.json").write_bytes(b'\xef\xbb\xbf{"cannbuild": {"jobs": 2}}')
    proc = cannbuild("status", cwd=tmp_path)
    assert proc.returncode == 2, proc
    assert '{"cannbuild": {"key": value}}' in proc.stderr and "YAML" not in proc.stderr
    assert "without a byte-order mark" in proc.stderr


@pytest.mark.parametrize(
    "word, soc",
    [
        ("A2", "ascend910b"),
        ("a3", "ascend910_93"),
        ("910b", "ascend910b"),
        ("910_93", "ascend910_93"),
        ("910C", "ascend910_93"),
    ],
)
def test_soc_takes_the_words_users_say(word, soc):
    assert resolve_options({"soc": word}, {}, {}).soc == soc


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
    "argv, would",
    [
        (("sandbox", "create", "--dir", "sb", "--dry-run"), "would create an A2 host"),
        (("ci", "--dry-run"), "would write "),
        (("setup", "--sandbox", "--dry-run"), "the sandbox: would create an A2 host"),
        (("fetch", "--sandbox", "--dry-run"), "the sandbox: would create an A2 host"),
        # diagnose and bench build and install first: they take --dry-run as every task that acts
        (("diagnose", "--sandbox", "--dry-run"), "the sandbox: would create an A2 host"),
        (("bench", "--sandbox", "--dry-run"), "the sandbox: would create an A2 host"),
        (("recipe", "draft", "--ref", "v9.0.0", "--dry-run"), "would fetch the repositories"),
    ],
)
def test_a_dry_run_ends_in_the_frames_one_line_and_writes_nothing(tmp_path, argv, would):
    """Each task says what it would do; the frame says how a dry run ends (_flags.guarded)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # ci writes at the top
    proc = cannbuild(*argv, cwd=tmp_path)
    assert proc.returncode == 0, proc
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"dry run: {would}") and line.endswith("; nothing was changed.")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git"]


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


def test_help_prose_wraps_to_a_narrow_terminal(tmp_path):
    """The description and start-here paragraphs fit 40 columns (a word longer than the
    room, or the usage line, is the only thing that may stand out)."""
    out = cannbuild("--help", cwd=tmp_path, COLUMNS="40").stdout
    prose = out.split("Tasks:", 1)[0].splitlines()[1:]
    assert "emulated" in " ".join(prose) and "Start here" in " ".join(prose)
    assert all(len(line) <= 40 or len(line.split()) == 1 for line in prose), prose


def test_the_task_list_gives_each_summary_whole_as_one_paragraph(tmp_path):
    """Summaries wrap in their docstrings; listed, each is its first paragraph whole (and
    invoke's own listing, which shows a docstring's first line, shows the same)."""
    summaries = {name: spec.summary for name, spec in all_tasks().items()}
    assert any("\n" in spec.doc.split("\n\n", 1)[0] for spec in all_tasks().values())
    assert {name: helpline(task) for name, task in namespace().tasks.items()} == summaries
    out = cannbuild("--list", cwd=tmp_path, COLUMNS="80").stdout
    rows, name = {}, ""
    for line in out.splitlines():
        head = re.match(r"^  (\S+)\s{2,}(\S.*)$", line)
        if head:
            name = head.group(1)
            rows[name] = [head.group(2)]
        elif name and line.startswith("   ") and line.strip():
            rows[name].append(line.strip())
    assert {n: " ".join(words) for n, words in rows.items()} == summaries


def test_a_tasks_help_says_which_options_take_a_value_and_which_repeat(tmp_path):
    rows = cannbuild("help", "setup", cwd=tmp_path).stdout.splitlines()
    for spelled in ("--force", "--with-step"):
        assert any(r.strip().startswith(f"{spelled}=VALUE (repeatable)") for r in rows), spelled
    assert any(r.strip().startswith("-j, --jobs=VALUE ") for r in rows)
    assert any(re.match(r"^\s+--sandbox\s{2,}\S", r) for r in rows)
    assert not any(re.match(r"^\s+--(force|with-step)\s{2,}", r) for r in rows)
    assert list(tmp_path.iterdir()) == []  # help ran nothing


def test_the_lock_files_help_names_where_a_sandbox_run_writes_it(tmp_path):
    """A --sandbox run reads and writes <workspace>/cannbuild.lock (README, Containers), not
    ./cannbuild.lock: the help says both defaults."""
    text = " ".join(cannbuild("help", "lock", cwd=tmp_path).stdout.split())
    assert "(default ./cannbuild.lock; with --sandbox <workspace>/cannbuild.lock)" in text


def test_completion_is_invokes_own_over_cannbuilds_tasks(capsys, monkeypatch):
    """`cannbuild --print-completion-script bash` (README, Set up) and the `--complete`
    the script calls: task names, then a task's own options."""
    import signal

    monkeypatch.setattr(sys, "dont_write_bytecode", sys.dont_write_bytecode)
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}

    def run(*args):
        code = CannbuildProgram(Path.cwd()).run(["cannbuild", *args], exit=False)
        return code, capsys.readouterr()

    try:
        code, out = run("--print-completion-script", "bash")
        assert code == 0 and "cannbuild --complete --" in out.out
        assert "complete -F _complete_cannbuild -o default cannbuild" in out.out
        code, out = run("--complete", "--", "cannbuild", "bu")
        assert code == 0 and {"build", "bundle", "setup"} <= set(out.out.split())
        code, out = run("--complete", "--", "cannbuild", "plan", "--jo")
        assert code == 0 and "--jobs" in out.out.split() and "--force" not in out.out.split()
        code, out = run("--print-completion-script", "tcsh")
        assert code == 2 and "tcsh" in out.err and "Traceback" not in out.err
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


# the shell's folder removed under it (`rm -rf` of the build folder from another terminal)
_IN_A_REMOVED_FOLDER = """
import os, sys
os.chdir(sys.argv[1])
os.rmdir(sys.argv[1])
from cannbuild.cli import main
main(sys.argv[2:])
"""


@pytest.mark.parametrize(
    "args, code", [(["--help"], 0), (["--version"], 0), (["status"], 2), (["doctor"], 2)]
)
def test_help_and_version_answer_in_a_removed_folder_and_a_task_says_why_it_cannot(
    tmp_path, args, code
):
    from warmcli import python_c

    gone = tmp_path / "gone"
    gone.mkdir()
    proc = python_c(_IN_A_REMOVED_FOLDER, str(gone), *args, timeout=60)
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    if code:
        assert "the current folder no longer exists" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def _fresh_cannbuild(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """A new interpreter (its stdout's encoding is chosen at its start, which a fork of
    the warmed server would not show)."""
    import os

    full = {k: v for k, v in os.environ.items() if not k.startswith("CANNBUILD_")}
    return subprocess.run(
        [sys.executable, "-m", "cannbuild", *args],
        cwd=cwd, env={**full, **env}, capture_output=True, timeout=120,
    )  # fmt: skip


def test_output_under_an_ascii_locale_escapes_what_it_cannot_encode(tmp_path):
    """A locale whose encoding lacks a character cannbuild prints (here ASCII, as
    PYTHONIOENCODING or a Latin-1 locale makes it; a workspace path in another script)
    was a UnicodeEncodeError traceback; it is printed escaped."""
    workspace = tmp_path / "wsé"
    done = _fresh_cannbuild("status", "-w", str(workspace), cwd=tmp_path, PYTHONIOENCODING="ascii")
    out, err = " ".join(done.stdout.decode("ascii").split()), done.stderr.decode("ascii")
    assert done.returncode == 0, err
    assert "Traceback" not in err
    assert f"workspace {tmp_path}/ws\\xe9" in out


def test_a_workspace_path_that_is_not_utf8_is_a_usage_error_naming_it(tmp_path):
    """A folder named in another encoding (bytes Python keeps as surrogates) stopped the
    sandbox's creation with a UnicodeEncodeError traceback; as the default workspace or
    a path flag it is exit 2 naming it, the byte shown escaped."""
    import os

    folder = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.mkdir(folder)
    cwd = Path(os.fsdecode(folder))
    for args in (("plan", "--sandbox"), ("status",), ("status", "-w", str(cwd / "ws"))):
        done = _fresh_cannbuild(*args, cwd=cwd if args[-1] != str(cwd / "ws") else tmp_path)
        err = " ".join(done.stderr.decode("utf-8", "replace").split())
        assert done.returncode == 2, err
        assert "Traceback" not in err
        assert f"{tmp_path}/caf\\xe9" in err and "is not UTF-8 text" in err, err


@pytest.mark.parametrize(
    "key, good",
    [
        ("gitcode.com/cann/", False),  # no scheme: matches no repository URL
        ("gitcode.com", False),
        ("bob:s3cr3t@gitcode.com/", False),
        ("https://gitcode.com/cann/", True),
        ("file:///srv/mirrors/", True),
        ("git@gitcode.com:", True),  # git's scp-like form
    ],
)
def test_a_mirror_key_that_no_url_can_start_with_is_refused_naming_it(key, good, tmp_path):
    """A mirror rule is matched against the start of each repository URL: `gitcode.com/`
    was taken and silently never matched, the fetch going to the origin after all."""
    env = {**clean_env(), "CANNBUILD_MIRRORS": f"{key}=file:///srv/mirror/"}
    proc = cannbuild("fetch", "--sandbox", "--dry-run", cwd=tmp_path, env=env)
    said = " ".join((proc.stdout + proc.stderr).split())
    assert "Traceback" not in said and "s3cr3t" not in said, said
    if good:
        assert "no URL prefix" not in said, said
        return
    assert proc.returncode == 2, said
    assert "CANNBUILD_MIRRORS" in said and "no URL prefix" in said and "https://" in said, said


@pytest.mark.parametrize("given", ["--sandbox=no", "--sandbox=false"])
def test_a_value_given_to_an_on_off_flag_is_said_to_be_the_flags(given, tmp_path):
    """`setup --sandbox=no` was answered "setup takes no argument 'no'", naming a word the
    user never gave as an argument."""
    proc = cannbuild("setup", given, cwd=tmp_path)
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and "Traceback" not in said, said
    assert "--sandbox takes no value" in said and f"'{given}'" in said, said
    assert list(tmp_path.iterdir()) == []
