"""A cache remote that answers, one byte at a time: what a per-read timeout never ends."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Callable, Iterator, List


@contextlib.contextmanager
def trickling_server(
    every_s: float = 0.1, lasts_s: float = 60.0, body_bytes: int = 0
) -> Iterator[int]:
    """A server on 127.0.0.1 that answers every connection one byte every `every_s`
    seconds: a valid HTTP reply (with 400 bytes of headers) if one waited 42 s at 0.1 s
    a byte, each byte well within any per-read timeout.  It stops by itself.
    `body_bytes`: the headers come at once, then a body of that length trickles."""
    stop = threading.Event()
    end = time.monotonic() + lasts_s

    def serve(conn: socket.socket) -> None:
        with conn:
            if body_bytes:
                head = f"HTTP/1.1 200 OK\r\nContent-Length: {body_bytes}\r\n\r\n"
                with contextlib.suppress(OSError):
                    conn.sendall(head.encode())
                reply = b"x" * body_bytes
            else:
                pad = b"X-Pad: " + b"." * 400 + b"\r\n"
                reply = b"HTTP/1.1 200 OK\r\n" + pad + b"Content-Length: 0\r\n\r\n"
            for byte in reply:
                if stop.wait(every_s) or time.monotonic() > end:
                    return
                with contextlib.suppress(OSError):
                    conn.sendall(bytes([byte]))

    def start(conn: socket.socket) -> None:
        threading.Thread(target=serve, args=(conn,), daemon=True).start()

    with _serving(start, stop, end) as port:
        yield port


@contextlib.contextmanager
def silent_server(lasts_s: float = 60.0) -> Iterator[int]:
    """A server on 127.0.0.1 that accepts every connection and never answers (a remote
    stuck behind a firewall that lets the handshake through).  It stops by itself."""
    held: List[socket.socket] = []  # kept open, never read, never answered
    try:
        with _serving(held.append, threading.Event(), time.monotonic() + lasts_s) as port:
            yield port
    finally:
        for conn in held:
            conn.close()


@contextlib.contextmanager
def _serving(
    on_connection: Callable[[socket.socket], None], stop: threading.Event, end: float
) -> Iterator[int]:
    """A listener on 127.0.0.1 whose connections go to `on_connection` until `stop` is
    set or the monotonic time `end`; yields its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)

    def accept() -> None:
        while not stop.is_set() and time.monotonic() < end:
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            on_connection(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        listener.close()
