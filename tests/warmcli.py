"""`python -m cannbuild ARGS` for the quick loop's hostile-input tables, without paying for
a new interpreter each time: a process forked from a server that has imported cannbuild.

Why: the quick loop starts the CLI some 220 times; on the 2-core machine each start-up is
0.13-0.15 s of CPU before cannbuild does anything (the interpreter, site, the imports), half
of the loop's CPU.  A fork of a warmed server starts in a few milliseconds.

What the test still sees is a process of its own, as a user's: its own pid, cwd,
environment and argv, stdin from /dev/null, stdout and stderr as pipes to the test, and its
exit status (a signal as -N, like subprocess).  The server imported cannbuild (and
matplotlib before the first `profile` or `bench`) and ran nothing, under the environment of
the test process; nothing in cannbuild reads the environment at import.  The child runs `cannbuild/__main__.py` as `-m` would (runpy, with
the cwd first on sys.path) and ends through cannbuild's own exit, or os._exit on the code
a SystemExit carries.

The server is a single-threaded process (so fork is safe).  Under xdist one server, started
by the controller before its workers, answers them all (serve_many: each child waited for
through its pidfd, so the workers' requests overlap) and exits when the controller's socket
closes; otherwise each pytest process starts its own on first use, which exits when the
socket to its test process closes.  Set CANNBUILD_TEST_SPAWN=1 to run every case as a fresh
interpreter instead."""

from __future__ import annotations

import array
import atexit
import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

CHECKOUT = Path(__file__).resolve().parents[1]
HEADER = struct.Struct("!I")


def _send(sock: socket.socket, message: object, fds: Sequence[int] = ()) -> None:
    data = json.dumps(message).encode()
    payload = HEADER.pack(len(data)) + data
    if fds:
        sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.sendall(payload)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("the cannbuild fork server closed its socket")
        data += chunk
    return data


def _recv(sock: socket.socket, with_fds: int = 0):
    if not with_fds:
        (size,) = HEADER.unpack(_recv_exact(sock, HEADER.size))
        return json.loads(_recv_exact(sock, size)), []
    # the header and the fds arrive in one sendmsg; the body may follow in more reads
    msg, ancdata, _, _ = sock.recvmsg(HEADER.size, socket.CMSG_SPACE(with_fds * 4))
    if not msg:
        raise EOFError("the test process closed its socket")
    if len(msg) < HEADER.size:
        msg += _recv_exact(sock, HEADER.size - len(msg))
    fds: List[int] = []
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(array.array("i", data[: len(data) - len(data) % 4]))
    (size,) = HEADER.unpack(msg)
    return json.loads(_recv_exact(sock, size)), fds


