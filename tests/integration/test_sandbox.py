"""The emulated host: what doctor reads from it, and how its stand-in scripts behave."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest
from conftest import base_env

from cannbuild.host.npusmi import parse_board, parse_info, soc_from_board
from cannbuild.sandbox import SandboxSpec, create_sandbox, load_info

EXPECTED = {
    "A2-8.5.0": ("ascend910b", "A2", "Ascend910B3", 8, 8, "cann", "8.5.0"),
    "A3-9.0.0": ("ascend910_93", "A3", "Ascend910_9392", 8, 16, "cann", "9.0.0"),
    "A2-8.3.RC2": ("ascend910b", "A2", "Ascend910B3", 8, 8, "ascend-toolkit", "8.3.RC2"),
    "A3-9.1.0": ("ascend910_93", "A3", "Ascend910_9392", 8, 16, "cann", "9.1.0"),
}


@pytest.mark.parametrize("key", list(EXPECTED))
def test_doctor_reads_the_sandbox_as_the_host_it_emulates(sandboxes, key, tmp_path):
    soc, variant, chip, npus, dies, layout, version = EXPECTED[key]
    sysroot = sandboxes[key] / "sysroot"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cannbuild",
            "doctor",
            "--json",
            "--sysroot",
            str(sysroot),
            "--workspace",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=base_env(),
    )
    host = json.loads(proc.stdout)["host"]
    assert (host["soc"], host["variant"], host["chip"]) == (soc, variant, chip)
    assert (host["npu_count"], host["chip_count"]) == (npus, dies)
    assert (host["cann"]["layout"], host["cann"]["version"]) == (layout, version)
    checks = {c["id"]: c["status"] for c in json.loads(proc.stdout)["checks"]}
    assert (
        checks["toolkit"]
        == checks["bisheng"]
        == checks["hardware"]
        == checks["driver.compat"]
        == "pass"
    )


@pytest.mark.parametrize("key", ["A2-8.5.0", "A3-9.0.0"])
def test_npu_smi_agrees_with_the_pci_picture(sandboxes, key):
    sysroot = sandboxes[key] / "sysroot"
    info = parse_info(
        subprocess.run(
            [str(sysroot / "usr/local/bin/npu-smi"), "info"], capture_output=True, text=True
        ).stdout
    )
    pci = list((sysroot / "sys/bus/pci/devices").iterdir())
    assert len(info.chips) == len(pci)
    board = parse_board(
        subprocess.run(
            [str(sysroot / "usr/local/bin/npu-smi"), "info", "-t", "board", "-i", "0", "-c", "0"],
            capture_output=True,
            text=True,
        ).stdout
    )
    assert soc_from_board(board) == EXPECTED[key][2]


def written(root: Path) -> Dict[str, int]:
    """Every entry under `root` with its mtime: what a second creation would change."""
    return {str(p.relative_to(root)): p.lstat().st_mtime_ns for p in root.rglob("*")}


def test_creating_twice_is_a_no_op_and_a_half_made_sandbox_is_redone(tmp_path):
    spec = SandboxSpec(dir=tmp_path / "sb", variant="A2", cann="8.5.0")
    assert create_sandbox(spec).created
    before = written(tmp_path / "sb")
    assert not create_sandbox(spec).created
    assert written(tmp_path / "sb") == before  # a no-op: nothing was made again
    (tmp_path / "sb" / ".creating").write_text("interrupted\n")
    assert load_info(tmp_path / "sb") is None
    assert create_sandbox(spec).created
    assert load_info(tmp_path / "sb") is not None


def clone(sandbox: Path, repo: str, ref: str, dest: Path) -> Path:
    subprocess.run(
        ["git", "clone", "-q", str(sandbox / "mirror" / "cann" / f"{repo}.git"), str(dest)],
        check=True,
    )
    subprocess.run(
        ["git", "-c", "advice.detachedHead=false", "checkout", "-q", ref], cwd=dest, check=True
    )
    return dest


def first_commit(sandbox: Path, repo: str) -> str:
    out = subprocess.run(
        ["git", "rev-list", "--max-parents=0", "HEAD"],
        cwd=sandbox / "mirror" / "cann" / f"{repo}.git",
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


# (repo, ref or "first", flag, accepted?) — the flags cannbuild renders, and known traps.
# opbase only: ops-transformer's build.sh honours -h before any other flag, so its table
# (judged by where the run stops) is in test_standin_fidelity.py.
FLAG_TABLE = [
    ("opbase", "first", "-j8", True),
    ("opbase", "first", "--cann_3rd_lib_path=/tmp", True),
    ("opbase", "first", "--debug", True),
    ("opbase", "first", "--pkg", False),  # no --pkg in November 2025
    ("opbase", "v8.5.0", "--pkg", True),
    ("opbase", "v8.5.0", "--build-type=Debug", True),
    ("opbase", "v8.5.0", "--debug", False),
    ("opbase", "v9.0.0", "--pkg", True),
    ("opbase", "v9.0.0", "--foo", False),
    ("opbase", "first", "-s", False),
    ("opbase", "v8.5.0", "-s", True),  # system tests, accepted from v8.5.0
]


@pytest.mark.parametrize("repo,ref,flag,accepted", FLAG_TABLE)
def test_stand_in_build_sh_takes_the_flags_the_real_one_takes(
    sandboxes, tmp_path, repo, ref, flag, accepted
):
    sandbox = sandboxes["A2-8.5.0"]
    dest = clone(
        sandbox, repo, first_commit(sandbox, repo) if ref == "first" else ref, tmp_path / repo
    )
    # the flag first, then -h: an accepted flag reaches -h (exit 0), a rejected one exits 1
    proc = subprocess.run(
        ["bash", "build.sh", flag, "-h"], cwd=dest, capture_output=True, text=True, env=base_env()
    )
    assert (proc.returncode == 0) is accepted, proc.stdout + proc.stderr


def test_ops_transformer_build_sh_without_arguments_prints_help_and_exits_1(sandboxes, tmp_path):
    dest = clone(sandboxes["A2-8.5.0"], "ops-transformer", "v9.0.0", tmp_path / "ot")
    proc = subprocess.run(
        ["bash", "build.sh"], cwd=dest, capture_output=True, text=True, env=base_env()
    )
    assert proc.returncode == 1
    assert "build script for ops-transformer repository" in proc.stdout
    assert proc.stdout.startswith("[20")  # every stdout line carries the timestamp prefix


def test_ops_transformer_needs_cann_and_bisheng(sandboxes, tmp_path):
    sandbox = sandboxes["A2-8.5.0"]
    dest = clone(sandbox, "ops-transformer", "v8.5.0", tmp_path / "ot")
    env = base_env(HOME=str(tmp_path))
    proc = subprocess.run(
        ["bash", "build.sh", "--pkg", "--ops=flash_attention_score"],
        cwd=dest,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 1
    assert (
        "Please set the toolkit package installation directory through parameter -p|--package-path."
        in proc.stdout
    )
    fake = tmp_path / "cann"
    (fake / "bin").mkdir(parents=True)
    (fake / "bin" / "setenv.bash").write_text("")
    env["PATH"] = "/usr/bin:/bin"
    proc = subprocess.run(
        ["bash", "build.sh", "--pkg", "--ops=flash_attention_score", "-p", str(fake)],
        cwd=dest,
        capture_output=True,
        text=True,
        env=env,
    )
    assert "bisheng compilation tool not found" in proc.stdout


def test_custom_installer_without_a_target_says_so(installed, tmp_path):
    run = next((installed.ws / "src/ops-transformer/build_out").glob("*.run"))
    proc = subprocess.run(
        ["bash", str(run), "--quiet"],
        capture_output=True,
        text=True,
        env=base_env(TMPDIR=str(tmp_path)),
    )
    assert proc.returncode == 1
    assert "[ERROR] env ASCEND_OPP_PATH no exist" in proc.stdout


def test_run_packages_install_the_real_layout(installed, tmp_path):
    custom = next(
        (installed.ws / "src/ops-transformer/build_out").glob(
            "cann-ops-transformer-custom_linux-*.run"
        )
    )
    target = tmp_path / "opp"
    target.mkdir()
    proc = subprocess.run(
        ["bash", str(custom), f"--install-path={target}"],
        capture_output=True,
        text=True,
        env=base_env(TMPDIR=str(tmp_path)),
    )
    assert proc.returncode == 0, proc.stdout
    vendor = target / "vendors" / "custom_transformer"
    assert (vendor / "op_api/lib/libcust_opapi.so").is_file()
    assert (vendor / "op_api/include/aclnnop/aclnn_flash_attention_score.h").is_file()
    assert (vendor / "version.info").read_text().startswith("custom_opp_compiler_version=")
    assert (vendor / "op_impl/ai_core/tbe/kernel/ascend910b/flash_attention_score").is_dir()
    assert f"export ASCEND_CUSTOM_OPP_PATH={vendor}:" in (vendor / "bin/set_env.bash").read_text()
    opbase = next((installed.ws / "src/opbase/build_out").glob("cann-opbase_*_linux-*.run"))
    assert opbase.name.startswith(
        "cann-opbase_8.5.0-beta.1_linux-"
    )  # the v8.5.0 tag's own version string
    proc = subprocess.run(
        ["bash", str(opbase), "--full", f"--install-path={tmp_path / 'ob'}"],
        capture_output=True,
        text=True,
        env=base_env(TMPDIR=str(tmp_path)),
    )
    assert proc.returncode == 0 and "Ops_base package installed successfully!" in proc.stdout
    assert (tmp_path / "ob/cann/share/info/opbase/version.info").is_file()
    assert os.path.islink(tmp_path / "ob/cann/lib64")
    proc = subprocess.run(
        ["bash", str(opbase), "--full", "--fast"],
        capture_output=True,
        text=True,
        env=base_env(TMPDIR=str(tmp_path)),
    )
    assert proc.returncode == 1 and "Unsupported parameters [--fast]" in proc.stdout


def test_sandbox_create_from_the_command_line(tmp_path):
    def create(*args: str) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "cannbuild", "sandbox", "create", *args]
        return subprocess.run(argv, capture_output=True, text=True, env=base_env())

    proc = create("--dir", str(tmp_path / "sb"), "--variant", "A3", "--cann", "9.0.0")
    assert proc.returncode == 0, proc.stderr
    assert "sandbox created: A3 (Ascend910_9392) with CANN 9.0.0" in proc.stderr
    info = load_info(tmp_path / "sb")
    assert (info.variant, info.cann, info.soc) == ("A3", "9.0.0", "ascend910_93")
    assert len(list((tmp_path / "sb/sysroot/dev").glob("davinci[0-9]*"))) == 16
    # its help: a folder holding a sandbox of another variant or CANN is not replaced
    other = create("--dir", str(tmp_path / "sb"), "--variant", "A2")
    assert other.returncode == 2, other.stderr
    assert "is an A3 host with CANN 9.0.0" in other.stderr and "Traceback" not in other.stderr
    assert load_info(tmp_path / "sb").variant == "A3"
    # with neither flag it is the sandbox the folder holds, up to date
    again = create("--dir", str(tmp_path / "sb"))
    assert again.returncode == 0, again.stderr
    assert "sandbox already up to date: A3 (Ascend910_9392) with CANN 9.0.0" in again.stderr
    bad = create("--dir", str(tmp_path / "x"), "--cann", "8.4.0")
    assert (
        bad.returncode == 2
        and "--cann '8.4.0' is not a CANN release the sandbox can emulate" in bad.stderr
    )


def test_a_second_sandbox_unpacks_the_mirror_the_first_made_and_a_damaged_one_is_made_again(
    tmp_path,
):
    from cannbuild.sandbox import repos
    from cannbuild.sandbox.create import mirror_key
    from cannbuild.sandbox.files import CommandLog

    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}

    def lay(name: str) -> str:
        folder = tmp_path / name
        folder.mkdir()
        log = CommandLog(path=folder / "create.log")
        with pytest.MonkeyPatch.context() as patch:
            for key, value in env.items():
                patch.setenv(key, value)
            repos.lay_out_mirror(folder / "mirror", folder / "build", log, mirror_key())
        return log.path.read_text()

    def tags(name: str) -> str:
        bare = tmp_path / name / "mirror" / "cann" / "ops-transformer.git"
        return subprocess.run(
            ["git", "-C", str(bare), "show-ref", "--tags"], capture_output=True, text=True
        ).stdout

    first = lay("first")
    assert "$ git clone -q --bare" in first and "mirror made into" in first
    second = lay("second")
    assert "$ git" not in second and "mirror unpacked from" in second  # no git ran
    assert tags("second") == tags("first") and "v8.5.0" in tags("first")
    [tar] = (tmp_path / "xdg" / "cannbuild" / "mirror").glob("*/mirror.tar")
    damaged = bytearray(tar.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    tar.write_bytes(bytes(damaged))
    third = lay("third")
    assert "$ git clone -q --bare" in third and "mirror made into" in third
    assert tags("third") == tags("first")
