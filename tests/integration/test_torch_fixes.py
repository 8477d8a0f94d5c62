"""Every fix doctor and validate print for torch is run as printed, and the row it was
printed for then passes (issue 42: the old fix for PyPI's CUDA torch, `pip install
torch==2.13.0 --index-url .../cpu`, said "Requirement already satisfied" and changed nothing).

A fresh venv per case runs this checkout's cannbuild; small real wheels stand in for torch's
(tests/fakewheels.py: PyPI's untagged CUDA build with its nvidia-* wheel, the `+cpu` build,
torch_npu), pip installs them for real with an empty configuration and only the reader's
wheel folder, and `cannbuild doctor --json` reads the venv as it reads any.  Integration:
each case makes a venv and runs pip several times (seconds each).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest
from fakewheels import (
    empty_pip_env,
    installed,
    torch_npu_wheel,
    torch_wheel,
    venv_with_cannbuild,
    wheel,
)

from cannbuild.host.pystack import PythonStack
from cannbuild.validate import torchnpu

from hosttree import a2_host

# torch_npu 2.9.0 is paired with CANN 8.5.0 by Ascend/pytorch's table, so once torch is
# right every torch row of the 8.5.0 host passes (2.13.0 has no published pairing: a warn).
RELEASE = "2.9.0"


def commands(hint: str) -> List[str]:
    return re.findall(r"`([^`]+)`", hint)


def sh(command: str, env: Dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    return proc


def doctor_rows(env: Dict[str, str], tree, ws: Path) -> Dict[str, dict]:
    proc = subprocess.run(
        [
            "python",
            "-m",
            "cannbuild",
            "doctor",
            "--json",
            "--sysroot",
            str(tree.root),
            "-w",
            str(ws),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return {c["id"]: c for c in json.loads(proc.stdout)["checks"]}


@pytest.fixture
def reader(tmp_path):
    """The published wheels (PyPI's CUDA torch and its nvidia wheel, torch_npu, an older
    CPU torch), the CPU index's wheel in the reader's folder, and a fresh venv."""
    published = tmp_path / "published"
    torch_wheel(published, RELEASE, cuda="12.8", requires=["nvidia-cublas-cu12"])
    wheel(published, "nvidia-cublas-cu12", "12.8.4.1", {"nvidia/cublas/__init__.py": ""})
    torch_npu_wheel(published, RELEASE)
    torch_wheel(published, "2.8.0+cpu")
    cpu_index = tmp_path / "cpu-index"
    torch_wheel(cpu_index, f"{RELEASE}+cpu")
    bin_dir = venv_with_cannbuild(tmp_path / "venv")
    home = tmp_path / "home"
    home.mkdir()
    env = empty_pip_env(bin_dir, cpu_index, dict(os.environ, HOME=str(home)))
    return published, cpu_index, env


def install_published(env, published: Path, cwd: Path, *names: str) -> None:
    files = [str(next(published.glob(f"{n}-*.whl"))) for n in names]
    if files:
        sh("pip install --no-deps " + " ".join(files), env, cwd)


# (what the reader has, the row doctor fails or skips, the part of its detail that says why)
CASES = {
    "no-torch": ((), "torch", "torch not installed"),
    "pypi-cuda-torch": (
        (f"torch-{RELEASE}", "nvidia_cublas_cu12", "torch_npu"),
        "torch_npu",
        "is a CUDA 12.8 build beside torch_npu",
    ),
    "torch-npu-of-another-torch": (("torch-2.8.0+cpu", "torch_npu"), "torch_npu", "does not match"),
    "torch-npu-without-torch": (("torch_npu",), "torch_npu", "installed without torch"),
}


@pytest.mark.parametrize("route", ["index", "wheel-file"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_torch_fix_doctor_prints_turns_its_row_to_pass(tmp_path, tree, reader, case, route):
    """`index`: the fix's first command, where the CPU index (here the reader's wheel
    folder) is reachable; `wheel-file`: its fallback, `pip download` on another machine,
    the folder copied over and the wheel installed by its file name."""
    published, _, env = reader
    a2_host(tree)
    has, row, why = CASES[case]
    install_published(env, published, tmp_path, *has)
    before = doctor_rows(env, tree, tmp_path / "ws")[row]
    assert before["status"] in ("fail", "skip") and why in before["detail"], before
    run = commands(before["hint"])
    if route == "index":
        sh(run[0], env, tmp_path)
    else:
        other = tmp_path / "other-machine"
        other.mkdir()
        (download,) = [c for c in run if c.startswith("pip download")]
        sh(download, env, other)
        shutil.copytree(other / "wheels", tmp_path / "wheels")
        (by_file,) = [c for c in run if c.startswith("pip install wheels/")]
        sh(by_file, env, tmp_path)
    sh("".join(c for c in run if "pip uninstall" in c) or "true", env, tmp_path)
    after = doctor_rows(env, tree, tmp_path / "ws")
    assert after[row]["status"] == "pass", after[row]
    assert after["torch"]["status"] == "pass" and f"{RELEASE}+cpu" in after["torch"]["detail"]
    left = installed(sh("pip list --format=freeze", env, tmp_path).stdout)
    assert not [n for n in left if n.startswith("nvidia")], left  # the CUDA build's leftovers went


def test_validates_torch_fix_for_a_cuda_torch_replaces_it_and_its_nvidia_wheels(
    tmp_path, tree, reader
):
    """validate's torch_npu route says the same (cuda_fix): run as printed, doctor's row passes."""
    published, _, env = reader
    a2_host(tree)
    install_published(
        env, published, tmp_path, f"torch-{RELEASE}", "nvidia_cublas_cu12", "torch_npu"
    )
    stack = PythonStack(python=(3, 11), torch=RELEASE, torch_npu=RELEASE, torch_device="CUDA 12.8")
    run = commands(torchnpu.cuda_fix(stack))
    assert doctor_rows(env, tree, tmp_path / "ws")["torch_npu"]["status"] == "fail"
    sh(run[0], env, tmp_path)
    sh(next(c for c in run if "pip uninstall" in c), env, tmp_path)
    assert doctor_rows(env, tree, tmp_path / "ws")["torch_npu"]["status"] == "pass"
    assert "nvidia-cublas-cu12" not in installed(
        sh("pip list --format=freeze", env, tmp_path).stdout
    )


def test_the_old_fix_would_have_changed_nothing(tmp_path, reader):
    """The reason for the `+cpu` pin: without it pip keeps PyPI's CUDA torch."""
    published, _, env = reader
    install_published(env, published, tmp_path, f"torch-{RELEASE}")
    said = sh(f"pip install torch=={RELEASE}", env, tmp_path).stdout
    assert "Requirement already satisfied" in said