def cap_memory(cap: int) -> None:
    """At most `cap` bytes of address space from here on (a bound on memory a test proves)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


# --- the server ---------------------------------------------------------------------


def _child(request: dict, stdout: int, stderr: int) -> None:
    """In the forked child: become `python -m cannbuild ARGS` in the request's cwd and env."""
    import runpy

    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        for fd in (null, stdout, stderr):
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if request.get("memory_cap") is not None:
            cap_memory(request["memory_cap"])
        sys.path[0] = os.getcwd()
        try:
            if request.get("code") is not None:  # `python -c CODE ARGS`
                sys.argv = ["-c", *request["args"]]
                exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__"})
            else:
                sys.argv = ["-m", *request["args"]]
                runpy.run_module("cannbuild", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    finally:
        os._exit(code & 0xFF)


def _charts() -> None:
    """matplotlib, the first time a task that draws is asked for: profile's timeline and
    bench's charts import it (0.6 s of CPU in each child, most of such a run), as
    cannbuild/profile/chart.py does.  Where it is not installed the child finds that out."""
    with contextlib.suppress(ImportError):
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot


def _warm_up() -> None:
    """The start-up every child skips: every cannbuild module (0.13 s once; a child that
    plans or checks a recipe imported some 50 of them, 20-30 ms of its CPU each time),
    not cannbuild.__main__ itself, which runpy runs afresh."""
    import importlib
    import pkgutil

    import cannbuild

    for module in pkgutil.walk_packages(cannbuild.__path__, "cannbuild."):
        if not module.name.endswith("__main__"):
            with contextlib.suppress(ImportError):  # an optional dependency: the child says
                importlib.import_module(module.name)


def _fork(request: dict, fds: Sequence[int], held: Sequence[object]) -> int:
    """A child for `request` (its stdout and stderr: `fds`); `held`, the server's own
    sockets and selector, are closed in the child."""
    stdout, stderr = fds
    if request.get("code") is None and request["args"][:1] in (["profile"], ["bench"]):
        _charts()
    pid = os.fork()
    if pid == 0:
        for thing in held:
            with contextlib.suppress(OSError):
                thing.close()  # type: ignore[attr-defined]
        _child(request, stdout, stderr)
    os.close(stdout)
    os.close(stderr)
    return pid


def serve(fd: int) -> None:
    """Answer requests on the socket `fd` one after another until it closes."""
    _warm_up()
    sock = socket.socket(fileno=fd)
    while True:
        try:
            request, fds = _recv(sock, with_fds=2)
        except (EOFError, ConnectionError):
            return
        pid = _fork(request, fds, [sock])
        _send(sock, {"pid": pid})
        _, status = os.waitpid(pid, 0)
        _send(sock, {"returncode": os.waitstatus_to_exitcode(status)})


def serve_many(listen_fd: int, owner_fd: int) -> None:
    """The server xdist's workers share: each test process connects to the listening
    socket `listen_fd` and asks as it would ask a server of its own, one request at a
    time; requests of different processes overlap (each child is waited for through its
    pidfd).  It exits when the socket to its owner (xdist's controller) closes."""
    _warm_up()
    listener = socket.socket(fileno=listen_fd)
    owner = socket.socket(fileno=owner_fd)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "listen")
    selector.register(owner, selectors.EVENT_READ, "owner")
    clients: List[socket.socket] = []
    waiting: Dict[int, tuple] = {}  # pidfd: (pid, the client that asked)
    while True:
        for key, _ in selector.select():
            if key.data == "owner":
                return
            if key.data == "listen":
                conn, _ = listener.accept()
                clients.append(conn)
                selector.register(conn, selectors.EVENT_READ, "client")
            elif key.data == "client":
                conn = key.fileobj  # type: ignore[assignment]
                try:
                    request, fds = _recv(conn, with_fds=2)
                except (EOFError, ConnectionError):
                    selector.unregister(conn)
                    clients.remove(conn)
                    conn.close()
                    continue
                held = [selector, listener, owner, *clients]
                pid = _fork(request, fds, held + [_Fd(fd) for fd in waiting])
                pidfd = os.pidfd_open(pid)
                waiting[pidfd] = (pid, conn)
                selector.register(pidfd, selectors.EVENT_READ, "child")
                with contextlib.suppress(OSError):
                    _send(conn, {"pid": pid})
            else:  # a child ended
                pid, conn = waiting.pop(key.fd)
                selector.unregister(key.fd)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                with contextlib.suppress(OSError):  # the test process has gone
                    _send(conn, {"returncode": os.waitstatus_to_exitcode(status)})


class _Fd:
    """A bare file descriptor, closed as the server's sockets are in a child."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def close(self) -> None:
        os.close(self.fd)


# --- the client (in the test process) -----------------------------------------------


class Server:
    """The fork server of this test process: the one xdist's workers share (`shared`, the
    address and start-up environment `start_shared` gave), or one of its own."""

    def __init__(self, shared: Optional[dict] = None) -> None:
        if shared is not None:
            self.process: Optional[subprocess.Popen] = None
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.connect(shared["address"])
            except OSError:
                self.sock.close()
                raise
            self.startup_env = dict(shared["startup_env"])
            atexit.register(self.close)
            return
        mine, theirs = socket.socketpair()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CANNBUILD_")}
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            cwd=CHECKOUT,
            env=env,
        )
        theirs.close()
        self.sock = mine
        self.startup_env = {k: v for k, v in env.items() if k.startswith("PYTHON")}
        atexit.register(self.close)

    def close(self) -> None:
        """Close the socket (a server of its own then exits) and reap that server."""
        self.sock.close()
        if self.process is None:
            return
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def can_run(self, env: Dict[str, str]) -> bool:
        """False when `env` sets the interpreter up differently (PYTHONPATH, ...): those
        act at start-up, which a fork has already been through."""
        return {k: v for k, v in env.items() if k.startswith("PYTHON")} == self.startup_env

    def run(
        self,
        args: Sequence[str],
        *,
        cwd: Path,
        env: Dict[str, str],
        timeout: float,
        memory_cap: Optional[int] = None,
        code: Optional[str] = None,
    ) -> subprocess.CompletedProcess:
        """`python -m cannbuild ARGS`, or with `code`, `python -c CODE ARGS`."""
        argv = [sys.executable, *(["-c", code] if code is not None else ["-m", "cannbuild"]), *args]
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            _send(
                self.sock,
                {
                    "args": list(args),
                    "cwd": str(cwd),
                    "env": dict(env),
                    "memory_cap": memory_cap,
                    "code": code,
                },
                fds=(out_w, err_w),
            )
        finally:
            os.close(out_w)
            os.close(err_w)
        pid = _recv(self.sock)[0]["pid"]
        chunks: Dict[int, List[bytes]] = {out_r: [], err_r: []}
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            for fd in chunks:
                selector.register(fd, selectors.EVENT_READ)
            open_fds = set(chunks)
            while open_fds:
                left = deadline - time.monotonic()
                if left <= 0:
                    os.kill(pid, signal.SIGKILL)
                    _recv(self.sock)
                    for fd in chunks:
                        os.close(fd)
                    raise subprocess.TimeoutExpired(argv, timeout)
                for key, _ in selector.select(left):
                    data = os.read(key.fd, 65536)
                    if data:
                        chunks[key.fd].append(data)
                    else:
                        selector.unregister(key.fd)
                        open_fds.discard(key.fd)
        for fd in chunks:
            os.close(fd)
        returncode = _recv(self.sock)[0]["returncode"]
        return subprocess.CompletedProcess(
            argv, returncode, _text(b"".join(chunks[out_r])), _text(b"".join(chunks[err_r]))
        )


def _text(data: bytes) -> str:
    """As subprocess.run(text=True) decodes: the locale's encoding, universal newlines."""
    import io
    import locale

    return io.TextIOWrapper(io.BytesIO(data), encoding=locale.getpreferredencoding(False)).read()


