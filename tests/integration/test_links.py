"""A workspace cannbuild owns cannot be turned against the user's files: a folder of the
workspace replaced by a symlink to a user's folder is refused (exit 2, naming the link)
before anything is removed or written there, and `bench --out` / `profile --out` take
only a folder cannbuild made (a non-empty other folder, or a file: exit 2).

Each case runs through the CLI (`invoke TASK` is the same program, test_routes.py), on
one workspace built once for the module; a case puts its link in, runs, and puts the real
folder back."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Dict, Iterator, Tuple

import pytest
from conftest import SPECS, Cli
from reference import reference_torch

from clirun import cannbuild
from usertree import tree_digest, users_folder

reference_torch()

SANDBOX = ("--sandbox", "--variant", "A2", "--cann", "8.5.0")
pytestmark = pytest.mark.xdist_group("links")  # one xdist worker builds `built`
CHECKOUT = Path(__file__).resolve().parents[2]
PROFILE = CHECKOUT / "tests" / "fixtures" / "profiler" / "torch_npu_2.5_level1"

# the workspace folder linked to a user's folder, what the user keeps there, the command
LINKED: Dict[str, Tuple[str, Tuple[str, ...], Tuple[str, ...]]] = {
    "opp-install": (
        "opp",
        ("vendors/custom_transformer/keep.txt", "vendors/custom_transformer/op_api/x.so"),
        ("install",),
    ),
    "validate-validate": ("validate", ("cases/mine.bin", "cases/manifest.txt"), ("validate",)),
    "src-fetch": (
        "src",
        ("opbase/main.c", "opbase/.git/HEAD", "ops-transformer/build.sh"),
        ("fetch",),
    ),
    "stage-build-force": (
        "stage",
        ("cann/share/info/opbase/version.info", "notes.txt"),
        ("build", "--force", "opbase-install"),
    ),
    # folders a run only writes files into (reports, memos, stamps): refused when the
    # run takes the workspace, before the first write
    "reports-build": ("reports", ("last-build.json", "20250101-000000-1/report.json"), ("build",)),
    "cache-build": ("cache", ("artifacts.json", "commit-times.json", "tools.json"), ("build",)),
    "stamps-build": ("stamps", ("opbase-build.json", "notes.txt"), ("build",)),
    # a folder build.sh removes and remakes in the checkout: refused before the step runs
    "checkout-build-force": (
        "src/opbase/build",
        ("CMakeCache.txt", "notes.txt"),
        ("build", "--force", "opbase-build"),
    ),
}


@pytest.fixture(scope="module")
def built(sandboxes, tmp_path_factory) -> Cli:
    """One A2 / CANN 8.5.0 workspace, built and installed once for the module."""
    variant, cann = SPECS["A2-8.5.0"]
    c = Cli(tmp_path_factory.mktemp("links"), sandboxes["A2-8.5.0"], variant, cann)
    proc = c("install")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return c


@contextlib.contextmanager
def linked(ws: Path, name: str, target: Path) -> Iterator[Path]:
    """`<ws>/<name>` replaced by a symlink to `target`; the real folder back afterwards."""
    real = ws / name
    aside = ws / f"{name}.real-folder"
    had = os.path.lexists(real)
    if had:
        os.rename(real, aside)
    real.symlink_to(target)
    try:
        yield real
    finally:
        if os.path.islink(real):
            real.unlink()
        elif real.exists():  # a cannbuild that followed the link made a folder there
            shutil.rmtree(real)
        if had:
            os.rename(aside, real)


def refused(proc, code: int = 2) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == code, out
    assert "Traceback" not in out
    lines = proc.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("cannbuild: "), out


@pytest.mark.parametrize("case", sorted(LINKED))
def test_a_workspace_folder_linked_to_a_users_folder_is_refused(built, tmp_path, case):
    name, files, args = LINKED[case]
    mine = users_folder(tmp_path / "mine", files)
    before = tree_digest(mine)
    with linked(built.ws, name, mine) as link:
        proc = cannbuild(*args, *SANDBOX, cwd=built.cwd, env=built.env(), timeout=300)
        refused(proc)
        assert str(link) in proc.stderr and "symlink" in proc.stderr, proc.stderr
        assert tree_digest(mine) == before


def _bench(out: str) -> Tuple[str, ...]:
    return ("bench", "--shapes", "N2S64D64", "--budget", "1", "--out", out, *SANDBOX)


def _profile(out: str) -> Tuple[str, ...]:
    return ("profile", str(PROFILE), "--out", out)


OUTPUTS = {
    "bench": (_bench, ("results.json", "report.md", "tflops-fp32.png", "notes.txt")),
    "profile": (_profile, ("timeline.png", "notes.txt")),
}


@pytest.mark.parametrize("command", sorted(OUTPUTS))
def test_out_at_a_folder_cannbuild_did_not_make_is_refused(built, tmp_path, command):
    argv, files = OUTPUTS[command]
    theirs = users_folder(tmp_path / "theirs", files)
    before = tree_digest(theirs)
    proc = cannbuild(*argv(str(theirs)), cwd=built.cwd, env=built.env(), timeout=300)
    refused(proc)
    assert "did not create" in proc.stderr, proc.stderr
    assert tree_digest(theirs) == before
    assert not (theirs / ".cannbuild-owned").exists()


@pytest.mark.parametrize("command", sorted(OUTPUTS))
def test_out_at_a_file_is_refused(built, tmp_path, command):
    argv, _files = OUTPUTS[command]
    target = tmp_path / "results.txt"
    target.write_text("mine\n")
    proc = cannbuild(*argv(str(target)), cwd=built.cwd, env=built.env(), timeout=300)
    refused(proc)
    assert str(target) in proc.stderr
    assert target.read_text() == "mine\n"


def test_out_at_a_new_folder_is_made_and_marked_cannbuilds(built, tmp_path):
    """The refusal is about whose folder it is, not about --out: a new one is written."""
    out = tmp_path / "new"
    proc = cannbuild(*_profile(str(out)), cwd=built.cwd, env=built.env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (out / "timeline.png").is_file() and (out / ".cannbuild-owned").is_file()
    again = cannbuild(*_profile(str(out)), cwd=built.cwd, env=built.env())
    assert again.returncode == 0, again.stdout + again.stderr
