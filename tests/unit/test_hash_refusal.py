"""A downloaded archive without the hash it must have is refused naming who declares that hash:
the checkout's CMake (file and line at its commit: the build itself checks it, so the fix is the
real file, through a mirror rule or a bundle, never a re-lock), the recipe, or cannbuild's lock
(only then `cannbuild lock` re-pins it).

A small real git repository served through a `file://` mirror rule, declaring makeself in the
shape of ops-transformer@v9.0.0:cmake/third_party/makeself-fetch.cmake (the URL `set()` at
line 15, `URL_HASH SHA256=` at line 35 of a FetchContent_Declare), and a mirror serving another
file at that URL, as the sandbox's stand-in archives do beside the real repositories.
"""

import hashlib
from pathlib import Path
from typing import Optional

import pytest
from msgspec import Struct

from cannbuild.errors import FetchError
from cannbuild.recipes import ArchiveRule, RepoSpec, load_recipe
from cannbuild.sources.archives import (
    Declared,
    check_hashes,
    discover,
    expected_hashes,
    plan_archives,
)
from cannbuild.sources.fetch import Fetcher
from cannbuild.sources.pinning import sync_sources
from cannbuild.sources.request import SourceRequest
from cannbuild.workspace import Workspace

import cann91tree as t

URL = (
    "https://gitcode.com/cann-src-third-party/makeself/releases/download/"
    "release-2.5.0-patch1.0/makeself-release-2.5.0-patch1.tar.gz"
)
REAL = t.tarball({"makeself-release-2.5.0-patch1/makeself.sh": "#!/bin/sh\n# the real one\n"})
OTHER = t.tarball({"makeself-release-2.5.0-patch1/makeself.sh": "#!/bin/sh\n# a stand-in\n"})

RECIPE = """
[recipe]
name = "hashes"
train = "9.0"
opbase = "source"

[repos.ops-transformer]
url = "https://gitcode.com/cann/ops-transformer.git"
tag = "v1"

[[repos.ops-transformer.third_party]]
name = "makeself"
place = ["third_party/pkg/makeself-release-2.5.0-patch1.tar.gz"]
source = "test: ops-transformer takes third_party/pkg/<tgz>"

[[steps]]
name = "ops-transformer-build"
repo = "ops-transformer"
command = "steps/ops-transformer-build.j2"

[validate]
library = "lib.so"
symbols = []
"""


def makeself_fetch(sha256: Optional[str]) -> str:
    """ops-transformer@v9.0.0's module, its lines where they are upstream (URL :15, hash :35)."""
    hashed = f"URL_HASH SHA256={sha256}" if sha256 else "# no hash declared"
    lines = ["# header"] * 10 + [
        'set(MAKESELF_NAME "makeself")',
        "set(MAKESELF_PATH ${CANN_3RD_LIB_PATH}/makeself)",
        "# download when absent",
        'if (NOT EXISTS "${MAKESELF_PATH}/makeself.sh")',
        f'    set(MAKESELF_DOWNLOAD_URL "{URL}")',
        *["    # local copies"] * 13,
        "    set(MAKESELF_URL ${MAKESELF_DOWNLOAD_URL})",
        "    endif()",
        "    include(FetchContent)",
        "    FetchContent_Declare(",
        "        ${MAKESELF_NAME}",
        "        URL ${MAKESELF_URL}",
        f"        {hashed}",
        '        SOURCE_DIR "${MAKESELF_PATH}"',
        "    )",
        "endif()",
    ]
    return "\n".join(lines) + "\n"


class Tree(Struct, frozen=True, kw_only=True):
    mirror: Path
    commit: str


def make_tree(root: Path, sha256: Optional[str]) -> Tree:
    mirror = root / "mirror"
    work = root / "work"
    commit = t.commit_files(
        work, {"cmake/third_party/makeself-fetch.cmake": makeself_fetch(sha256)}, "v1"
    )
    t.git("tag", "v1", cwd=work)
    (mirror / "cann").mkdir(parents=True)
    t.git("clone", "-q", "--bare", str(work), str(mirror / "cann" / "ops-transformer.git"))
    serve(Tree(mirror=mirror, commit=commit), OTHER)
    return Tree(mirror=mirror, commit=commit)


