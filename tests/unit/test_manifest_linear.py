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
    count = max(1, FOUR_MIB // (len(element) + 7 * closed))  # + the digits of p<i>
    if closed:  # each project once: a name listed twice is refused
        xml.write_text("".join(element.replace('"p"', f'"p{i}"') for i in range(count)))
    else:
        xml.write_text(element * count)
    began = time.monotonic()
    if closed:
        assert read_manifest(xml).revision("p7").cite == "cann.xml:8"
    else:
        with pytest.raises(UsageError, match="no <project"):
            read_manifest(xml)
    assert time.monotonic() - began < LINEAR


def test_a_commented_out_project_is_no_revision_and_one_listed_twice_is_refused(tmp_path):
    """A release's cann.xml keeping an older revision in a comment: the comment is no entry
    (the last entry no longer wins), and the lines after it keep their numbers."""
    xml = tmp_path / "cann.xml"
    project = '<project name="ops-transformer" revision="{}"/>\n'
    xml.write_text(
        "<manifest>\n" + project.format("9.1.0")
        + "<!-- previously:\n" + project.format("refs/tags/v9.1.0-beta.3") + "-->\n"
        + '<project name="ops-nn" revision="refs/tags/v9.1.0"/>\n</manifest>\n'
    )  # fmt: skip
    found = read_manifest(xml)
    assert found.revision("ops-transformer").value == "9.1.0"
    assert found.revision("ops-nn").cite == "cann.xml:6"
    xml.write_text(xml.read_text().replace("<!-- previously:\n", "").replace("-->\n", ""))
    with pytest.raises(UsageError, match=r"'ops-transformer' is listed twice \(cann.xml:2 and"):
        read_manifest(xml)
