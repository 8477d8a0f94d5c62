"""The per-user build cache (cannbuild/usercache.py): made once, reused, made again when
damaged, and never a folder someone else could write."""

import json
import os
import time

from cannbuild import usercache


def maker(calls):
    def make(folder):
        calls.append(folder)
        (folder / "libascendcl.so").write_bytes(b"\x7fELF emulation")
        (folder / "libnnopbase.so").write_bytes(b"\x7fELF nnopbase")

    return make


def test_an_entry_is_made_once_and_reused_by_the_next_run(tmp_path):
    root = usercache.cache_root({"XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert root == tmp_path / "xdg" / "cannbuild"
    calls = []
    entry, reused = usercache.cached(root, "emulation", "k1", maker(calls))
    assert not reused and (entry / "libascendcl.so").read_bytes() == b"\x7fELF emulation"
    again, reused = usercache.cached(root, "emulation", "k1", maker(calls))
    assert again == entry and reused and len(calls) == 1
    # another key (another compiler or source) is another entry
    _, reused = usercache.cached(root, "emulation", "k2", maker(calls))
    assert not reused and len(calls) == 2
    assert not [p for p in (root / "emulation").iterdir() if ".tmp-" in p.name]


def test_a_damaged_entry_is_made_again(tmp_path):
    root = usercache.cache_root({"XDG_CACHE_HOME": str(tmp_path)})
    calls = []
    entry, _ = usercache.cached(root, "emulation", "k", maker(calls))
    (entry / "libnnopbase.so").write_bytes(b"half-cop")
    entry, reused = usercache.cached(root, "emulation", "k", maker(calls))
    assert not reused and len(calls) == 2
    assert (entry / "libnnopbase.so").read_bytes() == b"\x7fELF nnopbase"
    (entry / "libascendcl.so").unlink()
    _, reused = usercache.cached(root, "emulation", "k", maker(calls))
    assert not reused and len(calls) == 3


def test_the_cache_lives_under_home_and_is_the_users_alone(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    root = usercache.cache_root({"HOME": str(home)})
    assert root == home / ".cache" / "cannbuild"
    assert (root.stat().st_mode & 0o777) == 0o700
    os.chmod(root, 0o777)  # a cache others may write is not used
    assert usercache.cache_root({"HOME": str(home)}) is None


def test_no_home_means_no_cache_and_nothing_made(tmp_path):
    gone = tmp_path / "not-here"
    assert usercache.cache_root({"HOME": str(gone)}) is None
    assert usercache.cache_root({}) is None
    assert not gone.exists()


def test_a_linked_cache_folder_is_not_used(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    (xdg / "cannbuild").symlink_to(elsewhere)
    assert usercache.cache_root({"XDG_CACHE_HOME": str(xdg)}) is None


def test_a_shipped_toml_file_is_parsed_once_and_an_edit_of_it_is_parsed_again(
    tmp_path, monkeypatch
):
    """The parse of a file under recipes/ is kept with the sha256 of its text: the same
    text takes the kept parse (a planted one comes back: nothing was parsed), an edited
    text is parsed again, whatever the file's time stamps say."""
    from cannbuild.bounded import RECIPE, read_text, tomllib  # tomli before Python 3.11
    from cannbuild.resources import data_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = data_dir("recipes") / "facts" / "hosts.toml"
    text = read_text(path, RECIPE)
    assert usercache.parsed_toml(text, path, RECIPE) == tomllib.loads(text)
    (memo,) = (tmp_path / "cannbuild" / "parsed").iterdir()
    kept = json.loads(memo.read_text())
    memo.write_text(json.dumps({**kept, "data": {"planted": 1}}))
    assert usercache.parsed_toml(text, path, RECIPE) == {"planted": 1}
    edited = text + '\n[edited]\nkey = "new"\n'
    assert usercache.parsed_toml(edited, path, RECIPE)["edited"] == {"key": "new"}
    assert usercache.parsed_toml(edited, path, RECIPE) == tomllib.loads(edited)
    # a value JSON would give back as another (a date) is parsed every time, never kept
    dated = text + "\n[dated]\nday = 2025-11-16\n"
    assert usercache.parsed_toml(dated, path, RECIPE) == tomllib.loads(dated)
    assert json.loads(memo.read_text())["data"] == tomllib.loads(edited)


def _entry(shelf, name, size, age, now):
    folder = shelf / name
    folder.mkdir(parents=True)
    (folder / "data").write_bytes(b"x" * size)
    os.utime(folder, (now - age, now - age))
    return folder


def test_a_full_shelf_loses_its_least_recently_used_entries_never_a_fresh_one(tmp_path):
    """Each torch version or change to the cases makes a new set of references (16 MB): the
    old ones go once the shelf is past its budget, oldest use first."""
    shelf = tmp_path / "fa-references"
    now = time.time()
    old = _entry(shelf, "old", 400, 3 * 86400, now)
    middle = _entry(shelf, "middle", 400, 86400, now)
    fresh = _entry(shelf, "in-use", 400, 60, now)  # used a minute ago: a run may be copying it
    new = _entry(shelf, "new", 400, 0, now)
    assert usercache.prune(shelf, 1000, keep=new, now=now) == ["old", "middle"]
    assert fresh.is_dir() and new.is_dir() and not old.exists() and not middle.exists()
    # within the budget nothing goes, however old
    assert usercache.prune(shelf, 1000, keep=new, now=now + 86400) == []


def test_a_reused_entry_counts_as_recently_used_and_a_dead_runs_temporary_folder_goes(tmp_path):
    root = usercache.cache_root({"XDG_CACHE_HOME": str(tmp_path)})
    shelf = root / "emulation"
    calls = []
    first, _ = usercache.cached(root, "emulation", "first", maker(calls))
    long_ago = time.time() - 86400
    os.utime(first, (long_ago, long_ago))
    usercache.cached(root, "emulation", "first", maker(calls))  # reused: its time is now
    second, _ = usercache.cached(root, "emulation", "second", maker(calls))
    os.utime(second, (long_ago, long_ago))
    dead = _entry(shelf, f".third.tmp-{2**22 + 7}", 10, 86400, time.time())  # no such pid
    live = _entry(shelf, f".fourth.tmp-{os.getpid()}", 10, 86400, time.time())
    # a budget for one entry: making a third removes the one used least recently
    _, reused = usercache.cached(root, "emulation", "third", maker(calls), budget=60)
    assert not reused
    assert sorted(p.name for p in shelf.iterdir()) == sorted(["first", "third", live.name])
    assert not dead.exists()