def server() -> Optional[Server]:
    """This process's fork server (started on first use), or None where every case
    should start a fresh interpreter."""
    if os.environ.get("CANNBUILD_TEST_SPAWN") == "1" or not hasattr(os, "fork"):
        return None
    found = _SERVERS.get(os.getpid())
    if found is not None and found.process is not None and found.process.poll() is not None:
        found.close()  # it died: its socket goes with it
        found = None
    if found is None and SHARED is not None:
        with contextlib.suppress(OSError):  # gone: a server of its own instead
            found = _SERVERS[os.getpid()] = Server(SHARED)
    if found is None:
        found = _SERVERS[os.getpid()] = Server()
    return found


_SERVERS: Dict[int, Server] = {}

# the server xdist's workers share (tests/conftest.py sets it in each worker from what
# start_shared gave the controller); None: each test process starts its own
SHARED: Optional[dict] = None


def start_shared() -> Optional[dict]:
    """In xdist's controller: one fork server for all its workers, where the kernel can
    wait for several children at once (pidfd).  Each worker started its own before: the
    same imports (cannbuild, then matplotlib) in every one, about 0.6 s of CPU each.
    What a worker needs to reach it, or None where it cannot be shared."""
    if os.environ.get("CANNBUILD_TEST_SPAWN") == "1" or not hasattr(os, "pidfd_open"):
        return None
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    address = f"\0cannbuild-warmcli-{os.getpid()}-{os.urandom(4).hex()}"  # abstract: no file
    try:
        listener.bind(address)
        listener.listen(64)
    except OSError:
        listener.close()
        return None
    mine, theirs = socket.socketpair()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CANNBUILD_")}
    fds = [listener.fileno(), theirs.fileno()]
    process = subprocess.Popen(
        [sys.executable, __file__, "--many", *map(str, fds)],
        pass_fds=fds,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        cwd=CHECKOUT,
        env=env,
    )
    listener.close()
    theirs.close()

    def close() -> None:
        mine.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    atexit.register(close)
    startup_env = {k: v for k, v in env.items() if k.startswith("PYTHON")}
    return {"address": address, "startup_env": startup_env}


def python_c(
    code: str, *args: str, timeout: float, memory_cap: Optional[int] = None
) -> subprocess.CompletedProcess:
    """`python -c CODE ARGS` in the test's cwd and environment, forked from the warm server
    where there is one (its imports are done: a child that imports cannbuild pays nothing)."""
    warm = server()
    env = dict(os.environ)
    if warm is not None and warm.can_run(env):
        return warm.run(
            args, cwd=Path.cwd(), env=env, timeout=timeout, memory_cap=memory_cap, code=code
        )
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=None if memory_cap is None else (lambda: cap_memory(memory_cap)),
    )


if __name__ == "__main__":
    if sys.argv[1] == "--many":
        serve_many(int(sys.argv[2]), int(sys.argv[3]))
    else:
        serve(int(sys.argv[1]))
