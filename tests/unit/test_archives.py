"""Third-party archives: read from a checkout's cmake/third_party/*.cmake, placed by the recipe.

The CMake snippets below are written for these tests in the shapes the upstream modules
use (a URL in a variable, the hash in the ExternalProject_Add / FetchContent_Declare
below it, `${VAR}` in the URL, a local-copy branch before the download).
"""

from pathlib import Path

import pytest

from cannbuild.bounded import StateIgnored
from cannbuild.errors import FetchError, UsageError
from cannbuild.recipes import ArchiveRule, RepoSpec
from cannbuild.sources.archives import (
    Declared,
    archive_name,
    check_hashes,
    discover,
    expected_hashes,
    plan_archives,
)

GITCODE = "https://gitcode.com/cann-src-third-party"
MAKESELF = f"{GITCODE}/makeself/releases/download/release-2.5.0-patch1.0/makeself-release-2.5.0-patch1.tar.gz"
PROTOBUF = f"{GITCODE}/protobuf/releases/download/v25.1/protobuf-25.1.tar.gz"
ABSEIL = f"{GITCODE}/abseil-cpp/releases/download/20230802.1/abseil-cpp-20230802.1.tar.gz"
EIGEN = f"{GITCODE}/eigen/releases/download/5.0.0-h0.trunk/eigen-5.0.0.tar.gz"
JSON = f"{GITCODE}/json/releases/download/v3.11.3/include.zip"

FETCH_WITH_SHA256 = f"""\
# the packer
if (NOT EXISTS "${{MAKESELF_PATH}}/makeself.sh")
    set(MAKESELF_URL "{MAKESELF}")
    FetchContent_Declare(
        makeself
        URL ${{MAKESELF_URL}}
        URL_HASH SHA256={"ab" * 32}
    )
endif()
"""

VERSION_IN_A_VARIABLE = f"""\
set(EIGEN_VERSION_PKG eigen-5.0.0.tar.gz)
if(EXISTS "${{CANN_3RD_LIB_PATH}}/${{EIGEN_VERSION_PKG}}")
    set(REQ_URL "file://${{CANN_3RD_LIB_PATH}}/${{EIGEN_VERSION_PKG}}")
else()
    set(REQ_URL "{EIGEN.rsplit("/", 1)[0]}/${{EIGEN_VERSION_PKG}}")
endif()
ExternalProject_Add(external_eigen URL ${{REQ_URL}})
"""

TWO_WITHOUT_HASH = f"""\
if(NOT EXISTS "${{PROTOBUF_PATH}}")
  set(REQ_URL "{PROTOBUF}")
  set(ABS_REQ_URL "{ABSEIL}")
  ExternalProject_Add(protobuf_src_dl URL ${{REQ_URL}} DOWNLOAD_NO_EXTRACT 1)
  ExternalProject_Add(abseil_src_dl URL ${{ABS_REQ_URL}} DOWNLOAD_NO_EXTRACT 1)
endif()
"""

HASH_BEFORE_THE_URL = f"""\
if (IS_DIRECTORY "${{CANN_3RD_LIB_PATH}}/json")
  ExternalProject_Add(nlohmann_json URL ${{CANN_3RD_LIB_PATH}}/json URL_MD5 {"c" * 32})
else()
  # ExternalProject_Add(old URL https://example.com/old.tar.gz)
  set(REQ_URL "{JSON}")
  ExternalProject_Add(nlohmann_json URL ${{REQ_URL}} URL_MD5 {"c" * 32})
endif()
FetchContent_Declare(opbase GIT_REPOSITORY https://gitcode.com/cann/opbase.git)
"""


