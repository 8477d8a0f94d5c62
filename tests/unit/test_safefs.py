"""safefs: below a folder cannbuild owns, nothing is removed, replaced or made through a
symlink; a link on the way is refused (exit 2) naming it, and the folder it points at
is left byte for byte as it was."""

from __future__ import annotations

import os

import pytest

from cannbuild import safefs
from cannbuild.errors import UsageError

from usertree import tree_digest


@pytest.fixture
def world(tmp_path):
    """An owned root `ws` and a user's folder `mine` holding files at the names
    cannbuild uses, outside it."""
    ws = tmp_path / "ws"
    (ws / "src" / "opbase").mkdir(parents=True)
    (ws / "src" / "opbase" / "main.c").write_text("ours\n")
    mine = tmp_path / "mine"
    for rel in ("vendors/custom_transformer/keep.txt", "cases/c.bin", "opbase/main.c", "f"):
        (mine / rel).parent.mkdir(parents=True, exist_ok=True)
        (mine / rel).write_text(f"mine: {rel}\n")
    return ws, mine


def refused(call, *names: str) -> str:
    with pytest.raises(UsageError) as info:
        call()
    text = info.value.paragraph()
    for name in names:
        assert name in text
    return text


# each: what to link where, then the call; the message must name the link
LINKED = {
    "middle": ("opp", lambda ws: safefs.remove(ws, ws / "opp/vendors/custom_transformer", "x")),
    "leaf-folder-to-write": ("validate", lambda ws: safefs.make_dirs(ws, ws / "validate", "x")),
    "leaf-folder-to-renew": ("stage", lambda ws: safefs.fresh(ws, ws / "stage", "x")),
    "deep-make": ("opp", lambda ws: safefs.make_dirs(ws, ws / "opp/vendors/v/bin", "x")),
    "check-parent": ("src", lambda ws: safefs.check_below(ws, ws / "src/opbase", "x")),
    "check-folder": ("src", lambda ws: safefs.check_below(ws, ws / "src", "x", folder=True)),
    "replace-dst": ("src", lambda ws: safefs.replace(ws, ws / "tmp.x", ws / "src/opbase", "x")),
}


@pytest.mark.parametrize("case", sorted(LINKED))
def test_a_link_on_the_way_is_refused_and_its_target_untouched(world, case):
    ws, mine = world
    name, call = LINKED[case]
    if (ws / name).exists():
        os.rename(ws / name, ws / f"{name}.real")
    (ws / "tmp.x").mkdir()
    (ws / name).symlink_to(mine)
    before = tree_digest(mine)
    text = refused(lambda: call(ws), str(ws / name), f"to {mine}", "rm ")
    assert "nothing there was touched" in text
    assert tree_digest(mine) == before
    assert (ws / name).is_symlink()


def test_a_link_at_the_leaf_is_removed_itself_never_followed(world):
    ws, mine = world
    (ws / "stage").symlink_to(mine)
    before = tree_digest(mine)
    assert safefs.remove(ws, ws / "stage", "the stage")
    assert not os.path.lexists(ws / "stage")
    assert tree_digest(mine) == before


def test_links_inside_a_removed_folder_are_unlinked_not_followed(world):
    ws, mine = world
    (ws / "overlay" / "lib").mkdir(parents=True)
    (ws / "overlay" / "lib" / "to-mine").symlink_to(mine)
    (ws / "overlay" / "file-link").symlink_to(mine / "f")
    before = tree_digest(mine)
    safefs.remove(ws, ws / "overlay", "the overlay")
    assert not os.path.lexists(ws / "overlay")
    assert tree_digest(mine) == before


def test_a_path_that_leaves_the_root_is_refused(world):
    ws, mine = world
    before = tree_digest(mine)
    refused(lambda: safefs.remove(ws, ws / ".." / "mine" / "f", "x"), "'..'")
    refused(lambda: safefs.remove(ws, mine / "f", "x"), f"{mine / 'f'} is outside {ws}")
    refused(lambda: safefs.make_dirs(ws, ws / "a/../../mine/new", "x"), "'..'")
    assert tree_digest(mine) == before


def test_a_root_that_is_a_link_is_refused(world, tmp_path):
    _ws, mine = world
    (tmp_path / "linked-ws").symlink_to(mine)
    before = tree_digest(mine)
    refused(
        lambda: safefs.remove(tmp_path / "linked-ws", tmp_path / "linked-ws/opbase", "x"),
        str(tmp_path / "linked-ws"),
    )
    assert tree_digest(mine) == before


def test_the_root_itself_is_never_removed(world):
    ws, _mine = world
    refused(lambda: safefs.remove(ws, ws, "x"), "itself")
    assert (ws / "src/opbase/main.c").is_file()


def test_a_file_where_a_folder_belongs_is_refused(world):
    ws, _mine = world
    (ws / "opp").write_text("not a folder\n")
    refused(lambda: safefs.make_dirs(ws, ws / "opp/vendors", "x"), f"{ws / 'opp'} is a file")
    assert (ws / "opp").read_text() == "not a folder\n"


def test_real_folders_are_made_removed_and_replaced(world):
    ws, _mine = world
    made = safefs.make_dirs(ws, ws / "opp/vendors/custom_transformer/bin", "the vendor folder")
    assert made.is_dir() and made == ws / "opp/vendors/custom_transformer/bin"
    assert safefs.make_dirs(ws, made, "again") == made
    assert safefs.check_below(ws, made, "x", folder=True) == made
    (made / "set_env.bash").write_text("x\n")
    assert safefs.remove(ws, ws / "opp/vendors/custom_transformer", "x")
    assert not safefs.remove(ws, ws / "opp/vendors/custom_transformer", "x")
    assert not safefs.remove(ws, ws / "no/such/thing", "x")
    (ws / "src/.opbase.tmp").mkdir()
    (ws / "src/.opbase.tmp/new.c").write_text("new\n")
    os.rename(ws / "src/opbase", ws / "src/.opbase.old")
    safefs.replace(ws, ws / "src/.opbase.tmp", ws / "src/opbase", "the checkout")
    assert (ws / "src/opbase/new.c").read_text() == "new\n"


def test_removing_a_file_unlinks_it(world):
    ws, _mine = world
    assert safefs.remove(ws, ws / "src/opbase/main.c", "x")
    assert not (ws / "src/opbase/main.c").exists()


def test_an_older_bench_output_is_taken_on_its_results_json_and_a_lookalike_is_not(tmp_path):
    """--out of bench follows the ownership rule: a folder holding bench's names is taken
    only with a results.json in bench's format (charts are matched by pattern)."""
    from cannbuild.ownership import MARKER, claim

    older = tmp_path / "older"
    older.mkdir()
    (older / "results.json").write_text(
        '{"schema": 1, "run_id": "r", "results": [], "sweep_s": 1.0}\n'
    )
    (older / "tflops-fp32-bnsd.png").write_bytes(b"png")
    assert claim(older, "bench-output", "--out") == older
    assert (older / MARKER).is_file()
    lookalike = tmp_path / "lookalike"
    lookalike.mkdir()
    (lookalike / "results.json").write_text('{"my": "results"}\n')
    (lookalike / "report.md").write_text("# my report\n")
    before = tree_digest(lookalike)
    refused(lambda: claim(lookalike, "bench-output", "--out"), "nothing there shows")
    assert tree_digest(lookalike) == before
