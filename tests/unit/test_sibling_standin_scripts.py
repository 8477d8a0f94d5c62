"""The stand-in ops-math/ops-nn/ops-cv build.sh behave as the real scripts do on the command
lines that matter (siblings-facts §1), run for real but stopped before any build: a long
option's value must be glued with `=`, `--ccache` is refused, ops-math lists `debug` with no
arm and stops without building on a word getopts does not read, --soc must name a SoC
exactly, and ops-nn's install_deps.sh check wants pigz and dos2unix for --pkg (which the
emulated host provides)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest

from cannbuild.sandbox import releases as sandbox_data
from cannbuild.sandbox.siblings import render_sibling
from cannbuild.sandbox.toolkit import lay_out_host_tools

EXTRA = {
    "opbase_tag_id": "0" * 40,
    "cann_cmake_tag": "master-016",
    "cann_cmake_sha256": "2" * 64,
    "optensor_tag_id": "1" * 40,
    "optensor_api": "1",
}
# the build would start past this line: every option was taken
PARSED = "ASCEND_HOME_PATH is not set"


@pytest.fixture(scope="module")
def standins(tmp_path_factory) -> Dict[str, Path]:
    """Each sibling at branch 9.1.0 (no gawk needed), as the sandbox writes it."""
    root = tmp_path_factory.mktemp("siblings")
    out = {}
    for repo in ("ops-math", "ops-nn", "ops-cv"):
        history = sandbox_data.standins().history(repo)
        (root / repo).mkdir()
        render_sibling(root / repo, history[-1], EXTRA)
        out[repo] = root / repo
    return out


@pytest.fixture(scope="module")
def bare_path(tmp_path_factory) -> str:
    """A PATH with this machine's /usr/bin and /bin, but no pigz and no dos2unix."""
    folder = tmp_path_factory.mktemp("bin")
    for root in ("/usr/bin", "/bin"):
        for entry in sorted(Path(root).iterdir()):
            if entry.name not in ("pigz", "dos2unix") and not (folder / entry.name).exists():
                (folder / entry.name).symlink_to(entry)
    return str(folder)


def run(checkout: Path, args: List[str], path: str) -> subprocess.CompletedProcess:
    env = {"PATH": path, "HOME": str(checkout)}
    return subprocess.run(
        ["bash", "build.sh", *args], cwd=checkout, env=env, capture_output=True, text=True
    )


def build_args(checkout: Path, op: str) -> List[str]:
    third = checkout / "third_party"
    third.mkdir(exist_ok=True)
    return [
        "--pkg",
        "--soc=ascend910b",
        f"--ops={op}",
        "--vendor_name=custom",
        "-j2",
        f"--cann_3rd_lib_path={third}",
    ]


@pytest.mark.parametrize(
    "repo,op", [("ops-math", "segsum"), ("ops-cv", "upsample_bilinear2d")], ids=str
)
def test_the_rendered_flags_parse_and_the_two_word_forms_do_not(repo, op, standins):
    checkout = standins[repo]
    path = os.environ["PATH"]
    ok = run(checkout, build_args(checkout, op), path)
    assert ok.returncode == 1 and PARSED in ok.stdout, ok.stdout + ok.stderr
    ccache = run(checkout, [*build_args(checkout, op), "--ccache", "/usr/bin/ccache"], path)
    assert ccache.returncode == 1 and "Invalid long option: --ccache" in ccache.stdout
    split = run(checkout, ["--pkg", "--cann_3rd_lib_path", str(checkout)], path)
    assert split.returncode == 1 and "Invalid option: --cann_3rd_lib_path" in split.stdout
    soc = run(checkout, ["--pkg", "--soc=ascend9999", f"--ops={op}"], path)
    assert soc.returncode == 1 and "soc only support" in soc.stdout


def test_ops_math_refuses_debug_and_ignores_a_stray_word_without_building(standins):
    checkout = standins["ops-math"]
    path = os.environ["PATH"]
    debug = run(checkout, ["--pkg", "--debug"], path)
    assert debug.returncode == 1 and "Invalid option: --debug" in debug.stdout
    # getopts stops at `segsum`: "unparsed param", the usage, and exit 0 with nothing built
    stray = run(checkout, ["--pkg", "segsum", "--ops=segsum"], path)
    assert stray.returncode == 0 and "unparsed param: segsum --ops=segsum" in stray.stdout
    assert PARSED not in stray.stdout


def test_ops_nn_wants_pigz_and_dos2unix_for_a_package_and_the_sandbox_has_them(
    standins, bare_path, tmp_path
):
    checkout = standins["ops-nn"]
    args = build_args(checkout, "swi_glu")
    missing = run(checkout, args, bare_path)
    assert missing.returncode == 1
    assert " - dos2unix" in missing.stdout and " - pigz (required: >= 2.4)" in missing.stdout
    # without --pkg neither is looked for
    assert " - pigz" not in run(checkout, ["--ops=swi_glu"], bare_path).stdout
    tools = lay_out_host_tools(tmp_path)
    found = run(checkout, args, f"{bare_path}:{tools}")
    assert found.returncode == 1 and PARSED in found.stdout, found.stdout
    assert "Missing dependencies" not in found.stdout
