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
import signal
import threading
import time
import traceback
import warnings
import weakref
from typing import TYPE_CHECKING, Callable, Dict, NoReturn, Optional, Tuple, Type, TypeVar, cast

from ..errors import CannbuildError, UsageError
from ..lazy import lazy_module
from ..signals import deferred

if TYPE_CHECKING:
    from multiprocessing import connection
    from multiprocessing.connection import Connection

    from jinja2 import exceptions as jinja_exceptions
else:  # only a refused render pays for it; a render child, for its pipe
    jinja_exceptions = lazy_module("jinja2.exceptions")
    connection = lazy_module("multiprocessing.connection")

# The CPU one render may take (compiling included): a step template or a recipe value
# takes milliseconds; a loop or a computation that runs away is stopped here.
RENDER_CPU_SECONDS = 0.5
# Sets a lower deadline (never a higher one): the suite's runaway templates meet it sooner.
RENDER_CPU_ENV = "CANNBUILD_RENDER_CPU_SECONDS"
# The memory one render may take beyond what the run already maps: `[1] * 300000000` or
# `'a'.center(999999999)` are stopped when they ask for it, not after.
RENDER_MEMORY_BYTES = 64 * 1024 * 1024
# What one render may hand back: the largest file cannbuild renders (a stand-in build.sh)
# is 14 KiB; a recipe value and a step command have their own, smaller bounds.
MAX_RENDER_CHARS = 1024 * 1024
# What one reply may take on the pipe: a render of MAX_RENDER_CHARS, pickled as UTF-8.
_MAX_REPLY = 4 * MAX_RENDER_CHARS + 4096
# A child stopped on no CPU at all (a lock a thread held when it forked): given up on.
RENDER_WALL_SECONDS = 30.0
_WHERE = "in cannbuild/render/sandbox.py"

T = TypeVar("T")


def _refuse(what: str) -> NoReturn:
    raise jinja_exceptions.SecurityError(what)


def render_cpu_seconds() -> float:
    """RENDER_CPU_SECONDS, or the lower deadline RENDER_CPU_ENV sets."""
    text = os.environ.get(RENDER_CPU_ENV)
    if text is None:
        return RENDER_CPU_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= RENDER_CPU_SECONDS:
        raise UsageError(
            f"{RENDER_CPU_ENV}={text!r} is not a render deadline: expected seconds of CPU above "
            f"0 and at most {RENDER_CPU_SECONDS:g}; unset it for the default"
        )
    return seconds


def _answer(job: Callable[[object], object], request: object, cpu: float) -> Tuple[str, object]:
    """One render in the child, its CPU bounded; what went wrong, as data."""
    try:
        signal.setitimer(signal.ITIMER_PROF, cpu)
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


def _serve(job: Callable[[object], object], pipe: Connection, cpu: float) -> NoReturn:
    """The child: its limits, then each request answered until the parent closes the pipe."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        # one ignored when cannbuild started stays ignored (`nohup cannbuild setup`: the
        # terminal's hangup ended this child and the run blamed the template)
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGPROF, signal.SIG_DFL)  # the CPU deadline ends the child
    kept = pipe.fileno()  # no lock or pipe of the run's kept open here
    os.closerange(3, kept)
    os.closerange(kept + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    with open("/proc/self/statm") as statm:  # bounded: one line the kernel writes
        mapped = int(statm.read().split()[0]) * resource.getpagesize()
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = mapped + RENDER_MEMORY_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))
    while True:
        try:
            # bounded: the parent's own pickle of a request, on a pipe only it holds
            request = pipe.recv()
        except EOFError:
            os._exit(0)
        try:
            data = pickle.dumps(_answer(job, request, cpu))
            if len(data) > _MAX_REPLY:
                data = pickle.dumps(("long", ""))
            pipe.send_bytes(data)
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
        self.cpu = render_cpu_seconds()
        self.lock = threading.Lock()
        self.child: Optional[Tuple[int, Connection]] = None  # pid, its pipe
        weakref.finalize(self, _stop, self.__dict__)

    def __call__(self, request: object, what: str) -> object:
        with self.lock:
            if self.child is None:
                # fork runs Python's at-fork hooks (logging's): a SIGTERM raised inside one
                # is swallowed ("Exception ignored") and the run went on to exit 0.  Held
                # until the child is recorded here, where the run's cleanup stops it.
                with deferred():
                    self.child = self._start()
            _, pipe = self.child
            try:
                pipe.send(request)
                # the child ended (out of time, memory, or wall clock): no answer
                data = pipe.recv_bytes(_MAX_REPLY) if pipe.poll(RENDER_WALL_SECONDS) else None
            except (EOFError, OSError):
                data = None
            except BaseException:
                _stop(self.__dict__)  # interrupted mid-render: never read a stale answer
                raise
            if data is None:
                status = _stop(self.__dict__)
                _crossed(status, what, self.cpu)
        # bounded: the forked child's reply, at most _MAX_REPLY bytes
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

    def _start(self) -> Tuple[int, Connection]:
        ours, theirs = connection.Pipe()
        with warnings.catch_warnings():  # Python 3.12 warns about fork beside threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            # The child holds a copy of the run's stack: an exception (a pipe the parent
            # closed when a signal landed, a signal before _serve resets its handlers)
            # must end it here, never unwind into the run's cleanup.
            try:
                ours.close()
                _serve(self.job, theirs, self.cpu)
            finally:
                os._exit(1)
        theirs.close()
        return pid, ours


def _stop(state: Dict[str, object]) -> Optional[int]:
    """End the child (if any) and reap it: its wait status, None if it had to be killed."""
    child = cast(Optional[Tuple[int, "Connection"]], state.get("child"))
    if child is None:
        return None
    state["child"] = None
    pid, pipe = child
    pipe.close()
    for _ in range(50):  # it ends at once when its pipe closes (or when a bound ended it)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.002)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def _crossed(status: Optional[int], what: str, cpu: float) -> NoReturn:
    if status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPROF:
        _refuse(
            f"{what} ran past its deadline of {cpu:g} s of CPU (RENDER_CPU_SECONDS {_WHERE}"
            + (f", lowered by {RENDER_CPU_ENV})" if cpu < RENDER_CPU_SECONDS else ")")
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