def test_each_archive_url_is_read_with_the_hash_declared_for_it():
    found = {
        d.url: d
        for d in discover(
            {
                "cmake/third_party/makeself-fetch.cmake": FETCH_WITH_SHA256,
                "cmake/third_party/eigen.cmake": VERSION_IN_A_VARIABLE,
                "cmake/third_party/protobuf.cmake": TWO_WITHOUT_HASH,
                "cmake/third_party/nlohmann_json.cmake": HASH_BEFORE_THE_URL,
            }
        )
    }
    assert set(found) == {MAKESELF, EIGEN, PROTOBUF, ABSEIL, JSON}  # no git URL, no comment
    assert found[MAKESELF] == Declared(
        name="makeself",
        url=MAKESELF,
        where="cmake/third_party/makeself-fetch.cmake:3",
        md5=None,
        sha256="ab" * 32,
        hashed="cmake/third_party/makeself-fetch.cmake:7",
    )
    assert found[EIGEN].where == "cmake/third_party/eigen.cmake:5"  # ${EIGEN_VERSION_PKG} expanded
    assert found[EIGEN].md5 is None and found[EIGEN].sha256 is None
    assert found[PROTOBUF].md5 is None and found[ABSEIL].name == "abseil-cpp"
    assert found[JSON].md5 == "c" * 32  # the hash written before the URL still belongs to it


def test_the_same_url_in_two_files_is_one_archive_keeping_the_declared_hash():
    plain = f'set(REQ_URL "{MAKESELF}")\nExternalProject_Add(m URL ${{REQ_URL}})\n'
    found = discover(
        {"cmake/third_party/a.cmake": plain, "cmake/third_party/b.cmake": FETCH_WITH_SHA256}
    )
    assert len(found) == 1
    assert found[0].where == "cmake/third_party/a.cmake:1" and found[0].sha256 == "ab" * 32


@pytest.mark.parametrize(
    "url, name",
    [
        (EIGEN, "eigen"),
        (
            "https://gitee.com/openeuler/libboundscheck/repository/archive/v1.1.16.tar.gz",
            "libboundscheck",
        ),
        ("https://example.com/include.zip", "include"),
    ],
)
def test_an_archive_is_named_after_its_project(url, name):
    assert archive_name(url) == name


def repo(*rules: ArchiveRule) -> RepoSpec:
    return RepoSpec(
        name="opbase", url="https://gitcode.com/cann/opbase.git", tag="v9.0.0", third_party=rules
    )


DECLARED = (
    Declared(
        name="makeself",
        url=MAKESELF,
        where="cmake/third_party/makeself-fetch.cmake:45",
        md5="a" * 32,
    ),
    Declared(name="protobuf", url=PROTOBUF, where="cmake/third_party/protobuf.cmake:46"),
    Declared(
        name="googletest",
        url=f"{GITCODE}/googletest/x/googletest-1.14.0.tar.gz",
        where="cmake/third_party/gtest.cmake:65",
    ),
    Declared(
        name="boost",
        url=f"{GITCODE}/boost/x/boost_1_87_0.tar.gz",
        where="cmake/third_party/boost.cmake:20",
    ),
)


def test_the_recipe_places_what_the_cmake_declares_and_names_the_rest():
    plan = plan_archives(
        Path("9.0.toml"),
        repo(
            ArchiveRule(
                name="makeself",
                place=("third_party/m.tar.gz", "third_party/makeself/"),
                source="makeself-fetch.cmake:29",
            ),
            ArchiveRule(
                name="protobuf", place=(), source="protobuf.cmake: downloaded on every build"
            ),
            ArchiveRule(name="googletest", place=(), source="only -u", needed=False),
        ),
        "f" * 40,
        DECLARED,
    )
    assert [(n.name, n.url, n.place, n.md5) for n in plan.placed] == [
        ("makeself", MAKESELF, "third_party/m.tar.gz", "a" * 32)
    ]
    assert [n.name for n in plan.unplaceable] == ["protobuf"]
    assert [d.name for d in plan.unknown] == ["boost"]  # googletest: the recipe said not needed


