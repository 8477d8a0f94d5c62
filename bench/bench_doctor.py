"""Wall time of `cannbuild doctor --json` on a sysroot fixture (issue: doctor <= 0.3 s).

Baseline: `cannbuild --version`, i.e. Python + the CLI's start-up, so the ratio shows
what host reading itself adds.  Run from an activated venv:

    python bench/bench_doctor.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from common import compile_package, fmt, summary, time_command  # noqa: E402
from hosttree import HostTree, clean_env  # noqa: E402


def build_fixture(root: Path) -> None:
    tree = HostTree(root)
    tk = tree.toolkit_cann("8.5.0")
    tree.kernels(tk, "ascend910b")
    tree.pci("d802", 8)
    tree.npu_smi("a2-910b3-npu-smi-info-cann8.3.txt", "a2-npu-smi-board-chip.txt")
    tree.driver()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    compile_package()
    exe = shutil.which("cannbuild")
    if exe is None:
        sys.exit("cannbuild is not on PATH: activate the venv it is installed in")
    tmp = Path(tempfile.mkdtemp(prefix="cannbuild-bench-"))
    root = tmp / "host"
    root.mkdir()
    build_fixture(root)
    env = clean_env()
    env["PATH"] = os.environ["PATH"]
    argv = [exe, "doctor", "--json", "--sysroot", str(root), "--workspace", str(tmp / "ws")]
    # the fixture's toolkit holds no headers, so its recipe.toolkit rows FAIL: doctor ends 1
    time_command(argv, 2, env=env, codes=(0, 1))  # warm the page cache
    base = summary(time_command([exe, "--version"], args.runs, env=env))
    doc = summary(time_command(argv, args.runs, env=env, codes=(0, 1)))
    print(fmt("cannbuild --version (baseline)", base))
    print(fmt("cannbuild doctor --json", doc, base))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
