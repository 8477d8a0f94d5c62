"""The whole pipeline on the sandbox: setup, incremental reruns, faults, locks, offline, concurrency."""

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from reference import reference_torch

from cannbuild.host.pystack import read_python_stack
from cannbuild.validate import cases

from engines import path_without_engines
from usertree import tree_digest

reference_torch()
TORCH_NPU = read_python_stack().torch_npu


def imported(cli, *args: str):
    """The run of `cannbuild ARGS` on cli's sandbox, and the modules it imported."""
    argv = [sys.executable, "-X", "importtime", "-m", "cannbuild", *args, "--sandbox"]
    argv += ["--variant", cli.variant, "--cann", cli.cann]
    proc = subprocess.run(argv, cwd=cli.cwd, env=cli.env(), capture_output=True, text=True)
    lines = proc.stderr.splitlines()
    return proc, {x.rsplit("|", 1)[-1].strip() for x in lines if x.startswith("import time:")}


def started_steps(stderr: str):
    return [
        line.split("] ", 1)[1].split(":")[0]
        for line in stderr.splitlines()
        if ": started (" in line
    ]


# the examples build.sh --run_example runs at each ref (the real count per tag); the 8.3
# pin's examples look only under $ASCEND_OPP_PATH/vendors, so a workspace install skips them
EXAMPLES = {
    "A2-8.5.0": [
        "test_aclnn_flash_attention_score_v2_fp32.cpp",
        "test_aclnn_flash_attention_score_varlen_v4_fp32.cpp",
    ],
    "A3-9.0.0": [
        "test_aclnn_flash_attention_score.cpp",
        "test_aclnn_flash_attention_score_v2_fp32.cpp",
        "test_aclnn_flash_attention_score_varlen_v4_fp32.cpp",
    ],
    "A2-8.3.RC2": [],
}


@pytest.mark.parametrize("key", ["A2-8.5.0", "A3-9.0.0", "A2-8.3.RC2"])
def test_setup_builds_installs_and_validates(cli_for, key):
    cli = cli_for(key)
    proc = cli("setup")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert started_steps(proc.stderr)[-1] == "ops-transformer-install"
    report = cli.report()
    assert report["validation"]["status"] == "PASS"
    checks = {c["id"]: c for c in report["validation"]["checks"]}
    assert {k: c["status"] for k, c in checks.items()} == {
        "library": "PASS",
        "capi": "PASS",
        "example": "PASS" if EXAMPLES[key] else "SKIPPED",
        "torch_npu": "PASS" if TORCH_NPU else "SKIPPED",
    }
    examples = checks["example"]["examples"]
    assert [Path(e["file"]).name for e in examples] == EXAMPLES[key]
    assert all(e["status"] == "PASS" and e["judged"] == "values" for e in examples)
    assert all(e["values"] == 36864 for e in examples)
    if not EXAMPLES[key]:
        assert "ASCEND_OPP_PATH" in checks["example"]["message"]
    assert all(c["status"] == "PASS" for c in report["validation"]["cases"])
    # opbase's MERE/MARE standard measured beside the rule, which decides
    assert report["validation"]["decided_by"] == "rule"
    assert all(c["precision"]["mere"] is not None for c in report["validation"]["cases"])
    assert all(e["precision"]["status"] == "PASS" for e in examples)
    route = checks["torch_npu"]
    if TORCH_NPU:  # the real torch_npu ran every case through the package on the emulated NPU
        assert f"13/13 cases PASS through torch_npu {TORCH_NPU}" in route["message"]
        assert route["torch_npu"] == TORCH_NPU and len(route["cases"]) == 13
        ours = cli.ws / "opp/vendors/custom_transformer/op_api/lib/libcust_opapi.so"
        assert str(ours.resolve()) in route["loaded_op_libraries"]
    else:
        assert "pip install torch-npu==" in route["message"]
    lock = cli.lock.read_text()
    # fetched through the sandbox's own mirror rules: each commit is a stand-in's, and says so
    assert "#   ops-transformer: the sandbox's stand-in repository\n" in lock
    for repo in report["lock"]["repos"]:
        checkout = cli.ws / "src" / repo["name"].replace(":", "/")
        if ":" in repo["name"]:
            checkout = cli.ws / "src" / repo["name"].split(":")[0] / repo["name"].split(":")[1]
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True
        ).stdout.strip()
        assert head == repo["commit"] and repo["commit"] in lock
    assert (
        (cli.ws / "reports" / "latest" / "report.md").read_text().startswith("# cannbuild report")
    )