def test_a_recipe_adds_an_archive_or_overrides_its_hash():
    extra = "https://mirror.example/x/extra-1.0.tar.gz"
    plan = plan_archives(
        Path("r.toml"),
        repo(
            ArchiveRule(name="makeself", place=("third_party/m.tar.gz",), source="s", md5="b" * 32),
            ArchiveRule(
                name="extra",
                place=("third_party/extra.tar.gz",),
                source="s",
                url=extra,
                sha256="e" * 64,
            ),
        ),
        "f" * 40,
        DECLARED,
    )
    placed = {n.name: n for n in plan.placed}
    assert placed["makeself"].md5 == "b" * 32
    assert placed["extra"].url == extra and placed["extra"].where == "recipe r.toml"


def test_a_rule_for_an_archive_the_ref_does_not_download_is_a_clear_error():
    with pytest.raises(
        UsageError, match=r"'eigen' names an archive that opbase's .* does not download"
    ):
        plan_archives(
            Path("r.toml"),
            repo(ArchiveRule(name="eigen", place=("third_party/e.tgz",), source="s")),
            "f" * 40,
            DECLARED,
        )


def test_a_file_the_cmake_would_reject_is_refused_naming_the_line(tmp_path):
    archive = tmp_path / "makeself.tar.gz"
    archive.write_bytes(b"not the pinned makeself")
    item = plan_archives(
        Path("r.toml"),
        repo(ArchiveRule(name="makeself", place=("third_party/m",), source="s")),
        "f" * 40,
        DECLARED,
    ).placed[0]
    expects = expected_hashes(item, None, tmp_path / "cannbuild.lock", resolving=True)
    with pytest.raises(FetchError, match=r"declares a{32}: the build checks that hash") as err:
        check_hashes(archive, "0" * 64, MAKESELF, "file:///mirror/makeself.tar.gz", expects)
    assert "opbase@ffffffffffff cmake/third_party/makeself-fetch.cmake:45" in err.value.message
    assert "fetched as file:///mirror/makeself.tar.gz" in err.value.message


def _git(cwd: Path, *args: str) -> str:
    import subprocess

    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "HOME": str(cwd),
        "PATH": "/usr/bin:/bin",
    }
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_commits_declared_archives_are_read_from_git_once_then_remembered(tmp_path):
    from cannbuild.sources.archives import declared_archives
    from cannbuild.sources.fetch import Fetcher, GitFailed

    repo = tmp_path / "repo"
    (repo / "cmake" / "third_party").mkdir(parents=True)
    (repo / "cmake" / "third_party" / "makeself.cmake").write_text(FETCH_WITH_SHA256)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "x")
    commit = _git(repo, "rev-parse", "HEAD")
    memo = tmp_path / "memo"
    first = declared_archives(Fetcher(), repo, commit, memo)
    assert [d.url for d in first] == [MAKESELF]
    assert (memo / f"{commit}.json").is_file()
    import shutil

    shutil.rmtree(repo / ".git")  # no git to ask: the memo alone answers
    assert declared_archives(Fetcher(), repo, commit, memo) == first
    (memo / f"{commit}.json").write_text("[not what was written")
    with pytest.raises(GitFailed), pytest.warns(StateIgnored, match=f"memo {memo}/{commit}"):
        declared_archives(Fetcher(), repo, commit, memo)  # not trusted: git is asked again


def test_two_archives_in_one_file_each_keep_the_hash_declared_after_them():
    """A hash belongs to the nearest archive URL before it: protobuf.cmake at some refs
    fetches abseil too, each with its own URL_HASH."""
    text = f"""\
if(NOT EXISTS "${{PROTOBUF_PATH}}")
  set(REQ_URL "{PROTOBUF}")
  ExternalProject_Add(protobuf_src_dl URL ${{REQ_URL}} URL_HASH SHA256={"a" * 64})
  set(ABS_REQ_URL "{ABSEIL}")
  ExternalProject_Add(abseil_src_dl URL ${{ABS_REQ_URL}} URL_HASH SHA256={"b" * 64})
endif()
"""
    found = {d.url: d for d in discover({"cmake/third_party/protobuf.cmake": text})}
    assert found[PROTOBUF].sha256 == "a" * 64
    assert found[ABSEIL].sha256 == "b" * 64
    assert found[ABSEIL].hashed == "cmake/third_party/protobuf.cmake:5"
