"""The per-example judge of `build.sh --run_example`: every example on its own values."""

import math
from pathlib import Path

from cannbuild.validate import example

MAX = 128 / math.sqrt(128)
STAMP = "[2026-03-21 12:00:00] "
DIR = "../attention/flash_attention_score/examples"
V9 = (
    "test_aclnn_flash_attention_score.cpp",
    "test_aclnn_flash_attention_score_v2_fp32.cpp",
    "test_aclnn_flash_attention_score_varlen_v4_fp32.cpp",
)


def block(name, out=1.0, mx=MAX, sm=256.0, count_out=32768, summary=True):
    """What one example contributes to stdout at v8.5.0/v9.0.0 (8.3: no summary line)."""
    values = [out] * count_out + [mx] * 2048 + [sm] * 2048
    lines = [f"{STAMP}Start compile and run example file: {DIR}/{name}"]
    lines.append(f"{STAMP}pkg_mode:cust vendor_name:custom")
    lines += [f"{STAMP}mean result[{i}] is: {v:f}" for i, v in enumerate(values)]
    if summary:
        lines.append(f"{STAMP}run test_aclnn_flash_attention_score, execute samples success")
    return lines


def test_three_correct_examples_pass_each_on_its_own_values():
    stdout = [f"{STAMP}Start to run example,name:flash_attention_score mode:eager"]
    for name in V9:
        stdout += block(name)
    stdout.append(f"{STAMP}Example completed successfully")
    status, message, runs = example.judge_run(stdout, [], 0)
    assert status == "PASS", message
    assert [Path(r.file).name for r in runs] == list(V9)
    assert all(r.values == 36864 and r.judged == "values" for r in runs)
    assert message.startswith("3/3 examples PASS; 3 judged on their values")


def test_one_wrong_example_fails_and_is_named():
    stdout = block(V9[0]) + block(V9[1], mx=1.0) + block(V9[2])
    status, message, runs = example.judge_run(stdout, [], 0)
    assert status == "FAIL"
    assert [r.status for r in runs] == ["PASS", "FAIL", "PASS"]
    assert message == (
        "1/3 examples FAIL; first: test_aclnn_flash_attention_score_v2_fp32.cpp: "
        "softmaxMax[0] is 1.0, expected 11.3137 for all-ones inputs; "
        "opbase MERE/MARE (9.1): 2/3 PASS"
    )


def test_a_known_example_with_a_nan_value_fails():
    """NaN compares false both ways: a value check that only asks `differs by more than the
    bound` would pass it."""
    stdout = block(V9[0]) + block(V9[1], out=float("nan")) + block(V9[2])
    status, _message, runs = example.judge_run(stdout, [], 0)
    assert status == "FAIL" and [r.status for r in runs] == ["PASS", "FAIL", "PASS"]


def test_a_short_example_fails_even_if_the_total_looks_right():
    # 32767 + 32769 attentionOut values: the sum matches two full examples, each is wrong
    stdout = block(V9[1], count_out=32767) + block(V9[2], count_out=32769)
    status, message, runs = example.judge_run(stdout, [], 0)
    assert status == "FAIL" and [r.status for r in runs] == ["FAIL", "FAIL"]
    assert "printed 36863 result values, expected 36864" in message


def test_an_example_cannbuild_does_not_know_is_judged_only_by_its_run_and_says_so():
    stdout = block(V9[1]) + block("test_aclnn_flash_attention_score_v5_bf16.cpp", out=0.25)
    status, message, runs = example.judge_run(stdout, [], 0)
    assert status == "PASS"
    assert runs[1].judged == "run" and "not judged on its values" in runs[1].message
    assert "test_aclnn_flash_attention_score_v5_bf16.cpp judged only by exit and finite" in message
    nan = block("test_aclnn_new.cpp", out=float("nan"))
    assert example.judge_run(nan, [], 0)[0] == "FAIL"


def test_the_8_3_script_exits_0_on_a_compile_error_and_that_is_not_a_pass():
    # 8.3: { ...; } 2>&1 | gawk without pipefail -- the g++ error is in stdout, exit 0
    stdout = [
        f"{STAMP}Start compile and run example file: {DIR}/test_aclnn_flash_attention_score.cpp",
        f"{STAMP}pkg_mode:cust vendor_name:custom",
        f"{STAMP}{DIR}/test_aclnn_flash_attention_score.cpp:21:10: fatal error: "
        "aclnnop/aclnn_flash_attention_score.h: No such file or directory",
    ]
    status, message, _ = example.judge_run(stdout, [], 0)
    assert status == "FAIL"
    assert "printed no result values" in message and "No such file or directory" in message


def test_a_failing_example_ends_the_run_with_its_exit_code_and_the_stderr_error():
    # v9.0.0 under set -e: the binary's failure ends the script; stderr arrives apart
    stdout = block(V9[0]) + block(V9[1], summary=False)[:2]
    stderr = ["aclnnFlashAttentionScoreV2GetWorkspaceSize failed. ERROR: 161002"]
    status, message, runs = example.judge_run(stdout, stderr, 1)
    assert status == "FAIL" and [r.status for r in runs] == ["PASS", "FAIL"]
    assert "exited 1: aclnnFlashAttentionScoreV2GetWorkspaceSize failed" in message


def test_a_run_that_announces_no_example_fails():
    status, message, runs = example.judge_run([f"{STAMP}Example completed successfully"], [], 0)
    assert status == "FAIL" and runs == []
    assert "exited 0 but ran no example" in message


def test_the_8_3_lookup_rule_skips_a_workspace_install(tmp_path):
    toolkit_opp = tmp_path / "toolkit" / "opp"
    (toolkit_opp / "vendors").mkdir(parents=True)
    vendor = tmp_path / "ws" / "opp" / "vendors" / "custom_transformer"
    vendor.mkdir(parents=True)
    env = {"ASCEND_OPP_PATH": str(toolkit_opp), "ASCEND_CUSTOM_OPP_PATH": str(vendor)}
    why = example.lookup_skip("opp", env, vendor, "custom")
    assert why is not None and str(toolkit_opp / "vendors" / "custom_transformer") in why
    assert "ignores ASCEND_CUSTOM_OPP_PATH" in why
    assert example.lookup_skip("custom-opp", env, vendor, "custom") is None
    # the package really in $ASCEND_OPP_PATH/vendors: the 8.3 example can run
    (toolkit_opp / "vendors" / "custom_transformer").symlink_to(vendor)
    assert example.lookup_skip("opp", env, vendor, "custom") is None
    (tmp_path / "build.sh").write_text("exit 0\n")
    result = example.run_example("x", ["false"], tmp_path, env, "opp", tmp_path / "other")
    assert result.status == "SKIPPED" and "ignores ASCEND_CUSTOM_OPP_PATH" in result.message
