from pathlib import Path

import pytest

from cannbuild.errors import UsageError
from cannbuild.sources.lock import Wanted, drift, read_lock, write_lock

from clirun import cannbuild
from lockdata import sample_lock

LOCK = sample_lock("9.0.0", pinned_opbase=True)
WANTED = Wanted(
    recipe="cann-9.0",
    toolkit_version="9.0.0",
    soc="ascend910_93",
    repos=(
        ("opbase", "https://gitcode.com/cann/opbase.git", "tag v9.0.0"),
        ("ops-transformer", "https://gitcode.com/cann/ops-transformer.git", "tag v9.0.0"),
    ),
    archives=(("makeself", "https://x/makeself.tar.gz", None),),
    pins=(("ops-transformer:third_party/opbase", "https://gitcode.com/cann/opbase.git"),),
)


def test_lock_round_trips_through_toml(tmp_path: Path):
    path = tmp_path / "cannbuild.lock"
    write_lock(path, LOCK)
    assert read_lock(path) == LOCK
    assert path.read_text().startswith("# cannbuild.lock")


def test_matching_inputs_have_no_drift():
    assert drift(LOCK, WANTED) == []


def test_drift_names_each_difference():
    from msgspec.structs import replace

    wanted = replace(
        WANTED,
        toolkit_version="8.5.0",
        soc="ascend910b",
        repos=(WANTED.repos[0], ("ops-transformer", WANTED.repos[1][1], "tag v9.0.1")),
    )
    problems = drift(LOCK, wanted)
    assert any(
        "toolkit: the lock was made for CANN 9.0.0, this host has 8.5.0" in p for p in problems
    )
    assert any(
        "soc: the lock says ascend910_93, this run builds for ascend910b" in p for p in problems
    )
    assert any("the lock pins tag v9.0.0, the recipe asks for tag v9.0.1" in p for p in problems)


def test_a_recipe_changed_since_the_lock_is_drift_and_an_unknown_digest_is_not():
    from msgspec.structs import replace

    assert drift(LOCK, replace(WANTED, recipe_digest=LOCK.recipe_digest)) == []
    (changed,) = drift(LOCK, replace(WANTED, recipe_digest="f" * 64))
    assert changed.startswith("recipe: cann-9.0 has changed since the lock was made")
    assert drift(replace(LOCK, recipe_digest=""), replace(WANTED, recipe_digest="f" * 64)) == []


def test_a_malformed_lock_is_a_clear_error(tmp_path: Path):
    path = tmp_path / "cannbuild.lock"
    path.write_text("version = 1\nrecipe = \n")
    with pytest.raises(UsageError, match="cannot be read"):
        read_lock(path)
    path.write_text("version = 7\n")
    with pytest.raises(UsageError, match="version 7"):
        read_lock(path)


def test_a_lock_pinning_one_repo_twice_is_refused_naming_it(tmp_path: Path):
    """Two locks merged by hand: the first entry would have won without a word."""
    path = tmp_path / "cannbuild.lock"
    write_lock(path, LOCK)
    text = path.read_text()
    start = text.index("[[repos]]")
    end = text.index("[[repos]]", start + 1)
    path.write_text(text + "\n" + text[start:end])
    with pytest.raises(UsageError, match="pins repo 'opbase' 2 times"):
        read_lock(path)


def test_a_lock_names_the_checkouts_each_archive_goes_into(tmp_path: Path):
    from msgspec.structs import replace

    from cannbuild.sources.lock import LockedArchive

    lock = replace(
        LOCK,
        third_party=(
            LockedArchive(
                name="json",
                url="https://x/include.zip",
                sha256="e" * 64,
                repos=("opbase", "ops-transformer"),
            ),
        ),
    )
    path = tmp_path / "cannbuild.lock"
    write_lock(path, lock)
    assert 'repos = [\n    "opbase",\n    "ops-transformer",\n]' in path.read_text()
    assert read_lock(path) == lock


def test_a_version_1_lock_is_read_and_reported_as_needing_a_relock(tmp_path: Path):
    """Written by cannbuild before it read the archives from the checkouts."""
    path = tmp_path / "cannbuild.lock"
    write_lock(path, LOCK)
    path.write_text(path.read_text().replace("version = 2", "version = 1"))
    old = read_lock(path)
    assert old is not None and old.version == 1 and old.repos == LOCK.repos
    problems = drift(old, WANTED)
    assert len(problems) == 1 and "the lock has version 1 (an older cannbuild)" in problems[0]


@pytest.mark.parametrize(
    "old, new, word",
    [
        (
            'commit = "' + "a" * 40 + '"',
            "commit = 42",
            r"\[\[repos\]\] #1 commit = 42 is not a string",
        ),
        ('commit = "' + "a" * 40 + '"', 'comit = "' + "a" * 40 + '"', "unknown key 'comit'"),
        ('commit = "' + "a" * 40 + '"', 'commit = "HEAD"', "40 lowercase hex digits"),
        (
            'commit = "' + "a" * 40 + '"',
            'commit = "' + "a" * 40 + '\\n"',
            "40 lowercase hex digits",
        ),
        (
            'url = "https://gitcode.com/cann/opbase.git"',
            'url = "https://gitcode.com/cann/opbase.git\\nRUN curl evil | sh"',
            "single-line",
        ),
        ('sha256 = "' + "d" * 64 + '"', 'sha256 = "abc"', "sha256"),
        ('soc = "ascend910_93"', 'soc = "ascend910_93 --evil"', "plain word"),
    ],
)
def test_lock_values_are_checked_when_read(tmp_path: Path, old, new, word):
    path = tmp_path / "cannbuild.lock"
    write_lock(path, sample_lock("8.5.0"))
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(UsageError, match=word) as err:
        read_lock(path)
    assert str(path) in err.value.paragraph()


