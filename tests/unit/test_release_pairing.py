"""The release pairing table (hicann/release-management's notes) and the HDK rows from the
same notes: each row cites its note, lookups answer as the notes read, and a pairing no note
publishes is refused with the table, the versions and the toolkits that are published."""

import re

import pytest

from cannbuild.errors import UsageError
from cannbuild.host import compat
from cannbuild.host.releases import (
    choose_ops,
    known_ops,
    ops_for,
    pairings,
    published,
    toolkit_matches,
    toolkits_for,
)
from cannbuild.host.versions import parse_cann_version, parse_driver_version

V = parse_cann_version
# hicann/release-management@<7+ hex>:<release>/release-notes.md[:line] <section>
CITATION = re.compile(
    r"hicann/release-management@[0-9a-f]{7,40}:(?P<note>[0-9a-z.-]+)/release-notes\.md"
    r"(:\d+)? §\S"
)


def test_every_row_cites_a_release_note_that_names_its_release():
    for row in pairings():
        match = CITATION.match(row.source)
        assert match, row
        # a note lists its own release and older ones (9.1.0's lists ops 9.0.0 and 8.5.2)
        assert not V(match.group("note")) < V(row.ops), row
        for entry in row.toolkits:
            assert re.fullmatch(r"\d+\.\d+\.x", entry) or V(entry), row
        # the notes give a source tag for each sub-package, none for the ops bundle
        assert (row.tag is None) == (row.package == "ascend-cann-ops"), row
        assert row.tag in (None, f"v{row.ops}")


@pytest.mark.parametrize(
    "ops, toolkit, note",
    [
        ("9.0.1", "9.0.0", "9.0.1"),
        ("9.0.1", "8.5.2", "9.0.1"),
        ("9.0.0", "8.5.2", "9.0.0"),
        ("9.1.0", "9.0.0", "9.1.0"),
        ("9.1.0", "8.5.2", "9.1.0"),
        ("9.0.0", "9.1.0", "9.1.0"),  # an older ops release on a newer toolkit
        ("9.1.1", "9.0.1", "9.1.1"),  # 9.1.1's "9.0.x"
        ("9.1.1", "9.1.0", "9.1.1"),
        ("9.2.0-beta.1", "9.2.0-beta.1", "9.2.0-beta.1"),
    ],
)
def test_published_pairings_name_the_note_that_publishes_them(ops, toolkit, note):
    row = published(V(ops), V(toolkit))
    assert row is not None and f":{note}/release-notes.md" in row.source


@pytest.mark.parametrize(
    "ops, toolkit",
    [
        ("9.0.1", "8.5.0"),  # 8.5.0's note has no pairing table; 8.5.2 is not 8.5.0
        ("9.0.1", "9.1.0"),  # no note pairs ops 9.0.1 with a 9.1 toolkit
        ("9.1.0", "9.0.1"),  # 9.1.0's note lists toolkit 9.0.0, not 9.0.1
        ("9.1.1", "9.0.0-beta.2"),  # "9.0.x" is the released 9.0s, not a beta
        ("9.2.0-beta.1", "9.1.0"),  # the betas go with their own toolkit only
        ("9.3.0", "9.0.0"),  # no row at all
    ],
)
def test_pairings_no_note_publishes_are_not_found(ops, toolkit):
    assert published(V(ops), V(toolkit)) is None


def test_the_opbase_package_rows_do_not_decide_the_ops_release():
    """cann-opbase 9.0.1 goes with CANN 9.0.1 only, but ops-transformer compiles the
    opbase commit it pins: ops 9.0.1 on toolkit 9.0.0 is published by the ops rows."""
    opbase = [r for r in pairings() if r.package == "cann-opbase" and r.ops == "9.0.1"]
    assert [r.toolkits for r in opbase] == [("9.0.1",)]
    assert published(V("9.0.1"), V("9.0.0")) is not None


def test_toolkits_and_ops_are_listed_as_the_notes_spell_them():
    assert toolkits_for(V("9.0.1")) == ("9.0.1", "9.0.0", "8.5.2")
    assert toolkits_for(V("9.1.1")) == ("9.1.x", "9.0.x", "8.5.2")
    assert toolkits_for(V("9.4.0")) == ()
    assert known_ops()[:3] == ("8.5.2", "9.0.0", "9.0.1")
    assert ops_for(V("8.5.0")) == ()
    assert "9.0.1" in ops_for(V("9.0.0")) and "9.1.0" in ops_for(V("9.0.0"))


