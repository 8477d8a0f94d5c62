"""What a recipe's template may cost: a render deadline and an output cap, enforced by the
kernel on a child process.

A recipe is data a user may hand us, and so are the step templates beside it; yet those
templates render the bash command cannbuild then runs, so bounding Jinja operator by
operator guards nothing that command could not do.  What the bounds are for is a mistake
or a hostile value that would hang the run or take the machine's memory: such a render is
stopped and named (exit 2 where a recipe is rendered) instead.  A `RenderChild` compiles
and renders in a forked child, each render with at most RENDER_CPU_SECONDS of CPU
(SIGPROF ends the child, even inside one long C call such as `10 ** 10000000`), the child
with at most RENDER_MEMORY_BYTES more address space than the run had, and takes back at
most MAX_RENDER_CHARS; one child serves a run's step templates one after another (a fork
per render was 10 ms), and one that crossed a bound is replaced.  Jinja's immutable sandbox
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
import struct
import threading
import time
import traceback
import warnings
import weakref
from typing import TYPE_CHECKING, Callable, Dict, NoReturn, Optional, Tuple, Type, TypeVar, cast

from ..errors import CannbuildError
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
_SIZE = struct.Struct("!Q")


def _refuse(what: str) -> NoReturn:
    raise jinja_exceptions.SecurityError(what)


def _send(fd: int, data: bytes) -> None:
    view = memoryview(_SIZE.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _answer(job: Callable[[object], object], request: object) -> Tuple[str, object]:
    """One render in the child, its CPU bounded; what went wrong, as data."""
    try:
        signal.setitimer(signal.ITIMER_PROF, RENDER_CPU_SECONDS)
        try:
            return "ok", job(request)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)  # the answer is not the render's to pay for
    except MemoryError:
        return "memory", ""
    except CannbuildError as exc:  # a template file bounded.py refuses: the user's to fix
        return "refused", (type(exc), exc.message, exc.hint)
    except jinja_exceptions.UndefinedError as exc:
        return "undefined", str(exc.message)
    except jinja_exceptions.TemplateError as exc:
        return "error", str(exc)
    except RecursionError:  # `{{ ((((...` thousands deep, or a macro that calls itself
        return "error", "nested deeper than Python recurses (brackets, or a macro calling itself)"
    except (ArithmeticError, LookupError, TypeError, ValueError) as exc:
        # 1 // 0, 'a' - 1, a macro that calls itself forever: the template's mistake
        return "error", f"{type(exc).__name__}: {exc}"
    except Exception:
        return "crash", traceback.format_exc()


def _serve(job: Callable[[object], object], requests: int, replies: int) -> NoReturn:
    """The child: its limits, then each request answered until the parent closes the pipe."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPROF):
        signal.signal(sig, signal.SIG_DFL)
    low, high = sorted((requests, replies))  # no lock or pipe of the run's kept open here
    for first, end in (
        (3, low),
        (low + 1, high),
        (high + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0]),
    ):
        os.closerange(first, end)
    with open("/proc/self/statm") as statm:  # bounded: one line the kernel writes
        mapped = int(statm.read().split()[0]) * resource.getpagesize()
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = mapped + RENDER_MEMORY_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))
    # bounded: the parent's requests, each its own pickled (name, values), on a pipe only it holds
    with os.fdopen(requests, "rb") as incoming:
        while True:
            head = incoming.read(_SIZE.size)
            if len(head) < _SIZE.size:
                os._exit(0)
            # bounded: the parent's own pickle of a request, never a file
            request = pickle.loads(incoming.read(_SIZE.unpack(head)[0]))
            try:
                data = pickle.dumps(_answer(job, request))
                if len(data) > 4 * MAX_RENDER_CHARS + 4096:  # a str is pickled as UTF-8
                    data = pickle.dumps(("long", ""))
                _send(replies, data)
            except MemoryError:
                os._exit(3)


