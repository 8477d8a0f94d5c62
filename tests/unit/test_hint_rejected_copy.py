"""A failed step whose log holds CMake's hash rejection (both of ExternalProject's forms, captured
from cmake 3.25: tests/fixtures/cmake-hash/cmake-hash.source) gets a hint that names the rejected
file, says whether it is the copy cannbuild put into the checkout, and gives expected vs actual."""

import hashlib
import os
import subprocess
from pathlib import Path
from typing import List

import pytest

from cannbuild.bounded import StateIgnored
from cannbuild.build.actions import ActionContext
from cannbuild.build.plan import PlannedStep
from cannbuild.build.runner import NoProgress, RunLogs, first_errors, run_step
from cannbuild.hints import match_hint
from cannbuild.recipes.model import StepSpec
from cannbuild.sources.checkout import Seed, ensure_archive, ensure_checkout, placed_copies
from cannbuild.sources.fetch import Fetcher
from cannbuild.workspace import Workspace

FIXTURES = Path(__file__).parent.parent / "fixtures" / "cmake-hash"
ARCHIVE = FIXTURES / "pkg-1.0.tar.gz"
CAPTURED_WS = "/tmp/h3cap/ws"  # the workspace root the logs were captured in (.source)
MD5 = "9c7409ab8b3234626a359ecb655800c4"  # the archive's, the `actual:` of every MD5 log
WRONG = "0123456789abcdef0123456789abcdef"  # the URL_MD5 the capture declared
OLD_CLAIM = "cannbuild had put no copy where this ref looks"


def captured(name: str, ws: Path) -> List[str]:
    """A captured log as that build would have printed it in the workspace `ws`."""
    text = (FIXTURES / f"{name}.log").read_text(encoding="utf-8")
    return text.replace(CAPTURED_WS, str(ws)).splitlines()


def git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def placed(tmp_path: Path, dest: str, archive: Path = ARCHIVE) -> Workspace:
    """A workspace whose opbase checkout holds `archive` at `dest`, put there as a fetch
    puts it: into the download cache, then into the checkout by ensure_checkout."""
    work = tmp_path / "opbase"
    git("-c", "init.defaultBranch=master", "init", "-q", str(work), cwd=tmp_path)
    (work / "CMakeLists.txt").write_text("project(opbase NONE)\n")
    git("add", "-A", cwd=work)
    git("commit", "-qm", "one", cwd=work)
    commit = git("rev-parse", "HEAD", cwd=work)
    ws = Workspace(root=tmp_path / "ws")
    fetcher = Fetcher()
    path, sha = ensure_archive(fetcher, ws, archive.as_uri())
    ensure_checkout(
        fetcher,
        ws,
        "opbase",
        work / ".git",
        commit,
        "https://gitcode.com/cann/opbase.git",
        seeds=[Seed(source=path, dest=dest, sha256=sha)],
    )
    return ws


def test_without_copies_both_forms_name_the_file_and_no_download_claim_wins(tmp_path: Path):
    ws = tmp_path / "ws"
    for name in ("verify-md5", "verify-sha256", "download-rejected-copy", "download-served"):
        hint = match_hint(captured(name, ws))
        assert hint is not None and OLD_CLAIM not in hint, name
        assert "is not the file this ref's CMake pins" in hint, name
    rejected = str(ws / "src/opbase/third_party/pkg/pkg/pkg-1.0.tar.gz")
    assert match_hint(captured("download-rejected-copy", ws)).startswith(rejected)
    assert "(SHA256 differs)" in match_hint(captured("verify-sha256", ws))


@pytest.mark.parametrize(
    "name", ["verify-md5", "verify-sha256", "download-rejected-copy", "download-served"]
)
def test_the_same_hint_where_build_sh_stamps_every_line_with_the_time(tmp_path: Path, name):
    """ops-transformer's build.sh prints every line behind `[%Y-%m-%d %H:%M:%S] ` (gawk's
    strftime at v8.5.0, `date` at 9.1.0): CMake's hash message spans lines all the same."""
    ws = placed(tmp_path, "third_party/pkg/pkg/pkg-1.0.tar.gz")
    plain = captured(name, ws.root)
    stamped = [f"[2026-12-07 09:12:0{i % 10}] {line}" for i, line in enumerate(plain)]
    for copies in (None, placed_copies(ws)):
        hint = match_hint(stamped, copies)
        assert hint is not None and hint == match_hint(plain, copies), name


def test_the_issue_case_a_placed_copy_rejected_then_a_failed_download(tmp_path: Path):
    """ExternalProject's `-- MD5 hash of ...` (no `error:`) on the copy cannbuild put in
    DOWNLOAD_DIR, then `error: downloading '...' failed`: the hint is about the copy."""
    ws = placed(tmp_path, "third_party/pkg/pkg/pkg-1.0.tar.gz")
    hint = match_hint(captured("download-rejected-copy", ws.root), placed_copies(ws))
    assert hint is not None and OLD_CLAIM not in hint
    rejected = ws.checkout("opbase") / "third_party/pkg/pkg/pkg-1.0.tar.gz"
    assert hint.startswith(
        f"CMake rejected {rejected}: its MD5 is {MD5}, this ref's CMake expects {WRONG}"
    )
    assert (
        "that is the copy cannbuild put there (opbase's third_party/pkg/pkg/pkg-1.0.tar.gz" in hint
    )
    assert "the lock pins another archive than this ref's CMake" in hint
    assert "[[repos.opbase.third_party]]" in hint and "`cannbuild lock`" in hint
    assert (
        "CMake removed the rejected file and downloaded the archive itself, which failed "
        "(http://127.0.0.1:8765/missing/pkg-1.0.tar.gz)" in hint
    )


