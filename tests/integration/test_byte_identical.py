"""Reproducible means byte-identical: one lock, two fresh workspaces, the same .run files."""

from __future__ import annotations

import hashlib


def packages(cli) -> dict:
    found = sorted(cli.ws.glob("src/*/build_out/*.run"))
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in found}


def test_two_fresh_workspaces_build_byte_identical_packages_from_one_lock(cli_for, tmp_path):
    first = cli_for("A2-8.5.0", tmp_path / "a")
    # each compiles for itself: the suite's ccache (paths under its base_dir hashed
    # relative) would hand the second runner the first one's objects
    assert first("install", env=first.env(CCACHE_DISABLE="1")).returncode == 0
    # another path, another length: a package embedding its workspace would differ
    second = cli_for("A2-8.5.0", tmp_path / "runner-number-two")
    proc = second(
        "install", "--locked", "--lock-file", str(first.lock), env=second.env(CCACHE_DISABLE="1")
    )
    assert proc.returncode == 0, proc.stderr
    made = packages(first)
    assert len(made) == 2 and made == packages(second)
    for cli in (first, second):
        artifacts = cli.report()["artifacts"]
        assert {a["sha256"] for a in artifacts} == set(made.values())
        assert all(a["reproducible"] and a["varies"] == [] for a in artifacts), artifacts
    # without a remote the compile cache stays out of the builds
    log = (second.ws / "logs" / "latest" / "ops-transformer-build.log").read_text()
    assert "--ccache" not in log.splitlines()[1] and "# env: CCACHE_" not in log
    assert "SOURCE_DATE_EPOCH=" in log
    assert second.report()["cache"]["status"] == "off"
