"""Run `cannbuild ARGS` in this process and print, as one JSON line, its time from
interpreter start-up done to the task's return, and how much of it the cyclic
collector took.

Why this split: the no-op's own work is small; its time is imports, collections
during them, and (outside what this script sees) the interpreter's start and exit.
The collector is set as the console script sets it (cannbuild/interpreter.py), so the
figure is the one the CLI pays.  bench_pipeline.py --part noop runs this beside the
plain no-op; the difference to the wall time is start-up and exit.

    python bench/noop_parts.py setup --sandbox     (in a workspace, sandbox env set)
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import sys
import time
from typing import Any, Dict


def main() -> None:
    start = time.perf_counter()
    spent = {"seconds": 0.0, "collections": 0, "began": 0.0}

    def timed(phase: str, info: Dict[str, Any]) -> None:
        if phase == "start":
            spent["began"] = time.perf_counter()
        else:
            spent["seconds"] += time.perf_counter() - spent["began"]
            spent["collections"] += 1

    gc.callbacks.append(timed)
    from cannbuild.interpreter import tune_collector

    tune_collector()
    from cannbuild.cli import CannbuildProgram

    code: Any = None
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = CannbuildProgram().run(["cannbuild", *sys.argv[1:]], exit=False)
        except SystemExit as exc:
            code = exc.code
    result: Dict[str, Any] = {
        "exit": code,
        "total_s": time.perf_counter() - start,
        "gc_s": spent["seconds"],
        "collections": spent["collections"],
        "modules": sum(1 for name in sys.modules if name.split(".")[0] == "cannbuild"),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
