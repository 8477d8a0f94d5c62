from pathlib import Path

import pytest

from cannbuild.errors import UsageError
from cannbuild.options import Options, resolve_options


def test_cli_beats_env_beats_config_beats_default():
    env = {"CANNBUILD_SOC": "ascend910_93", "CANNBUILD_JOBS": "3"}
    config = {"soc": "ascend910b", "jobs": 5, "vendor_name": "acme"}
    opts = resolve_options({"jobs": 7}, env, config)
    assert opts.jobs == 7  # CLI
    assert opts.soc == "ascend910_93"  # env
    assert opts.vendor_name == "acme"  # config
    assert opts.ops == "" and opts.repos == ()  # default: the recipe's (each repo's ops)


def test_chip_names_normalise_to_the_family():
    assert resolve_options({"soc": "Ascend910B3"}, {}, {}).soc == "ascend910b"
    assert resolve_options({"soc": "ascend910_9391"}, {}, {}).soc == "ascend910_93"


def test_bare_ascend910b_chip_is_the_old_910_not_a2():
    # "Ascend910B" without a digit is an Atlas 800/900 chip; the family name
    # "ascend910b" (lower-case, build.sh's --soc value) is A2.
    assert resolve_options({"soc": "Ascend910B"}, {}, {}).soc == "ascend910"
    assert resolve_options({"soc": "ascend910b"}, {}, {}).soc == "ascend910b"


def test_unknown_soc_names_the_flag_and_the_choices():
    with pytest.raises(UsageError) as err:
        resolve_options({"soc": "ascend910c"}, {}, {})
    text = err.value.paragraph()
    assert "--soc 'ascend910c'" in text and "ascend910_93 (Atlas A3)" in text


def test_bad_env_value_names_the_variable():
    with pytest.raises(UsageError, match="CANNBUILD_JOBS"):
        resolve_options({}, {"CANNBUILD_JOBS": "many"}, {})


def test_unknown_config_key_suggests_the_right_one():
    with pytest.raises(UsageError) as err:
        resolve_options({}, {}, {"vendorname": "x"})
    assert "Did you mean cannbuild.vendor_name?" in err.value.paragraph()


def test_mirrors_from_config_mapping_longest_prefix_first():
    opts = resolve_options(
        {}, {}, {"mirrors": {"https://a/": "file:///m/", "https://a/b/": "file:///n/"}}
    )
    assert opts.mirrors[0][0] == "https://a/b/"


def test_sandbox_points_sysroot_into_the_workspace(tmp_path: Path):
    opts = resolve_options({"sandbox": True, "workspace": str(tmp_path)}, {}, {})
    assert opts.sysroot == tmp_path / "sandbox" / "sysroot"


def test_a_sandbox_run_keeps_its_lock_in_the_workspace(tmp_path: Path):
    opts = resolve_options({"sandbox": True, "workspace": str(tmp_path / "ws")}, {}, {})
    assert opts.lock_file == tmp_path / "ws" / "cannbuild.lock"
    given = resolve_options({"sandbox": True, "lock_file": str(tmp_path / "l.lock")}, {}, {})
    assert given.lock_file == tmp_path / "l.lock"
    assert resolve_options({}, {}, {}).lock_file == Path.cwd() / "cannbuild.lock"


def test_the_cache_remote_comes_from_the_nested_config_key_or_the_env():
    config = {"cache": {"remote": "redis://pw@cache.example:6379"}}
    assert resolve_options({}, {}, config).cache_remote == "redis://pw@cache.example:6379"
    env = {"CANNBUILD_CACHE_REMOTE": "https://cache.example/ccache"}
    assert resolve_options({}, env, config).cache_remote == "https://cache.example/ccache"
    assert resolve_options({}, {}, {}).cache_remote is None
    with pytest.raises(UsageError) as typo:
        resolve_options({}, {}, {"cache": {"remot": "redis://x"}})
    assert "Did you mean cannbuild.cache.remote?" in typo.value.paragraph()
    with pytest.raises(UsageError) as err:
        resolve_options({}, {"CANNBUILD_CACHE_REMOTE": "ftp://u:hunter2@x"}, {})
    text = err.value.paragraph()
    assert "CANNBUILD_CACHE_REMOTE" in text and "hunter2" not in text


def test_the_options_repr_names_the_cache_remote_but_never_shows_it():
    opts = Options(cache_remote="redis://builder:s3cret@cache.example:6379")
    shown = repr(opts)
    assert "s3cret" not in shown and "builder" not in shown
    assert "cache_remote=<set>" in shown and "jobs=" in shown
    assert "cache_remote" not in repr(Options())


def test_a_workspace_reached_through_a_linked_folder_has_one_spelling(tmp_path: Path):
    """Stamps keep absolute paths: -w /data/ws and -w /mnt/data/ws for one folder rebuilt
    every step and `status` found nothing installed.  The workspace's own name is kept,
    so a workspace that is a link is still refused, never followed."""
    (tmp_path / "real").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "real")
    opts = resolve_options({"workspace": str(tmp_path / "via" / "ws")}, {}, {})
    assert opts.workspace == tmp_path.resolve() / "real" / "ws"
    linked = resolve_options({"workspace": str(tmp_path / "via")}, {}, {})
    assert linked.workspace == tmp_path.resolve() / "via"


@pytest.mark.parametrize(
    "cli, env, config, example",
    [
        ({"jobs": "lots"}, {}, {}, "For example --jobs 8."),
        ({}, {"CANNBUILD_JOBS": "lots"}, {}, "For example CANNBUILD_JOBS=8."),
        ({}, {}, {"jobs": "lots"}, "For example jobs: 8 (under cannbuild: in invoke.yaml)."),
        ({}, {"CANNBUILD_OPS": "a b"}, {}, "For example CANNBUILD_OPS=flash_attention_score or"),
    ],
)
def test_a_bad_value_is_shown_fixed_as_the_place_it_came_from_takes_it(cli, env, config, example):
    """The fix was written as a flag whatever the value came from: `For example
    CANNBUILD_JOBS 8.`, `For example cannbuild.jobs 8.`, neither of which that place takes."""
    with pytest.raises(UsageError) as err:
        resolve_options(cli, env, config)
    assert example in " ".join(err.value.paragraph().split())