def test_9_0_places_the_pinned_opbase_source(cli_for):
    cli = cli_for("A3-9.0.0")
    assert cli("install").returncode == 0
    pinned = cli.ws / "src/ops-transformer/third_party/opbase"
    pin = (
        (cli.ws / "src/ops-transformer/cmake/third_party/opbase.cmake")
        .read_text()
        .split("OPBASE_TAG_ID ")[1]
        .split(")")[0]
    )
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=pinned, capture_output=True, text=True
    ).stdout.strip()
    assert head == pin
    log = (cli.ws / "logs/latest/ops-transformer-build.log").read_text()
    assert f"Find opbase source dir: {pinned}" in log


def test_9_0_builds_no_opbase_package_unless_asked_and_plan_shows_it(cli_for):
    cli = cli_for("A3-9.0.0")
    plan = json.loads(cli("plan", "--json").stdout)
    row = next(s for s in plan["steps"] if s["name"] == "opbase-build")
    assert row["status"] == "optional" and "--with-step opbase-build" in row["reason"]
    proc = cli("build")
    assert proc.returncode == 0, proc.stderr
    assert started_steps(proc.stderr) == ["ops-transformer-build"]
    assert "opbase-build: not run (optional" in proc.stderr
    assert cli.stamp("opbase-build") is None
    assert not list((cli.ws / "src/opbase").glob("build_out/*.run"))
    # only what runs is fetched and checked: opbase's archives are skipped, and said so
    assert "opbase: its third-party archives (makeself, " in proc.stderr + proc.stdout
    assert 'archives_skipped = [\n    "opbase",\n]' in cli.lock.read_text()
    # asked for: it runs, and the ops-transformer build it does not feed stays up to date
    proc = cli("build", env=cli.env(CANNBUILD_OPTIONAL_STEPS="opbase-build"))
    assert proc.returncode == 0, proc.stderr
    assert started_steps(proc.stderr) == ["opbase-build"]
    assert "archives_skipped" not in cli.lock.read_text()  # its archives locked again
    assert cli.stamp("opbase-build")["artifacts"][0]["path"].endswith(".run")
    plan = json.loads(cli("plan", "--json").stdout)
    assert [s["status"] for s in plan["steps"]][:2] == ["optional", "up to date"]


def test_a_rerun_with_nothing_changed_runs_no_step(cli):
    assert cli("setup", "--cases", "fp32_bsh_s128_d64_gqa").returncode == 0
    before = {s: cli.stamp(s)["finished"] for s in ("opbase-build", "ops-transformer-build")}
    proc = cli("setup", "--cases", "fp32_bsh_s128_d64_gqa")
    assert proc.returncode == 0
    assert started_steps(proc.stderr) == []
    assert proc.stderr.count("up to date, skipped") == 4
    assert "validation: PASS reused from run" in proc.stderr
    assert {s: cli.stamp(s)["finished"] for s in before} == before
    report = cli.report()
    assert report["validation"]["status"] == "PASS" and report["validation"]["reused_from"]
    # ... and loads no Jinja: every command it renders is remembered (invoke it loads: the
    # command line is invoke's Program), nor makes the stand-in archives (tarfile) no
    # --accept-stand-in reads
    proc, loaded = imported(cli, "setup", "--cases", "fp32_bsh_s128_d64_gqa")
    assert proc.returncode == 0 and "validation: PASS reused from run" in proc.stderr
    assert "cannbuild.transaction" in loaded  # the check can see what was imported
    assert "invoke.program" in loaded
    unused = ("jinja2", "tarfile", "cannbuild.render.sandbox", "cannbuild.sandbox.third_party")
    assert {m for m in loaded if m.startswith(unused)} == set()
    # doctor there loads only what reads the host and the recipe's needs (issue 39)
    proc, loaded = imported(cli, "doctor", "--json")
    assert proc.returncode in (0, 1) and "cannbuild.build.requirements" in loaded
    unused += ("rich", "torch", "cannbuild.render", "cannbuild.sources", "cannbuild.childlog")
    unused += ("cannbuild.redact", "cannbuild.report_md", "cannbuild.sandbox.packaging")
    assert {m for m in loaded if m.startswith(unused)} == set()
    proc = cli("setup", "--cases", "fp32_bsh_s128_d64_gqa", "--force", "validate")
    assert "reused" not in proc.stderr and "capi" in proc.stdout


