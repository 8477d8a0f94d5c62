"""--ops-release: the option's grammar (flag > env > config, no letter, listed in help), the
recipe and refs it picks, its refusal where no release note pairs it with the toolkit, and
the lock and container that carry it."""

from pathlib import Path

import pytest
from msgspec.structs import replace

from cannbuild.build.requirements import doctor_report
from cannbuild.build.session import locking_session
from cannbuild.container.context import ContainerSpec, render_context
from cannbuild.errors import UsageError
from cannbuild.options import resolve_options
from cannbuild.recipes import render_ref
from cannbuild.sources.lock import Wanted, drift, read_lock, write_lock
from cannbuild.tasks import all_tasks

from clirun import cannbuild
from hosttree import clean_env
from lockdata import sample_lock


def test_flag_beats_env_beats_config_and_nothing_means_the_toolkits_own():
    env = {"CANNBUILD_OPS_RELEASE": "9.0.1"}
    config = {"ops_release": "9.1.0"}
    assert resolve_options({"ops_release": "9.0.0"}, env, config).ops_release == "9.0.0"
    assert resolve_options({}, env, config).ops_release == "9.0.1"
    assert resolve_options({}, {}, config).ops_release == "9.1.0"
    assert resolve_options({}, {}, {}).ops_release is None


@pytest.mark.parametrize(
    "cli, env, named",
    [
        ({"ops_release": "nine"}, {}, "--ops-release 'nine'"),
        ({}, {"CANNBUILD_OPS_RELEASE": "9.0"}, "environment variable CANNBUILD_OPS_RELEASE '9.0'"),
        ({"ops_release": "9.0.1\n"}, {}, "control character"),
    ],
)
def test_a_value_that_is_no_release_is_named_where_it_came_from(cli, env, named):
    with pytest.raises(UsageError) as err:
        resolve_options(cli, env, {})
    assert named in err.value.paragraph()


def test_every_task_that_builds_locks_or_plans_takes_it_without_a_letter():
    tasks = all_tasks()
    # doctor too: its recipe rows are those of the recipe the ops release picks
    for name in (
        "plan",
        "fetch",
        "lock",
        "build",
        "install",
        "setup",
        "validate",
        "bench",
        "doctor",
    ):
        option = next((o for o in tasks[name].options if o.name == "ops_release"), None)
        assert option is not None, name
        assert option.short is None and "CANNBUILD_OPS_RELEASE" in option.help


def test_help_lists_it(tmp_path):
    proc = cannbuild("lock", "--help", cwd=tmp_path)
    assert proc.returncode == 0 and "--ops-release" in proc.stdout


def session_for(tmp_path: Path, cann: str, ops_release=None):
    options = resolve_options(
        {"soc": "A3", "workspace": str(tmp_path / "ws"), "ops_release": ops_release}, {}, {}
    )
    return locking_session(options, {}, tmp_path, cann)


def tags(session):
    return {r.name: render_ref(r, session.values)["tag"] for r in session.recipe.repos}


def test_the_ops_release_picks_the_recipe_and_renders_the_tags(tmp_path):
    own = session_for(tmp_path, "9.0.0")
    assert tags(own) == {"opbase": "v9.0.0", "ops-transformer": "v9.0.0"}
    assert own.source_request().ops_release == "9.0.0"
    other = session_for(tmp_path, "9.0.0", "9.0.1")
    assert other.recipe.train == "9.0"
    assert tags(other) == {"opbase": "v9.0.1", "ops-transformer": "v9.0.1"}
    # cann.release stays the toolkit's: user recipes may use it
    assert other.values["cann"]["release"] == "9.0.0" and other.values["ops_release"] == "9.0.1"
    assert other.source_request().ops_release == "9.0.1"
    # 8.5.2 is a toolkit of the 8.5 train; ops 9.0.0 on it is published: the 9.0 recipe builds
    on_852 = session_for(tmp_path, "8.5.2", "9.0.0")
    assert on_852.recipe.train == "9.0" and tags(on_852)["ops-transformer"] == "v9.0.0"


def test_ops_9_1_on_a_9_0_toolkit_takes_the_9_1_recipe_at_the_manifest_branch(tmp_path):
    # the 9.1.0 note publishes ops 9.1.0 for toolkits 9.1.0, 9.0.0 and 8.5.2
    session = session_for(tmp_path, "9.0.0", "9.1.0")
    assert session.recipe.train == "9.1"
    branches = {r.name: render_ref(r, session.values)["branch"] for r in session.recipe.repos}
    assert branches == {"opbase": "9.1.0", "ops-transformer": "9.1.0"}
    assert session.values["cann"]["release"] == "9.0.0"


