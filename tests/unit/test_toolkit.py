from pathlib import Path

import pytest

from cannbuild.host.sysroot import SymlinkLoopError, Sysroot
from cannbuild.host.toolkit import find_toolkit, kernels_package_name, toolkit_home
from cannbuild.host.versions import parse_cann_version

from hosttree import FIXTURES, clean_env, write


def search(tree, env=None, cann_path=None):
    return find_toolkit(Sysroot.at(tree.root), env or clean_env(), cann_path)


def test_cann_layout_found_by_default_rule(tree):
    tree.toolkit_cann("8.5.0")
    result = search(tree)
    tk = result.toolkit
    assert tk is not None
    assert tk.found_by == "default /usr/local/Ascend/cann"
    assert tk.layout == "cann"
    assert tk.version == parse_cann_version("8.5.0")
    assert tk.version_source == f"{tree.arch}-linux/ascend_toolkit_install.info"
    assert tk.real_path == tree.root / "usr/local/Ascend/cann-8.5.0"
    assert tk.set_env == tree.root / "usr/local/Ascend/cann/set_env.sh"
    assert tk.share_info["opbase"] == "8.5.0"


def test_the_toolkit_home_is_what_its_set_env_exports_else_the_folder_found(tree):
    """One rule for every caller (doctor's rows, the templates' cann.home, the overlay):
    the ASCEND_HOME_PATH the toolkit's own set_env.sh exports (the real cann-<ver>
    tree from 8.5, the 8.5.0 image's), else the folder found (set_env.sh not sourced,
    or exporting none)."""
    tree.toolkit_cann("8.5.0")
    tk = search(tree).toolkit
    real = str(tree.root / "usr/local/Ascend/cann-8.5.0")
    assert toolkit_home(tk, {"ASCEND_HOME_PATH": real}) == Path(real)
    assert tk.path != Path(real)  # the link it was found by: the export is what counts
    assert toolkit_home(tk, None) == tk.path
    assert toolkit_home(tk, {"ASCEND_HOME_PATH": ""}) == tk.path  # an empty export: none


def test_absolute_compat_link_resolves_inside_the_sysroot(tree):
    tree.toolkit_cann("9.0.0")
    sysroot = Sysroot.at(tree.root)
    latest = tree.root / "usr/local/Ascend/ascend-toolkit/latest"
    assert sysroot.resolve(latest) == tree.root / "usr/local/Ascend/cann-9.0.0"


def test_farm_layout_with_version_cfg(tree):
    tree.toolkit_farm("8.3.RC2", info=False)
    tk = search(tree).toolkit
    assert tk.found_by == "default /usr/local/Ascend/ascend-toolkit/latest"
    assert tk.layout == "ascend-toolkit"
    assert (tk.version.text, tk.version_source) == ("8.3.RC2", "version.cfg")
    assert tk.set_env == tree.root / "usr/local/Ascend/ascend-toolkit/set_env.sh"


def test_real_captured_install_info_is_read(tree):
    info = (FIXTURES / "ascend_toolkit_install.info.a2-cann8.3").read_text()
    tree.toolkit_farm("8.3.RC2", info=info.replace("arch=aarch64", f"arch={tree.arch}"))
    tk = search(tree).toolkit
    assert tk.version.text == "8.3.RC2"
    assert tk.version_source.endswith("ascend_toolkit_install.info")


def test_version_falls_back_to_component_then_folder_name(tree):
    tk_dir = tree.toolkit_cann("8.5.0")
    (tk_dir / f"{tree.arch}-linux" / "ascend_toolkit_install.info").unlink()
    assert search(tree).toolkit.version_source == "runtime/version.info"
    for comp in ("runtime", "toolkit", "compiler"):
        (tk_dir / comp / "version.info").unlink()
    tk = search(tree).toolkit
    assert (tk.version.text, tk.version_source) == ("8.5.0", "folder name")


def test_malformed_install_info_is_reported_and_skipped(tree):
    tk_dir = tree.toolkit_cann("8.5.0")
    (tk_dir / f"{tree.arch}-linux" / "ascend_toolkit_install.info").write_bytes(
        b"\x00\xff\xfe garbage"
    )
    tk = search(tree).toolkit
    assert tk.version.text == "8.5.0"  # from runtime/version.info
    assert any("is binary" in p for p in tk.problems)


