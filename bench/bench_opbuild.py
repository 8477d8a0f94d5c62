"""What the sandbox's op_build costs the host-side layout (issue 38): compiling the release's
OpDef registry into libregister and kernels/opbuild/op_build.cpp over it
(cannbuild/sandbox/opbuild.py), cold (an empty per-user cache) and warm (the cache of an
earlier sandbox), medians of --runs; the rest of the layout is bench_host_side.py's.

    python bench/bench_opbuild.py --upstream DIR [--runs 3] [--ref v9.0.0]

DIR: a folder of the real repositories (as CANNBUILD_UPSTREAM_REPOS), ge and metadef among
them, plus runtime, opbase and libboundscheck for the headers.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

from cannbuild.host.toolkit import host_arch
from cannbuild.sandbox.hostside import lay_out_host_side
from cannbuild.sandbox.opbuild import build_op_build

# repo -> the folders of it the layout and the compile read (ge and runtime whole are 160 MB)
PARTS = {
    "ge": ("inc", "graph_metadef/register", "scripts", "cmake"),
    "metadef": (),
    "runtime": ("include", "pkg_inc", "scripts", "cmake"),
    "opbase": (),
    "libboundscheck": (),
}


def checkout(upstream: Path, name: str, ref: str, into: Path) -> Tuple[Path, str]:
    git = ["git", "--git-dir", str(upstream / f"{name}.git")]
    if name == "libboundscheck":
        ref = "v1.1.16"  # its own release line (recipes/9.0.toml)
    commit = subprocess.run(
        [*git, "rev-parse", f"{ref}^{{commit}}"], capture_output=True, text=True, check=True
    ).stdout.strip()
    tar = subprocess.run([*git, "archive", commit, "--", *PARTS[name]], capture_output=True)
    with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as archive:
        archive.extractall(into / name)
    return into / name, commit


def timed(home: Path, roots: Dict[str, Path], commits: Dict[str, str], cache: Path) -> float:
    os.environ["XDG_CACHE_HOME"] = str(cache)
    start = time.monotonic()
    build_op_build(home, host_arch(), roots, commits)
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ref", default="v9.0.0")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-opbuild-") as scratch:
        work = Path(scratch)
        checkouts = {n: checkout(args.upstream, n, args.ref, work / "src") for n in PARTS}
        home = work / "toolkit"
        start = time.monotonic()
        lay_out_host_side(work, home, host_arch(), args.ref.lstrip("v"), checkouts)
        first = time.monotonic() - start  # with a cold compile, in a fresh cache below
        roots = {n: path for n, (path, _) in checkouts.items()}
        commits = {n: c for n, (_, c) in checkouts.items()}
        cold: List[float] = []
        for run in range(args.runs):
            cold.append(timed(home, roots, commits, work / f"cold-{run}"))
        warm = [timed(home, roots, commits, work / "cold-0") for _ in range(args.runs)]
    print(f"host-side layout with op_build, first run (user cache as is): {first:.1f} s")
    print(f"op_build compile, cold cache: median {statistics.median(cold):.1f} s of {cold}")
    print(f"op_build compile, warm cache: median {statistics.median(warm):.2f} s of {warm}")


if __name__ == "__main__":
    main()
