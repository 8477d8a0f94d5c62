"""A workspace remembers its target (issue 30): what a build ran for is recorded in
`<workspace>/target.json` and taken by later tasks where no flag, variable or config
says otherwise; a flag that differs wins and says so; a damaged record is exit 2 naming
the file; `--cann-path=<a sandbox's toolkit>` is that sandbox; `status` marks an install
made for another SoC or commit as stale."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from cannbuild.build.stamps import artifact_record, digest, write_stamp
from cannbuild.decoded import to_plain
from cannbuild.errors import UsageError
from cannbuild.housekeeping import workspace_status
from cannbuild.options import resolve_options, sources
from cannbuild.ownership import claim
from cannbuild.sandbox.spec import SandboxInfo
from cannbuild.sources.lock import write_lock
from cannbuild.target import Target, choose, read_target, record, sandbox_of_toolkit, target_file
from cannbuild.tasks._frame import Frame
from cannbuild.ui import print_status
from cannbuild.workspace import Workspace, write_json_atomic

from clirun import cannbuild
from hosttree import a2_host, clean_env
from lockdata import sample_lock

WHEN = "2026-12-02 14:30 UTC"


def given_fields(cli, env, config, spelled=None):
    """The fields the user set and how (what `choose` reads), as the frame has them."""
    return {name: where for name, (where, _) in sources(cli, env, config, spelled).items()}


def sandbox_target(**extra) -> Target:
    values = dict(
        sandbox=True,
        sandbox_variant="A3",
        sandbox_cann="8.5.0",
        built_soc="ascend910_93",
        toolkit_version="8.5.0",
        set_by="cannbuild setup",
        set_at=WHEN,
    )
    values.update(extra)
    return Target(**values)


def owned_workspace(root: Path) -> Path:
    claim(root, "workspace", "--workspace")
    return root


# --- the record ----------------------------------------------------------------------


def test_a_recorded_target_reads_back_and_is_written_only_when_it_changes(tmp_path):
    ws = owned_workspace(tmp_path / "ws")
    assert read_target(ws) is None  # a workspace made before targets were remembered
    assert record(ws, sandbox_target())
    assert read_target(ws) == sandbox_target()
    before = target_file(ws).stat().st_mtime_ns
    # the same target set again by another command keeps the first "set by"
    assert not record(ws, sandbox_target(set_by="cannbuild install", set_at="later"))
    assert target_file(ws).stat().st_mtime_ns == before
    assert read_target(ws).set_by == "cannbuild setup"
    assert record(ws, sandbox_target(soc="ascend910b", built_soc="ascend910b"))
    assert read_target(ws).soc == "ascend910b"


def test_a_folder_cannbuild_does_not_own_gets_no_record(tmp_path):
    theirs = tmp_path / "project"
    theirs.mkdir()
    assert not record(theirs, sandbox_target())
    assert not target_file(theirs).exists()


@pytest.mark.parametrize(
    "content, why",
    [
        (b"{not json", "is not valid JSON"),
        (b"[1, 2]", "Expected `object`, got `array`"),
        (b'{"schema": 2, "sandbox": true}', "schema 2; this cannbuild reads schema 1"),
        (b'{"schema": 1, "sandbox": "yes"}', "Expected `bool`"),
        (b'{"schema": 1, "soc": 42}', "Expected `str | null`"),
        (b"\x00\x01binary", "is not valid JSON"),
    ],
)
def test_a_damaged_record_is_an_error_naming_the_file_never_ignored(tmp_path, content, why):
    ws = owned_workspace(tmp_path / "ws")
    target_file(ws).write_bytes(content)
    with pytest.raises(UsageError) as caught:
        read_target(ws)
    text = caught.value.paragraph()
    assert str(target_file(ws)) in text and why in text, text
    assert "Remove it" in text and "\n" not in text


def test_a_record_that_is_a_fifo_or_too_big_is_refused_without_reading_it(tmp_path):
    ws = owned_workspace(tmp_path / "ws")
    os.mkfifo(target_file(ws))
    with pytest.raises(UsageError, match="not a regular file"):
        read_target(ws)
    target_file(ws).unlink()
    target_file(ws).write_bytes(b" " * (65 * 1024))
    with pytest.raises(UsageError, match="over the 64 KiB"):
        read_target(ws)


# --- precedence: flag > env > config > remembered > default -------------------------


def test_the_record_sits_below_flag_environment_and_config(tmp_path):
    ws = tmp_path / "ws"
    layer = {"soc": "ascend910_93", "ops_release": "9.0.1"}
    cli = {"workspace": str(ws)}

    def soc(cli_soc=None, env_soc=None, config_soc=None):
        flags = dict(cli, **({"soc": cli_soc} if cli_soc else {}))
        env = {"CANNBUILD_SOC": env_soc} if env_soc else {}
        config = {"soc": config_soc} if config_soc else {}
        return resolve_options(flags, env, config, remembered=layer).soc

    assert soc() == "ascend910_93"
    assert soc(config_soc="A2") == "ascend910b"
    assert soc(env_soc="A2", config_soc="A3") == "ascend910b"
    assert soc(cli_soc="A2", env_soc="A3", config_soc="A3") == "ascend910b"
    assert resolve_options(cli, {}, {}, remembered=layer).ops_release == "9.0.1"
    assert resolve_options(cli, {}, {}).soc is None  # the default: detected


# Each row drops the highest source left, so each source is seen beating every one
# below it: any two swapped in the frame give another value in some row.
PRECEDENCE = [
    # flag,   env,     config,  remembered, what the run takes
    ("9.1.0", "9.0.1", "9.0.0", "8.5.0", "9.1.0"),
    (None, "9.0.1", "9.0.0", "8.5.0", "9.0.1"),
    (None, None, "9.0.0", "8.5.0", "9.0.0"),
    (None, None, None, "8.5.0", "8.5.0"),
    (None, None, None, None, None),  # the default: the toolkit's own release
]


@pytest.mark.parametrize("flag, env, config, remembered, taken", PRECEDENCE)
def test_the_frame_takes_flag_then_env_then_config_then_remembered_then_default(
    tmp_path, flag, env, config, remembered, taken
):
    ws = owned_workspace(tmp_path / "ws")
    if remembered:
        record(ws, Target(ops_release=remembered, built_soc="ascend910b", set_at=WHEN))
    frame = Frame(
        {"ops_release": config} if config else {},
        {"workspace": str(ws), "ops_release": flag},
        {"ops_release": "--ops-release"},
        "cannbuild doctor",
        env={"CANNBUILD_OPS_RELEASE": env} if env else {},
    )
    assert frame.target().ops_release == taken


def test_a_remembered_sandbox_points_the_run_at_it_as_the_flag_does(tmp_path):
    ws = tmp_path / "ws"
    given = given_fields({"workspace": str(ws)}, {}, {})
    plain = resolve_options({"workspace": str(ws)}, {}, {})
    choice = choose(sandbox_target(), given, plain, builds=False)
    assert choice.notes == ()
    options = resolve_options({"workspace": str(ws)}, {}, {}, remembered=choice.layer)
    flagged = resolve_options(
        {"workspace": str(ws), "sandbox": True, "sandbox_variant": "A3", "sandbox_cann": "8.5.0"},
        {},
        {},
    )
    assert options == flagged
    assert options.lock_file == ws / "cannbuild.lock"  # a sandbox lock stays in the workspace
    assert options.sysroot == ws / "sandbox" / "sysroot"


def test_a_differing_soc_flag_wins_and_says_what_it_changes(tmp_path):
    cli = {"workspace": str(tmp_path / "ws"), "soc": "A2"}
    spelled = {"soc": "--soc"}
    given = given_fields(cli, {}, {}, spelled)
    plain = resolve_options(cli, {}, {}, spelled)
    for builds, verb in ((True, "building for"), (False, "this run uses")):
        choice = choose(sandbox_target(), given, plain, builds)
        assert choice.notes == (
            "--soc ascend910b differs from this workspace's ascend910_93 "
            f"(set by cannbuild setup on {WHEN}): {verb} ascend910b",
        )
        assert "soc" not in choice.layer and choice.layer["sandbox"] is True
    same = resolve_options(dict(cli, soc="A3"), {}, {}, spelled)
    assert choose(sandbox_target(), given, same, True).notes == ()


def test_a_differing_ops_release_from_the_environment_names_the_variable(tmp_path):
    cli = {"workspace": str(tmp_path / "ws")}
    env = {"CANNBUILD_OPS_RELEASE": "9.0.1"}
    given = given_fields(cli, env, {})
    plain = resolve_options(cli, env, {})
    (note,) = choose(sandbox_target(), given, plain, True).notes
    assert note.startswith(
        "environment variable CANNBUILD_OPS_RELEASE 9.0.1 differs from this workspace's "
        "ops release, the toolkit's own (8.5.0) (set by cannbuild setup on"
    )


def test_the_repos_a_run_built_are_remembered_and_another_selection_says_so(tmp_path):
    """`setup --repos a,b` then a bare `validate` or `setup` works on a,b; --repos c wins
    and says what it changes."""
    remembered = sandbox_target(repos=("ops-transformer", "ops-math"))
    cli = {"workspace": str(tmp_path / "ws")}
    choice = choose(remembered, given_fields(cli, {}, {}), resolve_options(cli, {}, {}), True)
    assert choice.layer["repos"] == ("ops-transformer", "ops-math") and choice.notes == ()
    layered = resolve_options(cli, {}, {}, remembered=choice.layer)
    assert layered.repos == ("ops-transformer", "ops-math")
    cli["repos"] = "ops-math"
    plain = resolve_options(cli, {}, {}, {"repos": "--repos"})
    (note,) = choose(remembered, given_fields(cli, {}, {}, {"repos": "--repos"}), plain, True).notes
    assert note.startswith(
        "--repos ops-math differs from this workspace's repos, ops-transformer,ops-math "
        "(set by cannbuild setup on"
    )
    assert note.endswith(": building for ops-math")
    # a record from before cannbuild remembered repos reads as the default
    assert Target(sandbox=True).repos is None and "repos" not in Target(sandbox=True).layer()


def test_naming_another_host_uses_nothing_of_the_record(tmp_path):
    cli = {"workspace": str(tmp_path / "ws"), "cann_path": "/usr/local/Ascend/cann"}
    spelled = {"cann_path": "--cann-path"}
    given = given_fields(cli, {}, {}, spelled)
    plain = resolve_options(cli, {}, {}, spelled)
    choice = choose(sandbox_target(soc="ascend910_93"), given, plain, True)
    assert choice.layer == {}
    (note,) = choice.notes
    assert note.startswith(
        "--cann-path /usr/local/Ascend/cann differs from this workspace's target, the sandbox "
        "(A3, CANN 8.5.0)"
    )
    assert "nothing else the workspace remembers is used" in note
    # the real host remembered, --sandbox asked: another host too
    real = Target(cann_path="/usr/local/Ascend/cann", soc="ascend910b", built_soc="ascend910b")
    cli = {"workspace": str(tmp_path / "ws"), "sandbox": True}
    given = given_fields(cli, {}, {}, {"sandbox": "--sandbox"})
    choice = choose(real, given, resolve_options(cli, {}, {}), False)
    assert choice.layer == {} and choice.notes[0].startswith("--sandbox differs")


def test_another_sandbox_kind_asked_of_the_same_folder_says_so(tmp_path):
    cli = {"workspace": str(tmp_path / "ws"), "sandbox_variant": "A2"}
    given = given_fields(cli, {}, {}, {"sandbox_variant": "--variant"})
    (note,) = choose(sandbox_target(), given, resolve_options(cli, {}, {}), True).notes
    assert note.startswith("--variant A2 differs from this workspace's target, the sandbox (A3,")


# --- --cann-path=<a sandbox's toolkit> ------------------------------------------------


def fake_sandbox(folder: Path) -> Path:
    """The parts of a sandbox its toolkit is recognised by: sandbox.json at the top, the
    emulated runtime's device table in the toolkit (a real small tree)."""
    sysroot = folder / "sysroot"
    toolkit = sysroot / "usr/local/Ascend/cann-8.5.0"
    (toolkit / "x86_64-linux" / "conf").mkdir(parents=True)
    (toolkit / "x86_64-linux" / "conf" / "sandbox_npu.ini").write_text("devices=8\n")
    (toolkit / "conf").symlink_to("x86_64-linux/conf")
    info = SandboxInfo(
        dir=folder,
        variant="A2",
        cann="8.5.0",
        key="k",
        sysroot=sysroot,
        toolkit=toolkit,
        set_env=toolkit / "set_env.sh",
        mirror=folder / "mirror",
        upstream="https://gitcode.com/",
        soc="ascend910b",
        chip="Ascend910B3",
    )
    write_json_atomic(folder / "sandbox.json", to_plain(info))
    return toolkit


