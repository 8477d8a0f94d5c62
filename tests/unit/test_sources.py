import http.server
import os
import subprocess
import threading
from pathlib import Path
from typing import ClassVar, List

import pytest

from cannbuild.errors import FetchError, OfflineViolation, UsageError
from cannbuild.sources.archives import Expected
from cannbuild.sources.checkout import (
    COMMIT_MEMO,
    Nested,
    Seed,
    ensure_archive,
    ensure_checkout,
    has_commit,
    resolve_ref,
)
from cannbuild.sources.fetch import Fetcher, rewrite
from cannbuild.workspace import Workspace


def git(*args, cwd=None, date="2025-01-01T00:00:00+00:00"):
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    """A local 'gitcode.com/cann/demo.git' with two dated commits and a tag."""
    work = tmp_path / "work"
    git("-c", "init.defaultBranch=master", "init", "-q", str(work))
    (work / "f").write_text("1\n")
    git("add", "-A", cwd=work)
    git("commit", "-qm", "old", cwd=work, date="2025-11-10T00:00:00+08:00")
    git("tag", "v1", cwd=work)
    (work / "f").write_text("2\n")
    git("commit", "-qam", "new", cwd=work, date="2026-01-10T00:00:00+08:00")
    mirror = tmp_path / "mirror" / "cann"
    mirror.mkdir(parents=True)
    git("clone", "-q", "--bare", str(work), str(mirror / "demo.git"))
    return tmp_path / "mirror"


def test_longest_mirror_prefix_wins():
    mirrors = (
        ("https://gitcode.com/", "https://m1/"),
        ("https://gitcode.com/cann/", "https://m2/"),
    )
    assert rewrite("https://gitcode.com/cann/opbase.git", mirrors) == "https://m2/opbase.git"
    assert rewrite("https://gitcode.com/other/x.git", mirrors) == "https://m1/other/x.git"
    assert rewrite("https://github.com/x", mirrors) == "https://github.com/x"


def test_fetch_through_a_mirror_and_resolve_each_ref_kind(upstream: Path, tmp_path: Path):
    fetcher = Fetcher(mirrors=(("https://gitcode.com/", upstream.as_uri() + "/"),))
    cache = tmp_path / "cache.git"
    url = "https://gitcode.com/cann/demo.git"
    fetcher.fetch_repo(cache, url)
    tag, tag_time = resolve_ref(fetcher, cache, {"tag": "v1"}, url)
    head, _ = resolve_ref(fetcher, cache, {"branch": "master"}, url)
    dated, _ = resolve_ref(
        fetcher, cache, {"branch": "master", "until": "2025-11-16T00:00:00+08:00"}, url
    )
    assert tag == dated != head
    assert resolve_ref(fetcher, cache, {"commit": tag[:12]}, url) == (tag, tag_time)
    assert tag_time == int(git("show", "-s", "--format=%ct", tag, cwd=cache))
    with pytest.raises(FetchError, match="tag v9 is not in .*: the repository has no tag of"):
        resolve_ref(fetcher, cache, {"tag": "v9"}, url)
    # a release announced before upstream made its branch (9.1.1): named, with what to do
    with pytest.raises(FetchError) as err:
        resolve_ref(fetcher, cache, {"branch": "9.1.1"}, url)
    said = err.value.paragraph()
    assert f"branch 9.1.1 is not in {url}: the repository has no branch of that name" in said
    assert f"git ls-remote {url}" in said and "--ops-release" in said
    with pytest.raises(FetchError, match="as of 2020-01-01: .* has no commit that old"):
        resolve_ref(fetcher, cache, {"branch": "master", "until": "2020-01-01"}, url)


