import pytest

from cannbuild.host import compat
from cannbuild.host.driver import firmware_in_range, read_driver
from cannbuild.host.sysroot import Sysroot
from cannbuild.host.versions import parse_cann_version, parse_driver_version

from hosttree import write


def test_driver_read_from_install_info_and_version_info(tree):
    tree.driver()
    d = read_driver(Sysroot.at(tree.root))
    assert d.version == parse_driver_version("25.3.rc1")
    assert d.innerversion == "V100R001C23SPC002B212"
    assert "V100R001C23" in d.compatible_trains
    assert d.firmware_range == ("7.0.0", "8.9.9")


def test_driver_path_param_is_followed(tree):
    tree.driver()
    info = tree.root / "etc/ascend_install.info"
    info.write_text(
        info.read_text().replace(
            "Driver_Install_Path_Param=/usr/local/Ascend", "Driver_Install_Path_Param=/opt/npu"
        )
    )
    (tree.root / "opt/npu/driver").mkdir(parents=True)
    (tree.ascend / "driver/version.info").rename(tree.root / "opt/npu/driver/version.info")
    assert read_driver(Sysroot.at(tree.root)).version.text == "25.3.rc1"


def test_malformed_driver_version_is_a_problem(tree):
    tree.driver()
    write(tree.ascend / "driver/version.info", "Version=not-a-version\n")
    d = read_driver(Sysroot.at(tree.root))
    assert d.version is None and d.problems


@pytest.mark.parametrize(
    "cann,driver,ok",
    [
        ("9.0.0", "25.5.1", True),
        ("9.0.0", "26.0.rc1", True),
        ("9.0.0", "25.3.rc1", False),
        ("8.5.0", "25.3.rc1.b061", True),  # 25.3.X
        ("8.5.0", "24.1.rc3.7", False),
        ("8.2.RC1", "24.1.rc3", True),
        ("8.3.RC1", "25.3.rc1.b061", True),
    ],
)
def test_published_driver_pairings(cann, driver, ok):
    assert compat.driver_verdict(parse_cann_version(cann), parse_driver_version(driver)).ok is ok


@pytest.mark.parametrize(
    "cann,driver,ok",
    [
        # cann-environment.md §4.2: 8.5.0.alpha001 pairs 25.2.X, not 8.5.0's 25.5.X/25.3.X/25.0.X
        ("8.5.0.alpha001", "25.5.1", False),
        ("8.5.0.alpha001", "25.2.0", True),
        # no note of its own: 9.0.0's list does not speak for its beta
        ("9.0.0-beta.1", "25.5.1", None),
        # a community betaN before 8.5 is the commercial release itself
        ("8.2.RC1.beta1", "24.1.rc3.7", True),
    ],
)
def test_a_pre_release_is_not_judged_by_its_final_releases_drivers(cann, driver, ok):
    verdict = compat.driver_verdict(parse_cann_version(cann), parse_driver_version(driver))
    assert verdict.ok is ok, verdict.detail


@pytest.mark.parametrize(
    "driver,ok",
    [
        ("24.1.rc1", True),  # the floor itself (recipes/facts/8.0.toml: HDK >= 24.1.RC1)
        ("24.1.rc3.7", True),
        ("25.5.1", True),
        ("23.0.3", False),
        ("24.1.T5", False),  # an internal build is no published HDK
    ],
)
def test_a_published_floor_takes_the_floor_and_later_drivers(driver, ok):
    verdict = compat.driver_verdict(parse_cann_version("8.0.RC1"), parse_driver_version(driver))
    assert verdict.ok is ok
    assert "HDK >= 24.1.RC1" in verdict.detail


def test_unpublished_pairing_falls_back_to_release_trains():
    # CANN 8.3.RC2 has no table row; its train C23 is in the 25.3.rc1 driver's list
    v = compat.driver_verdict(
        parse_cann_version("8.3.RC2"),
        parse_driver_version("25.3.rc1"),
        toolkit_compatible=("V100R001C15", "V100R001C23"),
        toolkit_inner="V100R001C23SPC002B210",
        driver_compatible=("V100R001C19", "V100R001C23"),
        driver_inner="V100R001C23SPC002B212",
    )
    assert v.ok is True and "release trains" in v.detail


def test_unpublished_pairing_without_trains_is_unknown():
    assert (
        compat.driver_verdict(parse_cann_version("8.3.RC2"), parse_driver_version("25.3.rc1")).ok
        is None
    )


@pytest.mark.parametrize(
    "cann,torch_npu,ok",
    [
        ("8.5.0", "2.9.0", True),
        ("8.5.0", "2.7.1.post2", True),
        ("9.0.0", "2.7.1", False),
        ("8.3.RC1", "2.7.1.dev20250724", True),
        ("8.3.RC1", "2.5.1", False),
        # the fixture hosts' stacks (tests/fixtures/*.source), paired by vllm-ascend only
        ("8.2.RC1", "2.7.1.dev20250724", True),
        ("8.3.RC2", "2.7.1", True),
        ("8.2.RC1", "2.7.1", False),
    ],
)
def test_torch_npu_tested_with_cann(cann, torch_npu, ok):
    assert compat.torch_npu_verdict(parse_cann_version(cann), torch_npu).ok is ok


def test_a_torch_npu_no_source_lists_has_no_published_pairing():
    verdict = compat.torch_npu_verdict(parse_cann_version("9.1.0"), "2.13.0")
    assert verdict.ok is None and verdict.sources == ()
    assert "no published pairing for torch_npu 2.13.0" in verdict.detail


def test_torch_and_torch_npu_must_share_major_minor_patch():
    assert compat.same_torch_line("2.7.1+cpu", "2.7.1.post2")
    assert not compat.same_torch_line("2.8.0", "2.7.1.post2")
    assert not compat.same_torch_line("2.7.1", "2.7.10")


def test_a_torch_npu_release_candidate_is_on_its_torch_releases_line():
    """torch_npu 2.12.0rc1 (real-host-findings section 6; PyPI lists 2.13.0rc1 and others)
    is built for torch 2.12.0: the same line, and the CPU torch to install is 2.12.0."""
    assert compat.same_torch_line("2.12.0+cpu", "2.12.0rc1")
    assert compat.same_torch_line("2.7.1", "2.7.1.dev20250724")
    assert not compat.same_torch_line("2.11.0", "2.12.0rc1")
    assert compat.torch_release("2.12.0rc1") == "2.12.0"


def test_python_range_per_torch():
    assert compat.python_verdict("2.9.0", (3, 9)).ok is False
    assert compat.python_verdict("2.7.1", (3, 11)).ok is True


def test_firmware_range():
    assert firmware_in_range("7.8.0.6.201", ("7.0.0", "8.9.9"))
    assert firmware_in_range("7.1.0.11.220", ("7.0.0", "7.2.99"))
    assert not firmware_in_range("9.0.0.1", ("7.0.0", "8.9.9"))
