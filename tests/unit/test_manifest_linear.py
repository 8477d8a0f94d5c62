"""`recipe draft --manifest` reads a release manifest in one pass (issue 41 item 4): an
element ends at the next `<` and lines are counted on from the last element, so 4 MiB of
elements or of tags never closed is read in time linear in its size (bench/
bench_bounded_reads.py --part manifest: medians there), and every revision still cites its
line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cannbuild.errors import UsageError
from cannbuild.train.manifest import read_manifest

FOUR_MIB = 4 << 20
# The old reader took 37 s for 1 MiB and hours for 4 MiB of unclosed tags; one pass takes
# well under a second.  The bound only separates the two (speed is measured in bench/).
LINEAR = 10.0


def test_each_revision_cites_the_line_it_was_read_from(tmp_path: Path) -> None:
    xml = tmp_path / "cann.xml"
    xml.write_text(
        '<manifest>\n<remote name="o" fetch="https://gitcode.com/cann"/>\n'
        '<default revision="9.1.0"/>\n\n'
        '<project name="opbase" revision="refs/tags/v9.1.0"/>\n<project\n name="ops-nn"/>\n'
        "</manifest>\n"
    )
    found = read_manifest(xml)
    assert found.revision("opbase").cite == "cann.xml:5"
    assert found.revision("ops-nn").cite == "cann.xml:6 (default cann.xml:3)"


@pytest.mark.parametrize(
    "closed, element",
    [
        (True, '<project name="p" revision="refs/tags/v9.0.0"/>\n'),
        (False, '<project a="b" '),
        (False, "<project " + "a" * (FOUR_MIB - 16) + ">"),  # one element, an attribute never named
    ],
    ids=["elements", "unclosed-tags", "one-element-of-letters"],
)
def test_a_4_mib_manifest_is_read_in_one_pass(tmp_path: Path, closed: bool, element: str) -> None:
    xml = tmp_path / "cann.xml"
    xml.write_text(element * max(1, FOUR_MIB // len(element)))
    began = time.monotonic()
    if closed:
        assert read_manifest(xml).revision("p").cite.startswith("cann.xml:")
    else:
        with pytest.raises(UsageError, match="no <project"):
            read_manifest(xml)
    assert time.monotonic() - began < LINEAR
