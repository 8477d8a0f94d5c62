import pytest

from cannbuild.host.versions import (
    VersionNotComparable,
    parse_cann_version,
    parse_driver_version,
)

# Release history (shared/reference/cann-environment.md §2), oldest first.
CANN_HISTORY = [
    "8.0.RC1",
    "8.0.RC2.alpha003",
    "8.0.RC2",
    "8.0.RC3",
    "8.0.0.alpha001",
    "8.0.0",
    "8.1.RC1.alpha001",
    "8.1.RC1",
    "8.2.RC1",
    "8.2.RC2",
    "8.3.RC1.alpha001",
    "8.3.RC1",
    "8.3.RC2",
    "8.5.0.alpha001",
    "8.5.0.alpha002",
    "8.5.0-beta.1",
    "8.5.0",
    "8.5.1",
    "8.5.2",
    "9.0.0-beta.1",
    "9.0.0-beta.2",
    "9.0.0",
    "9.0.1",
    "9.1.0",
]


def test_cann_versions_sort_in_release_history_order():
    parsed = [parse_cann_version(v) for v in CANN_HISTORY]
    shuffled = list(reversed(parsed))
    assert [v.text for v in sorted(shuffled)] == CANN_HISTORY


def test_alpha_of_a_patch_release_comes_after_the_last_rc():
    # packaging.version gets this wrong (8.0.0a1 < 8.0rc1)
    assert parse_cann_version("8.0.RC3") < parse_cann_version("8.0.0.alpha001")


def test_community_beta_before_8_5_is_the_commercial_release():
    assert parse_cann_version("8.0.0.beta1") == parse_cann_version("8.0.0")
    assert parse_cann_version("8.1.RC1.beta1") == parse_cann_version("8.1.RC1")


def test_from_8_5_beta_is_a_prerelease():
    assert parse_cann_version("9.0.0-beta.2") < parse_cann_version("9.0.0")
    assert parse_cann_version("8.5.0-beta.1").is_prerelease


@pytest.mark.parametrize(
    "text,train,release",
    [
        ("8.0.RC1", "8.0", "8.0.RC1"),
        ("8.3.rc1.alpha001", "8.3", "8.3.RC1"),
        ("8.5.0", "8.5", "8.5.0"),
        ("9.0.0-beta.2", "9.0", "9.0.0"),
    ],
)
def test_train_and_release_are_what_tables_key_on(text, train, release):
    v = parse_cann_version(text)
    assert (v.train, v.release) == (train, release)


@pytest.mark.parametrize("text", ["8.0.T63", "8.2.RC1.B020", "9.2.0.b2"])
def test_internal_builds_parse_but_refuse_to_compare(text):
    v = parse_cann_version(text)
    assert v.internal and not v.comparable
    with pytest.raises(VersionNotComparable, match="internal build"):
        _ = v < parse_cann_version("8.5.0")


@pytest.mark.parametrize("text", ["", "latest", "8", "8.5", "8.5.0.gamma1", "v8.5.0", "8.5.0 junk"])
def test_anything_else_is_a_clear_error(text):
    with pytest.raises(ValueError, match="is not a CANN version. Expected forms"):
        parse_cann_version(text)


def test_driver_versions_sort():
    history = [
        "24.1.rc1",
        "24.1.rc2.2",
        "24.1.rc3",
        "24.1.rc3.7",
        "24.1.0",
        "25.0.rc1.1",
        "25.2.0",
        "25.3.rc1",
        "25.3.rc1.b061",
        "25.5.1",
        "25.5.2",
        "26.0.rc1",
    ]
    parsed = [parse_driver_version(v) for v in reversed(history)]
    assert [v.text for v in sorted(parsed)] == history


def test_driver_release_drops_build_suffixes():
    v = parse_driver_version("25.3.rc1.b061")
    assert (v.release, v.series) == ("25.3.RC1", "25.3")


def test_driver_garbage_is_an_error():
    with pytest.raises(ValueError, match="not an Ascend driver version"):
        parse_driver_version("NA")
