"""A CANN train added by data alone, end to end: in a folder holding only the files
README "Adding a train" lists (tests/train92.py: the recipe, the release's facts, what
the sandbox emulates of it), `cannbuild setup --sandbox --cann 9.2.0` makes that host,
locks the stand-ins at branch 9.2.0, builds, installs and validates them."""

from __future__ import annotations

from conftest import Cli, mirror_commit
from train92 import DRIVER, RELEASE, STANDINS, write_train_92

from cannbuild.sources.lock import read_lock


def test_setup_on_a_sandbox_release_added_as_data_builds_installs_and_validates(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    write_train_92(folder)
    cli = Cli(folder, tmp_path / "sandbox", "A3", RELEASE)
    proc = cli("setup", timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = cli.report()
    assert report["validation"]["status"] == "PASS", report["validation"]
    assert report["recipe"]["train"] == "9.2" and report["recipe"]["ops_release"] == RELEASE
    lock = read_lock(cli.lock)
    assert (lock.toolkit_version, lock.ops_release) == (RELEASE, RELEASE)
    refs = {r.name: r.ref for r in lock.repos if ":" not in r.name}
    assert refs["opbase"] == refs["ops-transformer"] == f"branch {RELEASE}", refs
    built = lock.repo("ops-transformer")
    assert built is not None
    assert built.commit == mirror_commit(cli.sandbox, "ops-transformer", RELEASE)
    assert built.commit != mirror_commit(cli.sandbox, "ops-transformer", "9.1.0")
    doctor = cli("doctor")
    assert f"driver {DRIVER} is listed for CANN {RELEASE}" in doctor.stdout, doctor.stdout

    # The train whose sandbox data has no ops-transformer commit on branch 9.2.0: on the
    # sandbox made from it, the recipe's branch is named with the data, before any fetch.
    lacking = tmp_path / "lacking"
    lacking.mkdir()
    write_train_92(lacking, branched=[r for r in STANDINS if r != "ops-transformer"])
    plan = Cli(lacking, tmp_path / "sandbox-2", "A3", RELEASE)("plan", timeout=1200)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    said = " ".join(plan.stderr.split())
    assert "9.2.toml [repos.ops-transformer] branch = '{{ ops_release }}'" in said, said
    assert f'has branches = ["{RELEASE}"]' in said and "Traceback" not in plan.stderr
    assert not (lacking / ".cannbuild" / "src").exists()