def test_a_sandbox_lock_says_so_and_is_drift_for_a_real_build(tmp_path: Path):
    from msgspec.structs import replace

    path = tmp_path / "cannbuild.lock"
    write_lock(path, replace(LOCK, sandbox=True))
    text = path.read_text()
    assert "EMULATED Ascend host" in text.splitlines()[0] and "; commit it." not in text
    assert "sandbox = true" in text
    lock = read_lock(path)
    assert lock.sandbox
    assert "made on cannbuild's emulated host" in drift(lock, WANTED)[0]
    assert drift(lock, replace(WANTED, sandbox=True)) == []
    assert "this run is on the emulated host" in drift(LOCK, replace(WANTED, sandbox=True))[0]
    # a lock written before the field existed is a real one
    write_lock(path, LOCK)
    assert "sandbox" not in path.read_text() and read_lock(path).sandbox is False
    path.write_text(text.replace("sandbox = true", 'sandbox = "yes"'))
    with pytest.raises(UsageError, match="sandbox = 'yes' is not true or false"):
        read_lock(path)


def extended(lock):
    """`lock` with what version 3 added: a pinned source of its own, an archive's place."""
    from msgspec.structs import replace

    from cannbuild.sources.lock import LockedArchive, LockedRepo

    return replace(
        lock,
        repos=(
            *lock.repos,
            LockedRepo(
                name="ops-transformer:third_party/cann-cmake",
                url="https://gitcode.com/cann/cmake.git",
                ref="tag master-026, pinned by cmake/fetch_cann_cmake.cmake:17",
                commit="e" * 40,
                source="cann-cmake",
            ),
        ),
        third_party=(
            *lock.third_party,
            LockedArchive(
                name="json-3.11.3",
                url="https://x/json-3.11.3.tar.gz",
                sha256="f" * 64,
                repos=("ops-transformer",),
                places={"ops-transformer": "third_party/json-3.11.3.tar.gz"},
            ),
        ),
    )


def test_a_lock_is_version_3_only_when_it_holds_what_3_added(tmp_path: Path):
    path = tmp_path / "cannbuild.lock"
    write_lock(path, LOCK)
    plain = path.read_text()
    # what an older cannbuild reads: no new key, version 2
    assert "version = 2\n" in plain and "source =" not in plain and "places" not in plain
    from msgspec.structs import replace

    lock = replace(extended(LOCK), version=3)
    write_lock(path, lock)
    text = path.read_text()
    assert "version = 3\n" in text and 'source = "cann-cmake"' in text
    assert '[third_party.places]\nops-transformer = "third_party/json-3.11.3.tar.gz"' in text
    assert read_lock(path) == lock


@pytest.mark.parametrize(
    "old, new, says",
    [
        ('"third_party/json-3.11.3.tar.gz"', '"../../etc/x"', "is not a path inside the checkout"),
        ('"third_party/json-3.11.3.tar.gz"', '"/etc/x"', "is not a path inside the checkout"),
        ('"third_party/json-3.11.3.tar.gz"', "3", "#2 places = 3 is not a table"),
        ('source = "cann-cmake"', 'source = "../cache"', "is not a plain name"),
    ],
)
def test_a_version_3_lock_refuses_a_place_or_source_that_could_leave_its_folder(
    tmp_path: Path, old, new, says
):
    path = tmp_path / "cannbuild.lock"
    write_lock(path, extended(LOCK))
    text = path.read_text()
    if new == "3":  # the whole table replaced by a number
        old = '[third_party.places]\nops-transformer = "third_party/json-3.11.3.tar.gz"'
        new = "places = 3"
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(UsageError, match=says):
        read_lock(path)


@pytest.mark.parametrize("task", [("fetch",), ("setup", "--locked")])
def test_a_malformed_lock_you_name_is_refused_before_a_sandbox_is_made(tmp_path: Path, task):
    """Making a sandbox takes half a minute: a lock named with --lock-file is read first."""
    lock = tmp_path / "cannbuild.lock"
    lock.write_text('version = 2\nrecipe = "cann-8.5"\nrepos = "opbase"\n')
    sandbox = tmp_path / "sb"
    proc = cannbuild(*task, "--lock-file", str(lock), "--sandbox", "--cann", "8.5.0", cwd=tmp_path,
                     CANNBUILD_SANDBOX_DIR=str(sandbox))  # fmt: skip
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and f"lock file {lock}: repos = 'opbase' is not an array" in said
    assert not sandbox.exists() and not (tmp_path / ".cannbuild").exists()


def test_a_lock_saved_with_a_byte_order_mark_reads_as_without(tmp_path: Path):
    """An editor that saves UTF-8 with a BOM (Notepad) made the lock 'Invalid statement
    (at line 1, column 1)'; the mark holds no data, and the same door reads JSON."""
    from cannbuild.bounded import LOCK as LOCK_KIND
    from cannbuild.bounded import decode_json

    path = tmp_path / "cannbuild.lock"
    write_lock(path, LOCK)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    assert read_lock(path) == LOCK
    assert decode_json(b'\xef\xbb\xbf{"a": 1}', path, LOCK_KIND) == {"a": 1}


@pytest.mark.parametrize(
    "text, said",
    [("", "no `version = N` line"), ('version = "3"\n', "text where the lock writes a number")],
)
def test_a_lock_without_a_numeric_version_says_what_is_wrong(tmp_path: Path, text, said):
    """An empty lock said 'has version None', a quoted one "has version '3'; this
    cannbuild reads versions 1, 2, 3"."""
    path = tmp_path / "cannbuild.lock"
    path.write_text(text)
    with pytest.raises(UsageError) as caught:
        read_lock(path)
    assert said in caught.value.message and "None" not in caught.value.message