def test_a_sandbox_toolkit_is_found_as_its_sandbox(tmp_path):
    toolkit = fake_sandbox(tmp_path / "sb")
    info = sandbox_of_toolkit(toolkit)
    assert info is not None and info.dir == tmp_path / "sb" and info.variant == "A2"
    assert sandbox_of_toolkit(tmp_path / "sb" / "sysroot/usr/local/Ascend") is not None
    assert sandbox_of_toolkit(tmp_path / "elsewhere") is None


def test_a_marked_toolkit_without_its_sandbox_is_an_error_naming_the_mark(tmp_path):
    toolkit = fake_sandbox(tmp_path / "sb")
    copy = tmp_path / "copied"
    copy.mkdir()
    (toolkit / "x86_64-linux").rename(copy / "x86_64-linux")
    (copy / "conf").symlink_to("x86_64-linux/conf")
    with pytest.raises(UsageError, match="conf/sandbox_npu.ini"):
        sandbox_of_toolkit(copy)


# --- status: stale installs ------------------------------------------------------------


def installed_for(root: Path, soc: str, commit: str = "b" * 40) -> Workspace:
    """A workspace as `install --soc <soc>` leaves it (real files and stamps)."""
    claim(root, "workspace", "--workspace")
    ws = Workspace(root=root)
    package = ws.src / "ops-transformer" / "build_out" / "cann-ops-transformer-custom.run"
    package.parent.mkdir(parents=True)
    package.write_bytes(b"#!/bin/sh\n")
    set_env = ws.opp / "vendors" / "custom_transformer" / "bin" / "set_env.bash"
    set_env.parent.mkdir(parents=True)
    set_env.write_text("export ASCEND_CUSTOM_OPP_PATH=...\n")
    run = "20261202-143000-4242"
    build = artifact_record(package)
    write_stamp(
        ws, "ops-transformer-build", run_id=run, input_hash="h1",
        inputs={"source": {"commit": commit}, "upstream": {}, "soc": soc,
                "toolkit": {"version": "9.0.0"}},
        artifacts=[build], requires=[], duration_s=1.0, log=ws.logs / run / "b.log",
    )  # fmt: skip
    write_stamp(
        ws, "ops-transformer-install", run_id=run, input_hash="h2",
        inputs={"upstream": {"ops-transformer-build": digest([build["sha256"]])}, "soc": soc,
                "toolkit": {"version": "9.0.0"}},
        artifacts=[], requires=[str(set_env)], duration_s=1.0, log=ws.logs / run / "i.log",
    )  # fmt: skip
    write_json_atomic(
        ws.stamps / "validate.json",
        {"key": "k", "run_id": run, "validation": {"status": "PASS", "reason": ""}},
    )
    return ws