def test_no_recipe_for_the_ops_train_names_the_flag(tmp_path):
    with pytest.raises(UsageError) as err:
        session_for(tmp_path, "9.2.0-beta.1", "9.2.0-beta.1")
    text = err.value.paragraph()
    assert "there is no recipe for CANN 9.2 (--ops-release 9.2.0-beta.1)" in text


def test_an_unpublished_pairing_is_exit_2_before_anything_is_written(tmp_path):
    proc = cannbuild(
        "lock", "--cann", "8.5.0", "--soc", "A2", "--ops-release", "9.0.1", cwd=tmp_path
    )
    assert proc.returncode == 2, proc
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert "--ops-release 9.0.1 is not published for toolkit CANN 8.5.0" in proc.stderr
    assert "recipes/facts/*.toml" in proc.stderr and "9.0.1, 9.0.0, 8.5.2" in proc.stderr
    assert not (tmp_path / ".cannbuild").exists() and not (tmp_path / "cannbuild.lock").exists()


def test_the_lock_records_it_and_an_older_lock_still_reads(tmp_path):
    path = tmp_path / "cannbuild.lock"
    lock = replace(sample_lock("9.0.0"), ops_release="9.0.1")
    write_lock(path, lock)
    assert 'ops_release = "9.0.1"' in path.read_text()
    assert "version = 3" in path.read_text()  # a key a version-2 reader does not know
    assert replace(read_lock(path), version=2) == lock and lock.other_ops_release
    old = sample_lock("9.0.0")  # written before cannbuild recorded it: no key
    write_lock(path, old)
    assert "ops_release" not in path.read_text()
    assert read_lock(path).ops_release == "" and not old.other_ops_release


def test_drift_names_another_ops_release_but_not_an_older_locks_silence():
    wanted = Wanted(
        recipe="cann-9.0",
        toolkit_version="9.0.0",
        soc="ascend910_93",
        repos=(
            ("opbase", "https://gitcode.com/cann/opbase.git", "tag v9.0.0"),
            ("ops-transformer", "https://gitcode.com/cann/ops-transformer.git", "tag v9.0.0"),
        ),
        archives=(),
        ops_release="9.0.0",
    )
    lock = replace(sample_lock("9.0.0"), ops_release="9.0.1")
    problems = drift(lock, wanted)
    assert any("the lock was made for ops 9.0.1, this run builds 9.0.0" in p for p in problems)
    assert drift(sample_lock("9.0.0"), wanted) == []


def test_a_container_from_such_a_lock_passes_it_to_setup(tmp_path):
    lock = replace(sample_lock("9.0.0"), ops_release="9.0.1")
    path = tmp_path / "cannbuild.lock"
    write_lock(path, lock)
    out = tmp_path / "ctx"
    render_context(ContainerSpec(variant="A3", cann="9.0.0"), lock, path, out)
    assert "--ops-release 9.0.1" in (out / "Dockerfile").read_text()
    render_context(ContainerSpec(variant="A3", cann="9.0.0"), sample_lock("9.0.0"), path, out)
    assert "--ops-release" not in (out / "Dockerfile").read_text()


def test_doctor_judges_the_recipe_an_ops_release_from_the_environment_would_use(tree):
    """CANNBUILD_OPS_RELEASE reaches doctor's recipe rows as it reaches setup's."""
    tree.toolkit_cann("9.0.0")
    tree.pci("d802", 8)
    tree.driver()
    env = {"CANNBUILD_OPS_RELEASE": "9.0.1"}
    cli = {"sysroot": str(tree.root), "workspace": str(tree.root.parent / "ws")}
    rows = {
        c.id: c
        for c in doctor_report(
            resolve_options(cli, env, {}), clean_env(), tree.root, imports=False
        ).checks
    }
    assert rows["recipe"].status == "pass" and "ops release 9.0.1" in rows["recipe"].detail
    env = {"CANNBUILD_OPS_RELEASE": "9.2.0-beta.1"}
    rows = {
        c.id: c
        for c in doctor_report(
            resolve_options(cli, env, {}), clean_env(), tree.root, imports=False
        ).checks
    }
    assert rows["recipe"].status == "warn"
    assert (
        "--ops-release 9.2.0-beta.1 is not published for toolkit CANN 9.0.0"
        in rows["recipe"].detail
    )
