"""The stand-in build.sh scripts behave like the real ones at each pinned ref.

Each case was checked against the real opbase / ops-transformer build.sh at the ref
(ops-transformer: the 8.3 pin c29bc10, v8.5.0, v9.0.0; opbase: 868d751, v8.5.0,
v9.0.0): what it accepts, what it exits with, where its output goes.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict

import pytest
from conftest import base_env, lay_host_side, toolkit_env

from cannbuild.sandbox import SandboxSpec, create_sandbox, load_info

REFS = {"8.3": None, "v8.5.0": "v8.5.0", "v9.0.0": "v9.0.0"}
NO_CANN = "Please set the toolkit package installation directory"
HELP = "build script for ops-transformer repository"


def checkout(sandbox: Path, repo: str, ref: str, dest: Path) -> Path:
    bare = sandbox / "mirror" / "cann" / f"{repo}.git"
    subprocess.run(["git", "clone", "-q", str(bare), str(dest)], check=True)
    if ref == "8.3":  # the first commit: master as of November 2025
        ref = subprocess.run(
            ["git", "rev-list", "--max-parents=0", "HEAD"],
            cwd=dest,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    subprocess.run(
        ["git", "-c", "advice.detachedHead=false", "checkout", "-q", ref], cwd=dest, check=True
    )
    return dest


def run(dest: Path, *args: str, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "build.sh", *args], cwd=dest, env=env, capture_output=True, text=True, timeout=600
    )


# (ref, flag, accepted): accepted flags reach the CANN lookup; the others print the help
OPS_TRANSFORMER_FLAGS = [
    ("8.3", "--debug", True),
    ("8.3", "--cann_3rd_lib_path=/tmp", False),
    ("8.3", "--bogus-flag", False),
    ("v8.5.0", "--cann_3rd_lib_path=/tmp", True),
    ("v8.5.0", "--debug", False),  # documented, not parsed
    ("v8.5.0", "--tiling_key=1", True),
    ("v8.5.0", "--bogus-flag", False),
    ("v9.0.0", "--tiling_key=1", False),
    ("v9.0.0", "--noaicpu", True),
    ("v9.0.0", "--simulator=camodel", True),
    ("v9.0.0", "--vendor_name=acme", True),
    ("v9.0.0", "--bogus-flag", False),
]


@pytest.mark.parametrize("ref,flag,accepted", OPS_TRANSFORMER_FLAGS)
def test_ops_transformer_accepts_and_exits_like_the_real_script(
    sandboxes, tmp_path, ref, flag, accepted
):
    dest = checkout(sandboxes["A2-8.5.0"], "ops-transformer", ref, tmp_path / "ot")
    proc = run(dest, flag, env=base_env(HOME=str(tmp_path)))
    assert (NO_CANN in proc.stdout) is accepted, proc.stdout + proc.stderr
    assert (HELP in proc.stdout) is not accepted
    # 8.3 pipes everything through gawk without pipefail: it exits 0 whatever happened
    assert proc.returncode == (0 if ref == "8.3" else 1)


@pytest.mark.parametrize("ref", list(REFS))
def test_help_anywhere_wins_and_exits_0(sandboxes, tmp_path, ref):
    dest = checkout(sandboxes["A2-8.5.0"], "ops-transformer", ref, tmp_path / "ot")
    proc = run(dest, "--bogus-flag", "-h", env=base_env())
    assert proc.returncode == 0 and HELP in proc.stdout


@pytest.mark.parametrize("ref", list(REFS))
def test_every_ops_transformer_build_sh_exits_127_without_gawk(sandboxes, tmp_path, ref):
    dest = checkout(sandboxes["A2-8.5.0"], "ops-transformer", ref, tmp_path / "ot")
    bin_dir = tmp_path / "bin"  # the usual tools, as on Debian where awk is mawk
    bin_dir.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        for tool in os.listdir(folder) if os.path.isdir(folder) else ():
            if tool != "gawk" and not (bin_dir / tool).exists():
                (bin_dir / tool).symlink_to(os.path.join(folder, tool))
    proc = run(dest, "--bogus-flag", env=base_env(PATH=str(bin_dir)))
    assert proc.returncode == 127
    assert "gawk: command not found" in proc.stderr


def test_opbase_takes_s_from_v8_5_0_on(sandboxes, tmp_path):
    sandbox = sandboxes["A2-8.5.0"]
    for ref, accepted in (("8.3", False), ("v8.5.0", True), ("v9.0.0", True)):
        dest = checkout(sandbox, "opbase", ref, tmp_path / f"opbase-{ref}")
        proc = run(dest, "-s", "-h", env=base_env())
        assert (proc.returncode == 0) is accepted, (ref, proc.stdout + proc.stderr)


@pytest.mark.parametrize("ref", list(REFS))
def test_soc_alone_builds_nothing_after_the_env_check_and_clean_and_exits_0(
    sandboxes, tmp_path, ref
):
    sandbox = sandboxes["A2-8.5.0"]
    dest = checkout(sandbox, "ops-transformer", ref, tmp_path / "ot")
    (dest / "build").mkdir()
    (dest / "build" / "stale").write_text("from an earlier run\n")
    for soc in ("ascend910b", "ascend999"):
        proc = run(dest, f"--soc={soc}", env=toolkit_env(sandbox))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert not (dest / "build" / "stale").exists()  # clean ran
        assert not list(dest.glob("build_out/*.run"))
        assert "cmake config" not in proc.stdout


@pytest.mark.parametrize("ref", list(REFS))
def test_run_example_checks_the_environment_and_cleans_first(sandboxes, tmp_path, ref):
    sandbox = sandboxes["A2-8.5.0"]
    dest = checkout(sandbox, "ops-transformer", ref, tmp_path / "ot")
    (dest / "build").mkdir()
    (dest / "build" / "stale").write_text("from an earlier run\n")
    fake = tmp_path / "cann"  # a CANN root whose setenv.bash puts no bisheng on PATH
    (fake / "bin").mkdir(parents=True)
    (fake / "bin" / "setenv.bash").write_text("")
    args = ["--run_example", "flash_attention_score", "eager", "cust", "--vendor_name=custom"]
    proc = run(dest, *args, "-p", str(fake), env=base_env(PATH="/usr/bin:/bin"))
    assert "bisheng compilation tool not found" in proc.stdout
    assert "Start compile and run example file" not in proc.stdout
    assert proc.returncode == (0 if ref == "8.3" else 1)
    assert (dest / "build" / "stale").exists()  # the env check comes before clean


def test_pkg_without_ops_builds_the_built_in_package(sandboxes, tmp_path):
    sandbox = sandboxes["A2-8.5.0"]
    dest = checkout(sandbox, "ops-transformer", "v9.0.0", tmp_path / "ot")
    dest_opbase = dest / "third_party" / "opbase"
    checkout(sandbox, "opbase", "v9.0.0", dest_opbase)
    archive = next((sandbox / "mirror").rglob("makeself-release-2.5.0-patch1.tar.gz"))
    (dest / "third_party" / "pkg").mkdir(parents=True)
    shutil.copy2(archive, dest / "third_party" / "pkg" / archive.name)  # v9.0.0 looks here
    lay_host_side(sandbox, tmp_path / "host-side")  # its dlog, register, acl headers
    proc = run(dest, "--pkg", "--soc=ascend910b", "-j2", env=toolkit_env(sandbox))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    arch = os.uname().machine
    assert [p.name for p in dest.glob("build_out/*.run")] == [
        f"cann-910b-ops-transformer_9.0.0_linux-{arch}.run"
    ]


def test_v9_pipes_only_stdout_through_gawk_so_stderr_comes_first(sandboxes, tmp_path):
    dest = checkout(sandboxes["A2-8.5.0"], "ops-transformer", "v9.0.0", tmp_path / "ot")
    # --soc prints its warning on stdout, then -j fails on stderr: the stderr line reaches
    # the shared log first and unstamped, the held-back stdout line after it, stamped
    proc = subprocess.run(
        ["bash", "build.sh", "--soc=ascend910b", "-j"],
        cwd=dest,
        env=base_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1
    assert lines[0] == "Error: Invalid job number format: -j"
    warning = next(i for i, line in enumerate(lines) if "Warning: The current environment" in line)
    assert warning > 0 and lines[warning].startswith("[20")


def test_a_build_that_exits_0_without_a_package_fails(cli_for):
    # the 8.3 build.sh exits 0 whatever fails: only the missing package tells
    cli = cli_for("A2-8.3.RC2")
    proc = cli("build", env=cli.env(CANNBUILD_SANDBOX_FAULT="build-fail:ops-transformer"))
    assert proc.returncode == 4, proc.stderr
    assert "step ops-transformer-build FAILED (exit 0)" in proc.stderr
    assert "the step exited 0 but produced no cann-ops-transformer-custom_linux-" in proc.stderr
    assert "static assertion failed" in proc.stderr  # the first error, found in the log
    assert cli.stamp("ops-transformer-build") is None


def test_the_digest_shows_the_first_error_that_stderr_put_early_in_the_log(cli_for):
    cli = cli_for("A3-9.0.0")
    proc = cli("build", env=cli.env(CANNBUILD_SANDBOX_FAULT="build-fail:ops-transformer"))
    assert proc.returncode == 4
    digest = proc.stderr[proc.stderr.index("step ops-transformer-build FAILED") :]
    first = digest.split("first errors in the log:\n", 1)[1].split("\n  last ", 1)[0]
    number, text = first.splitlines()[0].strip().split(": ", 1)
    log = (cli.ws / "logs/latest/ops-transformer-build.log").read_text().splitlines()
    line = int(number.replace("line ", ""))
    # stderr usually lands ahead of gawk's block-buffered stdout, but where depends on how
    # much stdout came before it (paths, ccache): the digest names the first error with
    # its line wherever it landed (the unit test of first_errors pins "anywhere"); a line
    # that stdout made long is shortened in front (`...`), never where the error is
    assert text.removeprefix("...") in log[line - 1] and "error" in text
    # ... and that is the compiler's error the fault planted, the first thing that failed
    assert "build-fail:ops-transformer" in log[line - 1]
    planted = [i for i, text in enumerate(log, 1) if "error" in text and "build-fail:ops-" in text]
    assert planted[0] == line


def doctor_rows(cli, *args, env=None):
    proc = cli("doctor", "--json", *args, env=env)
    return {c["id"]: c for c in json.loads(proc.stdout)["checks"]}, proc


def test_the_sandbox_toolkit_has_what_the_builds_read(sandboxes, cli_for, tmp_path):
    for key, listed in (("A2-8.5.0", 3), ("A3-9.0.0", 2), ("A2-8.3.RC2", 3)):
        cli = cli_for(key, tmp_path / key)  # a workspace each
        rows, _ = doctor_rows(cli)
        # by hand: only what cannot be derived (opbuild, the kernel cmake; hcc where opbase builds)
        assert rows["recipe.toolkit_files"]["status"] == "pass", rows["recipe.toolkit_files"]
        assert f"all {listed} files" in rows["recipe.toolkit_files"]["detail"]
        # the rest is derived from the checkout, once there is one
        assert rows["recipe.derived"]["status"] == "skip"
        assert cli("fetch").returncode == 0
        rows, _ = doctor_rows(cli)
        derived = [r for r in rows.values() if r["id"].startswith("recipe.derived")]
        assert {r["status"] for r in derived} == {"pass"}, derived
        ot = rows["recipe.derived.ops-transformer-build"]["detail"]
        assert "toolkit headers flash_attention_score" in ot


def test_a_toolkit_missing_a_file_the_build_reads_is_refused_naming_component_and_package(
    cli_for, tmp_path
):
    cli = cli_for("A3-9.0.0")
    own = tmp_path / "sandbox"
    info = create_sandbox(SandboxSpec(dir=own, variant="A3", cann="9.0.0")).info
    cli.sandbox = own
    arch = os.uname().machine
    assert cli("fetch").returncode == 0  # lays the host side out: runtime's dlog_pub.h
    (info.toolkit / f"{arch}-linux/include/toolchain/dlog_pub.h").unlink()
    proc = cli("build")
    assert proc.returncode == 3
    assert "doctor check recipe.derived.module.dlog failed" in proc.stderr
    assert ": started (" not in proc.stderr
    rows, proc = doctor_rows(cli)
    assert proc.returncode == 1
    row = rows["recipe.derived.module.dlog"]
    assert row["status"] == "fail"
    assert "dlog_pub.h in" in row["detail"] and "CANN package runtime (dlog)" in row["detail"]
    assert "Finddlog.cmake" in row["detail"] and "install the cann package runtime" in (
        row["hint"].lower()
    )
    # 9.0 builds no opbase package unless asked, so only then does it need the hcc toolchain
    (info.toolkit / f"{arch}-linux/include/toolchain/dlog_pub.h").write_text("")
    (info.toolkit / "toolkit/toolchain/hcc/bin/aarch64-target-linux-gnu-g++").unlink()
    rows, _ = doctor_rows(cli)
    assert rows["recipe.toolkit_files"]["status"] == "pass"
    rows, _ = doctor_rows(cli, env=cli.env(CANNBUILD_OPTIONAL_STEPS="opbase-build"))
    assert rows["recipe.toolkit_files"]["status"] == "fail"
    assert "hcc cross toolchain" in rows["recipe.toolkit_files"]["detail"]


@pytest.mark.parametrize("key,subsystem", [("A2-8.5.0", "0x3003"), ("A3-9.0.0", "0x3001")])
def test_the_emulated_host_looks_like_a_real_one_to_other_tools(sandboxes, key, subsystem):
    sysroot = sandboxes[key] / "sysroot"
    info = load_info(sandboxes[key])
    devices = sorted((sysroot / "sys/bus/pci/devices").iterdir())
    assert {(d / "subsystem_vendor").read_text().strip() for d in devices} == {"0x19e5"}
    assert {(d / "subsystem_device").read_text().strip() for d in devices} == {subsystem}
    npu_smi = str(sysroot / "usr/local/bin/npu-smi")
    board = subprocess.run(
        [npu_smi, "info", "-t", "board", "-i", "0"], capture_output=True, text=True
    )
    assert f"Subsystem Device ID            : {subsystem.upper().replace('X', 'x')}" in board.stdout
    # npu-smi info -l: "NPU ID : n" blocks (what ascend-deployer and vllm-ascend read)
    listed = subprocess.run([npu_smi, "info", "-l"], capture_output=True, text=True).stdout
    ids = [line.split(":")[-1].strip() for line in listed.splitlines() if "NPU ID" in line]
    assert ids == [str(i) for i in range(8)]
    assert "Total Count                    : 8" in listed and "| NPU" not in listed
    arch = os.uname().machine
    ini = info.toolkit / f"{arch}-linux/data/platform_config/{info.chip}.ini"
    assert ini.is_file() and info.chip in ini.read_text()


def test_8_3_opbase_installs_op_common_under_pkg_inc_and_the_overlay_exposes_it(cli_for):
    cli = cli_for("A2-8.3.RC2")
    rows, _ = doctor_rows(cli)
    row = rows["recipe.opbase_headers"]
    assert row["status"] == "warn" and "looks under" in row["detail"] and "overlay" in row["detail"]
    proc = cli("build", "--install-into-toolkit")
    assert proc.returncode == 3 and "doctor check recipe.opbase_headers failed" in proc.stderr
    proc = cli("build")
    assert proc.returncode == 0, proc.stderr
    arch = os.uname().machine
    stage = next(p for p in (cli.ws / "stage").rglob(f"{arch}-linux") if p.is_dir())
    assert (stage / "pkg_inc/op_common").is_dir()
    assert (stage / "include/op_common").is_symlink()  # cannbuild's link, not opbase's install
    log = (cli.ws / "logs/latest/opbase-install.log").read_text()
    assert f"ops-transformer looks under {arch}-linux/include: exposed it there too" in log


def test_the_stand_in_cmake_stops_like_the_real_one_without_dlog(tmp_path):
    own = tmp_path / "sandbox"
    info = create_sandbox(SandboxSpec(dir=own, variant="A2", cann="8.5.0")).info
    arch = os.uname().machine
    # a sandbox no run has laid the host side out in yet has no runtime dlog headers
    assert not (info.toolkit / f"{arch}-linux/include/toolchain/dlog_pub.h").exists()
    dest = checkout(own, "ops-transformer", "v8.5.0", tmp_path / "ot")
    archive = next((own / "mirror").rglob("makeself-release-2.5.0-patch1.tar.gz"))
    (dest / "third_party/makeself").mkdir(parents=True)
    subprocess.run(  # v8.5.0 takes only an extracted third_party/makeself
        [
            "tar",
            "-xzf",
            str(archive),
            "-C",
            str(dest / "third_party/makeself"),
            "--strip-components=1",
        ],
        check=True,
    )
    (dest / "third_party/pkg").mkdir()
    shutil.copy2(archive, dest / "third_party/pkg" / archive.name)
    proc = run(dest, "--pkg", "--ops=flash_attention_score", "-j2", env=toolkit_env(own))
    assert proc.returncode == 1
    assert "Could NOT find dlog (missing: dlog_TRANSFORMER_INCLUDE_DIR)" in proc.stderr