def test_the_verify_form_on_the_placed_file_itself(tmp_path: Path):
    ws = placed(tmp_path, "third_party/pkg-1.0.tar.gz")
    copies = placed_copies(ws)
    for name, algo in (("verify-md5", "MD5"), ("verify-sha256", "SHA256")):
        hint = match_hint(captured(name, ws.root), copies)
        assert hint.startswith(
            f"CMake rejected {ws.checkout('opbase') / 'third_party/pkg-1.0.tar.gz'}: its {algo} is "
        )
        assert "that is the copy cannbuild put there" in hint, name
        assert "downloaded the archive itself" not in hint  # verify.cmake.in never downloads


def test_a_placed_copy_changed_after_it_was_placed_is_told_apart(tmp_path: Path):
    other = tmp_path / "pkg-1.0.tar.gz"
    other.write_bytes(b"not the archive the capture used\n")
    ws = placed(tmp_path, "third_party/pkg-1.0.tar.gz", other)
    ours = hashlib.md5(other.read_bytes()).hexdigest()
    # cannbuild's copy has neither hash: both it and the file CMake read are wrong
    hint = match_hint(captured("verify-md5", ws.root), placed_copies(ws))
    assert f"with MD5 {ours}: neither that copy nor the file CMake read" in hint
    # the same log had the ref pinned cannbuild's copy (the `expected:` value set to its MD5): the
    # file CMake read was changed after cannbuild placed it
    lines = [line.replace(WRONG, ours) for line in captured("verify-md5", ws.root)]
    hint = match_hint(lines, placed_copies(ws))
    assert "which has the expected MD5: the file was changed or replaced after cannbuild" in hint
    assert f"Delete {ws.checkout('opbase')} and run again" in hint


def test_a_download_cannbuild_put_no_copy_for(tmp_path: Path):
    ws = placed(tmp_path, "third_party/other.tar.gz")  # a copy of another name
    hint = match_hint(captured("download-served", ws.root), placed_copies(ws))
    assert "cannbuild put no copy of pkg-1.0.tar.gz into a checkout" in hint
    assert "the download from http://127.0.0.1:8765/pkg-1.0.tar.gz served another file" in hint
    assert "[[repos.<repo>.third_party]]" in hint


def test_a_download_beside_a_placed_copy_of_that_name(tmp_path: Path):
    ws = placed(tmp_path, "third_party/pkg-1.0.tar.gz")
    hint = match_hint(captured("download-served", ws.root), placed_copies(ws))
    where = ws.checkout("opbase") / "third_party/pkg-1.0.tar.gz"
    assert f"the build downloaded it instead of taking the copy cannbuild put at {where}" in hint


@pytest.mark.parametrize("broken", ["no marker", "no cache"])
def test_copies_that_cannot_be_compared_are_not_claimed(tmp_path: Path, broken: str):
    ws = placed(tmp_path, "third_party/pkg/pkg/pkg-1.0.tar.gz")
    if broken == "no marker":
        (ws.src / ".opbase.checkout.json").write_text("{")
        with pytest.warns(StateIgnored, match="checkout record .* is not valid JSON"):
            copies = placed_copies(ws)
        hint = match_hint(captured("download-rejected-copy", ws.root), copies)
        assert "cannbuild put no copy of pkg-1.0.tar.gz" in hint
    else:
        for copy in placed_copies(ws):
            assert copy.cached is not None
            copy.cached.unlink()
        hint = match_hint(captured("download-rejected-copy", ws.root), placed_copies(ws))
        assert "no longer in the cache to compare: run `cannbuild fetch`" in hint


def test_a_failed_step_digest_carries_the_rejected_copy_hint(tmp_path: Path):
    """The runner passes the workspace's placed copies to the hint: a step printing the
    captured log (as the real build printed it) fails with the copy named."""
    ws = placed(tmp_path, "third_party/pkg/pkg/pkg-1.0.tar.gz")
    log = tmp_path / "build.log"
    log.write_text("\n".join(captured("download-rejected-copy", ws.root)) + "\n")
    command = f"cat {log}; exit 2"
    step = PlannedStep(
        spec=StepSpec(name="opbase-build", command="steps/opbase-build.j2", repo="opbase"),
        command=command,
        argv=("sh", "-c", command),
        cwd=ws.checkout("opbase"),
        env=dict(os.environ),
        env_delta={},
        inputs={},
    )
    actions = ActionContext(
        toolkit_home=ws.root / "toolkit",
        overlay=ws.overlay,
        stage=ws.stage,
        opp=ws.opp,
        vendor_dirs={"lib": ws.opp / "vendors" / "custom_lib"},
    )
    outcome = run_step(step, ws, RunLogs(ws=ws, run_id="run1"), actions, NoProgress(), [])
    assert outcome.exit_code == 2
    assert "that is the copy cannbuild put there (opbase's third_party/pkg/pkg/" in outcome.hint


def test_the_digest_shows_the_status_line_that_rejected_the_copy(tmp_path: Path):
    """download.cmake.in says it as `-- MD5 hash of` (no `error:`), before the download
    failure: the digest's first error block is that rejection, with its values."""
    lines = captured("download-rejected-copy", tmp_path)
    shown = [text for _, text in first_errors(lines)]
    assert shown[:5] == [
        "-- MD5 hash of",
        f"{tmp_path}/src/opbase/third_party/pkg/pkg/pkg-1.0.tar.gz",
        "does not match expected value",
        f"expected: '{WRONG}'",
        f"actual: '{MD5}'",
    ]
