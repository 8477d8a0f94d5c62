"""The stand-in ops-math, ops-nn and ops-cv end to end on the emulated host (issue 27 items
4-5): each builds its package with its own getopts build.sh against the toolkit's opbase
(v8.5.0) or at its own opbase (and, from 9.1, cann/cmake and ops-tensor) pins, installs it
into vendors/<vendor>_math|_nn|_cv, and is validated by its numeric check through the aclnn C
API and by its own example; a kernel built wrong fails its check, named in the report.
(test_multirepo_sandbox.py runs all four repositories together.)"""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

from cannbuild.host.toolkit import host_arch

CHECKS = {
    "ops-math": ("ops-math.segsum", "aclnnExpSegsum"),
    "ops-nn": ("ops-nn.swi_glu", "aclnnSwiGlu"),
    "ops-cv": ("ops-cv.upsample_bilinear2d", "aclnnUpsampleBilinear2d"),
}


def subject(checkout: Path) -> str:
    """The subject of the commit a checkout's HEAD is at (the stand-in's own history)."""
    return subprocess.run(
        ["git", "log", "-1", "--format=%s"],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def checks_of(entry: dict) -> dict:
    return {c["id"]: c for c in entry["checks"]}


def test_the_9_1_siblings_build_at_their_own_pins_and_pass_their_checks_and_examples(cli_for):
    cli = cli_for("A3-9.1.0")
    proc = cli("setup", "--repos", "ops-math,ops-nn,ops-cv", timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    validation = cli.report()["validation"]
    assert validation["status"] == "PASS", validation["reason"]
    judged = {r["repo"]: r for r in validation["repos"]}
    assert list(judged) == ["ops-math", "ops-nn", "ops-cv"]
    for repo, (name, api) in CHECKS.items():
        entry = judged[repo]
        assert entry["status"] == "PASS" and entry["check"] == name, entry["reason"]
        checks = checks_of(entry)
        assert checks["capi"]["message"].startswith(f"6/6 cases PASS through {api}")
        assert {c["dtype"] for c in entry["cases"]} == {"fp32", "fp16", "bf16"}
        assert all(c["status"] == "PASS" and c["precision"] for c in entry["cases"])
        # 9.1 compiles the example against every ASCEND_CUSTOM_OPP_PATH entry: this repo's first
        (run,) = checks["example"]["examples"]
        assert checks["example"]["status"] == "PASS" and run["judged"] == "values", run
    # ops-nn's build.sh shows an example's last 10 lines only
    assert judged["ops-nn"]["checks"][2]["examples"][0]["values"] == 10
    ws = cli.ws
    # three opbase pins, none ops-transformer's; two cann/cmake tags; ops-tensor for ops-nn only
    assert subject(ws / "src/ops-math/third_party/opbase") == "rename the tiling files"
    assert subject(ws / "src/ops-cv/third_party/opbase") == "rename the tiling files"
    assert subject(ws / "src/ops-nn/third_party/opbase") == "error codes EZ0035 and EZ0036"
    # the cann/cmake each build took (its prepare.cmake names its tag), from third_party/
    for repo, tag in (
        ("ops-math", "master-016"),
        ("ops-nn", "master-015"),
        ("ops-cv", "master-016"),
    ):
        # logs/<run>/ (and logs/latest, a link to it)
        logs = " ".join(log.read_text() for log in ws.glob(f"logs/*/{repo}-build.log"))
        seen = f"cann-cmake {tag} (cannbuild sandbox stand-in) at {ws}/src/{repo}/third_party/cann-cmake"
        assert seen in logs, repo
    assert (ws / "src/ops-nn/third_party/ops-tensor").is_dir()
    assert not (ws / "src/ops-math/third_party/ops-tensor").exists()
    # each repo's .run name at 9.1, installed in its own vendor folder
    arch = host_arch()
    assert (ws / f"src/ops-math/build_out/cann-ops-math-custom_linux-{arch}.run").is_file()
    assert (ws / f"src/ops-nn/build_out/cann-ops-nn-custom_linux-{arch}.run").is_file()
    assert (ws / f"src/ops-cv/build_out/cann-ops-cv-custom-linux.{arch}.run").is_file()
    for suffix in ("math", "nn", "cv"):
        assert (ws / f"opp/vendors/custom_{suffix}/op_api/lib/libcust_opapi.so").is_file()


# the sandboxes whose siblings' examples look only in $ASCEND_HOME_PATH/opp/vendors (v8.5.0,
# v9.0.x), the repos each builds (8.5 all three: its recipe gained them at their v8.5.0 tags),
# and the opbase each sibling builds against: the commit it pins (subject) in its
# third_party/opbase at 9.0, the workspace's overlay of the toolkit at 8.5
HOME_OPP = {
    "A2-9.0.1": (
        "ops-nn,ops-math",
        {"ops-nn": "fix: broadcast compile warning", "ops-math": "log reporting changes"},
    ),
    "A2-8.5.0": ("ops-nn,ops-math,ops-cv", {}),
}


@pytest.mark.parametrize("key", list(HOME_OPP))
def test_a_sibling_built_wrong_fails_its_check_and_its_example_is_not_seen(cli_for, key):
    """CANNBUILD_SANDBOX_FAULT=segsum-diagonal builds ops-math's kernel with its mask one off
    (x[j] summed too): its check FAILs by the rule, exit 5, while ops-nn (and ops-cv) beside it
    PASS; at v8.5.0 and v9.0.x the examples look only in $ASCEND_HOME_PATH/opp/vendors, so the
    workspace's packages are not seen and the example check says so (SKIPPED, not FAIL).
    Rebuilt without the fault, every repo PASSes."""
    repos, pins = HOME_OPP[key]
    cli = cli_for(key)
    faulty = cli.env(CANNBUILD_SANDBOX_FAULT="segsum-diagonal")
    proc = cli("setup", "--repos", repos, env=faulty, timeout=1800)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    validation = cli.report()["validation"]
    assert validation["status"] == "FAIL"
    judged = {r["repo"]: r for r in validation["repos"]}
    assert list(judged) == repos.split(",")
    for repo in judged:
        if repo != "ops-math":
            assert judged[repo]["status"] == "PASS", judged[repo]["reason"]
            assert judged[repo]["check"] == CHECKS[repo][0]
    math = checks_of(judged["ops-math"])
    assert judged["ops-math"]["check"] == "ops-math.segsum"
    assert math["capi"]["status"] == "FAIL" and "exceeds the bound" in math["capi"]["message"]
    for repo in judged:
        example = checks_of(judged[repo])["example"]
        suffix = repo.split("-")[1]
        assert example["status"] == "SKIPPED", example
        assert f"$ASCEND_HOME_PATH/opp/vendors/custom_{suffix}" in example["message"]
    ws = cli.ws
    if pins:
        # ops-nn pins another opbase than ops-math at v9.0.x (ec88904b and 929902e5 upstream)
        for repo, pin in pins.items():
            assert subject(ws / f"src/{repo}/third_party/opbase") == pin
    else:
        # v8.5.0: no opbase pin; FindOPBASE finds the opbase opbase-install put in the overlay
        arch = host_arch()
        for repo in judged:
            assert not (ws / f"src/{repo}/third_party/opbase").exists()
            logs = " ".join(log.read_text() for log in ws.glob(f"logs/*/{repo}-build.log"))
            assert f"Found OPBASE: {ws}/overlay/{arch}-linux/pkg_inc" in logs, repo
    fixed = cli("setup", "--repos", repos, timeout=1800)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    validation = cli.report()["validation"]
    assert validation["status"] == "PASS", validation["reason"]
    for entry in validation["repos"]:
        checks = checks_of(entry)
        assert checks["capi"]["message"].startswith(
            f"6/6 cases PASS through {CHECKS[entry['repo']][1]}"
        )
    # each repo's .run name at v8.5.0 and v9.0.x, installed in its own vendor folder
    arch = host_arch()
    runs = {
        "ops-math": f"cann-ops-math-custom_linux-{arch}.run",
        "ops-nn": f"cann-ops-nn-custom-linux.{arch}.run",
        "ops-cv": f"cann-ops-cv-custom-linux.{arch}.run",
    }
    for repo in judged:
        assert (ws / f"src/{repo}/build_out/{runs[repo]}").is_file(), repo
        suffix = repo.split("-")[1]
        assert (ws / f"opp/vendors/custom_{suffix}/op_api/lib/libcust_opapi.so").is_file()


def test_the_9_1_siblings_lock_and_bundle_only_what_their_package_build_downloads(
    cli_for, tmp_path
):
    """Issue 38 item 4: ops-math and ops-cv ask for gtest in cmake/ut.cmake, which every build
    includes, and ops-nn inside if(ENABLE_TEST); cann/cmake downloads googletest only for a
    target that links GTest::gtest (EXCLUDE_FROM_ALL), which only their unit tests do.  So
    neither the lock nor the bundle carries it (the sandbox's network does not even serve
    it); protobuf, which their package target links, is carried."""
    cli = cli_for("A3-9.1.0")
    proc = cli("lock", "--repos", "ops-math,ops-nn,ops-cv")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ut = (cli.ws / "src/ops-math/cmake/ut.cmake").read_text()
    assert "add_cann_third_party(gtest)" in ut  # asked for on every build
    text = cli.lock.read_text()
    assert "googletest" not in text and "gtest" not in text
    for archive in ("protobuf-25.1", "abseil-cpp-20230802.1", "json-3.11.3", "eigen-5.0.0"):
        assert f'name = "{archive}"' in text, archive
    bundle = tmp_path / "sources.tar"
    made = cli("bundle", str(bundle), sandbox=False)
    assert made.returncode == 0, made.stderr
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
    assert any("protobuf-25.1" in n for n in names)
    assert not any("googletest" in n for n in names)
