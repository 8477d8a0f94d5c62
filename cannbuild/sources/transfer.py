"""One download watched for stalls and for its budget.

A socket timeout bounds each read, not a transfer: a mirror that trickles a byte a
second holds a download for ever.  The watch runs beside the download in a thread of
its own and shuts the connection down (which wakes a read blocked in the other thread)
when less than the low-speed limit arrived in its window, curl's --speed-limit and
--speed-time rule, or when the budget for the download and its retries is spent.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, List, Optional

from msgspec import Struct

from ..lazy import lazy_module

if TYPE_CHECKING:
    from http import client as http_client
    from urllib import request as urllib_request
else:  # only downloads pay for the http stack
    http_client = lazy_module("http.client")
    urllib_request = lazy_module("urllib.request")


class Stalled(Exception):
    """A download stopped by its low-speed rule or its budget; `reason` says which."""

    def __init__(self, reason: str, budget_spent: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.budget_spent = budget_spent


class TransferRule(Struct, frozen=True, kw_only=True):
    """The bounds of one download: the low-speed limit and the budget for all attempts."""

    low_speed_bps: int
    low_speed_time_s: float
    budget_s: float


class TransferWatch:
    """Watches one download attempt from a thread of its own and stops it (shuts its
    sockets down, which wakes a read blocked in another thread) when it stalls or the
    budget ends: connecting, the TLS handshake, the headers and the body alike, where a
    socket timeout bounds only each read.  (The name lookup is bounded by the
    resolver's own timeouts.)"""

    def __init__(self, rule: TransferRule, deadline: float) -> None:
        self.rule = rule
        self.deadline = deadline
        self.received = 0  # body bytes; written by the downloading thread only
        self.verdict: Optional[Stalled] = None
        self._socks: List[socket.socket] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="download-watch", daemon=True)

    def __enter__(self) -> TransferWatch:
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        with self._lock:
            self._done.set()
            for sock in self._socks:
                sock.close()
            self._socks.clear()
        self._thread.join()
        if self.verdict is not None:  # whatever the stopped read raised, or a cut body
            raise self.verdict from None

    def arrived(self, n: int) -> None:
        self.received += n

    def socket_timeout(self) -> float:
        """Per read, a backstop only: the watch stops a stalled transfer first."""
        # Twice the stall window plus a second: the watch always stops a stalled read before this.
        return 2 * self.rule.low_speed_time_s + 1

    def attach(self, sock: socket.socket) -> None:
        """Watch a connection (a redirect or a proxy opens more than one)."""
        with self._lock:
            own = sock.dup()  # shutdown acts on the connection, whichever fd names it
            self._socks.append(own)
            if self.verdict is not None or self._done.is_set():
                _shut(own)

    def opener(self) -> Any:
        watch = self

        def watched(cls: Any) -> Any:
            def make(host: str, **kwargs: Any) -> Any:
                conn = cls(host, **kwargs)

                def create(address: Any, timeout: Any = None, source: Any = None) -> Any:
                    # Connecting gets at most one stall window, and never past the budget.
                    connect_s = min(watch.rule.low_speed_time_s, watch.left())
                    sock = socket.create_connection(address, max(connect_s, 0.001), source)
                    sock.settimeout(timeout)
                    watch.attach(sock)
                    return sock

                conn._create_connection = create  # http.client's own hook for it
                return conn

            return make

        class Http(urllib_request.HTTPHandler):
            def http_open(self, req: Any) -> Any:
                return self.do_open(watched(http_client.HTTPConnection), req)

        class Https(urllib_request.HTTPSHandler):
            def https_open(self, req: Any) -> Any:
                context = getattr(self, "_context", None)  # the handler's own, as urllib's
                return self.do_open(watched(http_client.HTTPSConnection), req, context=context)

        return urllib_request.build_opener(Http(), Https())

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def _watch(self) -> None:
        window = self.rule.low_speed_time_s
        # Ten looks per window, between 50 ms and 1 s apart.
        tick = max(0.05, min(1.0, window / 10))
        samples = collections.deque([(self._start, 0)])
        while not self._done.wait(min(tick, max(self.left(), 0.0))):
            now, got = time.monotonic(), self.received
            samples.append((now, got))
            while len(samples) > 1 and samples[1][0] <= now - window:
                samples.popleft()  # samples[0]: the last one at least `window` ago
            then, before = samples[0]
            if now >= self.deadline:
                self._stop(
                    Stalled(
                        f"it was still running after {secs(self.rule.budget_s)}, the budget "
                        "for one download with its retries",
                        budget_spent=True,
                    )
                )
                return
            # curl's --speed-limit / --speed-time: less than `bps * window` bytes over the last
            # full window is a stall; the first window is never judged early.
            if now - then >= window and got - before < self.rule.low_speed_bps * window:
                self._stop(Stalled(stall_rule(self.rule.low_speed_bps, window)))
                return

    def _stop(self, verdict: Stalled) -> None:
        with self._lock:
            if self._done.is_set():
                return  # it finished in time
            self.verdict = verdict
            for sock in self._socks:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        # shutdown (not close) wakes a recv() blocked in the downloading thread.
        sock.shutdown(socket.SHUT_RDWR)


def secs(seconds: float) -> str:
    return f"{round(seconds)} s" if seconds >= 10 else f"{max(seconds, 0.0):.2g} s"


def stall_rule(bps: int, window: float) -> str:
    total = bps * window
    amount = f"{total / 1024:g} KiB" if total >= 1024 else f"{total:g} bytes"
    return f"less than {amount} arrived in {secs(window)} (the low-speed limit, {bps} bytes/s)"
