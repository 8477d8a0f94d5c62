"""The pairing table from more than one source: doctor names the source that pairs a
combination, warns (never fails) where none does, and warns where the sources pair it
otherwise."""

from pathlib import Path

import pytest

from cannbuild.host import compat, published
from cannbuild.host.judge_python import python_stack_checks
from cannbuild.host.pystack import PythonStack, read_python_stack
from cannbuild.host.toolkit import Toolkit
from cannbuild.host.versions import parse_cann_version

DEPLOYER = "ascend-deployer 26.0.0"
OFFICIAL = "Ascend/pytorch COMPATIBILITY.en.md"


def toolkit(cann: str) -> Toolkit:
    """What the toolkit reader returns for an install of `cann` (only its version is judged)."""
    path = Path("/usr/local/Ascend/cann")
    return Toolkit(
        path=path,
        real_path=path,
        found_by="test",
        layout="cann",
        arch="x86_64",
        version=parse_cann_version(cann),
        version_text=cann,
        version_source=None,
        set_env=None,
    )


def rows(python, torch, torch_npu, cann):
    stack = PythonStack(python=python, torch=torch, torch_npu=torch_npu)
    return {c.id: c for c in python_stack_checks(stack, toolkit(cann), {})}


def test_a_pairing_only_the_installer_lists_passes_naming_the_installer():
    # version_match.json:32 "Torch-npu_2.10.0": "CANN_9.0.0"; the official table has
    # 2.10.0.post4 for 9.1.0 only
    official = [r for r in published.npu_pairings() if r.source.name == OFFICIAL]
    assert not any(r.torch_npu == "2.10.0" for r in official)
    row = rows((3, 11), "2.10.0+cpu", "2.10.0", "9.0.0")["torch_npu"]
    assert row.status == "pass"
    assert row.detail == f"torch_npu 2.10.0 with CANN 9.0.0: paired by {DEPLOYER}"


def test_a_python_only_the_installer_ships_passes_naming_the_installer():
    # the official table pairs torch 2.6.0 with Python 3.9-3.11; the installer ships cp312 wheels
    row = rows((3, 12), "2.6.0", "2.6.0.post5", "8.5.0")["torch"]
    assert row.status == "pass" and row.detail.endswith(f"paired by {DEPLOYER}")
    assert rows((3, 12), "2.6.0", "2.6.0.post5", "8.5.0")["torch_npu"].status == "pass"


def test_a_pairing_both_sources_list_names_both():
    verdict = compat.torch_npu_verdict(parse_cann_version("8.5.0"), "2.9.0")
    assert verdict.ok is True and verdict.sources == (OFFICIAL, DEPLOYER)


def test_a_torch_npu_no_source_lists_warns_no_published_pairing():
    row = rows((3, 11), "2.13.0+cpu", "2.13.0", "9.1.0")["torch_npu"]
    assert row.status == "warn" and row.detail.startswith("no published pairing")
    assert "2.12.0" in row.hint and "validate" in row.hint


def test_a_cann_no_source_lists_warns_no_published_pairing():
    verdict = compat.torch_npu_verdict(parse_cann_version("9.0.1"), "2.9.0.post2")
    assert verdict.ok is None and "no published pairing for CANN 9.0.1" in verdict.detail
    assert rows((3, 11), "2.9.0", "2.9.0.post2", "9.0.1")["torch_npu"].status == "warn"


def test_torch_2_13_on_python_3_11_is_paired_by_the_official_table():
    verdict = compat.python_verdict("2.13.0+cpu", (3, 11))
    assert verdict.ok is True and verdict.sources == (OFFICIAL,)
    row = rows((3, 11), "2.13.0+cpu", "2.13.0", "9.1.0")["torch"]
    assert row.status == "pass" and f"paired by {OFFICIAL}" in row.detail


def test_the_torch_on_this_host_gets_a_verdict_that_names_its_source():
    stack = read_python_stack()
    if stack.torch is None:
        pytest.skip("torch is not installed here (.ci/run installs torch 2.13.0+cpu)")
    verdict = compat.python_verdict(stack.torch, stack.python)
    assert verdict.ok is not None and verdict.sources, verdict.detail


@pytest.mark.parametrize("torch", ["2.11.0", "2.12.0", "2.13.0", "2.14.0"])
def test_torch_2_11_to_2_14_have_published_python_versions(torch):
    assert compat.python_verdict(torch, (3, 14)).ok is True
    assert compat.python_verdict(torch, (3, 9)).ok is False


def test_a_torch_no_source_lists_warns_with_no_published_pairing():
    row = rows((3, 11), "2.15.0", None, "9.1.0")["torch"]
    assert row.status == "warn" and "no published pairing for torch 2.15" in row.detail


def test_torch_npu_2_14_with_cann_8_3_warns_with_the_cann_its_readme_names():
    verdict = compat.torch_npu_verdict(parse_cann_version("8.3.RC1"), "2.14.0")
    assert verdict.ok is False and verdict.sources == ("torch-npu 2.14.0 README",)
    row = rows((3, 11), "2.14.0", "2.14.0", "8.3.RC1")["torch_npu"]
    assert row.status == "warn" and "pairs it with CANN 9.1.0" in row.detail
    assert "2.8.0" in row.hint  # what is paired with 8.3.RC1 instead
    assert rows((3, 11), "2.14.0", "2.14.0", "9.1.0")["torch_npu"].status == "pass"


def test_a_torch_npu_for_another_torch_still_fails():
    row = rows((3, 11), "2.13.0", "2.14.0", "9.1.0")["torch_npu"]
    assert row.status == "fail" and "pip install torch==2.14.0" in row.hint


def test_no_listed_pairing_ever_warns_or_fails():
    for pairing in published.npu_pairings():
        row = rows((3, 11), pairing.torch, pairing.torch_npu, pairing.cann)["torch_npu"]
        assert row.status == "pass", (pairing, row.detail)
        assert pairing.source.name in row.detail
    for py in published.python_pairings():
        for python in py.pythons:
            row = rows(python, py.torch, None, "9.1.0")["torch"]
            assert row.status == "pass", (py, python, row.detail)


def test_every_row_cites_its_source_and_names_a_real_release():
    seen = set()
    for row in published.npu_pairings():
        assert parse_cann_version(row.cann).comparable, row
        assert compat.same_torch_line(row.torch, row.torch_npu), row
        assert row.cite and row.source.where, row
        key = (row.torch_npu, row.cann, row.source.name)
        assert key not in seen, row
        seen.add(key)
    for py in published.python_pairings():
        assert py.pythons and py.cite and py.source.where, py