class RenderChild:
    """A forked child that runs `job(request)` for each request within the bounds above:
    the result comes back, or the TemplateError the render raised, or a SecurityError
    naming the bound it crossed (the child then ends; the next request starts another).
    `job` and what the parent held when the child forked (a Jinja environment) live on
    in the child; requests and results travel pickled."""

    def __init__(self, job: Callable[[object], object]) -> None:
        self.job = job
        self.lock = threading.Lock()
        self.child: Optional[Tuple[int, int, int]] = None  # pid, request fd, reply fd
        weakref.finalize(self, _stop, self.__dict__)

    def __call__(self, request: object, what: str) -> object:
        with self.lock:
            if self.child is None:
                self.child = self._start()
            _, requests, replies = self.child
            try:
                _send(requests, pickle.dumps(request))
                data = _receive(replies)
            except BaseException:
                _stop(self.__dict__)  # interrupted mid-render: never read a stale answer
                raise
            if data is None:  # the child ended: out of time, memory, or wall clock
                status = _stop(self.__dict__)
                _crossed(status, what)
        # bounded: the forked child's reply, capped at 4 * MAX_RENDER_CHARS in _serve
        kind, value = pickle.loads(data)
        if kind == "ok":
            return value
        if kind == "memory":
            _refuse(
                f"{what} needed more than {RENDER_MEMORY_BYTES >> 20} MiB of memory "
                f"(RENDER_MEMORY_BYTES {_WHERE})"
            )
        if kind == "long":
            _refuse(f"{what} is over {MAX_RENDER_CHARS} characters (MAX_RENDER_CHARS {_WHERE})")
        if kind == "refused":
            error, message, hint = cast(Tuple[Type[CannbuildError], str, Optional[str]], value)
            raise error(message, hint)
        if kind == "undefined":
            raise jinja_exceptions.UndefinedError(value)
        if kind == "error":
            raise jinja_exceptions.TemplateRuntimeError(value)
        raise RuntimeError(f"a render crashed in its child:\n{value}")

    def _start(self) -> Tuple[int, int, int]:
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        with warnings.catch_warnings():  # Python 3.12 warns about fork beside threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            os.close(down_w)
            os.close(up_r)
            _serve(self.job, down_r, up_w)
        os.close(down_r)
        os.close(up_w)
        return pid, down_w, up_r


def _receive(fd: int) -> Optional[bytes]:
    """One reply, or None when the child ended (or did not answer in RENDER_WALL_SECONDS)."""
    deadline = time.monotonic() + RENDER_WALL_SECONDS
    data = b""
    need = _SIZE.size
    while len(data) < need:
        if not select.select([fd], [], [], max(deadline - time.monotonic(), 0))[0]:
            return None
        chunk = os.read(fd, max(need - len(data), 1 << 16))
        if not chunk:
            return None
        data += chunk
        if need == _SIZE.size and len(data) >= _SIZE.size:
            need += _SIZE.unpack(data[: _SIZE.size])[0]
    return data[_SIZE.size :]


def _stop(state: Dict[str, object]) -> Optional[int]:
    """End the child (if any) and reap it: its wait status, None if it had to be killed."""
    child = cast(Optional[Tuple[int, int, int]], state.get("child"))
    if child is None:
        return None
    state["child"] = None
    pid, requests, replies = child
    os.close(requests)
    os.close(replies)
    for _ in range(50):  # it ends at once when its pipe closes (or when a bound ended it)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.002)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def _crossed(status: Optional[int], what: str) -> NoReturn:
    if status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPROF:
        _refuse(
            f"{what} ran past its deadline of {RENDER_CPU_SECONDS:g} s of CPU "
            f"(RENDER_CPU_SECONDS {_WHERE})"
        )
    if status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3:
        _refuse(
            f"{what} needed more than {RENDER_MEMORY_BYTES >> 20} MiB of memory "
            f"(RENDER_MEMORY_BYTES {_WHERE})"
        )
    if status is not None and os.WIFSIGNALED(status):
        _refuse(f"{what} was ended by signal {os.WTERMSIG(status)}")
    _refuse(f"{what} did not finish in {RENDER_WALL_SECONDS:g} s (RENDER_WALL_SECONDS {_WHERE})")


def run_bounded(job: Callable[[], T], what: str = "the render") -> T:
    """`job()` once, in a child of its own within the bounds."""
    child = RenderChild(lambda _: job())
    try:
        return cast(T, child(None, what))
    finally:
        _stop(child.__dict__)