def status_text(data) -> str:
    out = io.StringIO()
    print_status(data, out)
    return out.getvalue()


def test_an_install_for_another_soc_than_the_target_is_stale_with_its_validation(tmp_path):
    ws = installed_for(tmp_path / "ws", "ascend910b")
    lock = tmp_path / "cannbuild.lock"
    write_lock(lock, sample_lock("9.0.0"))  # pins ops-transformer at b*40, for A3
    record(ws.root, sandbox_target(soc="ascend910_93", toolkit_version="9.0.0"))
    data = workspace_status(ws.root, lock, target=read_target(ws.root))
    assert data["install"]["stale"] == [
        "built for ascend910b; this workspace now targets ascend910_93"
    ]
    assert data["installed"][0]["stale"] == data["install"]["stale"]
    assert data["validation"]["stale"].startswith("it judged the installed package, which is stale")
    assert data["target"]["soc"] == "ascend910_93" and data["target"]["set_by"] == "cannbuild setup"
    assert json.loads(json.dumps(data)) == data  # plain data for --json
    text = status_text(data)
    assert (
        "target: the sandbox (A3, CANN 8.5.0), --soc=ascend910_93 (set by cannbuild setup" in text
    )
    assert "installed: " in text and "(stale)" in text
    assert "stale: built for ascend910b; this workspace now targets ascend910_93" in text
    assert "validation: PASS" in text and "stale: it judged the installed package" in text
    # the same install against an A2 target is current
    current = workspace_status(ws.root, lock, soc="ascend910b")
    assert current["install"]["stale"] == [] and "stale" not in current["validation"]
    assert "(stale)" not in status_text(current)


