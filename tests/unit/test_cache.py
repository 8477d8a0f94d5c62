"""The shared compile cache's pieces: finding ccache, doctor's rows, the report's figures."""

from __future__ import annotations

import http.server
import socket
import threading
import time

import pytest

from cannbuild.build.cache_probe import probe_remote
from cannbuild.build.compile_cache import cache_checks, run_record, summary_line
from cannbuild.host.check import FAIL, SKIP

from sharedcache import redis_server, running_redis


def test_without_a_remote_a_missing_ccache_is_a_note_and_nothing_blocks(tmp_path):
    rows = {c.id: c for c in cache_checks(None, {"PATH": str(tmp_path)}, extra=())}
    assert rows["cache.remote"].status == SKIP
    assert rows["cache.ccache"].status == SKIP and not rows["cache.ccache"].blocking
    assert "a note: none is configured" in rows["cache.ccache"].detail


def test_a_remote_without_a_usable_ccache_blocks_the_build_and_names_the_fix(tmp_path):
    fake = tmp_path / "ccache"
    fake.write_text("#!/bin/sh\necho 'ccache version 4.2.1'\n")
    fake.chmod(0o755)
    rows = cache_checks("redis://hunter2@127.0.0.1:1", {"PATH": str(tmp_path)}, extra=())
    ccache = rows[0]
    assert ccache.status == FAIL and ccache.blocking
    assert f"{fake} is ccache 4.2.1 (< 4.4: no remote storage)" in ccache.detail
    assert "pip install 'cannbuild[ccache]'" in ccache.hint
    assert all("hunter2" not in (c.detail + (c.hint or "")) for c in rows)


@pytest.mark.skipif(redis_server() is None, reason="redis-server is not installed")
def test_doctor_says_whether_the_redis_remote_answers(tmp_path):
    with running_redis(tmp_path) as url:
        answers, detail = probe_remote(url)
        assert answers and "answered PING" in detail and url.split("@")[0][8:] not in detail
        wrong = url.replace("//pw-", "//nope-")
        answers, detail = probe_remote(wrong)
        assert (not answers and "WRONGPASS" in detail.upper()) or "invalid" in detail
        port = int(url.rsplit(":", 1)[1])
    start = time.monotonic()
    answers, detail = probe_remote(f"redis://127.0.0.1:{port}", timeout=1.0)
    assert not answers and "did not answer within 1 s" in detail
    assert time.monotonic() - start < 30  # a bounded wait (the hang guard)


def test_a_remote_that_never_answers_is_given_up_on_within_the_bound():
    with socket.socket() as silent:  # accepts connections (the backlog), never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        for url in (f"redis://pw@127.0.0.1:{port}", f"http://u:pw@127.0.0.1:{port}/cache"):
            start = time.monotonic()
            answers, detail = probe_remote(url, timeout=1.0)
            assert not answers and "did not answer within 1 s" in detail, detail
            assert time.monotonic() - start < 30 and "pw" not in detail  # the hang guard


class _Storage(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self):
        code = 404 if self.headers.get("Authorization") == "Basic dTpnb29k" else 401
        self.send_response(code)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_doctor_says_whether_the_http_remote_answers_and_accepts_the_credentials():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Storage)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        answers, detail = probe_remote(f"http://u:good@127.0.0.1:{port}/cache")
        assert answers and "answered HTTP 404" in detail and "good" not in detail
        answers, detail = probe_remote(f"http://u:bad@127.0.0.1:{port}/cache")
        assert not answers and "refuses these credentials" in detail
    finally:
        server.shutdown()
        server.server_close()


def test_the_report_counts_this_runs_hits_and_misses_only():
    class Cache:
        remote = "redis://secret@cache.example:6379"
        directory = "/ws/ccache"

        class ccache:
            path = "/usr/bin/ccache"
            version_text = "4.7.5"

    before = {
        "direct_cache_hit": 5,
        "cache_miss": 7,
        "remote_storage_hit": 2,
        "local_storage_hit": 3,
    }
    after = {
        "direct_cache_hit": 14, "preprocessed_cache_hit": 1, "cache_miss": 8,
        "remote_storage_hit": 11, "local_storage_hit": 4, "remote_storage_error": 1,
    }  # fmt: skip
    record = run_record(Cache(), before, after, Cache.remote)
    assert record["compilations"] == 11 and record["hits"] == 10 and record["misses"] == 1
    assert record["remote_hits"] == 9 and record["local_hits"] == 1 and record["remote_errors"] == 1
    line = summary_line(record)
    assert "redis://***@cache.example:6379" in line and "secret" not in line
    assert "9 remote hits (82 % from the remote)" in line
    off = run_record(None, None, None, None)
    assert off["status"] == "off" and "cannbuild.cache.remote" in summary_line(off)
