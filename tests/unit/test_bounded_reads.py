"""Anything a user points at is read only when it is a regular file, within a documented
bound, and a folder walk is bounded (issue 25, cannbuild/bounded.py): a FIFO, a link to
/dev/zero, a gigabyte line, a file past its size bound, a deep or wide tree is one
paragraph and exit 2, in bounded time and under a memory cap, and the
user's files are left as they were."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import pytest
from warmcli import cap_memory

from cannbuild.bounded import (
    PROFILE_CSV,
    PROFILE_TRACE,
    WALK_DEPTH,
    WALK_FOLDERS,
    Kind,
    read_bytes,
    walk,
)
from cannbuild.errors import UsageError

from clirun import cannbuild, clean_env
from usertree import tree_digest

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profiler"
KERNELS = next((FIX / "torch_npu_2.5_level1").glob("*_ascend_pt")) / "ASCEND_PROFILER_OUTPUT"
MEMORY_CAP = 1 << 30  # address space of the child: Python and cannbuild's imports fit in it
SINGLE_LINE_BYTES = 768 << 20  # a sparse one-line CSV under the size bound, over the cap


def _run_dir(user: Path, *under: str) -> Path:
    """A torch_npu run's output folder below `user`."""
    out = user.joinpath(*under, "job_ascend_pt", "ASCEND_PROFILER_OUTPUT")
    out.mkdir(parents=True)
    return out


def _valid_run(user: Path, *under: str) -> Path:
    out = _run_dir(user, *under)
    shutil.copy(KERNELS / "kernel_details.csv", out / "kernel_details.csv")
    return out


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


def _git_repo(user: Path) -> None:
    subprocess.run(["git", "init", "-q", str(user)], check=True)


# Each case: it sets up the user's tree (tmp/user) and returns (args, cwd, words the
# paragraph must hold).  tmp/ws and tmp/out are cannbuild's, outside the user's tree.
Case = Callable[[Path], Tuple[List[str], Path, str]]


def _profile_fifo(name: str) -> Case:
    def case(tmp: Path) -> Tuple[List[str], Path, str]:
        os.mkfifo(_run_dir(tmp / "user") / name)
        return ["profile", "user", "--out", "out"], tmp, "FIFO"

    return case


def _profile_dev_zero(name: str) -> Case:
    def case(tmp: Path) -> Tuple[List[str], Path, str]:
        (_run_dir(tmp / "user") / name).symlink_to("/dev/zero")
        return ["profile", "user", "--out", "out"], tmp, "/dev/zero, a device"

    return case


def _profile_sparse(name: str, size: int, words: str) -> Case:
    def case(tmp: Path) -> Tuple[List[str], Path, str]:
        _sparse(_run_dir(tmp / "user") / name, size)
        return ["profile", "user", "--out", "out"], tmp, words

    return case


def _profile_given_fifo(tmp: Path) -> Tuple[List[str], Path, str]:
    (tmp / "user").mkdir()
    os.mkfifo(tmp / "user" / "kernel_details.csv")
    return ["profile", "user/kernel_details.csv", "--out", "out"], tmp, "FIFO"


def _profile_deep(tmp: Path) -> Tuple[List[str], Path, str]:
    _valid_run(tmp / "user", *[f"d{i}" for i in range(WALK_DEPTH)])
    return ["profile", "user", "--out", "out"], tmp, f"{WALK_DEPTH} levels deep"


def _profile_wide(tmp: Path) -> Tuple[List[str], Path, str]:
    """`profile /` in small: more folders than the walk takes, a real run among them."""
    _valid_run(tmp / "user")
    for i in range(WALK_FOLDERS):
        (tmp / "user" / f"f{i:04d}").mkdir()
    return ["profile", "user", "--out", "out"], tmp, f"more than {WALK_FOLDERS} folders"


def _diagnose_profile_fifo(tmp: Path) -> Tuple[List[str], Path, str]:
    os.mkfifo(_run_dir(tmp / "user") / "kernel_details.csv")
    return ["diagnose", "--profile", "user", "-w", "ws"], tmp, "FIFO"


def _ci_out(link_to_zero: bool) -> Case:
    def case(tmp: Path) -> Tuple[List[str], Path, str]:
        _git_repo(tmp / "user")
        target = tmp / "user" / "ci.yml"
        if link_to_zero:
            target.symlink_to("/dev/zero")
        else:
            os.mkfifo(target)
        args = ["ci", "--provider", "github", "--out", "ci.yml"]
        return args, tmp / "user", "a device" if link_to_zero else "FIFO"

    return case