def test_changing_soc_reruns_exactly_the_ops_transformer_steps(cli):
    assert cli("install").returncode == 0
    plan = json.loads(cli("plan", "--json", "--soc", "ascend910_93").stdout)
    status = {s["name"]: (s["status"], s["reason"]) for s in plan["steps"]}
    assert status["opbase-build"][0] == status["opbase-install"][0] == "up to date"
    assert status["ops-transformer-build"] == (
        "needs run",
        "soc changed: ascend910b -> ascend910_93",
    )
    assert status["ops-transformer-install"][0] == "needs run"
    # a build for A3 over the A2 install: it says what the flag changes, and the end names
    # no install it did not make; status marks the A2 install and its validation stale
    proc = cli("build", "--soc", "ascend910_93")
    assert started_steps(proc.stderr) == ["ops-transformer-build"]
    assert "--soc ascend910_93 differs from this workspace's ascend910b" in proc.stderr
    assert "building for ascend910_93" in proc.stderr
    assert "installed: " not in proc.stderr.replace("not installed: ", "")
    assert "to use it:" not in proc.stderr
    assert "built for ascend910b; this workspace now targets ascend910_93" in proc.stderr
    status_text = cli("status", sandbox=False).stdout
    assert "--soc=ascend910_93 (set by cannbuild build" in status_text
    assert "not installed: ops-transformer-install must run again" in status_text
    assert "built for ascend910b; this workspace now targets ascend910_93" in status_text
    data = json.loads(cli("status", "--json", sandbox=False).stdout)
    assert data["install"]["stale"] == [
        "built for ascend910b; this workspace now targets ascend910_93"
    ]
    assert data["installed"] == [] and data["target"]["soc"] == "ascend910_93"
    proc = cli("install")  # the workspace remembers --soc: a bare install installs the A3 build
    assert started_steps(proc.stderr) == ["ops-transformer-install"]
    # an A3 package on this A2 host: the operator finds no kernel for the device
    proc = cli("validate", "--soc", "ascend910_93", "--cases", "fp32_bsh_s128_d64_gqa")
    assert proc.returncode == 5
    said = " ".join(proc.stdout.split())  # as the terminal wraps it
    assert "561003" in said and "Cannot find the kernel" in said


def test_the_toolkit_is_never_modified(cli):
    toolkit = cli.sandbox / "sysroot/usr/local/Ascend/cann-8.5.0"
    before = tree_digest(toolkit)
    assert cli("install").returncode == 0
    assert (
        (cli.ws / "overlay/share/info/opbase/version.info")
        .read_text()
        .startswith("Version=8.5.0-beta.1")
    )
    assert tree_digest(toolkit) == before


def test_install_into_toolkit_is_explicit(cli_for, tmp_path):
    from cannbuild.sandbox import SandboxSpec, create_sandbox

    own = tmp_path / "own-sandbox"
    create_sandbox(SandboxSpec(dir=own, variant="A2", cann="8.5.0"))
    cli = cli_for("A2-8.5.0", tmp_path / "w")
    cli.sandbox = own
    assert cli("install", "--install-into-toolkit").returncode == 0
    info = own / "sysroot/usr/local/Ascend/cann-8.5.0/share/info/opbase/version.info"
    assert info.read_text().startswith("Version=8.5.0-beta.1")
    assert not (cli.ws / "overlay").exists()