def test_an_install_from_commits_the_lock_no_longer_pins_is_stale(tmp_path):
    ws = installed_for(tmp_path / "ws", "ascend910_93", commit="e" * 40)
    lock = tmp_path / "cannbuild.lock"
    write_lock(lock, sample_lock("9.0.0"))
    data = workspace_status(ws.root, lock)  # no record: the lock's SoC is the target's
    assert data["target"] is None
    assert data["install"]["stale"] == [
        f"ops-transformer-build built from {'e' * 12}; the lock pins ops-transformer at {'b' * 12}"
    ]


# --- through the command line -----------------------------------------------------------


def test_doctor_takes_the_remembered_host_and_a_differing_soc_says_so(tree, tmp_path):
    a2_host(tree)
    ws = owned_workspace(tmp_path / "ws")
    record(
        ws,
        Target(
            sysroot=str(tree.root),
            soc="ascend910b",
            built_soc="ascend910b",
            set_by="cannbuild setup",
            set_at=WHEN,
        ),
    )
    bare = cannbuild("doctor", "--json", "-w", str(ws), cwd=tmp_path, env=clean_env())
    assert bare.returncode in (0, 1), bare.stderr
    host = json.loads(bare.stdout)["host"]
    assert host["sysroot"] == str(tree.root) and host["soc"] == "ascend910b"
    assert "differs" not in bare.stderr
    other = cannbuild(
        "doctor", "--json", "-w", str(ws), "--soc", "A3", cwd=tmp_path, env=clean_env()
    )
    assert json.loads(other.stdout)["host"]["soc"] == "ascend910_93"
    assert (
        "--soc ascend910_93 differs from this workspace's ascend910b (set by cannbuild setup "
        f"on {WHEN}): this run uses ascend910_93"
    ) in other.stderr
    assert read_target(ws).soc == "ascend910b"  # doctor reads; it does not record


