"""Only what will run is checked: the third-party archives of a repo none of whose steps runs
(9.0's optional opbase-build, not selected) are neither fetched, checked nor locked, and the
lock says so; selecting the step makes them required again.  And a sandbox lock's header says
where each commit was fetched from: a stand-in only when it is one.

Two small real git repositories served through `file://` mirror rules (as cannbuild.mirrors
would send them to a local mirror), each declaring one archive in cmake/third_party/ in the
shape the upstream 9.0 files use (a URL `set()` and an ExternalProject_Add with URL_HASH).
"""

import hashlib
from pathlib import Path
from typing import Tuple

import pytest
from msgspec import Struct
from msgspec.structs import replace

from cannbuild.build.plan import idle_repos
from cannbuild.errors import FetchError, LockDrift, UsageError
from cannbuild.recipes import load_recipe
from cannbuild.sources.fetch import Fetcher
from cannbuild.sources.lock import (
    STAND_IN,
    Wanted,
    drift,
    header,
    origins_in,
    read_lock,
    write_lock,
)
from cannbuild.sources.pinning import sources_from_lock, sync_sources
from cannbuild.sources.request import SourceRequest
from cannbuild.workspace import Workspace

import cann91tree as t

RECIPES = Path(__file__).parent.parent.parent / "recipes"
RELEASES = "https://gitcode.com/cann-src-third-party"
MAKESELF_URL = f"{RELEASES}/makeself/releases/download/v1/makeself-1.tar.gz"
JSON_URL = f"{RELEASES}/json/releases/download/v3/include.zip"

RECIPE = """
[recipe]
name = "idle"
train = "9.0"
opbase = "source"

[repos.opbase]
url = "https://gitcode.com/cann/opbase.git"
tag = "v1"

[repos.ops-transformer]
url = "https://gitcode.com/cann/ops-transformer.git"
tag = "v1"

[[repos.opbase.third_party]]
name = "makeself"
place = ["third_party/makeself-1.tar.gz"]
source = "test: opbase takes third_party/<tgz>"

[[repos.ops-transformer.third_party]]
name = "json"
place = ["third_party/pkg/include.zip"]
source = "test: ops-transformer takes third_party/pkg/include.zip"

[[steps]]
name = "opbase-build"
repo = "opbase"
command = "steps/opbase-build.j2"
optional = true

[[steps]]
name = "ops-transformer-build"
repo = "ops-transformer"
command = "steps/ops-transformer-build.j2"

[validate]
library = "lib.so"
symbols = []
"""


def declaring(url: str, data: bytes) -> str:
    sha = hashlib.sha256(data).hexdigest()
    return f'set(PKG_URL "{url}")\nExternalProject_Add(pkg\n    URL ${{PKG_URL}}\n    URL_HASH SHA256={sha}\n)\n'


class Tree(Struct, frozen=True, kw_only=True):
    root: Path
    mirror: Path  # what https://gitcode.com/ is served from (the "stand-ins" in the header test)
    makeself: bytes
    json: bytes


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Tree:
    root = tmp_path_factory.mktemp("idle")
    mirror = root / "mirror"
    makeself = t.tarball({"makeself/makeself.sh": "#!/bin/sh\n"})
    json = b"PK not really a zip, the bytes are what is hashed\n"
    for name, files in (
        ("opbase", {"cmake/third_party/makeself.cmake": declaring(MAKESELF_URL, makeself)}),
        ("ops-transformer", {"cmake/third_party/json.cmake": declaring(JSON_URL, json)}),
    ):
        work = root / "work" / name
        t.commit_files(work, files, "v1")
        t.git("tag", "v1", cwd=work)
        (mirror / "cann").mkdir(parents=True, exist_ok=True)
        t.git("clone", "-q", "--bare", str(work), str(mirror / "cann" / f"{name}.git"))
    # only json is served: opbase's makeself is unreachable
    served = mirror / JSON_URL.removeprefix("https://gitcode.com/")
    served.parent.mkdir(parents=True)
    served.write_bytes(json)
    return Tree(root=root, mirror=mirror, makeself=makeself, json=json)