def test_a_failing_build_gives_a_digest_with_a_hint_and_resumes(cli):
    proc = cli("install", env=cli.env(CANNBUILD_SANDBOX_FAULT="build-fail:opbase"))
    assert proc.returncode == 4
    assert "step opbase-build FAILED (exit 1)" in proc.stderr
    assert "static assertion failed: cannbuild sandbox fault build-fail:opbase" in proc.stderr
    assert "hint: a compiler error in the sources" in proc.stderr
    log = cli.ws / "logs/latest/opbase-build.log"
    assert (log.is_file() and f"log:     {log.resolve()}" in proc.stderr) or "log:" in proc.stderr
    assert cli.stamp("opbase-build") is None
    assert cli.lock.is_file()  # the sources resolved; only the step failed
    proc = cli("install")
    assert proc.returncode == 0
    assert started_steps(proc.stderr)[0] == "opbase-build"


def test_a_failing_ops_transformer_build_resumes_at_that_step(cli):
    assert cli("build").returncode == 0
    proc = cli("build", env=cli.env(CANNBUILD_SANDBOX_FAULT="build-fail:ops-transformer"))
    assert proc.returncode == 4 and "step ops-transformer-build FAILED" in proc.stderr
    proc = cli("build")
    assert proc.returncode == 0
    assert "ops-transformer-build" in started_steps(proc.stderr)


@pytest.mark.parametrize(
    "fault,check,words",
    [
        ("fa-wrong-scale", "capi", "exceeds the bound"),
        pytest.param(
            "fa-wrong-scale",
            "torch_npu",
            "exceeds the bound",
            marks=pytest.mark.skipif(TORCH_NPU is None, reason="torch-npu is not installed"),
        ),
        ("fa-nan", "capi", "NaN/Inf"),
        ("missing-symbol", "library", "does not export aclnnFlashAttentionScoreV2GetWorkspaceSize"),
    ],
)
def test_each_operator_fault_is_a_validation_failure(cli, fault, check, words):
    proc = cli(
        "setup", "--cases", "fp16_bsh_s128_d128_causal", env=cli.env(CANNBUILD_SANDBOX_FAULT=fault)
    )
    assert proc.returncode == 5, proc.stdout + proc.stderr
    validation = cli.report()["validation"]
    checks = {c["id"]: c for c in validation["checks"]}
    assert checks[check]["status"] == "FAIL" and words in checks[check]["message"]
    assert checks["example"]["status"] == "FAIL"
    if check == "capi":  # a broken kernel fails opbase's MERE/MARE standard too: no disagreement
        (case,) = validation["cases"]
        assert case["precision"]["status"] == "FAIL" and not case["disagree"]


def test_a_varlen_kernel_that_ignores_the_key_lengths_fails_every_route(cli):
    """The VarLen case, the VarLen example and the torch_npu TND call all see a kernel that
    lets each query attend over every sequence's keys (issue 29 item 4)."""
    varlen = next(c.name for c in cases.CASES if c.varlen)
    fault = cli.env(CANNBUILD_SANDBOX_FAULT="fa-varlen-ignore-lengths")
    proc = cli("setup", "--cases", varlen, env=fault)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    checks = {c["id"]: c for c in cli.report()["validation"]["checks"]}
    assert checks["capi"]["status"] == "FAIL"
    assert f"{varlen}: attentionOut max abs error" in checks["capi"]["message"]
    (dense, ragged) = checks["example"]["examples"]
    assert dense["status"] == "PASS" and ragged["status"] == "FAIL"
    assert "softmaxSum[0] is 512.0, expected 256" in ragged["message"]
    route = checks["torch_npu"]
    assert route["status"] == ("FAIL" if TORCH_NPU else "SKIPPED")
    if TORCH_NPU:
        assert "exceeds the bound" in route["message"]


