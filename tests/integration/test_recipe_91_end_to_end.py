"""CANN 9.1 through the shipped recipe on the emulated A3 host: locked online (branch 9.1.0,
the cann/cmake and ops-tensor pins, the cann/cmake archives), then built and installed from
nothing but the bundle in a fresh folder with every network route dead; a 9.1 release
upstream has no branch for yet stops at fetch, naming it.

No validation here: the 9.1 build.sh stamps each output line with a `date` process
(cannmirror/ops-transformer@9.1.0:build.sh:2029) and the FlashAttention examples print every
result value (3 x 36864 lines), so `--run_example` alone takes 3-4 minutes on 2 cores.  The
checks it would run are the 9.0 ones, which test_pipeline.py runs to PASS."""

import json
import os
import subprocess

from conftest import Cli

from cannbuild.sandbox import SandboxSpec, create_sandbox

DEAD_NETWORK = "file:///nonexistent-network/"
# every upstream host the 9.1 build or cannbuild could reach, sent nowhere
MIRRORS = """\
cannbuild:
  mirrors:
    "https://gitcode.com/": "https://mirror.invalid/gitcode/"
    "https://cann-3rd.obs.cn-north-4.myhuaweicloud.com/": "https://mirror.invalid/obs/"
"""


def test_a_9_1_bundle_builds_and_installs_in_a_fresh_folder_with_no_network(cli_for, tmp_path):
    online = cli_for("A3-9.1.0", tmp_path / "online")
    # a sandbox of its own: its mirror goes away below, which the shared one's users
    # (other xdist workers) must not see
    made = create_sandbox(SandboxSpec(dir=tmp_path / "sandbox", variant="A3", cann="9.1.0"))
    online.sandbox = made.info.dir  # leased while `made` lives (the test's end)
    proc = online("lock")
    assert proc.returncode == 0, proc.stderr
    lock = online.lock.read_text()
    assert 'ref = "branch 9.1.0"' in lock and 'recipe = "cann-9.1"' in lock
    for pinned in ("third_party/cann-cmake", "third_party/ops-tensor", "third_party/opbase"):
        assert f'name = "ops-transformer:{pinned}"' in lock, pinned
    assert 'ref = "tag master-026, pinned by cmake/fetch_cann_cmake.cmake' in lock
    for archive in ("json-3.11.3", "eigen-5.0.0", "protobuf-25.1", "makeself-fetch"):
        assert f'name = "{archive}"' in lock, archive
    bundle = tmp_path / "b.tar"
    assert online("bundle", str(bundle), sandbox=False).returncode == 0

    air = Cli(tmp_path / "air", online.sandbox, "A3", "9.1.0")
    air.cwd.mkdir()
    (air.cwd / "invoke.yaml").write_text(MIRRORS)
    env = air.env(CANNBUILD_SANDBOX_NETWORK=DEAD_NETWORK)
    mirror = online.sandbox / "mirror"
    away = online.sandbox / "mirror.unreachable"
    os.rename(mirror, away)  # git, cannbuild's downloads and the build's own: all gone
    try:
        proc = air("install", "--offline", "--bundle", str(bundle), env=env)
        plan = json.loads(air("plan", "--json", env=env).stdout)
    finally:
        os.rename(away, mirror)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (air.ws / "opp/vendors/custom_transformer/op_api/lib/libcust_opapi.so").is_file()
    assert air.lock.read_text() == online.lock.read_text()
    ot = air.ws / "src/ops-transformer"
    log = (air.ws / "logs/latest/ops-transformer-build.log").read_text()
    # cann/cmake and ops-tensor from the copies cannbuild placed; ops-tensor's own fetch failed
    assert (
        f"cann-cmake master-026 (cannbuild sandbox stand-in) at {ot}/third_party/cann-cmake" in log
    )
    assert "Git fetch failed (network unavailable?)" in log
    # nothing was fetched: a copy in a download folder was used only after its hash matched
    assert "Using src=" not in log and "Downloading" not in log
    assert (ot / "third_party/makeself/makeself.sh").is_file()  # unpacked for the custom package
    # plan read the same sources back from the lock: nothing to run
    assert {s["name"]: s["status"] for s in plan["steps"]} == {
        "opbase-build": "optional",
        "ops-transformer-build": "up to date",
        "ops-transformer-install": "up to date",
    }


def test_a_9_1_release_without_an_upstream_branch_stops_at_fetch_naming_it(cli_for, tmp_path):
    cli = cli_for("A3-9.1.0")
    # the 9.1.1 note pairs ops 9.1.1 with every 9.1 toolkit, but neither repository has a ref
    proc = cli("lock", "--ops-release", "9.1.1")
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr
    said = " ".join(proc.stderr.split())
    assert "branch 9.1.1 is not in https://gitcode.com/cann/" in said
    assert "the repository has no branch of that name" in said and "git ls-remote" in said
    assert not cli.lock.exists()
    # the sandbox's upstream really has no such ref, and has the 9.1.0 branch
    heads = subprocess.run(
        ["git", "ls-remote", "--heads", str(cli.sandbox / "mirror/cann/ops-transformer.git")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "refs/heads/9.1.0" in heads and "refs/heads/9.1.1" not in heads