def serve_makeself(tree: Tree) -> None:
    served = tree.mirror / MAKESELF_URL.removeprefix("https://gitcode.com/")
    served.parent.mkdir(parents=True, exist_ok=True)
    served.write_bytes(tree.makeself)


def request(
    tmp_path: Path,
    tree: Tree,
    steps: Tuple[str, ...] = (),
    mirrors: Tuple[Tuple[str, str], ...] = (),
    **kw,
) -> SourceRequest:
    recipe_file = tmp_path / "idle.toml"
    recipe_file.write_text(RECIPE)
    recipe = load_recipe(recipe_file)
    rules = (*mirrors, ("https://gitcode.com/", tree.mirror.as_uri() + "/"))
    return SourceRequest(
        recipe=recipe,
        values={},
        toolkit_version="9.0.0",
        soc="ascend910b",
        sandbox=kw.pop("sandbox", False),
        ops_release="9.0.0",
        ws=Workspace(root=tmp_path / "ws"),
        fetcher=Fetcher(mirrors=rules),
        lock_file=tmp_path / "cannbuild.lock",
        locked=kw.pop("locked", False),
        offline=False,
        idle=idle_repos(recipe, steps, ()),
        **kw,
    )


def test_the_9_0_recipe_leaves_opbase_idle_unless_its_build_is_asked_for():
    recipe = load_recipe(RECIPES / "9.0.toml")
    idle = idle_repos(recipe, (), ())
    assert list(idle) == ["opbase"]
    assert (
        "opbase-build: optional, not selected; --with-step opbase-build selects it"
        in idle["opbase"]
    )
    assert idle_repos(recipe, ("opbase-build",), ()) == {}
    assert idle_repos(recipe, (), ("opbase-build",)) == {}  # --force runs it too
    # where opbase's build always runs, its archives are needed as before
    assert idle_repos(load_recipe(RECIPES / "8.5.toml"), (), ()) == {}
    with pytest.raises(UsageError, match="--with-step bogus: recipe cann-9.0 has no such step"):
        idle_repos(recipe, ("bogus",), ())


def test_an_idle_repos_unreachable_archives_stop_nothing_and_are_said_skipped(tree, tmp_path):
    state = sync_sources(request(tmp_path, tree))
    note = next(n for n in state.notes if n.startswith("opbase:"))
    assert "opbase: its third-party archives (makeself) were skipped, neither fetched nor" in note
    assert "no step of opbase runs (opbase-build: optional, not selected" in note
    lock = read_lock(tmp_path / "cannbuild.lock")
    assert lock == state.lock and lock.archives_skipped == ("opbase",)
    assert [(a.name, a.repos) for a in lock.third_party] == [("json", ("ops-transformer",))]
    assert 'archives_skipped = [\n    "opbase",\n]' in (tmp_path / "cannbuild.lock").read_text()
    # opbase is still checked out (ops-transformer 9.0 takes its source), with nothing put in
    assert (state.checkouts["opbase"] / "cmake/third_party/makeself.cmake").is_file()
    assert not (state.checkouts["opbase"] / "third_party").exists()
    assert (
        state.checkouts["ops-transformer"] / "third_party/pkg/include.zip"
    ).read_bytes() == tree.json
    # a locked rerun agrees, and `plan` reads the same identities from the lock
    again = sync_sources(request(tmp_path, tree, locked=True))
    assert again.identities == state.identities and not again.changed
    assert sources_from_lock(request(tmp_path, tree)).identities == state.identities


def test_selecting_the_step_makes_its_archives_required_again(tree, tmp_path):
    sync_sources(request(tmp_path, tree))
    wanted = request(tmp_path, tree, ("opbase-build",), locked=True)
    assert sources_from_lock(wanted) is None  # the lock does not cover this run
    with pytest.raises(LockDrift) as drift:
        sync_sources(wanted)
    assert "third-party archives of opbase: the lock leaves them out" in drift.value.paragraph()
    # without --locked the run re-resolves, and now the unreachable archive is a failure
    with pytest.raises(FetchError, match="makeself-1.tar.gz"):
        sync_sources(request(tmp_path, tree, ("opbase-build",)))
    assert read_lock(tmp_path / "cannbuild.lock").archives_skipped == ("opbase",)  # kept as was