def test_opbase_builds_while_ops_transformer_is_fetched_and_a_failed_fetch_resumes(cli):
    # ops-transformer's mirror is missing: its fetch fails, but opbase's steps only wait
    # for opbase, so opbase is built and installed (and stamped) before the failure shows
    (cli.cwd / "invoke.yaml").write_text(
        "cannbuild:\n  mirrors:\n"
        '    "https://gitcode.com/cann/ops-transformer": "file:///nonexistent/ops-transformer"\n'
    )
    proc = cli("install")
    assert proc.returncode == 4, proc.stderr
    assert "git clone of file:///nonexistent/ops-transformer.git failed" in proc.stderr
    assert started_steps(proc.stderr) == ["opbase-build", "opbase-install"]
    assert cli.stamp("opbase-install") is not None
    assert not cli.lock.exists()  # resolution never finished
    (cli.cwd / "invoke.yaml").unlink()
    proc = cli("install")
    assert proc.returncode == 0, proc.stderr
    assert started_steps(proc.stderr) == ["ops-transformer-build", "ops-transformer-install"]
    assert cli.lock.is_file()


def test_a_step_waiting_for_its_sources_says_so(cli, tmp_path):
    # git's ext:: transport holds ops-transformer's fetch until the test opens a gate:
    # no timing is assumed, the order is forced
    mirror = cli.sandbox / "mirror/cann/ops-transformer.git"
    gate = tmp_path / "gate"
    slow = f"ext::sh -c while% [% !% -e% {gate}% ];% do% sleep% 0.1;% done;%S% {mirror}"
    (cli.cwd / "invoke.yaml").write_text(
        f'cannbuild:\n  mirrors:\n    "https://gitcode.com/cann/ops-transformer.git": "{slow}"\n'
    )
    env = cli.env(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="protocol.ext.allow")
    proc = cli.popen("install", env={**env, "GIT_CONFIG_VALUE_0": "always"})
    waiting = "ops-transformer-build: waiting for the ops-transformer sources to be fetched"
    lines = []
    with proc:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.rstrip("\n").split("] ", 1)[-1]
            lines.append(line)
            if line == waiting:
                gate.touch()
        proc.wait(timeout=600)
    assert proc.returncode == 0, "\n".join(lines)
    assert waiting in lines
    # opbase was built during the wait, and a short wait (opbase's own fetch) is not news
    started = next(i for i, line in enumerate(lines) if line.startswith("opbase-build: started"))
    assert started < lines.index(waiting)
    assert not any("opbase-build: waiting" in line for line in lines)


def test_locked_refuses_drift_and_names_it(cli):
    assert cli("fetch").returncode == 0
    lock = cli.lock
    lock.write_text(lock.read_text().replace('soc = "ascend910b"', 'soc = "ascend910_93"'))
    proc = cli("build", "--locked")
    assert proc.returncode == 6
    assert "soc: the lock says ascend910_93, this run builds for ascend910b" in proc.stderr
    assert cli("lock").returncode == 0
    assert cli("build", "--locked").returncode == 0


def test_locked_refuses_a_recipe_changed_since_the_lock(cli):
    """The lock records the recipe's sha256: a recipe edited (or shipped anew by an upgraded
    cannbuild) may build other steps, flags or sources than the lock was made for."""
    from cannbuild.resources import data_dir

    assert cli("fetch").returncode == 0
    train = ".".join(cli.cann.split(".")[:2])
    folder = cli.cwd / "cannbuild-recipes"  # the project's recipe, in place of cannbuild's
    folder.mkdir()
    text = (data_dir("recipes") / f"{train}.toml").read_text()
    (folder / f"{train}.toml").write_text(text + "\n# edited by hand\n")
    proc = cli("build", "--locked")
    assert proc.returncode == 6, proc.stderr
    assert f"recipe: cann-{train} has changed since the lock was made" in proc.stderr
    assert cli("lock").returncode == 0
    assert cli("build", "--locked").returncode == 0


def test_a_locked_commit_the_repository_does_not_have_is_drift_naming_the_lock(cli):
    assert cli("fetch").returncode == 0
    text = cli.lock.read_text()
    commit = next(
        line.split('"')[1]
        for line in text.splitlines()
        if line.startswith("commit") and len(line.split('"')) > 1
    )
    gone = commit[:-1] + ("0" if commit[-1] != "0" else "1")  # a commit no repository has
    cli.lock.write_text(text.replace(commit, gone, 1))
    proc = cli("setup", "--locked")
    assert proc.returncode == 6 and "Traceback" not in proc.stderr, proc.stderr
    assert "pins" in proc.stderr and gone[:12] in proc.stderr and "does not have" in proc.stderr


