"""The 9.1 stand-in ops-transformer builds its FlashAttention package offline when the
local copies are where the real 9.1 build looks for them (as cannbuild will put them),
with the build.sh flags cannbuild renders for 9.0; without the cann/cmake copy the
configure fails on the network (docs/upstream-9.1.md §3c-§4)."""

import shutil
import subprocess
from pathlib import Path

from conftest import lay_host_side, toolkit_env

from cannbuild.render.templates import command_env
from cannbuild.resources import data_dir
from cannbuild.sandbox.spec import OBS_FOLDER

DEAD_NETWORK = "file:///nonexistent-network/"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "advice.detachedHead=false", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def checkout_with_local_copies(sandbox: Path, dest: Path, cann_cmake: bool) -> Path:
    """ops-transformer at branch 9.1.0, with every source and archive its build takes from
    elsewhere already under third_party/ (the real places, CC@master-026 and OT@9.1.0)."""
    mirror = sandbox / "mirror"
    obs, releases = mirror / OBS_FOLDER, mirror / "cann-src-third-party"
    git(
        dest.parent,
        "clone",
        "-q",
        "-b",
        "9.1.0",
        str(mirror / "cann/ops-transformer.git"),
        dest.name,
    )
    third = dest / "third_party"
    third.mkdir()
    if cann_cmake:
        git(third, "clone", "-q", "-b", "master-026", str(mirror / "cann/cmake.git"), "cann-cmake")
    git(third, "clone", "-q", str(mirror / "cann/opbase.git"), "opbase")
    git(third, "clone", "-q", str(mirror / "cann/ops-tensor.git"), "ops-tensor")
    # as a copy from elsewhere: its `git fetch origin <pin>` needs the network, and fails
    git(
        third / "ops-tensor",
        "remote",
        "set-url",
        "origin",
        "https://gitcode.com/cann/ops-tensor.git",
    )
    for archive in (
        obs / "json/json-3.11.3.tar.gz",
        obs / "abseil-cpp/abseil-cpp-20230802.1.tar.gz",
        obs / "protobuf/protobuf-25.1.tar.gz",
        releases / "eigen/releases/download/5.0.0-h0.trunk/eigen-5.0.0.tar.gz",
    ):
        shutil.copy(archive, third)
    # the custom package's makeself is hard-wired at <src>/third_party/makeself
    makeself = releases / "makeself/releases/download/release-2.5.0-patch1.0"
    (third / "makeself").mkdir()
    archive = makeself / "makeself-release-2.5.0-patch1.tar.gz"
    subprocess.run(
        ["tar", "xzf", str(archive), "-C", "makeself", "--strip-components=1"],
        cwd=third,
        check=True,
    )
    return dest


def build_command(third_party: Path) -> str:
    """What cannbuild renders for the 9.0 ops-transformer build step."""
    template = command_env(data_dir("templates")).get_template("steps/ops-transformer-build.j2")
    return template.render(
        soc="ascend910_93",
        ops="flash_attention_score",
        vendor_name="custom",
        jobs=2,
        third_party_flag=True,
        third_party={"ops-transformer": str(third_party)},
    ).strip()


def pin(checkout: Path, module: str, name: str) -> str:
    text = (checkout / "cmake/third_party" / module).read_text()
    return text.split(f"set({name} ", 1)[1].split(")", 1)[0]


def test_the_9_1_stand_in_builds_offline_from_local_copies_and_fails_without_cann_cmake(
    sandboxes, tmp_path
):
    sandbox = sandboxes["A3-9.1.0"]
    lay_host_side(sandbox, tmp_path / "host-side")  # its dlog, register, acl headers
    env = toolkit_env(sandbox, CANNBUILD_SANDBOX_NETWORK=DEAD_NETWORK, HOME=str(tmp_path))
    ot = checkout_with_local_copies(sandbox, tmp_path / "ot", cann_cmake=True)
    command = build_command(ot / "third_party")
    assert command.startswith("bash build.sh --pkg --soc=ascend910_93 --ops=flash_attention_score")
    proc = subprocess.run(
        ["bash", "-c", command], cwd=ot, env=env, capture_output=True, text=True, timeout=600
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert list(ot.glob("build_out/cann-ops-transformer-custom_linux-*.run"))
    assert (
        f"cann-cmake master-026 (cannbuild sandbox stand-in) at {ot}/third_party/cann-cmake" in out
    )
    # the ops-tensor fetch found no network; the pin was checked out from the local objects
    assert "Git fetch failed (network unavailable?)" in out
    third = ot / "third_party"
    assert git(third / "ops-tensor", "rev-parse", "HEAD") == pin(
        ot, "ops-tensor.cmake", "OPTENSOR_TAG_ID"
    )
    assert git(third / "opbase", "rev-parse", "HEAD") == pin(ot, "opbase.cmake", "OPBASE_TAG_ID")

    bare = checkout_with_local_copies(sandbox, tmp_path / "bare", cann_cmake=False)
    proc = subprocess.run(
        ["bash", "-c", build_command(bare / "third_party")],
        cwd=bare,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert "Failed to clone repository: 'https://gitcode.com/cann/cmake.git'" in said
    assert "Could not resolve host: gitcode.com" in said
    assert not list(bare.glob("build_out/*.run"))
