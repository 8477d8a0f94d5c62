"""Asking a compile cache's remote storage whether it answers, within one overall deadline.

A remote that trickles a byte at a time, or a name lookup that hangs, must cost doctor
and each build run at most PROBE_TIMEOUT_S: a socket timeout alone is per operation, so
every socket operation gets what is left of one deadline, and the whole probe runs in a
thread given up on at the deadline (a resolver cannot be interrupted).
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.parse
from typing import TYPE_CHECKING, Any, Callable, List, Tuple, TypeVar

from ..lazy import lazy_module
from ..redact import redact
from ..sources.fetch import basic_auth, host_port

if TYPE_CHECKING:
    import ssl
else:  # only a probe of a remote cache pays for it
    ssl = lazy_module("ssl")

PROBE_TIMEOUT_S = 3.0  # the overall bound on asking the remote (doctor, and each build run)
T = TypeVar("T")


class _Deadline:
    """One overall deadline for a probe: every socket operation gets what is left of it,
    so a remote that trickles a byte at a time still costs at most the deadline (a
    socket timeout alone is per operation)."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        return left

    def recv_line(self, sock: socket.socket, limit: int = 4096) -> bytes:
        """Bytes up to the first CRLF, read before the deadline."""
        data = b""
        while b"\r\n" not in data and len(data) < limit:
            sock.settimeout(self.left())
            chunk = sock.recv(limit - len(data))
            if not chunk:
                break
            data += chunk
        self.left()  # the last byte came too late: the probe promised this bound
        return data.split(b"\r\n", 1)[0]


def _connect(
    url: urllib.parse.SplitResult, default_port: int, deadline: _Deadline
) -> socket.socket:
    host = url.hostname or "localhost"
    sock = socket.create_connection((host, url.port or default_port), timeout=deadline.left())
    if url.scheme in ("rediss", "https"):
        sock.settimeout(deadline.left())
        sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
    return sock


def _redis_answer(url: urllib.parse.SplitResult, deadline: _Deadline) -> str:
    """Send AUTH (when the URL has a password) and PING; return the first reply line."""
    sock = _connect(url, 6379, deadline)
    try:
        commands = []
        userinfo = url.netloc.rpartition("@")[0]
        if userinfo:  # as ccache reads it: [[USERNAME:]PASSWORD@]
            user, colon, password = userinfo.partition(":")
            words = ["AUTH", user, password] if colon else ["AUTH", user]
            commands.append([urllib.parse.unquote(w) for w in words])
        commands.append(["PING"])
        reply = ""
        for words in commands:
            # RESP, Redis's wire format: an array of N bulk strings, `*N\r\n` then
            # `$<bytes>\r\n<word>\r\n` per word (AUTH's password may hold any byte, so lengths, not
            # spaces, delimit).
            payload = f"*{len(words)}\r\n" + "".join(
                f"${len(w.encode())}\r\n{w}\r\n" for w in words
            )
            sock.settimeout(deadline.left())
            sock.sendall(payload.encode())
            reply = deadline.recv_line(sock, 256).decode("utf-8", "replace")
            # A reply starting `-` is an error (`-NOAUTH`, `-WRONGPASS`): no point sending PING
            # after.
            if reply.startswith("-"):
                return reply
        return reply
    finally:
        sock.close()


def _http_status(url: urllib.parse.SplitResult, deadline: _Deadline) -> int:
    """HEAD the storage's URL and return the status code of the reply's first line.  By
    hand on a socket, as ccache reaches it (no proxy), so that every read is bounded by
    the deadline."""
    lines = [f"HEAD {url.path or '/'} HTTP/1.1", f"Host: {host_port(url)}", "Connection: close"]
    if url.username is not None:
        lines.append(f"Authorization: {basic_auth(url)}")
    sock = _connect(url, 443 if url.scheme == "https" else 80, deadline)
    try:
        sock.settimeout(deadline.left())
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        status = deadline.recv_line(sock).decode("latin-1").split()
    finally:
        sock.close()
    # A status line: `HTTP/1.1 200 OK`.
    if len(status) < 2 or not status[0].startswith("HTTP/") or not status[1].isdigit():
        raise ValueError(f"not an HTTP reply: {' '.join(status)[:80]!r}")
    return int(status[1])


def _bounded(work: Callable[[], T], seconds: float) -> T:
    """`work` in a thread of its own, given up on after `seconds`: a name lookup cannot be
    interrupted, so the deadline holds even while the resolver waits."""
    outcome: List[Any] = []

    def target() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # handed to the caller
            outcome.append((False, exc))

    thread = threading.Thread(target=target, name="cache-probe", daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        raise TimeoutError("timed out")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


def probe_remote(remote: str, timeout: float = PROBE_TIMEOUT_S) -> Tuple[bool, str]:
    """Whether the storage answers within `timeout` (overall: connecting, the name
    lookup and every read), and what it said (credentials redacted)."""
    url = remote.split("|", 1)[0]  # ccache attributes (|connect-timeout=...) are not the URL
    parts = urllib.parse.urlsplit(url)
    shown = redact(url)
    start = time.monotonic()
    deadline = _Deadline(timeout)
    try:
        if parts.scheme in ("redis", "rediss"):
            reply = _bounded(lambda: _redis_answer(parts, deadline), timeout)
            took = time.monotonic() - start
            if reply == "+PONG":
                # `+PONG` is a healthy server's simple-string reply.
                return True, f"{shown} answered PING in {took * 1000:.0f} ms"
            return False, f"{shown} answered {reply[:80]!r} to PING"
        code = _bounded(lambda: _http_status(parts, deadline), timeout)
        took = time.monotonic() - start
        # Any other status shows a server there (a 404 for the bare storage URL included); only a
        # refused credential makes the remote unusable.
        if code in (401, 403):
            return False, f"{shown} answered HTTP {code}: it refuses these credentials"
        return True, f"{shown} answered HTTP {code} in {took * 1000:.0f} ms"
    except ValueError as exc:  # a port that answers, but not as a storage
        return False, f"{shown} did not answer as a cache storage ({redact(str(exc))})"
    except (OSError, ssl.SSLError) as exc:
        return False, f"{shown} did not answer within {timeout:.0f} s ({redact(str(exc))})"
