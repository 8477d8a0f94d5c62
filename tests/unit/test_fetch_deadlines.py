"""A slow or stalled remote costs a bounded time, then one FetchError (exit 4) naming the
URL (without its credentials), the bound and the fix.  Real servers on 127.0.0.1, real
git; every call runs in a thread with a hang guard, so a test fails instead of hanging."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any, Callable, List

import pytest

from cannbuild.errors import FetchError
from cannbuild.sources.fetch import Fetcher, GitFailed

from slowremote import silent_server, trickling_server

HANG_GUARD_S = 30.0
SECRET = "s3cret-pass"


def raised_within(call: Callable[[], Any], seconds: float = HANG_GUARD_S) -> BaseException:
    """What `call` raised, in a thread given `seconds` to end: the hang guard."""
    outcome: List[BaseException] = []

    def target() -> None:
        try:
            call()
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    assert outcome, "it did not fail"
    return outcome[0]


def mirrored(port: int) -> Fetcher:
    """Gitcode rewritten to a local mirror whose URL carries a user and password."""
    mirror = f"http://mirror-user:{SECRET}@127.0.0.1:{port}/"
    return Fetcher(mirrors=(("https://gitcode.com/", mirror),), retries=0)


def assert_names_the_url_not_the_credentials(exc: BaseException, port: int) -> str:
    assert isinstance(exc, FetchError), repr(exc)
    assert exc.exit_code == 4
    text = exc.paragraph()
    assert f"127.0.0.1:{port}" in text
    assert SECRET not in text and "mirror-user" not in text
    assert "Traceback" not in text and "\n" not in text
    return text


@pytest.mark.parametrize("phase", ["headers", "body"])
def test_a_trickling_download_gives_up_at_the_low_speed_limit(tmp_path: Path, phase: str):
    # one byte per 0.2 s: every read well within urllib's per-read timeout, forever
    body = 10_000 if phase == "body" else 0
    with trickling_server(every_s=0.2, body_bytes=body) as port:
        fetcher = mirrored(port)
        exc = raised_within(
            lambda: fetcher.download(
                "https://gitcode.com/pkg/a.tar.gz", tmp_path / "a.tar.gz", low_speed_time_s=0.5
            )
        )
    text = assert_names_the_url_not_the_credentials(exc, port)
    assert "gave up: less than 512 bytes arrived in 0.5 s" in text
    assert "cannbuild.mirrors" in text and "--offline --bundle" in text and "retry" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no .part left


def test_retries_of_a_stalled_download_stop_when_the_budget_is_spent(tmp_path: Path):
    pauses: List[float] = []
    fetcher = Fetcher(retries=50, base_delay_s=0.01, sleep=pauses.append)
    with trickling_server(every_s=0.2) as port:
        exc = raised_within(
            lambda: fetcher.download(
                f"http://user:{SECRET}@127.0.0.1:{port}/a.tar.gz",
                tmp_path / "a.tar.gz",
                low_speed_time_s=0.4,
                budget_s=1.2,
            )
        )
    text = assert_names_the_url_not_the_credentials(exc, port)
    assert "still running after 1.2 s, the budget for one download with its retries" in text
    # each attempt needs 0.4 s to be found stalled: 1.2 s hold at most 3, never the 51 allowed
    assert 1 <= len(pauses) <= 3


def test_a_git_command_past_its_timeout_is_stopped_with_a_fetch_error(tmp_path: Path):
    with silent_server() as port:
        exc = raised_within(
            lambda: Fetcher().git(["ls-remote", f"http://127.0.0.1:{port}/x.git"], timeout=1)
        )
    # a FetchError (exit 4) wherever it is not caught; a GitFailed where those are handled
    assert isinstance(exc, FetchError) and isinstance(exc, GitFailed), repr(exc)
    assert exc.exit_code == 4
    assert exc.paragraph().startswith("git ls-remote did not finish within 1 s and was stopped.")


def test_a_git_clone_from_a_silent_remote_ends_in_a_fetch_error_and_leaves_no_cache(
    tmp_path: Path,
):
    pauses: List[float] = []
    fetcher = Fetcher(retries=3, sleep=pauses.append)
    caches = tmp_path / "git"
    with silent_server() as port:
        url = f"http://user:{SECRET}@127.0.0.1:{port}/cann/x.git"
        exc = raised_within(lambda: fetcher.fetch_repo(caches / "x.git", url, budget_s=1))
    assert isinstance(exc, FetchError), repr(exc)
    text = exc.paragraph()
    assert f"git clone of http://***@127.0.0.1:{port}/cann/x.git did not finish within 1 s" in text
    assert "a fetch with its retries 1 s" in text and SECRET not in text
    assert "cannbuild.mirrors" in text and "--offline --bundle" in text
    assert pauses == []  # the budget was spent: no retry multiplies it
    assert list(caches.iterdir()) == []  # the killed clone's folder is gone


def test_a_git_fetch_into_an_existing_cache_is_bounded_and_keeps_its_refs(tmp_path: Path):
    work, cache = tmp_path / "work", tmp_path / "git" / "x.git"
    quiet = {"check": True, "capture_output": True}
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], **quiet)
    subprocess.run(["git", *ident, "commit", "-q", "--allow-empty", "-m", "c"], cwd=work, **quiet)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(cache)], **quiet)

    def refs() -> str:
        return subprocess.run(["git", "for-each-ref"], cwd=cache, **quiet).stdout.decode()

    before = refs()
    with silent_server() as port:
        fetcher = mirrored(port)
        exc = raised_within(
            lambda: fetcher.fetch_repo(cache, "https://gitcode.com/cann/x.git", budget_s=1)
        )
    text = assert_names_the_url_not_the_credentials(exc, port)
    assert "git fetch of http://***@127.0.0.1" in text and "did not finish within 1 s" in text
    assert "The mirror map rewrote https://gitcode.com/cann/x.git" in text
    assert refs() == before  # the killed fetch updated no ref
    subprocess.run(["git", "fsck", "--no-dangling"], cwd=cache, **quiet)


def test_a_clone_that_git_refuses_says_gits_fatal_line_not_its_closing_advice(tmp_path: Path):
    """git ends a failed clone with "Please make sure you have the correct access rights /
    and the repository exists."; the cause is its `fatal:` line (a mirror rule pointing at a
    folder that is no repository, say)."""
    with pytest.raises(FetchError) as failed:
        Fetcher().fetch_repo(tmp_path / "cache.git", f"file://{tmp_path}/no-such.git")
    message = failed.value.message
    assert "does not appear to be a git repository" in message, message
    assert "and the repository exists" not in message and ".." not in message


# git cut off by the file-size limit (`ulimit -f`), as a full disk or a quota cuts it: in a
# child, so the limit stays there; subprocess gives git SIGXFSZ's default back, which kills it
_CLONE_CUT_SHORT = """
import resource, sys
from cannbuild.errors import StorageError
from cannbuild.sources.fetch import Fetcher
limit = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    Fetcher(retries=0).fetch_repo(__import__("pathlib").Path(sys.argv[2]), sys.argv[1])
except StorageError as exc:
    print(exc.exit_code, exc.paragraph())
