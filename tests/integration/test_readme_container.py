"""The README's set-up block, and each of its torch fallbacks, run as written in a clean
Debian container with an empty pip configuration, to `validation: PASS`.

The reader the test plays reaches PyPI and Debian, maybe not download.pytorch.org, and has
no pip settings at all (PIP_CONFIG_FILE=/dev/null, no PIP_* variable; this machine's are
never forwarded): for torch only what the README tells them to provide, the wheel folder its
`torch-download` block makes on a machine that reaches the index (run here, on the test's
machine, with its own pip settings: the other machine).  In a container from the local Debian
base (tests/container/make-base), with `bash -e` (a reader stops at the first error):

1. the set-up block as written: where the CPU index answers it ends with PASS; where it does
   not, it must stop at the torch line saying `No matching distribution found` for the
   `+cpu` build (never PyPI's CUDA one), before `cannbuild setup`;
2. each fallback (`torch-folder`, then after 3. `torch-file`) in a fresh venv made by the
   block's own lines, to `validation: PASS` with torch 2.13.0+cpu, the validation run
   afresh (never reused from an earlier step: each step changes what it checks);
3. without torch (a fresh venv, no torch line): `validation: SKIPPED` naming torch.

Slow (apt, pip, the whole sandbox pipeline, three venvs); needs podman and the base.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest

from engines import TEST_BASE, podman_with_test_base
from readmeblocks import ROOT, marked_block, torch_line

WHY_NOT = podman_with_test_base()
pytestmark = [
    pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT)),
    # one podman build at a time, on the worker that runs the image test too
    pytest.mark.xdist_group("podman"),
]
# How the reader's shell runs each script (`-x` with the time: a failure shows its line, and
# the log where the minutes went; BASH_ENV sets PS4 and is gone before the script's first
# line, so nothing the block starts sees it): as root (no sudo in the image, as in a
# container), or as a user who may sudo (sudo installed first, apt's lists emptied again so
# the block's own `apt-get update` is needed).
READERS = {
    "root": ("", "cd ~/cannbuild && BASH_ENV=~/readme/trace.sh bash -e -x ~/readme/$script"),
    "sudo-user": (
        "apt-get update -qq && apt-get install -y -qq sudo >/dev/null\n"
        "rm -rf /var/lib/apt/lists/*\n"
        "useradd -m -s /bin/bash reader\n"
        "echo 'reader ALL=(ALL) NOPASSWD:ALL' >/etc/sudoers.d/reader\n"
        "cp -a /root/cannbuild /root/readme /home/reader/ && chown -R reader: /home/reader\n",
        'su reader -c "cd ~/cannbuild && BASH_ENV=~/readme/trace.sh exec bash -e -x ~/readme/$script"',
    ),
}
# What the scripts made, removed before podman commits the layer (gigabytes of venv and
# workspace to copy for nothing): the image is removed right after.
LEFT = (
    "~root/cannbuild-venv ~root/cannbuild/.cannbuild /home/reader /var/lib/apt/lists /var/cache/apt"
)
# The README's torch fallbacks (marked blocks), each run in a fresh venv.
FALLBACKS = ("torch-folder", "torch-file")


# The suite runs the root reader (a container's, the case) to keep the full suite
# within its minutes; the sudo prefix itself is tested both ways in tests/unit/test_readme.py.
# CANNBUILD_TEST_README_READERS=all runs the sudo user too (about 3 more minutes).
EVERY_READER = os.environ.get("CANNBUILD_TEST_README_READERS") == "all"


@pytest.mark.parametrize(
    "reader",
    [
        r
        if r == "root" or EVERY_READER
        else pytest.param(
            r,
            marks=pytest.mark.skip(
                reason="the sudo reader runs with CANNBUILD_TEST_README_READERS=all "
                "(3 min; the sudo prefix is unit-tested both ways)"
            ),
        )
        for r in sorted(READERS)
    ],
)
def test_the_readme_setup_block_and_each_torch_fallback_run_as_written_with_no_pip_settings(
    tmp_path, reader
):
    block = marked_block("setup")
    ctx = tmp_path / "ctx"
    _copy_checkout(ctx / "cannbuild")
    _download_wheels(ctx / "cannbuild", tmp_path)
    steps = _steps(block)
    for name, script in steps.items():
        (ctx / f"{name}.sh").write_text(script)
    (ctx / "trace.sh").write_text("PS4='+ [$(date +%T)] '\nunset BASH_ENV\n")
    (ctx / "run.sh").write_text(_script(list(steps), *READERS[reader]))
    names = " ".join(f"{n}.sh" for n in steps)
    (ctx / "Containerfile").write_text(
        f"FROM {TEST_BASE}\n"
        "COPY cannbuild /root/cannbuild\n"
        f"COPY {names} trace.sh run.sh /root/readme/\n"
        "RUN bash /root/readme/run.sh </dev/null\n"
    )
    began = time.monotonic()
    proc = _build(ctx, tmp_path / "iid")
    took = time.monotonic() - began
    out = proc.stdout
    (tmp_path / "container.log").write_text(out)  # the whole run, kept with the test's tmp_path
    tail = f"after {took:.0f} s (log: {tmp_path / 'container.log'}):\n" + out[-6000:]
    assert proc.returncode == 0, tail
    said = _by_step(out)
    assert list(said) == list(steps), tail
    code, text = said["setup"]
    if code == 0:  # the CPU index answered: the block alone reaches PASS
        assert "validation: PASS" in text and "torch-2.13.0+cpu" in text, tail
    else:  # it stopped at the torch line, saying why, and never took PyPI's CUDA torch
        assert "No matching distribution found for torch==2.13.0+cpu" in text, tail
        assert not re.search(r"^\+ \[[\d:]+\] cannbuild setup", text, re.M), tail
        assert "nvidia" not in text, tail
    for name in FALLBACKS:
        code, text = said[name]
        assert code == 0 and "validation: PASS (" in text, f"{name}: {tail}"
        assert "reused from run" not in text, f"{name}: {tail}"
        assert "Successfully installed" in text and "torch-2.13.0+cpu" in text, f"{name}: {tail}"
    code, text = said["no-torch"]
    assert code == 0, tail
    verdict = next(x for x in text.splitlines() if x.startswith("validation: "))
    assert verdict.startswith("validation: SKIPPED") and "torch" in text.split(verdict, 1)[1], tail


def _steps(block: str) -> Dict[str, str]:
    """The scripts the reader runs: the block, then each fallback and the route without
    torch, each in a fresh venv made by the block's own venv and `pip install -e .` lines."""
    lines = block.splitlines()
    words = [shlex.split(x, comments=True) for x in lines]
    fresh = ["rm -rf ~/cannbuild-venv"] + [
        x
        for x, w in zip(lines, words)
        if w[:3] == ["python3", "-m", "venv"] or w == ["pip", "install", "-e", "."]
    ]
    assert len(fresh) == 3, fresh  # the venv line and the install line
    steps = {"setup": block}
    folder, by_file = FALLBACKS
    steps[folder] = "\n".join([*fresh, marked_block(folder)]) + "\n"
    # between the two fallbacks, so that each PASS is a validation run afresh
    steps["no-torch"] = "\n".join([*fresh, lines[-1]]) + "\n"
    steps[by_file] = "\n".join([*fresh, marked_block(by_file)]) + "\n"
    assert torch_line(block) not in steps["no-torch"]
    return steps


