"""Run `cannbuild ARGS` in this process and print, as one JSON line, its time from
interpreter start-up done to exit, and how much of it went into creating dataclasses.

Why this split: a `@dataclass` execs the source of each method it generates (six
for a frozen class on Python 3.11, each compiled anew in every process), so the
records cost time at import whether or not the run does anything.  Measured here
by timing the standard library's own class processing; bench_pipeline.py --part
noop runs this beside the plain no-op.

    python bench/noop_parts.py setup --sandbox     (in a workspace, sandbox env set)
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import sys
import time
from typing import Any, Dict


def main() -> None:
    start = time.perf_counter()
    spent = {"seconds": 0.0, "classes": 0}
    original = getattr(dataclasses, "_process_class", None)
    if original is not None:  # private, present on 3.9-3.13; otherwise only the total

        def timed(cls: Any, *args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return original(cls, *args, **kwargs)
            finally:
                spent["seconds"] += time.perf_counter() - began
                spent["classes"] += 1

        dataclasses._process_class = timed  # type: ignore[attr-defined]

    from cannbuild.cli import main as cannbuild_main

    sys.argv = ["cannbuild", *sys.argv[1:]]
    code: Any = 0
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            cannbuild_main()
        except SystemExit as exc:
            code = exc.code
    result: Dict[str, Any] = {
        "exit": code,
        "total_s": time.perf_counter() - start,
        "dataclass_s": spent["seconds"] if original is not None else None,
        "dataclasses": spent["classes"],
        "modules": sum(1 for name in sys.modules if name.split(".")[0] == "cannbuild"),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