"""


def test_a_clone_stopped_by_a_full_disk_is_a_storage_error_not_a_mirror_problem(tmp_path: Path):
    """It was exit 4 'git clone ... failed (exit -25): no message', with a hint to check the
    mirror; a disk is what to fix (exit 11), and no half clone is left."""
    import os

    from warmcli import python_c

    work = tmp_path / "work"
    quiet = {"check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q", str(work)], **quiet)
    (work / "blob").write_bytes(os.urandom(256 * 1024))  # incompressible: past the limit
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "add", "blob"], cwd=work, **quiet)
    subprocess.run(["git", *ident, "commit", "-q", "-m", "c"], cwd=work, **quiet)
    cache = tmp_path / "git" / "x.git"
    proc = python_c(_CLONE_CUT_SHORT, f"file://{work}", str(cache), timeout=60)
    assert proc.stdout.startswith("11 "), proc.stdout + proc.stderr
    assert "could not write" in proc.stdout and "ulimit -f" in proc.stdout
    assert not cache.exists() and not list(cache.parent.glob("x.git.tmp*"))


def test_a_clone_whose_index_pack_the_file_size_limit_stops_is_a_storage_error(tmp_path: Path):
    """A pack of more than 100 objects (every real repo) is written by git's index-pack:
    `ulimit -f` kills that child and git says only 'fetch-pack: invalid index-pack output'
    (exit 128), which was exit 4 blaming the mirror."""
    import os

    from warmcli import python_c

    work = tmp_path / "work"
    quiet = {"check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q", str(work)], **quiet)
    for i in range(120):
        (work / f"f{i}").write_bytes(os.urandom(4096))
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "add", "-A"], cwd=work, **quiet)
    subprocess.run(["git", *ident, "commit", "-q", "-m", "c"], cwd=work, **quiet)
    cache = tmp_path / "git" / "x.git"
    proc = python_c(_CLONE_CUT_SHORT, f"file://{work}", str(cache), str(100 << 10), timeout=60)
    assert proc.stdout.startswith("11 "), proc.stdout + proc.stderr
    assert "file size limit stopped it" in proc.stdout and "ulimit -f" in proc.stdout
    assert not cache.exists() and not list(cache.parent.glob("x.git.tmp*"))