def _download_wheels(checkout: Path, tmp_path: Path) -> None:
    """The README's `torch-download` block, run on this machine (the reader's other machine,
    with its own pip settings), into `wheels/` at the top of the checkout the container gets."""
    script = marked_block("torch-download")
    pip = f"{shlex.quote(sys.executable)} -m pip"
    proc = subprocess.run(
        ["bash", "-e", "-c", re.sub(r"^pip ", pip + " ", script, flags=re.MULTILINE)],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0 or not list((checkout / "wheels").glob("torch-2.13.0+cpu-*.whl")):
        why = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
        pytest.skip(f"the README's torch-download block cannot get the CPU torch here: {why}")


def _script(steps: List[str], prepare: str, run: str) -> str:
    """Root's shell in the container: an empty pip configuration, then the reader's shell
    running each step as written, each step's end and exit code marked."""
    parts = [
        "set -u",
        # no pip configuration at all: no file (the base has /etc/pip.conf), no PIP_* variable
        "export PIP_CONFIG_FILE=/dev/null",
        'for v in $(compgen -e | grep "^PIP_" | grep -v "^PIP_CONFIG_FILE$"); do unset "$v"; done',
        prepare.rstrip("\n"),
    ]
    for step in steps:
        parts += [
            f"script={step}.sh",
            f'echo "readme-test: {step} starts at $(date +%T)"',
            f"if {run}; then code=0; else code=$?; fi",
            f'echo "readme-test: {step} exited $code at $(date +%T)"',
        ]
    parts += [f"rm -rf {LEFT}", "exit 0"]
    return "\n".join(p for p in parts if p) + "\n"


_MARK = re.compile(
    r"^readme-test: (?P<step>[\w-]+) (?P<what>starts at|exited (?P<code>\d+) at) ", re.M
)


def _by_step(out: str) -> Dict[str, tuple[int, str]]:
    """Each step's exit code and output, in the order they ran."""
    found: Dict[str, tuple[int, str]] = {}
    begun = 0
    for m in _MARK.finditer(out):
        if m.group("what").startswith("starts"):
            begun = m.end()
        else:
            found[m.group("step")] = (int(m.group("code")), out[begun : m.start()])
    return found


def _build(ctx: Path, iidfile: Path) -> subprocess.CompletedProcess:
    """`podman build` of the context (chroot isolation: no OCI runtime needed, as in the
    image test), the image removed again whatever happened."""
    env = dict(os.environ, BUILDAH_ISOLATION="chroot")
    cmd = [
        "podman",
        "build",
        "--no-cache",
        "--layers=false",
        "--force-rm",
        f"--iidfile={iidfile}",
    ]
    try:
        proc = subprocess.run(
            [*cmd, "-f", str(ctx / "Containerfile"), str(ctx)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            env=env,
            timeout=3600,
        )
    finally:
        image = iidfile.read_text().strip() if iidfile.exists() else ""
        if image:
            subprocess.run(["podman", "rmi", "-f", image], capture_output=True, timeout=300)
    return proc


def _copy_checkout(dest: Path) -> None:
    """The checkout as a reader has it: tracked and new files, not what .gitignore ignores
    (venvs, workspaces, caches), so the container builds only from the sources."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    for rel in filter(None, listed.stdout.decode().split("\0")):
        src = ROOT / rel
        if src.is_file() or src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel, follow_symlinks=False)