def serve(tree: Tree, data: bytes) -> None:
    served = tree.mirror / URL.removeprefix("https://gitcode.com/")
    served.parent.mkdir(parents=True, exist_ok=True)
    served.write_bytes(data)


def request(tmp_path: Path, tree: Tree, ws: str = "ws", **kw) -> SourceRequest:
    recipe_file = tmp_path / "hashes.toml"
    recipe_file.write_text(RECIPE)
    return SourceRequest(
        recipe=load_recipe(recipe_file),
        values={},
        toolkit_version="9.0.0",
        soc="ascend910_93",
        sandbox=kw.pop("sandbox", False),
        ops_release="9.0.0",
        ws=Workspace(root=tmp_path / ws),
        fetcher=Fetcher(mirrors=(("https://gitcode.com/", tree.mirror.as_uri() + "/"),)),
        lock_file=tmp_path / "cannbuild.lock",
        locked=kw.pop("locked", False),
        offline=False,
        **kw,
    )


def test_an_upstream_hash_is_refused_naming_its_line_and_the_real_file_as_the_fix(tmp_path):
    tree = make_tree(tmp_path, hashlib.sha256(REAL).hexdigest())
    stand_in = tree.mirror.as_uri() + "/"
    with pytest.raises(FetchError) as err:
        sync_sources(request(tmp_path, tree, sandbox=True, stand_ins=(stand_in,)))
    text = err.value.paragraph()
    # where the expected hash is written: the checkout at its commit, the URL_HASH line
    assert (
        f"ops-transformer@{tree.commit[:12]} cmake/third_party/makeself-fetch.cmake:35 declares "
        f"{hashlib.sha256(REAL).hexdigest()}" in err.value.message
    )
    assert f"has sha256 {hashlib.sha256(OTHER).hexdigest()}" in err.value.message
    assert "the sandbox's stand-in, not the real file" in err.value.message
    # what can be done: the real file, by a mirror rule or a bundle; a re-lock cannot help
    assert (
        "cannbuild.mirrors rule (invoke.yaml) for https://gitcode.com/cann-src-third-party/" in text
    )
    assert "`cannbuild bundle OUT.tar` there, `cannbuild setup --offline --bundle OUT.tar`" in text
    assert "run `cannbuild lock`" not in text and "recipe or lock" not in text
    # nothing half-fetched is left, and no lock is written
    assert not (tmp_path / "cannbuild.lock").exists()
    assert not any((tmp_path / "ws/downloads").rglob("*.tar.gz"))
    # the real file passes
    serve(tree, REAL)
    state = sync_sources(request(tmp_path, tree))
    placed = state.checkouts["ops-transformer"] / "third_party/pkg" / URL.rsplit("/", 1)[-1]
    assert placed.read_bytes() == REAL


def test_a_hash_only_the_lock_pins_is_re_pinned_with_cannbuild_lock(tmp_path):
    tree = make_tree(tmp_path, None)  # upstream declares no hash: the lock is the only pin
    sync_sources(request(tmp_path, tree))
    serve(tree, REAL)  # the file changed upstream since
    with pytest.raises(FetchError) as locked:  # another workspace, whose download cache lacks it
        sync_sources(request(tmp_path, tree, "ws2", locked=True))
    assert f"but {tmp_path / 'cannbuild.lock'} pins {hashlib.sha256(OTHER).hexdigest()}" in (
        locked.value.message
    )
    assert "run `cannbuild lock` to re-pin it deliberately" in locked.value.paragraph()
    # `cannbuild lock` itself keeps the lock's pin: it says how to let it go, not "run it again"
    with pytest.raises(FetchError) as relock:
        sync_sources(request(tmp_path, tree, "ws2"), update_lock=True)
    assert "remove its [[third_party]] entry from" in relock.value.paragraph()