def test_container_run_takes_the_remembered_host_as_its_flag_would(tree, tmp_path):
    """A bare `container-run` after a setup prints the run line of the host the
    workspace remembers (here a --sysroot, after `setup --sandbox` the sandbox), as
    `container-run --sysroot` does; it read this machine before and found no image."""
    a2_host(tree, "9.0.0")
    project = tmp_path / "project"
    project.mkdir()
    record(
        owned_workspace(project / ".cannbuild"),
        Target(
            sysroot=str(tree.root), built_soc="ascend910b", set_by="cannbuild setup", set_at=WHEN
        ),
    )
    bare = cannbuild("container-run", cwd=project, env=clean_env())
    assert bare.returncode == 0, bare.stderr
    line = bare.stdout.strip()
    assert line.startswith("docker run --rm -it ")
    assert line.endswith(" quay.io/ascend/cann:9.0.0-910b-ubuntu22.04-py3.11 bash")
    flagged = cannbuild("container-run", "--sysroot", str(tree.root), cwd=project, env=clean_env())
    assert flagged.stdout == bare.stdout and "differs" not in bare.stderr


@pytest.mark.parametrize("task", ["doctor", "status", "plan"])
def test_a_damaged_record_is_exit_2_naming_the_file(task, tmp_path):
    ws = owned_workspace(tmp_path / "ws")
    target_file(ws).write_text('{"schema": 1, "sandbox": "yes"}\n')
    proc = cannbuild(task, "-w", str(ws), cwd=tmp_path, env=clean_env())
    assert proc.returncode == 2, proc.stderr
    assert str(target_file(ws)) in proc.stderr and "Traceback" not in proc.stderr
    assert "Remove it" in proc.stderr