def _ci_out_folder(tmp: Path) -> Tuple[List[str], Path, str]:
    _git_repo(tmp / "user")
    return ["ci", "--provider", "github", "--out", "."], tmp / "user", "names the workflow file"


def _config_fifo(tmp: Path) -> Tuple[List[str], Path, str]:
    (tmp / "user").mkdir()
    os.mkfifo(tmp / "user" / "ci.yaml")
    return ["--config", "user/ci.yaml", "status", "-w", "ws"], tmp, "FIFO"


def _invoke_yaml_fifo(tmp: Path) -> Tuple[List[str], Path, str]:
    (tmp / "user").mkdir()
    os.mkfifo(tmp / "user" / "invoke.yaml")
    return ["status", "-w", "../ws"], tmp / "user", "FIFO"


def _lock_fifo(tmp: Path) -> Tuple[List[str], Path, str]:
    (tmp / "user").mkdir()
    os.mkfifo(tmp / "user" / "cannbuild.lock")
    args = ["lock", "--cann", "9.0.0", "--soc", "A2", "--lock-file", "user/cannbuild.lock"]
    return [*args, "-w", "ws"], tmp, "FIFO"


def _recipe_dev_zero(tmp: Path) -> Tuple[List[str], Path, str]:
    (tmp / "user").mkdir()
    (tmp / "user" / "mine.toml").symlink_to("/dev/zero")
    args = ["lock", "--cann", "9.0.0", "--soc", "A2", "--recipe", "user/mine.toml"]
    return [*args, "-w", "ws"], tmp, "/dev/zero, a device"


def _variants_fifo(tmp: Path) -> Tuple[List[str], Path, str]:
    (tmp / "user").mkdir()
    os.mkfifo(tmp / "user" / "tiles.toml")
    return ["bench", "--variants", "user/tiles.toml", "-w", "ws"], tmp, "FIFO"


def _build_variant_patch_dev_zero(tmp: Path) -> Tuple[List[str], Path, str]:
    (tmp / "user").mkdir()
    (tmp / "user" / "tile.diff").symlink_to("/dev/zero")
    return ["bench", "--build-variant", "q=user/tile.diff", "-w", "ws"], tmp, "a device"


