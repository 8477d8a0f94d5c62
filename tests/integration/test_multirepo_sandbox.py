"""Issue 27's "done when", on the emulated host: `setup --sandbox --repos
ops-transformer,ops-math,ops-nn,ops-cv` from cold ends with validation PASS for every
repository, each check named in the report; its no-op rerun builds nothing; `status
--json` lists four vendors with their repo, commit and ops; the one source line puts
them on ASCEND_CUSTOM_OPP_PATH in the --repos order.

Then item 6 in the same workspace: diagnose (registration per vendor), bench and
profile --run (with torch_npu) each find the four-repo workspace up to date through the
remembered --repos and reach ops-transformer's FlashAttention."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import air_gapped

from cannbuild.host.pystack import read_python_stack

REPOS = ("ops-transformer", "ops-math", "ops-nn", "ops-cv")
KEY = "A3-9.0.0"


# 9.0 (each sibling at its own opbase pin) and 8.5 (all four against the one opbase
# opbase-install puts in the toolkit's overlay, the siblings at their v8.5.0 tags)
@pytest.mark.parametrize("key", [KEY, "A2-8.5.0"])
def test_setup_builds_validates_and_orders_every_repo(cli_for, tmp_path, key):
    cli = cli_for(key)
    repos = ",".join(REPOS)
    proc = cli("setup", "--repos", repos, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = cli.report()
    validation = report["validation"]
    assert validation["status"] == "PASS", validation["reason"]
    judged = {r["repo"]: r for r in validation["repos"]}
    assert list(judged) == list(REPOS)
    for repo, entry in judged.items():
        assert entry["status"] == "PASS", (repo, entry["reason"])
        assert entry["check"].startswith(f"{repo}.") and entry["why"]
    source = cli.ws / "opp" / "set_env.bash"
    assert f"to use them: source {source}" in proc.stderr
    order = subprocess.run(
        ["bash", "-c", f'source "{source}"; printf %s "$ASCEND_CUSTOM_OPP_PATH"'],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    suffixes = [e.rsplit("_", 1)[-1] for e in order.split(":") if e]
    assert suffixes == ["transformer", "math", "nn", "cv"]
    # the lock records every repo and the sources they pin
    locked = {r["name"] for r in report["lock"]["repos"]}
    assert set(REPOS) <= locked
    # 9.0: each sibling's opbase pin is a source of its own; 8.5 pins none (opbase is built once)
    assert ("ops-nn:third_party/opbase" in locked) == (key == KEY)

    again = cli("setup", "--repos", repos)
    assert again.returncode == 0, again.stderr
    assert ": started (" not in again.stderr  # the no-op rerun builds nothing

    status = json.loads(cli("status", "--json", sandbox=False).stdout)
    assert [v["repo"] for v in status["installed"]] == list(REPOS)
    assert all(v["commit"] and v["ops"] for v in status["installed"])
    assert status["source"] == str(source)

    # item 6: the other tasks on the same workspace, without --repos (the remembered target)
    env = cli.env(ASCEND_CUSTOM_OPP_PATH=order)
    diag = cli("diagnose", "--json", "--dtype", "fp16", env=env)
    assert diag.returncode == 0, diag.stdout + diag.stderr
    assert "workspace up to date:" in diag.stderr
    checks = {c["id"]: c for c in json.loads(diag.stdout)["checks"]}
    for at, repo in enumerate(REPOS, 1):
        row = checks[f"registration.vendor.{repo}"]
        assert row["status"] == "pass" and f"is entry {at} of 4 of" in row["detail"], row
    assert checks["registration.resolution"]["status"] == "pass"
    bench = cli(
        "bench", "--shapes", "N2S64D64", "--budget", "1", "--out", str(tmp_path / "b"), "--json"
    )
    assert bench.returncode == 0, bench.stderr
    assert "workspace up to date:" in bench.stderr and ": started (" not in bench.stderr
    capi = next(r for r in json.loads(bench.stdout)["results"] if r["impl"] == "capi")
    assert capi["status"] == "timed" and capi["check"]["status"] == "PASS", capi
    if read_python_stack().torch_npu is None:
        return  # profile --run needs torch_npu (CI installs it where a wheel exists)
    prof = cli(
        "profile",
        "--run",
        str(tmp_path / "p"),
        "--seq-len",
        "64",
        "--head-dim",
        "64",
        "--iterations",
        "1",
        "--json",
    )
    assert prof.returncode == 0, prof.stdout + prof.stderr
    assert ": started (" not in prof.stderr
    assert json.loads(prof.stdout)["attention"]["fused"]["count"] >= 1


def test_a_bundle_carries_every_repo_and_pin_to_an_offline_setup(cli_for, tmp_path):
    """`bundle` after a four-repo fetch holds every repo, every source they pin (three
    opbase commits, ops-tensor, cann/cmake) and their archives: a fresh workspace whose
    mirror rule points nowhere builds and validates all four from it with --offline."""
    cli = cli_for(KEY, cwd=tmp_path / "online")
    repos = ",".join(REPOS)
    fetched = cli("fetch", "--repos", repos)
    assert fetched.returncode == 0, fetched.stderr
    bundle = tmp_path / "sources.tar"
    made = cli("bundle", str(bundle), sandbox=False)  # the remembered --repos
    assert made.returncode == 0, made.stderr
    air = air_gapped(tmp_path, cli)
    proc = air("setup", "--offline", "--bundle", str(bundle), "--repos", repos, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    judged = {r["repo"]: r["status"] for r in air.report()["validation"]["repos"]}
    assert judged == {repo: "PASS" for repo in REPOS}
    logs = "".join(p.read_text() for p in (air.ws / "logs" / "latest").glob("*-build.log"))
    assert "Downloading" not in logs