def test_the_readme_torch_line_takes_a_local_mirror_of_the_cpu_index_in_place_of_its_url(
    tmp_path, reader
):
    """The README's third way: a mirror of PyTorch's CPU index (a "simple" index on disk
    here) in place of the URL, PyPI (an empty index here) kept beside it."""
    from readmeblocks import marked_block, torch_line

    _, _, env = reader
    line = torch_line(marked_block("setup")).split("#")[0].strip()
    release = line.split("torch==", 1)[1].split()[0]  # 2.13.0+cpu
    mirror = tmp_path / "mirror" / "simple"
    (mirror / "torch").mkdir(parents=True)
    (tmp_path / "pypi").mkdir()
    wheel_file = torch_wheel(tmp_path / "files", release)
    (mirror / "torch" / "index.html").write_text(
        f'<html><body><a href="{wheel_file.as_uri()}">{wheel_file.name}</a></body></html>\n'
    )
    env = {k: v for k, v in env.items() if k not in ("PIP_NO_INDEX", "PIP_FIND_LINKS")}
    env["PIP_INDEX_URL"] = (tmp_path / "pypi").as_uri()
    sh(line.replace("https://download.pytorch.org/whl/cpu", mirror.as_uri()), env, tmp_path)
    assert f"torch=={release}" in sh("pip list --format=freeze", env, tmp_path).stdout
