"""What laying the sandbox toolkit's host side out from repositories costs (issue 38):
a cold `setup --sandbox` (sandbox created, sources fetched, host side laid out, built,
validated) and a no-op rerun, medians of --runs, and the sandbox's size, for each
--checkout side by side (one of cannbuild before the change, one after).

    python bench/bench_host_side.py --checkout /path/before --checkout . [--runs 3]
        [--cann 9.0.0 --variant A3] [--upstream DIR]

--upstream DIR (a folder of the real repositories, as CANNBUILD_UPSTREAM_REPOS) adds the
real host side: the time to the op_build wall and the sandbox's size there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

NAMES = ("opbase", "ops-transformer", "ops-tensor", "cmake", "metadef", "ge", "runtime")
NAMES += ("asc-devkit", "libboundscheck")


def du_mb(path: Path) -> float:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 1e6


def run(checkout: Path, cwd: Path, args: Sequence[str]) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CANNBUILD_")}
    env["PYTHONPATH"] = str(checkout)
    start = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "cannbuild", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        check=False,
    )
    return time.monotonic() - start


def mirror_config(cwd: Path, upstream: Path) -> None:
    folder = cwd / "upstream"
    folder.mkdir()
    for name in NAMES:
        for candidate in (upstream / f"{name}.git", upstream / name):
            if candidate.exists():
                (folder / f"{name}.git").symlink_to(candidate)
                break
    uri = folder.as_uri() + "/"
    (cwd / "invoke.yaml").write_text(
        f'cannbuild:\n  mirrors:\n    "https://gitcode.com/cann/": "{uri}"\n'
        f'    "https://gitee.com/openeuler/": "{uri}"\n'
    )


def measure(
    checkout: Path, args: argparse.Namespace, upstream: Optional[Path] = None
) -> Dict[str, str]:
    setup = ["setup", "--sandbox", "--cann", args.cann, "--variant", args.variant]
    if upstream is not None:
        setup += ["--accept-stand-in", "all"]
    cold: List[float] = []
    noop: List[float] = []
    size = 0.0
    for _ in range(args.runs):
        cwd = Path(tempfile.mkdtemp(prefix="cannbuild-bench-hostside-"))
        if upstream is not None:
            mirror_config(cwd, upstream)
        cold.append(run(checkout, cwd, setup))
        noop.append(run(checkout, cwd, setup))
        size = du_mb(cwd / ".cannbuild" / "sandbox")
        shutil.rmtree(cwd)
    return {
        "cold": f"{statistics.median(cold):.1f} s",
        "no-op": f"{statistics.median(noop):.2f} s",
        "sandbox": f"{size:.0f} MB",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", action="append", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cann", default="9.0.0")
    parser.add_argument("--variant", default="A3")
    parser.add_argument("--upstream", type=Path)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for checkout in args.checkout:
        figures = measure(checkout.resolve(), args)
        print(
            f"{checkout}: stand-in host side: " + ", ".join(f"{k} {v}" for k, v in figures.items())
        )
    if args.upstream is not None:
        figures = measure(args.checkout[-1].resolve(), args, args.upstream.resolve())
        print(
            f"{args.checkout[-1]}: real host side (to the op_build wall): "
            + ", ".join(f"{k} {v}" for k, v in figures.items())
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