def test_locked_notices_a_moved_tag(cli_for, tmp_path):
    import shutil

    from conftest import Cli

    own = tmp_path / "sandbox-copy"
    shutil.copytree(cli_for("A2-8.5.0").sandbox, own, symlinks=True)
    cli = Cli(tmp_path / "w", own, "A2", "8.5.0")
    cli.cwd.mkdir()
    # a copied sandbox's hard-coded paths point at the original; only its mirror matters here
    assert cli("fetch").returncode == 0
    repo = own / "mirror/cann/ops-transformer.git"
    subprocess.run(
        # its own identity: an annotated tag needs one, and a clean machine has none
        [
            *("git", "-c", "user.name=t", "-c", "user.email=t@t.invalid"),
            *("tag", "-f", "-a", "v8.5.0", "-m", "moved", "master"),
        ],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    proc = cli("fetch", "--locked")
    assert proc.returncode == 6
    assert "tag v8.5.0 moved from" in proc.stderr


def test_offline_bundle_round_trip_without_network(cli, tmp_path):
    assert cli("fetch").returncode == 0
    bundle = tmp_path / "cann-sources.tar"
    assert cli("bundle", str(bundle), sandbox=False).returncode == 0
    from conftest import Cli

    air_gapped = Cli(tmp_path / "air", cli.sandbox, "A2", "8.5.0")
    air_gapped.cwd.mkdir()
    (air_gapped.cwd / "invoke.yaml").write_text(
        'cannbuild:\n  mirrors:\n    "https://gitcode.com/": "https://mirror.invalid/"\n'
    )
    proc = air_gapped("build", "--offline")
    assert proc.returncode == 8
    # the first thing that would download is refused, named as the mirror rewrote it
    assert re.search(r"offline mode: \w+ https://mirror\.invalid/\S+ would need", proc.stderr)
    assert not air_gapped.lock.exists()
    proc = air_gapped("install", "--offline", "--bundle", str(bundle))
    assert proc.returncode == 0, proc.stderr
    assert air_gapped.lock.is_file()
    assert air_gapped("install", "--offline").returncode == 0  # the lock and caches now suffice


def test_two_builds_on_one_workspace_never_interleave(cli):
    first = cli.popen("install")
    info = cli.ws / ".lock.info"
    deadline = time.monotonic() + 60
    while not info.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    second = cli("build")
    assert second.returncode == 7
    assert f"in use by pid {first.pid}" in second.stderr
    waiting = cli.popen("build", "--wait")
    first.communicate(timeout=300)
    assert first.returncode == 0
    _out, err = waiting.communicate(timeout=300)
    assert waiting.returncode == 0
    assert "waiting for pid" in err and started_steps(err) == []


def interrupt_in_cmake(cli, proc, cache_before):
    """SIGINT `proc` once its ops-transformer-build shows cmake at work; its stderr."""
    cli.wait_for_cmake(proc, cache_before)
    proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=60)[1]


def test_ctrl_c_leaves_no_stamp_and_the_next_run_resumes(cli):
    assert cli("build").returncode == 0
    cache = cli.cmake_cache()
    proc = cli.popen("build", "--force", "ops-transformer-build")
    before = cli.stamp("ops-transformer-build")["finished"]
    err = interrupt_in_cmake(cli, proc, cache)
    assert proc.returncode == 130, err
    assert "interrupted during ops-transformer-build" in err
    stamp = cli.stamp("ops-transformer-build")
    assert stamp is not None and stamp["finished"] == before  # the old stamp, not a new one
    assert not list(
        (cli.ws / "src/ops-transformer/build_out").glob("*.run")
    )  # cleared before the rerun
    proc = cli("build")
    assert proc.returncode == 0 and started_steps(proc.stderr) == ["ops-transformer-build"]
    said = " ".join(proc.stderr.split())
    assert "was interrupted during ops-transformer-build" in said  # and the rerun says so


