"""How the cannbuild process uses the interpreter it runs in: a collector set for a short
run, and an exit that skips the interpreter's teardown.

Why: in a no-op `setup --sandbox` on a 2-core VM (bench/bench_pipeline.py --part noop)
the cyclic collector ran 41 times during the imports and the run (20-27 ms), and freeing
every module and object at exit took 60-90 ms: together about a quarter of the run.
mypy's command line does both for the same reason.  Only the console script and
`python -m cannbuild` do this; importing cannbuild changes nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
import threading
from typing import NoReturn

# Collect the youngest generation every 100 000 allocations instead of 700: a run
# makes few reference cycles, and the imports alone crossed the default dozens of times.
YOUNG_THRESHOLD = 100_000


def tune_collector() -> None:
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


def leave(code: int) -> NoReturn:
    """Exit with `code` once the atexit handlers have run and stdout and stderr are
    flushed, without freeing the interpreter.  cannbuild leaves nothing else open at
    this point: its files are written inside `with` and renamed into place, and its
    leases and locks are released when the task returns.  With another thread still
    running, the ordinary exit, which waits for it."""
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing reaches it
            stream.flush()
    os._exit(code)
