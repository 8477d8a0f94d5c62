"""A throw-away redis-server for the shared compile cache, and ccache's log read back.

Used by the compile-cache test and bench/bench_cache.py: the server listens on
127.0.0.1 on a free port, with a password (so the tests see it redacted), keeps
nothing on disk, and is stopped (by its pid) when the block ends.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import re
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Dict, Iterator, Optional


def redis_server() -> Optional[str]:
    return shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_redis(folder: Path) -> Iterator[str]:
    """A redis-server for the block; yields the ccache URL (redis://PASSWORD@HOST:PORT)."""
    server = redis_server()
    if server is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    folder.mkdir(parents=True, exist_ok=True)
    password = "pw-" + secrets.token_hex(8)
    port = _free_port()
    log = open(folder / "redis.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--requirepass", password,
         "--save", "", "--appendonly", "no", "--dir", str(folder)],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60  # a loaded runner starts it slowly
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                    sock.sendall(f"AUTH {password}\r\nPING\r\n".encode())
                    reply = b""
                    while b"+PONG" not in reply and b"-" not in reply:
                        chunk = sock.recv(64)
                        if not chunk:
                            break
                        reply += chunk
                    if b"+PONG" in reply:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start; see {folder / 'redis.log'}")
            time.sleep(0.05)
        yield f"redis://{password}@127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


_LINE = re.compile(r"^\[(\S+) (\d+)\s*\] (.*)$")


def compile_phase(logfile: Path) -> Dict[str, float]:
    """ccache's log (CCACHE_LOGFILE) read back: each compiler invocation's span (first
    to last line of its pid) summed, and how many there were.  The compile phase of a
    build, without its configure, link and packaging."""
    spans: Dict[str, list] = collections.defaultdict(list)
    for line in logfile.read_text(errors="replace").splitlines():
        match = _LINE.match(line)
        if match:
            when = datetime.datetime.fromisoformat(match.group(1)).timestamp()
            spans[match.group(2)].append(when)
    return {
        "invocations": float(len(spans)),
        "seconds": sum(max(v) - min(v) for v in spans.values()),
    }
