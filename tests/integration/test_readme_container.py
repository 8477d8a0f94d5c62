"""The README's first block runs as written in a clean Debian container, to `validation: PASS`.

It is the block a newcomer pastes first: apt-get update, the system packages, a venv, the
install, the CPU torch, `cannbuild setup --sandbox`.  Run with `bash -e` (a reader stops at
the first error) in a container from the local Debian base (tests/container/make-base: a
debootstrap minbase with python3), as root with no sudo; the checkout is copied in, and
this machine's pip settings come along (hostpip.py) so pip installs from the same indexes.

Where the README's torch line cannot get torch here (its index unreachable and no local
copy), the block runs without that line, as the README says to, and must end with
`validation: SKIPPED` naming torch; the test then reports itself skipped, saying PASS was
not proven.  Slow (apt, pip, the whole sandbox pipeline); needs podman and the base.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from engines import TEST_BASE, podman_with_test_base
from hostpip import for_container, pip_config_list, settings
from readmeblocks import ROOT, marked_block, pip_args, torch_line

WHY_NOT = podman_with_test_base()
pytestmark = [
    pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT)),
    # one podman build at a time, on the worker that runs the image test too
    pytest.mark.xdist_group("podman"),
]
TORCH_OK = "readme-test: torch can be had"
TORCH_NOT = "readme-test: torch cannot be had"
# How the reader's shell runs the block (`-x` with the time: a failure shows its line, and
# the log where the minutes went; BASH_ENV sets PS4 and is gone before the block's first
# line, so nothing the block starts sees it), after the probe:
# as root (no sudo in the image, as in a container), or as a user who may sudo (sudo
# installed first, apt's lists emptied again so the block's own `apt-get update` is needed).
READERS = {
    "root": ("", "cd ~/cannbuild && BASH_ENV=~/readme/trace.sh bash -e -x ~/readme/$block"),
    "sudo-user": (
        "apt-get update -qq && apt-get install -y -qq sudo >/dev/null\n"
        "rm -rf /var/lib/apt/lists/*\n"
        "useradd -m -s /bin/bash reader\n"
        "echo 'reader ALL=(ALL) NOPASSWD:ALL' >/etc/sudoers.d/reader\n"
        "cp -a /root/cannbuild /root/readme /home/reader/ && chown -R reader: /home/reader\n",
        'su reader -c "cd ~/cannbuild && BASH_ENV=~/readme/trace.sh exec bash -e -x ~/readme/$block"',
    ),
}
DONE = "readme-test: the block exited "
# What the block made, removed before podman commits the layer (gigabytes of venv and
# workspace to copy for nothing): the image is removed right after.
LEFT = (
    "~root/cannbuild-venv ~root/cannbuild/.cannbuild /home/reader /var/lib/apt/lists /var/cache/apt"
)


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
def test_the_readme_setup_block_runs_as_written_in_a_clean_debian_container(tmp_path, reader):
    block = marked_block("setup")
    line = torch_line(block)
    env, mounts = for_container(settings(pip_config_list()))
    ctx = tmp_path / "ctx"
    _copy_checkout(ctx / "cannbuild")
    (ctx / "block.sh").write_text(block)
    without = "".join(x + "\n" for x in block.splitlines() if x != line)
    (ctx / "block-without-torch.sh").write_text(without)
    (ctx / "trace.sh").write_text("PS4='+ [$(date +%T)] '\nunset BASH_ENV\n")
    (ctx / "run.sh").write_text(_script(env, pip_args(line), *READERS[reader]))
    (ctx / "Containerfile").write_text(
        f"FROM {TEST_BASE}\n"
        "COPY cannbuild /root/cannbuild\n"
        "COPY block.sh block-without-torch.sh trace.sh run.sh /root/readme/\n"
        "RUN bash /root/readme/run.sh </dev/null\n"
    )
    began = time.monotonic()
    proc = _build(ctx, tmp_path / "iid", mounts)
    took = time.monotonic() - began
    out = proc.stdout
    (tmp_path / "container.log").write_text(out)  # the whole run, kept with the test's tmp_path
    tail = f"after {took:.0f} s (log: {tmp_path / 'container.log'}):\n" + out[-6000:]
    assert proc.returncode == 0 and f"{DONE}0 " in out, tail
    if TORCH_OK in out:
        assert "validation: PASS" in out, tail
        # the CPU build, never PyPI's CUDA one
        assert "torch-2.13.0+cpu" in out, tail
        return
    # The README: without torch, setup still exits 0 and says SKIPPED, naming torch.
    assert TORCH_NOT in out, tail
    verdict = next(x for x in out.splitlines() if x.startswith("validation: "))
    assert verdict.startswith("validation: SKIPPED") and "torch" in out.split(verdict, 1)[1], tail
    why = next(x for x in out.splitlines() if x.startswith(TORCH_NOT))
    pytest.skip(
        f"the README's torch line cannot get torch here ({why[len(TORCH_NOT) :].strip(': ')}): "
        f"ran its fallback, which said validation: SKIPPED naming torch; PASS not proven"
        f" ({took:.0f} s)"
    )


def _script(env: Dict[str, str], torch_args: List[str], prepare: str, run: str) -> str:
    """Root's shell in the container: the host's pip settings, then the reader's shell
    running the block as written, or, where its torch line cannot get torch, the block
    without that line."""
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items()))
    dry = ["--dry-run", "--no-deps", "--ignore-installed", "--target", "/tmp/torch-probe"]
    probe = shlex.join(["python3", "-m", "pip", "install", *dry, *torch_args])
    return (
        "set -eu\n"
        f"{exports}"
        f"if {probe} >/tmp/torch-probe.log 2>&1; then\n"
        f"    echo '{TORCH_OK}'\n"
        "    block=block.sh\n"
        "else\n"
        f'    echo "{TORCH_NOT}: $(grep -m1 ERROR /tmp/torch-probe.log || tail -n1 /tmp/torch-probe.log)"\n'
        "    block=block-without-torch.sh\n"
        "fi\n"
        f"{prepare}"
        'echo "readme-test: the block starts at $(date +%T)"\n'
        f"if {run}; then code=0; else code=$?; fi\n"
        f'echo "{DONE}$code at $(date +%T)"\n'
        f"rm -rf {LEFT}\n"
        "exit $code\n"
    )


def _build(ctx: Path, iidfile: Path, mounts: List[Tuple[str, str]]) -> subprocess.CompletedProcess:
    """`podman build` of the context (chroot isolation: no OCI runtime needed, as in the
    image test), the image removed again whatever happened."""
    volumes = [f"--volume={host}:{inside}:ro" for host, inside in mounts]
    env = dict(os.environ, BUILDAH_ISOLATION="chroot")
    cmd = [
        "podman",
        "build",
        "--no-cache",
        "--layers=false",
        "--force-rm",
        f"--iidfile={iidfile}",
        *volumes,
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