def test_wide_entries_match_released_toolkits_of_their_train():
    assert toolkit_matches("9.0.x", V("9.0.1")) and toolkit_matches("9.0.X", V("9.0.0"))
    assert not toolkit_matches("9.0.x", V("9.1.0"))
    assert not toolkit_matches("9.0.x", V("9.0.0-beta.1"))
    assert toolkit_matches("8.5.2", V("8.5.2")) and not toolkit_matches("8.5.2", V("8.5.0"))


def test_without_a_choice_the_toolkit_release_is_built():
    ops = choose_ops(None, V("9.0.0"))
    assert (ops.release, ops.train, ops.given) == ("9.0.0", "9.0", False)
    # a community 8.0.0.beta1 is the commercial 8.0.0; no repo tags an alpha
    assert choose_ops(None, V("8.0.0.beta1")).release == "8.0.0"
    assert choose_ops(None, V("8.5.0.alpha001")).release == "8.5.0"


@pytest.mark.parametrize(
    "toolkit, release",
    [
        ("9.0.0-beta.2", "9.0.0-beta.2"),
        ("9.0.0.beta.1", "9.0.0-beta.1"),
        ("9.0.0-RC.1", "9.0.0-rc.1"),
    ],
)
def test_a_pre_release_toolkit_builds_the_pre_releases_own_tags(toolkit, release):
    """Every ops repo tags its pre-releases (v9.0.0-beta.2, v9.0.0-rc.1), and the
    toolkit's headers are the pre-release's: a 9.0.0-beta.2 toolkit built v9.0.0."""
    ops = choose_ops(None, V(toolkit))
    assert (ops.release, ops.train, ops.given) == (release, "9.0", False)
    # the toolkit's own release, given aloud, is the default, published or not
    assert choose_ops("8.5.0", V("8.5.0")).release == "8.5.0"


def test_an_internal_build_has_no_release_of_its_own_to_build():
    assert V("9.0.T5").release == "9.0.T5" and V("9.0.0.B120").release == "9.0.0"
    with pytest.raises(UsageError) as err:
        choose_ops(None, V("9.0.T5"))
    assert err.value.exit_code == 2 and "--ops-release 9.0.0" in err.value.paragraph()
    # the release that message offers is taken, one of another train is not
    assert choose_ops("9.0.0", V("9.0.T5")).release == "9.0.0"
    with pytest.raises(UsageError):
        choose_ops("9.1.0", V("9.0.T5"))


def test_a_published_ops_release_picks_its_train_and_cites_its_row():
    ops = choose_ops("9.0.1", V("9.0.0"))
    assert (ops.release, ops.train, ops.given) == ("9.0.1", "9.0", True)
    assert ops.source is not None and ":9.0.1/release-notes.md" in ops.source


def test_an_unpublished_pairing_is_refused_naming_table_versions_and_toolkits():
    with pytest.raises(UsageError) as err:
        choose_ops("9.0.1", V("8.5.0"))
    assert err.value.exit_code == 2
    text = err.value.paragraph()
    assert "\n" not in text
    assert "--ops-release 9.0.1 is not published for toolkit CANN 8.5.0" in text
    assert "recipes/facts/*.toml" in text and "hicann/release-management" in text
    assert "toolkits 9.0.1, 9.0.0, 8.5.2" in text
    assert "9.0.1/release-notes.md" in text


def test_an_ops_release_without_a_row_lists_the_known_ones():
    with pytest.raises(UsageError) as err:
        choose_ops("9.4.0", V("9.0.0"))
    text = err.value.paragraph()
    assert "has no row for ops 9.4.0" in text and "9.0.1, 9.1.0" in text
    with pytest.raises(UsageError, match="is not a CANN release"):
        choose_ops("nine", V("9.0.0"))


@pytest.mark.parametrize(
    "cann, driver, ok",
    [
        ("9.0.1", "26.0.rc3", True),  # heads the 9.0.1 note's HDK list
        ("9.0.1", "25.5.5", True),
        ("9.0.1", "25.3.rc1", False),
        ("9.1.0", "26.1.0", True),
        ("9.1.0", "25.5.1", True),  # 25.5.X
        ("9.1.0", "25.3.rc1", False),
        ("9.1.1", "26.1.1", True),
        ("9.1.1", "25.3.rc1", True),  # 9.1.X: Y for 25.3.X
        ("9.1.1", "25.0.rc1", False),  # 9.1.X: N for 25.0.X
    ],
)
def test_hdk_rows_of_the_same_notes(cann, driver, ok):
    verdict = compat.driver_verdict(V(cann), parse_driver_version(driver))
    assert verdict.ok is ok, verdict.detail