def test_a_users_log_settings_do_not_change_what_a_signed_tag_resolves_to(
    upstream: Path, tmp_path: Path, monkeypatch
):
    work = tmp_path / "work"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "key")], check=True
    )
    (work / "f").write_text("signed\n")
    git("add", "-A", cwd=work)
    signing = ["-c", "gpg.format=ssh", "-c", f"user.signingkey={tmp_path / 'key'}"]
    git(*signing, "commit", "-S", "-qm", "signed", cwd=work)
    git("tag", "v2", cwd=work)
    git("push", "-q", str(upstream / "cann" / "demo.git"), "master", "v2", cwd=work)
    signed = git("rev-parse", "HEAD", cwd=work)
    # `git log` would print signature lines before the format with this setting
    config = tmp_path / "gitconfig"
    config.write_text("[log]\n\tshowSignature = true\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    fetcher = Fetcher(mirrors=(("https://gitcode.com/", upstream.as_uri() + "/"),))
    url = "https://gitcode.com/cann/demo.git"
    fetcher.fetch_repo(tmp_path / "cache.git", url)
    assert resolve_ref(fetcher, tmp_path / "cache.git", {"tag": "v2"}, url)[0] == signed


def test_a_failed_first_fetch_leaves_no_cache_behind(tmp_path: Path):
    fetcher = Fetcher(mirrors=(("https://gitcode.com/", (tmp_path / "none").as_uri() + "/"),))
    cache = tmp_path / "git" / "demo.git"
    with pytest.raises(FetchError, match="git clone of file://.*/none/cann/demo.git failed"):
        fetcher.fetch_repo(cache, "https://gitcode.com/cann/demo.git")
    assert list((tmp_path / "git").iterdir()) == []


def test_a_killed_runs_clone_still_writing_does_not_break_the_next_fetch(
    upstream: Path, tmp_path: Path
):
    """kill -9 during the fetch left its `git clone` (a session of its own) writing into
    the cache's temporary clone; the next run's clone went into the same folder and failed
    ("could not open .../runtime.git.tmp/objects/pack/tmp_pack_...", blamed on the mirror).
    Each run's temporary clone is its own."""
    fetcher = Fetcher(mirrors=(("https://gitcode.com/", upstream.as_uri() + "/"),))
    cache = tmp_path / "git" / "demo.git"
    cache.parent.mkdir()
    # the killed run's git, as it was named before and as it is named now
    writing = [cache.with_name("demo.git.tmp"), cache.with_name("demo.git.tmp-999999")]
    loop = " ".join(f"{w}/objects/pack" for w in writing)
    orphan = subprocess.Popen(
        [
            "bash",
            "-c",
            f"while :; do mkdir -p {loop}; touch {writing[0]}/objects/pack/tmp_pack_x; done",
        ],
        start_new_session=True,
    )
    try:
        while not writing[0].exists():
            pass
        fetcher.fetch_repo(cache, "https://gitcode.com/cann/demo.git")
    finally:
        orphan.kill()
        orphan.wait()
    assert (cache / "HEAD").is_file()


@pytest.fixture
def fetched(upstream: Path, tmp_path: Path):
    """A workspace whose git cache holds the demo repo: (fetcher, ws, cache, url)."""
    fetcher = Fetcher(mirrors=(("https://gitcode.com/", upstream.as_uri() + "/"),))
    ws = Workspace(root=tmp_path / "ws")
    cache = ws.git_cache / "demo.git"
    url = "https://gitcode.com/cann/demo.git"
    fetcher.fetch_repo(cache, url)
    return fetcher, ws, cache, url


def test_first_fetch_clones_a_cache_that_keeps_no_url_and_later_ones_update_it(
    fetched, upstream: Path
):
    fetcher, _, cache, url = fetched
    # each fetch names its source: a URL kept in the cache could carry a credential
    assert "url" not in (cache / "config").read_text()
    assert git("for-each-ref", "--format=%(refname)", cwd=cache).split() == [
        "refs/heads/master",
        "refs/tags/v1",
    ]
    git("tag", "v2", "master", cwd=upstream / "cann" / "demo.git")
    fetcher.fetch_repo(cache, url)
    assert resolve_ref(fetcher, cache, {"tag": "v2"}, url)[0] == git(
        "rev-parse", "master", cwd=upstream / "cann" / "demo.git"
    )


def test_checkout_is_atomic_and_idempotent(fetched):
    fetcher, ws, cache, url = fetched
    old, _ = resolve_ref(fetcher, cache, {"tag": "v1"}, url)
    path, changed = ensure_checkout(fetcher, ws, "demo", cache, old, url)
    assert changed and (path / "f").read_text() == "1\n"
    assert git("rev-parse", "HEAD", cwd=path) == old
    _, changed = ensure_checkout(fetcher, ws, "demo", cache, old, url)
    assert not changed
    new, _ = resolve_ref(fetcher, cache, {"branch": "master"}, url)
    path, changed = ensure_checkout(fetcher, ws, "demo", cache, new, url)
    assert changed and (path / "f").read_text() == "2\n"
    assert not any(p.name.startswith(".demo.") and p.is_dir() for p in ws.src.iterdir())


def test_a_checkout_with_local_edits_is_not_replaced_by_another_commit(fetched):
    """Switching --cann with a file edited in src/<repo> deleted the edit without a word:
    the checkout is replaced whole.  It is refused naming the file and how to save it;
    once discarded the switch goes on.  A file the build adds (untracked) does not count."""
    fetcher, ws, cache, url = fetched
    old, _ = resolve_ref(fetcher, cache, {"tag": "v1"}, url)
    new, _ = resolve_ref(fetcher, cache, {"branch": "master"}, url)
    path, _ = ensure_checkout(fetcher, ws, "demo", cache, old, url)
    (path / "f").write_text("mine\n")
    (path / "made-by-the-build.o").write_text("x")
    with pytest.raises(UsageError) as refused:
        ensure_checkout(fetcher, ws, "demo", cache, new, url)
    said = " ".join(str(refused.value).split()) + " " + refused.value.hint
    assert "demo checkout" in said and "local changes (f)" in said and "diff >" in said, said
    assert (path / "f").read_text() == "mine\n"
    git("checkout", "--", ".", cwd=path)
    path, changed = ensure_checkout(fetcher, ws, "demo", cache, new, url)
    assert changed and (path / "f").read_text() == "2\n"


def test_an_archive_the_build_consumed_is_put_back_when_the_checkout_is_reused(fetched, tmp_path):
    """ops-transformer v9.0.0 unpacks abseil-cpp into the folder its copy was put in: a
    resumed build's configure found no copy and went to download it."""
    fetcher, ws, cache, url = fetched
    old, _ = resolve_ref(fetcher, cache, {"tag": "v1"}, url)
    archive = tmp_path / "abseil-cpp-20230802.1.tar.gz"
    archive.write_bytes(b"the archive")
    seed = Seed(source=archive, dest="third_party/abseil-cpp/" + archive.name, sha256="0" * 64)
    path, changed = ensure_checkout(fetcher, ws, "demo", cache, old, url, seeds=[seed])
    placed = path / seed.dest
    assert changed and placed.read_bytes() == b"the archive"
    placed.unlink()  # what the upstream ExternalProject's unpack into that folder does
    (placed.parent / "absl").mkdir()
    path, changed = ensure_checkout(fetcher, ws, "demo", cache, old, url, seeds=[seed])
    assert not changed and placed.read_bytes() == b"the archive"
    assert (placed.parent / "absl").is_dir()  # the rest of the folder is left as it is


def test_a_commit_the_cache_holds_is_remembered_and_a_gc_that_drops_it_is_seen(
    fetched, tmp_path: Path, monkeypatch
):
    """A locked no-op asks git nothing for a commit its cache was seen to hold (here git
    is off PATH and the answer still comes); once a gc prunes that commit, the changed
    pack folder sends the question to git again, which says no."""
    fetcher, _, cache, url = fetched
    old, _ = resolve_ref(fetcher, cache, {"tag": "v1"}, url)
    new, _ = resolve_ref(fetcher, cache, {"branch": "master"}, url)
    assert has_commit(fetcher, cache, new) and (cache / COMMIT_MEMO).is_file()
    with monkeypatch.context() as m:
        m.setenv("PATH", str(tmp_path / "no-git-here"))
        assert has_commit(fetcher, cache, new)
    git("update-ref", "refs/heads/master", old, cwd=cache)
    git("gc", "-q", "--prune=now", cwd=cache)
    assert not has_commit(fetcher, cache, new)
    assert has_commit(fetcher, cache, old)


def test_nested_pin_is_cloned_beside_the_checkout_at_its_own_commit(fetched):
    fetcher, ws, cache, _ = fetched
    url = "https://user:secret@gitcode.com/cann/demo.git"  # the origin a checkout must not keep
    old, _ = resolve_ref(fetcher, cache, {"tag": "v1"}, url)
    new, _ = resolve_ref(fetcher, cache, {"branch": "master"}, url)
    pin = Nested(dest="third_party/opbase", cache=cache, commit=old, url=url)
    path, changed = ensure_checkout(fetcher, ws, "demo", cache, new, url, [pin])
    assert changed and (path / "f").read_text() == "2\n"
    assert (path / "third_party" / "opbase" / "f").read_text() == "1\n"
    assert git("rev-parse", "HEAD", cwd=path / "third_party" / "opbase") == old
    origin = git("remote", "get-url", "origin", cwd=path / "third_party" / "opbase")
    assert "secret" not in origin and origin.endswith("gitcode.com/cann/demo.git")
    assert sorted(p.name for p in ws.src.iterdir()) == [".demo.checkout.json", "demo"]


def test_nested_pin_over_a_non_empty_folder_is_refused_and_leaves_nothing(fetched):
    fetcher, ws, cache, url = fetched
    head, _ = resolve_ref(fetcher, cache, {"branch": "master"}, url)
    # "f" is a file in the checkout: the nested clone cannot take its place
    with pytest.raises(FetchError, match="destination path 'f' already exists in demo"):
        ensure_checkout(
            fetcher,
            ws,
            "demo",
            cache,
            head,
            url,
            [Nested(dest="f", cache=cache, commit=head, url=url)],
        )
    assert list(ws.src.iterdir()) == []


def test_offline_refuses_network_urls_naming_them(tmp_path: Path):
    fetcher = Fetcher(mirrors=(("https://gitcode.com/", "https://mirror.invalid/"),), offline=True)
    with pytest.raises(OfflineViolation) as err:
        fetcher.fetch_repo(tmp_path / "c.git", "https://gitcode.com/cann/opbase.git")
    assert "https://mirror.invalid/cann/opbase.git" in err.value.paragraph()
    with pytest.raises(OfflineViolation, match="mirror.invalid/x.tar.gz"):
        fetcher.download("https://gitcode.com/x.tar.gz", tmp_path / "x")


class Flaky(http.server.BaseHTTPRequestHandler):
    failures = 0
    calls = 0

    def do_GET(self):
        type(self).calls += 1
        if self.path == "/missing":
            self.send_error(404)
            return
        if type(self).calls <= type(self).failures:
            self.send_error(503)
            return
        body = b"payload\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    Flaky.calls = 0
    httpd = http.server.HTTPServer(("127.0.0.1", 0), Flaky)
    # shutdown() waits for the loop's next poll: 0.5 s by default, per test
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    httpd.server_close()


def test_transient_server_errors_are_retried_with_backoff(server, tmp_path: Path):
    Flaky.failures = 2
    delays = []
    fetcher = Fetcher(retries=3, sleep=delays.append)
    path, _sha = ensure_archive(fetcher, Workspace(root=tmp_path), f"{server}/a.tar.gz")
    assert path.read_bytes() == b"payload\n"
    assert delays == [1.0, 2.0] and Flaky.calls == 3


def test_not_found_is_not_retried(server, tmp_path: Path):
    delays = []
    with pytest.raises(FetchError, match="404"):
        Fetcher(retries=3, sleep=delays.append).download(f"{server}/missing", tmp_path / "m")
    assert delays == []


def test_retries_are_bounded(server, tmp_path: Path):
    Flaky.failures = 99
    delays = []
    with pytest.raises(FetchError, match="503"):
        Fetcher(retries=2, sleep=delays.append).download(f"{server}/a", tmp_path / "a")
    assert delays == [1.0, 2.0]


def test_archive_hash_mismatch_is_refused(server, tmp_path: Path):
    Flaky.failures = 0
    pin = Expected(algo="sha256", value="0" * 64, at="cannbuild.lock", by="lock")
    with pytest.raises(FetchError, match="but cannbuild.lock pins 0{64}"):
        ensure_archive(Fetcher(), Workspace(root=tmp_path), f"{server}/a.tar.gz", (pin,))
    assert not list((tmp_path / "downloads").rglob("a.tar.gz"))


def test_file_mirror_archive_is_copied_and_a_missing_one_is_named(tmp_path: Path):
    mirror = tmp_path / "mirror dir"
    (mirror / "pkg").mkdir(parents=True)
    (mirror / "pkg" / "a.tar.gz").write_bytes(b"local\n")
    fetcher = Fetcher(mirrors=(("https://gitcode.com/", mirror.as_uri() + "/"),))
    path, _ = ensure_archive(
        fetcher, Workspace(root=tmp_path / "ws"), "https://gitcode.com/pkg/a.tar.gz"
    )
    assert path.read_bytes() == b"local\n"
    with pytest.raises(FetchError, match=r"b.tar.gz failed: \[Errno 2\] No such file") as err:
        fetcher.download("https://gitcode.com/pkg/b.tar.gz", tmp_path / "b")
    assert "mirror map rewrote" in err.value.hint
    assert not list(tmp_path.glob(".b*"))


class NeedsBasicAuth(http.server.BaseHTTPRequestHandler):
    """A mirror that answers only `mirror-user` with the password `p@ss:w/rd`."""

    seen: ClassVar[List[str]] = []

    def do_GET(self):
        import base64

        header = self.headers.get("Authorization", "")
        type(self).seen.append(header)
        if header != "Basic " + base64.b64encode(b"mirror-user:p@ss:w/rd").decode():
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="mirror"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"archive from the mirror\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def auth_server():
    NeedsBasicAuth.seen = []
    httpd = http.server.HTTPServer(("127.0.0.1", 0), NeedsBasicAuth)
    # shutdown() waits for the loop's next poll: 0.5 s by default, per test
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield httpd.server_port
    httpd.shutdown()
    httpd.server_close()


def test_a_mirror_url_with_user_and_password_is_sent_as_basic_auth(auth_server, tmp_path: Path):
    # the password is percent-encoded in the URL, as it is in a git remote
    mirror = f"http://mirror-user:p%40ss%3Aw%2Frd@127.0.0.1:{auth_server}/"
    fetcher = Fetcher(mirrors=(("https://gitcode.com/", mirror),), retries=0)
    path, _sha = ensure_archive(fetcher, Workspace(root=tmp_path), "https://gitcode.com/x/a.tar.gz")
    assert path.read_bytes() == b"archive from the mirror\n"


def test_a_refused_credential_is_named_without_the_password(auth_server, tmp_path: Path):
    mirror = f"http://mirror-user:wrong-secret@127.0.0.1:{auth_server}/"
    fetcher = Fetcher(mirrors=(("https://gitcode.com/", mirror),), retries=0)
    with pytest.raises(FetchError) as err:
        ensure_archive(fetcher, Workspace(root=tmp_path), "https://gitcode.com/x/a.tar.gz")
    text = err.value.paragraph()
    assert "HTTP Error 401" in text and "127.0.0.1" in text
    assert "wrong-secret" not in text and "mirror-user" not in text
    assert NeedsBasicAuth.seen and all(h.startswith("Basic ") for h in NeedsBasicAuth.seen)


def tarball(path: Path, members: dict) -> Path:
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_an_archive_with_one_top_folder_is_unpacked_without_it(tmp_path: Path):
    from cannbuild.sources.checkout import unpack_archive

    archive = tarball(tmp_path / "m.tar.gz", {"makeself-2.5/makeself.sh": b"#!/bin/sh\n"})
    unpack_archive(archive, tmp_path / "third_party" / "makeself")
    assert (tmp_path / "third_party/makeself/makeself.sh").read_bytes() == b"#!/bin/sh\n"
    assert sorted(p.name for p in (tmp_path / "third_party").iterdir()) == ["makeself"]


def test_a_zip_with_several_top_entries_is_unpacked_as_it_is(tmp_path: Path):
    import zipfile

    from cannbuild.sources.checkout import unpack_archive

    with zipfile.ZipFile(tmp_path / "include.zip", "w") as zf:
        zf.writestr("include/nlohmann/json.hpp", "// json\n")
        zf.writestr("single_include/nlohmann/json.hpp", "// json\n")
    unpack_archive(tmp_path / "include.zip", tmp_path / "json")
    assert (tmp_path / "json/include/nlohmann/json.hpp").is_file()


def test_an_archive_member_outside_the_folder_refuses_the_archive(tmp_path: Path):
    from cannbuild.sources.checkout import unpack_archive

    archive = tarball(tmp_path / "evil.tar.gz", {"top/ok": b"1", "../../escaped": b"2"})
    with pytest.raises(FetchError, match="points outside the folder"):
        unpack_archive(archive, tmp_path / "deep" / "dest")
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "deep" / "dest").exists()


