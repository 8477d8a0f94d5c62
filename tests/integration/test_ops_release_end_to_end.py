"""CANN 9.0.1 on the emulated host from cold, and --ops-release: the operator sources of
another release built on a toolkit the release notes pair them with, refused on one they
do not."""

from conftest import mirror_commit

from cannbuild.sandbox import SandboxSpec, create_sandbox
from cannbuild.sources.lock import read_lock


def test_9_0_1_sets_up_from_cold_and_ops_9_0_1_builds_only_where_published(cli_for, tmp_path):
    cli = cli_for("A2-9.0.1", tmp_path / "cann-9.0.1")
    proc = cli("setup")  # a fresh workspace on the 9.0.1 sandbox, made by this run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = cli.report()
    assert report["validation"]["status"] == "PASS"
    assert report["recipe"]["train"] == "9.0" and report["recipe"]["ops_release"] == "9.0.1"
    lock = read_lock(cli.lock)
    assert (lock.toolkit_version, lock.ops_release) == ("9.0.1", "9.0.1")
    assert {r.name: r.ref for r in lock.repos if ":" not in r.name} == {
        "opbase": "tag v9.0.1",
        "ops-transformer": "tag v9.0.1",
        # the toolkit's host side, at the toolkit's release (the sandbox lays it out)
        "metadef": "tag v9.0.1",
        "runtime": "tag v9.0.1",
        "ge": "tag v9.0.1",
        "asc-devkit": "tag v9.0.1",
        "libboundscheck": "tag v1.1.16",
    }
    doctor = cli("doctor")
    assert "driver 26.0.rc3 is listed for CANN 9.0.1" in doctor.stdout, doctor.stdout

    # ops 9.0.1 on the 9.0.0 toolkit: published by the 9.0.1 note, built from tag v9.0.1; on
    # a sandbox of its own, since its build lays opbase v9.0.1's host side into the toolkit
    # (the shared A3-9.0.0 sandbox's other workspaces lay v9.0.0's, and a build of theirs
    # running beside it found the headers gone between the removal and the new lay-out)
    on_900 = cli_for("A3-9.0.0", tmp_path / "on-9.0.0")
    on_900.sandbox = tmp_path / "sandbox-9.0.0"
    create_sandbox(SandboxSpec(dir=on_900.sandbox, variant="A3", cann="9.0.0"))
    proc = on_900("build", "--ops-release", "9.0.1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lock = read_lock(on_900.lock)
    assert (lock.toolkit_version, lock.ops_release) == ("9.0.0", "9.0.1")
    built = lock.repo("ops-transformer")
    assert built is not None and built.ref == "tag v9.0.1"
    assert built.commit == mirror_commit(on_900.sandbox, "ops-transformer", "v9.0.1")
    assert built.commit != mirror_commit(on_900.sandbox, "ops-transformer", "v9.0.0")
    # the workspace remembers the choice: a bare rerun builds the same sources ...
    proc = on_900("build", "--locked")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # ... and another choice is drift from the lock, saying what it changes
    proc = on_900("build", "--locked", "--ops-release", "9.0.0")
    assert proc.returncode == 6 and "ops release: the lock was made for ops 9.0.1" in proc.stderr
    said = " ".join(proc.stderr.split())
    assert "--ops-release 9.0.0 differs from this workspace's ops release, 9.0.1" in said

    # ops 9.0.1 on the 8.5.0 toolkit: no note pairs them
    on_850 = cli_for("A2-8.5.0", tmp_path / "on-8.5.0")
    proc = on_850("build", "--ops-release", "9.0.1")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--ops-release 9.0.1 is not published for toolkit CANN 8.5.0" in proc.stderr
    assert "recipes/facts/*.toml" in proc.stderr and "9.0.1, 9.0.0, 8.5.2" in proc.stderr
    assert not on_850.lock.exists() and not (on_850.ws / "src").exists()