def test_explicit_ascend_home_path_wins_over_installer_record(tree):
    tree.toolkit_farm("8.3.RC2")
    tree.toolkit_cann("8.5.0")
    tree.installer_record("/usr/local/Ascend")
    env = clean_env(ASCEND_HOME_PATH=str(tree.root / "usr/local/Ascend/ascend-toolkit/latest"))
    tk = search(tree, env).toolkit
    assert (tk.found_by, tk.version.text) == ("ASCEND_HOME_PATH", "8.3.RC2")


def test_installer_record_used_without_env(tree):
    tree.toolkit_cann("8.5.0")
    (tree.root / "opt/cann").mkdir(parents=True)
    (tree.root / "usr/local/Ascend").rename(tree.root / "opt/cann/Ascend")
    tree.installer_record("/opt/cann/Ascend")
    tk = search(tree).toolkit
    assert tk.found_by == "installer record /etc/Ascend/ascend_cann_install.info"
    assert tk.version.text == "8.5.0"


def test_env_path_given_as_host_path_maps_under_sysroot(tree):
    tree.toolkit_cann("8.5.0")
    tk = search(tree, clean_env(ASCEND_HOME_PATH="/usr/local/Ascend/cann")).toolkit
    assert tk.found_by == "ASCEND_HOME_PATH"


def test_stale_env_is_a_warning_and_search_continues(tree):
    tree.toolkit_cann("8.5.0")
    result = search(tree, clean_env(ASCEND_HOME_PATH="/usr/local/Ascend/ascend-toolkit/8.0.RC1"))
    assert result.toolkit.found_by == "default /usr/local/Ascend/cann"
    assert any("ASCEND_HOME_PATH points at" in w and "does not exist" in w for w in result.warnings)


def test_cann_path_that_is_not_a_toolkit_fails_without_falling_back(tree):
    tree.toolkit_cann("8.5.0")
    write(tree.root / "home/u/notes/readme.txt", "hi")
    result = search(tree, cann_path=tree.root / "home/u/notes")
    assert result.toolkit is None
    assert "--cann-path" in result.explicit_failure
    assert "is not a CANN toolkit" in result.explicit_failure


def test_symlink_loop_is_reported(tree):
    base = tree.root / "usr/local/Ascend"
    base.mkdir(parents=True)
    (base / "cann").symlink_to("loop-a")
    (base / "loop-a").symlink_to("cann")
    result = search(tree)
    assert result.toolkit is None
    assert any("symlink loop" in w for w in result.warnings)
    with pytest.raises(SymlinkLoopError):
        Sysroot.at(tree.root).resolve(base / "cann")


def test_all_installs_are_listed(tree):
    tree.toolkit_farm("8.3.RC2")
    tree.toolkit_cann("8.5.0")
    tree.toolkit_cann("9.0.0")
    result = search(tree)
    names = sorted(p.name for p in result.installs)
    assert names == ["8.3.RC2", "cann-8.5.0", "cann-9.0.0"]


@pytest.mark.parametrize(
    "version,soc,expected",
    [
        ("8.3.RC2", "ascend910b", "Ascend-cann-kernels-910b_8.3.RC2_linux-aarch64.run"),
        ("8.3.RC2", "ascend910_93", "Atlas-A3-cann-kernels_8.3.RC2_linux-aarch64.run"),
        ("8.5.0", "ascend910b", "Ascend-cann-910b-ops_8.5.0_linux-aarch64.run"),
        ("9.0.0", "ascend910_93", "Ascend-cann-A3-ops_9.0.0_linux-aarch64.run"),
    ],
)
def test_kernels_package_name_follows_the_release_scheme(version, soc, expected):
    assert kernels_package_name(parse_cann_version(version), soc, "aarch64") == expected


def test_sysroot_display_hides_the_root(tmp_path: Path):
    s = Sysroot.at(tmp_path)
    assert s.display(tmp_path / "usr/local/Ascend") == "/usr/local/Ascend"