def test_whether_a_commit_uses_cann_cmake_is_asked_of_git_once_and_kept(tmp_path: Path):
    """A commit's files never change: the answer is kept per commit, and a no-op run asks
    git nothing (here the repository is gone, and the kept answers still come back)."""
    import shutil

    from cannbuild.sources.canncmake import FETCH_CANN_CMAKE, uses_cann_cmake

    work = tmp_path / "work"
    git("-c", "init.defaultBranch=master", "init", "-q", str(work))
    (work / "build.sh").write_text("#!/bin/bash\n")
    git("add", "-A", cwd=work)
    git("commit", "-qm", "9.0", cwd=work)
    old = git("rev-parse", "HEAD", cwd=work)
    (work / FETCH_CANN_CMAKE).parent.mkdir(parents=True)
    (work / FETCH_CANN_CMAKE).write_text("include(FetchContent)\n")
    git("add", "-A", cwd=work)
    git("commit", "-qm", "9.1", cwd=work)
    new = git("rev-parse", "HEAD", cwd=work)
    memo = tmp_path / "memo"
    assert uses_cann_cmake(Fetcher(), work, new, memo)
    assert not uses_cann_cmake(Fetcher(), work, old, memo)
    shutil.rmtree(work)
    assert uses_cann_cmake(Fetcher(), work, new, memo)
    assert not uses_cann_cmake(Fetcher(), work, old, memo)
    with pytest.raises(OSError):  # nothing kept for another commit: git is asked (no folder)
        uses_cann_cmake(Fetcher(), work, "0" * 40, memo)
