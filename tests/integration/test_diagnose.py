"""`cannbuild diagnose --sandbox`: each row fails on a sandbox made wrong on purpose (the
vendor missing from the path, fp32 asked of a package built without it, head dims the
checkout's docs reject, make alignment a rule for, or the tiling pads) and passes on a
right one."""

from __future__ import annotations

import json

import pytest
from reference import reference_torch

from cannbuild.host.pystack import read_python_stack

reference_torch()
VENDOR = "opp/vendors/custom_transformer"


def rows(proc) -> dict:
    data = json.loads(proc.stdout)
    return {c["id"]: c for c in data["checks"]}


def with_vendor(cli, **extra: str) -> dict:
    return cli.env(ASCEND_CUSTOM_OPP_PATH=str(cli.ws / VENDOR), **extra)


def test_the_vendor_missing_from_the_path_fails_registration_and_its_fix_is_set_env(installed):
    missing = installed("diagnose", "--json")  # the test env has no ASCEND_CUSTOM_OPP_PATH
    assert missing.returncode == 1, missing.stderr
    got = rows(missing)
    assert got["registration.env"]["status"] == "fail"
    assert got["registration.resolution"]["status"] == "fail"
    set_env = installed.ws / VENDOR / "bin" / "set_env.bash"
    assert got["registration.env"]["hint"] == f"source {set_env}"
    assert set_env.is_file()
    for rid in ("registration.package", "registration.soc", "registration.exports"):
        assert got[rid]["status"] == "pass", got[rid]
    present = installed("diagnose", "--json", "--dtype", "fp16", env=with_vendor(installed))
    assert present.returncode == 0, present.stdout + present.stderr
    assert {r["status"] for k, r in rows(present).items() if k != "shape"} == {"pass"}
    table = installed("diagnose", env=with_vendor(installed))
    # the walk's one line first (the workspace is built), then the table
    up_to_date = "workspace up to date: all 4 steps were, nothing was built\n"
    assert (
        table.stdout.startswith(up_to_date + "cannbuild diagnose\n")
        and "pass registration.resolution" in table.stdout
    )
    assert up_to_date not in present.stdout and up_to_date in present.stderr  # --json


def test_head_dims_follow_the_checkouts_docs_and_the_tilings_alignment(installed):
    doc = (
        installed.ws
        / "src/ops-transformer/attention/flash_attention_score/docs/aclnnFlashAttentionScoreV2.md"
    )
    too_big = installed("diagnose", "--json", "--head-dim", "1000", env=with_vendor(installed))
    assert too_big.returncode == 1
    row = rows(too_big)["shape.head_dim"]
    assert row["status"] == "fail" and f"{doc}:" in row["detail"] and "1~768" in row["detail"]
    unaligned = installed("diagnose", "--json", "--head-dim", "72", env=with_vendor(installed))
    assert unaligned.returncode == 0  # accepted by the operator, padded: a warning
    row = rows(unaligned)["shape.head_dim"]
    assert row["status"] == "warn" and "pads D to 80" in row["detail"] and row["hint"]


def test_an_unaligned_head_dim_fails_where_the_checkouts_docs_make_alignment_a_rule(cli):
    """A sandbox checkout made wrong on purpose: its docs gain the rule some FA docs state
    (D a multiple of 16), so D=72 is no longer only padded but refused."""
    assert cli("fetch").returncode == 0
    doc = cli.ws / "src/ops-transformer/attention/flash_attention_score/docs"
    doc = doc / "aclnnFlashAttentionScoreV2.md"
    lines = doc.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if "D：取值范围" in line) + 1
    padded = cli("diagnose", "--json", "--head-dim", "72", env=with_vendor(cli))
    assert rows(padded)["shape.head_dim"]["status"] == "warn"
    lines.insert(at, "    - D：取值范围为16的倍数。")
    doc.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = cli("diagnose", "--json", "--head-dim", "72", env=with_vendor(cli))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = rows(proc)["shape.head_dim"]
    assert row["status"] == "fail" and f"{doc}:{at + 1} (D：取值范围为16的倍数。)" in row["detail"]
    assert "multiple of 16 (e.g. 80)" in row["hint"]


@pytest.mark.skipif(
    read_python_stack().torch_npu is None,
    reason="torch-npu is not installed: profile --run needs it",
)
def test_diagnose_profile_gives_the_sandbox_runs_chains_their_cause(installed, tmp_path):
    prof = tmp_path / "prof"
    run = installed(
        "profile", "--run", str(prof), "--seq-len", "64", "--head-dim", "64", "--iterations", "1"
    )
    assert run.returncode == 0, run.stdout + run.stderr
    proc = installed("diagnose", "--json", "--profile", str(prof), env=with_vendor(installed))
    assert proc.returncode == 1
    chain = rows(proc)["profile.chain1"]
    assert chain["status"] == "fail"
    assert "BatchMatMulV2 > Mul > SoftmaxV2 > BatchMatMulV2" in chain["detail"]
    assert "(fp16, S=64, D=64)" in chain["detail"] and "separate ops" in chain["detail"]


def test_fp32_fails_on_a_package_built_without_it(cli):
    faulted = cli.env(CANNBUILD_SANDBOX_FAULT="fa-no-fp32")
    assert cli("install", env=faulted).returncode == 0
    config = cli.ws / VENDOR / "op_impl/ai_core/tbe/config/ascend910b/aic-ascend910b-ops-info.json"
    # the same fault in the env: diagnose's walk finds that build up to date
    fp32 = with_vendor(cli, CANNBUILD_SANDBOX_FAULT="fa-no-fp32")
    proc = cli("diagnose", "--json", "--dtype", "fp32", env=fp32)
    assert proc.returncode == 1
    row = rows(proc)["dtype"]
    assert (
        row["status"] == "fail" and "fp16, bf16" in row["detail"] and str(config) in row["detail"]
    )
    assert rows(cli("diagnose", "--json", "--dtype", "bf16", env=fp32))["dtype"]["status"] == "pass"
    # and the operator itself refuses fp32, as the config says
    validate = cli("validate", "--cases", "fp32_bsh_s1_d128_causal")
    assert validate.returncode == 5
    assert "expected FLOAT16 or BFLOAT16" in " ".join(validate.stdout.split()), validate.stdout
