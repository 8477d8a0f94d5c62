"""What a recipe's template may cost: a render deadline and an output cap, enforced by the
kernel on a child process.

A recipe is data a user may hand us, and so are the step templates beside it; yet those
templates render the bash command cannbuild then runs, so bounding Jinja operator by
operator guards nothing that command could not do.  What the bounds are for is a mistake
or a hostile value that would hang the run or take the machine's memory: such a render is
stopped and named (exit 2 where a recipe is rendered) instead.  `run_bounded` compiles and
renders in a forked child with at most RENDER_CPU_SECONDS of CPU (SIGPROF ends it, even
inside one long C call such as `10 ** 10000000`) and RENDER_MEMORY_BYTES more address
space than the run has, and takes back at most MAX_RENDER_CHARS; Jinja's immutable sandbox
keeps a template from reaching Python (`cycler.__init__.__globals__`).  Real renders take
a few milliseconds and under a megabyte.  cannbuild's own templates (the sandbox's, the
container's, CI) render in process.
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import time
import traceback
import warnings
from typing import TYPE_CHECKING, Callable, List, NoReturn, Optional, TypeVar, cast

from ..lazy import lazy_module

if TYPE_CHECKING:
    from jinja2 import exceptions as jinja_exceptions
else:  # only a refused render pays for it
    jinja_exceptions = lazy_module("jinja2.exceptions")

# The CPU one render may take (compiling included): a step template or a recipe value
# takes milliseconds; a loop or a computation that runs away is stopped here.
RENDER_CPU_SECONDS = 0.5
# The memory one render may take beyond what the run already maps: `[1] * 300000000` or
# `'a'.center(999999999)` are stopped when they ask for it, not after.
RENDER_MEMORY_BYTES = 64 * 1024 * 1024
# What one render may hand back: the largest file cannbuild renders (a stand-in build.sh)
# is 14 KiB; a recipe value and a step command have their own, smaller bounds.
MAX_RENDER_CHARS = 1024 * 1024
# A child stopped on no CPU at all (a lock a thread held when it forked): given up on.
RENDER_WALL_SECONDS = 30.0
_WHERE = "in cannbuild/render/sandbox.py"

T = TypeVar("T")


def _refuse(what: str) -> NoReturn:
    raise jinja_exceptions.SecurityError(what)


def _child(job: Callable[[], object], fd: int) -> NoReturn:
    """In the forked child: limits, the job, its answer pickled onto `fd`."""
    answer: object
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPROF):
            signal.signal(sig, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_PROF, RENDER_CPU_SECONDS)
        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * resource.getpagesize()
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = mapped + RENDER_MEMORY_BYTES
        resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))
        result = job()
        signal.setitimer(signal.ITIMER_PROF, 0)  # the answer is not the render's to pay for
        answer = ("ok", result)
    except MemoryError:
        answer = ("memory", "")
    except jinja_exceptions.UndefinedError as exc:
        answer = ("undefined", str(exc.message))
    except jinja_exceptions.TemplateError as exc:
        answer = ("error", str(exc))
    except (ArithmeticError, LookupError, RecursionError, TypeError, ValueError) as exc:
        # 1 // 0, 'a' - 1, a macro that calls itself forever: the template's mistake
        answer = ("error", f"{type(exc).__name__}: {exc}")
    except BaseException:
        answer = ("crash", traceback.format_exc())
    try:
        data = pickle.dumps(answer)
        if len(data) > 4 * MAX_RENDER_CHARS + 4096:  # a str is pickled as UTF-8
            data = pickle.dumps(("long", ""))
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except MemoryError:
        os._exit(3)
    os._exit(0)


def run_bounded(job: Callable[[], T], what: str = "the render") -> T:
    """`job()` (a compile and render) run in a child within the bounds above; its result,
    or the TemplateError it raised, or a SecurityError naming the bound it crossed."""
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # Python 3.12 warns about fork beside threads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(job, write_end)
    os.close(write_end)
    chunks: List[bytes] = []
    status: Optional[int] = None  # None: still running when given up on
    try:
        deadline = time.monotonic() + RENDER_WALL_SECONDS
        while select.select([read_end], [], [], max(deadline - time.monotonic(), 0))[0]:
            chunk = os.read(read_end, 1 << 16)
            if not chunk:  # the child has exited
                status = os.waitpid(pid, 0)[1]
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        if status is None:  # out of time, or this run was interrupted
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    if status is None:
        _refuse(
            f"{what} did not finish in {RENDER_WALL_SECONDS:g} s (RENDER_WALL_SECONDS {_WHERE})"
        )
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPROF:
        _refuse(
            f"{what} ran past its deadline of {RENDER_CPU_SECONDS:g} s of CPU "
            f"(RENDER_CPU_SECONDS {_WHERE})"
        )
    if not chunks and os.WIFSIGNALED(status):
        _refuse(f"{what} was ended by signal {os.WTERMSIG(status)}")
    kind, value = pickle.loads(b"".join(chunks)) if chunks else ("memory", "")
    if kind == "ok":
        return cast(T, value)
    if kind == "memory":
        _refuse(
            f"{what} needed more than {RENDER_MEMORY_BYTES >> 20} MiB of memory "
            f"(RENDER_MEMORY_BYTES {_WHERE})"
        )
    if kind == "long":
        _refuse(f"{what} is over {MAX_RENDER_CHARS} characters (MAX_RENDER_CHARS {_WHERE})")
    if kind == "undefined":
        raise jinja_exceptions.UndefinedError(value)
    if kind == "error":
        raise jinja_exceptions.TemplateRuntimeError(value)
    raise RuntimeError(f"a render crashed (exit status {status}):\n{value}")