HOSTILE: Dict[str, Case] = {
    "profile-kernel-details-is-a-fifo": _profile_fifo("kernel_details.csv"),
    "profile-kernel-details-links-to-dev-zero": _profile_dev_zero("kernel_details.csv"),
    "profile-trace-view-is-a-fifo": _profile_fifo("trace_view.json"),
    "profile-trace-view-links-to-dev-zero": _profile_dev_zero("trace_view.json"),
    "profile-csv-of-one-768-mb-line": _profile_sparse(
        "kernel_details.csv", SINGLE_LINE_BYTES, "line longer than 1 MiB"
    ),
    "profile-csv-over-its-size-bound": _profile_sparse(
        "kernel_details.csv", (PROFILE_CSV.max_bytes or 0) + 1, "over the 1 GiB"
    ),
    "profile-trace-over-its-size-bound": _profile_sparse(
        "trace_view.json", (PROFILE_TRACE.max_bytes or 0) + 1, "over the 8 GiB"
    ),
    "profile-path-is-a-fifo": _profile_given_fifo,
    "profile-tree-deeper-than-the-walk-bound": _profile_deep,
    "profile-tree-wider-than-the-walk-bound": _profile_wide,
    "diagnose-profile-kernel-details-is-a-fifo": _diagnose_profile_fifo,
    "ci-out-is-a-fifo": _ci_out(link_to_zero=False),
    "ci-out-links-to-dev-zero": _ci_out(link_to_zero=True),
    "ci-out-is-a-folder": _ci_out_folder,
    "config-flag-is-a-fifo": _config_fifo,
    "invoke-yaml-is-a-fifo": _invoke_yaml_fifo,
    "lock-file-is-a-fifo": _lock_fifo,
    "recipe-links-to-dev-zero": _recipe_dev_zero,
    "bench-variants-is-a-fifo": _variants_fifo,
    "build-variant-patch-links-to-dev-zero": _build_variant_patch_dev_zero,
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_file_or_tree_is_refused_with_exit_2_in_bounded_time_and_memory(
    tmp_path: Path, case: str
) -> None:
    args, cwd, words = HOSTILE[case](tmp_path)
    user = tmp_path / "user"
    before = tree_digest(user)
    env = clean_env(HOME=str(tmp_path / "home"))
    result = cannbuild(*args, cwd=cwd, timeout=30, env=env, memory_cap=MEMORY_CAP)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output
    assert words in output, output
    assert tree_digest(user) == before


def test_the_memory_cap_leaves_room_for_a_normal_profile(tmp_path: Path) -> None:
    """The cap the hostile cases run under is not what refuses them."""
    _valid_run(tmp_path / "user")
    result = cannbuild(
        "profile",
        "user",
        "--json",
        "--out",
        "out",
        cwd=tmp_path,
        timeout=60,
        memory_cap=MEMORY_CAP,
    )
    assert result.returncode == 0, result.stderr
    assert '"ops"' in result.stdout


def test_a_link_to_a_regular_file_is_read_and_linked_folders_are_not_entered(
    tmp_path: Path,
) -> None:
    out = _run_dir(tmp_path / "user")
    (out / "kernel_details.csv").symlink_to(KERNELS / "kernel_details.csv")
    (tmp_path / "user" / "loop").symlink_to(tmp_path / "user")  # a cycle
    (tmp_path / "user" / "root").symlink_to("/")  # out of the tree
    result = cannbuild("profile", "user", "--json", "--out", "out", cwd=tmp_path, timeout=30)
    assert result.returncode == 0, result.stderr
    assert '"BatchMatMul"' in result.stdout
    assert result.stdout.count('"kernel_details"') == 1  # read once, not again through loop/


def _tree(root: Path, folders: int, files: int) -> None:
    for i in range(folders):
        (root / f"d{i}").mkdir(parents=True)
    for i in range(files):
        (root / f"f{i}").touch()


def test_the_walk_stops_at_its_name_bound(tmp_path: Path) -> None:
    _tree(tmp_path, 0, 11)
    with pytest.raises(UsageError, match="more than 10 names"):
        list(walk(tmp_path, "profile:", "hint", max_names=10))
    assert len(next(walk(tmp_path, "profile:", "hint", max_names=11))[1]) == 11


def test_the_walk_is_top_down_in_name_order_and_lists_links_to_files_as_files(
    tmp_path: Path,
) -> None:
    for sub in ("b/y", "a/x", "c"):
        (tmp_path / sub).mkdir(parents=True)
    (tmp_path / "a" / "f.csv").touch()
    (tmp_path / "c" / "link.csv").symlink_to(tmp_path / "a" / "f.csv")
    (tmp_path / "c" / "dirlink").symlink_to(tmp_path / "b")
    seen = [(str(f.relative_to(tmp_path)), names) for f, names in walk(tmp_path, "w", "h")]
    assert seen == [
        (".", []),
        ("a", ["f.csv"]),
        ("a/x", []),
        ("b", []),
        ("b/y", []),
        ("c", ["link.csv"]),
    ]


def test_read_bytes_refuses_a_file_over_its_bound_and_reads_one_at_it(tmp_path: Path) -> None:
    path = tmp_path / "cfg.toml"
    path.write_bytes(b"x" * 100)
    assert read_bytes(path, Kind("config file", 100)) == b"x" * 100
    with pytest.raises(UsageError, match=r"cfg.toml is 100 bytes, over the 99 bytes"):
        read_bytes(path, Kind("config file", 99))


BUNDLE_READER = """
import sys
from pathlib import Path
from cannbuild.errors import UsageError
from cannbuild.sources.bundle import seed_from_bundle
from cannbuild.workspace import Workspace
try:
    seed_from_bundle(Workspace(root=Path(sys.argv[1])), Path(sys.argv[2]))
except UsageError as exc:
    print(exc.paragraph())
    sys.exit(2)
"""


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_bundle_that_is_not_a_regular_file_is_refused_without_blocking(
    tmp_path: Path, kind: str
) -> None:
    """seed_from_bundle is reached only after the host is probed: called directly, in a
    process of its own so that a hang fails the test."""
    bundle = tmp_path / "cann.tar"
    if kind == "fifo":
        os.mkfifo(bundle)
    else:
        bundle.symlink_to("/dev/zero")
    result = subprocess.run(
        [sys.executable, "-c", BUNDLE_READER, str(tmp_path / "ws"), str(bundle)],
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=functools.partial(cap_memory, MEMORY_CAP),
    )
    assert result.returncode == 2, result.stderr
    assert "not a regular file" in result.stdout