def test_once_reachable_a_selected_steps_archives_are_fetched_checked_and_locked(tree, tmp_path):
    serve_makeself(tree)
    try:
        state = sync_sources(request(tmp_path, tree, ("opbase-build",)))
    finally:
        (tree.mirror / MAKESELF_URL.removeprefix("https://gitcode.com/")).unlink()
    lock = read_lock(tmp_path / "cannbuild.lock")
    assert lock.archives_skipped == () and "archives_skipped" not in lock.to_toml()
    assert sorted(a.name for a in lock.third_party) == ["json", "makeself"]
    assert (
        state.checkouts["opbase"] / "third_party/makeself-1.tar.gz"
    ).read_bytes() == tree.makeself
    assert not any("were skipped" in n for n in state.notes)
    # a lock that pins them serves a run that skips them: no drift, nothing fetched
    idle = sync_sources(request(tmp_path, tree, locked=True))
    assert idle.lock == lock and idle.identities["opbase"]["third_party"] == {}


def real_mirror(tree: Tree) -> Path:
    """A second mirror serving real-looking ops-transformer history (a copy of it)."""
    real = tree.root / "real"
    if not real.exists():
        t.git(
            "clone",
            "-q",
            "--bare",
            str(tree.mirror / "cann/ops-transformer.git"),
            str(real / "ops-transformer.git"),
        )
    return real


def test_a_sandbox_lock_says_where_each_commit_came_from(tree, tmp_path):
    # the sandbox's rule sends gitcode to its stand-ins; the user's rule for ops-transformer wins
    real = real_mirror(tree)
    user = (("https://gitcode.com/cann/ops-transformer", (real / "ops-transformer").as_uri()),)
    req = request(
        tmp_path, tree, mirrors=user, sandbox=True, stand_ins=(tree.mirror.as_uri() + "/",)
    )
    state = sync_sources(req)
    text = (tmp_path / "cannbuild.lock").read_text()
    head = text[: text.index("\n\n") if "\n\n" in text else len(text)].splitlines()
    assert head[0].startswith("# cannbuild.lock made on cannbuild's EMULATED Ascend host")
    assert "stand-in repositories'" not in text  # no blanket claim
    assert "# Where each commit was fetched from (after cannbuild.mirrors):" in head
    assert f"#   opbase: {STAND_IN}" in head
    assert f"#   ops-transformer: {(real / 'ops-transformer').as_uri()}.git" in head
    lock = read_lock(tmp_path / "cannbuild.lock")
    assert (
        lock.origins
        == state.lock.origins
        == {
            "opbase": STAND_IN,
            "ops-transformer": f"{(real / 'ops-transformer').as_uri()}.git",
        }
    )
    # a rewrite from disk (the container's base pin) keeps what the header said
    write_lock(tmp_path / "again.lock", replace(lock, container={"base": "x"}))
    assert read_lock(tmp_path / "again.lock").origins == lock.origins


def test_an_all_stand_in_sandbox_lock_and_one_of_unknown_origin(tree, tmp_path):
    req = request(tmp_path, tree, sandbox=True, stand_ins=(tree.mirror.as_uri() + "/",))
    lock = sync_sources(req).lock
    assert lock.origins == {"opbase": STAND_IN, "ops-transformer": STAND_IN}
    bare = replace(lock, origins={})
    path = tmp_path / "old.lock"
    write_lock(path, bare)
    assert "is not recorded" in path.read_text().splitlines()[3]
    assert read_lock(path).origins == {}
    # a real build refusing it names the stand-ins only when the lock says they were
    wanted = Wanted(
        recipe=lock.recipe, toolkit_version="9.0.0", soc="ascend910b", repos=(), archives=()
    )
    assert "its commits are the stand-in repositories'" in drift(lock, wanted)[0]
    mixed = replace(
        lock, origins={"opbase": STAND_IN, "ops-transformer": "https://mirror.example/x.git"}
    )
    assert "stand-in" not in drift(mixed, wanted)[0]


def test_a_control_character_in_a_mirror_url_cannot_leave_the_header(tmp_path):
    text = header(True, {"opbase": "https://m.example/x\nsandbox = false"})
    assert all(line.startswith("#") for line in text.splitlines())
    assert origins_in(text) == {"opbase": "https://m.example/x?sandbox = false"}