def test_ctrl_c_in_a_cold_build_keeps_the_lock_its_fetches_resolved(cli):
    err = interrupt_in_cmake(cli, cli.popen("install"), None)
    assert "interrupted during ops-transformer-build" in err
    assert cli.lock.is_file()  # every repo was ready before the interrupt
    assert cli("install", "--locked").returncode == 0


def test_credentials_never_reach_plans_logs_or_errors(cli):
    (cli.cwd / "invoke.yaml").write_text(
        'cannbuild:\n  mirrors:\n    "https://example.invalid/": "https://alice:s3cret@mirror.invalid/"\n'
    )
    plan = cli("plan", "--json")
    assert plan.returncode == 0 and "s3cret" not in plan.stdout
    assert "https://***@mirror.invalid/" in plan.stdout
    assert cli("build").returncode == 0
    for log in (cli.ws / "logs").rglob("*.log"):
        assert "s3cret" not in log.read_text()


def test_a_user_recipe_without_code_and_a_rejected_flag_digest(cli):
    from cannbuild.resources import data_dir

    recipe = (data_dir("recipes") / "8.5.toml").read_text()
    custom = cli.cwd / "cannbuild-recipes"
    custom.mkdir()
    (custom / "8.5.toml").write_text(recipe.replace('name = "cann-8.5"', 'name = "team-8.5"'))
    templates = cli.cwd / "debug.toml"
    (templates).write_text(
        recipe.replace(
            'command = "steps/ops-transformer-build.j2"',
            'command = "steps/ops-transformer-debug.j2"',
        )
    )
    plan = json.loads(cli("plan", "--json").stdout)
    assert plan["recipe"] == "team-8.5"
    # the recipe brings its own step template, beside it (cannbuild's folder is untouched)
    step_template = data_dir("templates") / "steps" / "ops-transformer-build.j2"
    debug_template = cli.cwd / "steps" / "ops-transformer-debug.j2"
    debug_template.parent.mkdir()
    debug_template.write_text(step_template.read_text().replace("--pkg", "--pkg --debug"))
    proc = cli("build", "--recipe", str(templates))
    assert not (data_dir("templates") / "steps" / "ops-transformer-debug.j2").exists()
    assert proc.returncode == 4
    assert "printed its help and exited" in proc.stderr


def test_container_run_line_for_the_emulated_a3_host(cli_for, tmp_path):
    cli = cli_for("A3-9.0.0")
    proc = cli("container-run")
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip()
    assert line.startswith("docker run --rm -it --device /dev/davinci0 --device /dev/davinci1 ")
    assert line.count("--device /dev/davinci") == 17  # 16 dies + davinci_manager
    assert "--device /dev/devmm_svm --device /dev/hisi_hdc" in line
    assert "-v /usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/" in line
    assert line.endswith("quay.io/ascend/cann:9.0.0-a3-ubuntu22.04-py3.11 bash")
    no_engines = path_without_engines(tmp_path / "bin")
    # c++ found elsewhere on this PATH makes another sandbox (its key holds the compiler's
    # path): one of its own, as the shared one is in use by the run
    cli.sandbox = tmp_path / "sandbox"
    proc = cli("container-run", "--exec", env=cli.env(PATH=no_engines))
    assert proc.returncode == 9, proc.stderr
    assert "no container engine answers here" in proc.stderr
    assert line.replace(" -it ", " -i ") in proc.stderr  # no terminal here: -t would be refused


def test_an_unknown_validation_case_fails_before_any_build(cli):
    proc = cli("setup", "--cases", "fp32_bsh_s128_d64_gqa,fp32_bhs_s128")
    assert proc.returncode == 2, proc.stderr
    assert "--cases 'fp32_bhs_s128' is not a validation case" in proc.stderr
    assert "fp32_bsh_s128_d64_gqa" in proc.stderr  # the list of cases to pick from
    assert started_steps(proc.stderr) == [] and not (cli.ws / "stamps").exists()