def test_a_recipe_hash_names_the_recipe_entry_and_no_lock(tmp_path):
    archive = tmp_path / "m.tar.gz"
    archive.write_bytes(OTHER)
    declared = discover({"cmake/third_party/makeself-fetch.cmake": makeself_fetch("ab" * 32)})
    assert [(d.where, d.hashed) for d in declared] == [
        (
            "cmake/third_party/makeself-fetch.cmake:15",
            "cmake/third_party/makeself-fetch.cmake:35",
        )
    ]
    rule = ArchiveRule(name="makeself", place=("third_party/m.tgz",), source="s", sha256="c" * 64)
    spec = RepoSpec(name="opbase", url="https://gitcode.com/cann/opbase.git", third_party=(rule,))
    item = plan_archives(Path("/r/9.0.toml"), spec, "f" * 40, declared).placed[0]
    expects = expected_hashes(item, None, tmp_path / "cannbuild.lock", resolving=True)
    sha = hashlib.sha256(OTHER).hexdigest()
    with pytest.raises(FetchError) as err:
        check_hashes(archive, sha, URL, URL, expects)
    assert "recipe /r/9.0.toml [[repos.opbase.third_party]] 'makeself' declares " in (
        err.value.message
    )
    assert "cannbuild lock" not in err.value.paragraph()


def test_a_lock_agreeing_with_the_checkout_leaves_the_checkout_named():
    item = plan_archives(
        Path("r.toml"),
        RepoSpec(
            name="opbase",
            url="u",
            third_party=(ArchiveRule(name="m", place=("third_party/m",), source="s"),),
        ),
        "e" * 40,
        (Declared(name="m", url=URL, where="a.cmake:1", hashed="a.cmake:2", md5="a" * 32),),
    ).placed[0]
    # md5 only upstream (opbase v9.0.0's makeself): the lock's sha256 is the lock's, checked first
    expects = expected_hashes(item, "b" * 64, Path("cannbuild.lock"), resolving=False)
    assert [(e.algo, e.at, e.by) for e in expects] == [
        ("sha256", "cannbuild.lock", "lock"),
        ("md5", "opbase@eeeeeeeeeeee a.cmake:2", "checkout"),
    ]
    same = plan_archives(
        Path("r.toml"),
        RepoSpec(name="opbase", url="u", third_party=()),
        "e" * 40,
        (
            Declared(
                name="m",
                url=URL,
                where="a.cmake:1",
                sha256="b" * 64,
                places=("third_party/m/",),
                module="m",
            ),
        ),
    ).placed[0]
    # a lock holding upstream's own hash: the hash is upstream's, so the checkout is named
    expects = expected_hashes(same, "b" * 64, Path("cannbuild.lock"), resolving=False)
    assert [(e.at, e.by) for e in expects] == [("a.cmake:1", "checkout")]


def test_a_9_1_hash_is_named_in_the_cann_cmake_module_at_its_commit(tmp_path):
    archive = tmp_path / "json-3.11.3.tar.gz"
    archive.write_bytes(OTHER)
    url = "https://cann-3rd.obs.cn-north-4.myhuaweicloud.com/json/json-3.11.3.tar.gz"
    found = Declared(
        name="json-3.11.3",
        url=url,
        where="cann-cmake@0da367e61f48:third_party/json.cmake:53",
        hashed="cann-cmake@0da367e61f48:third_party/json.cmake:59",
        sha256="d" * 64,
        module="json",
        places=("third_party/json-3.11.3.tar.gz",),
    )
    spec = RepoSpec(name="ops-math", url="u", third_party=())
    item = plan_archives(Path("r.toml"), spec, "e" * 40, (found,)).placed[0]
    expects = expected_hashes(item, None, tmp_path / "cannbuild.lock", resolving=True)
    with pytest.raises(FetchError) as err:
        check_hashes(archive, hashlib.sha256(OTHER).hexdigest(), url, url, expects)
    assert (
        "but cann-cmake@0da367e61f48:third_party/json.cmake:59 declares dddd" in err.value.message
    )
    # a flat host: the rule names the host
    assert "rule (invoke.yaml) for https://cann-3rd.obs.cn-north-4.myhuaweicloud.com/ to" in (
        err.value.hint
    )
