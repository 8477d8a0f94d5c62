"""report.md is rendered in Python (a no-op run writes one and must not pay for Jinja):
it is byte for byte what the former template rendered from real reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cannbuild.report_md import render_markdown

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reports"


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_report_md_is_what_the_template_rendered(name):
    report = json.loads((FIXTURES / f"{name}.json").read_text())
    assert render_markdown(report) == (FIXTURES / f"{name}.md").read_text()


def test_a_pipe_in_a_message_does_not_end_its_table_cell():
    report = json.loads((FIXTURES / "shipped-package-fails.json").read_text())
    report["validation"]["checks"][0]["message"] = "a | b"
    assert "| a \\| b |" in render_markdown(report)


def test_several_repositories_each_get_their_checks_and_cases_under_their_name():
    """Issue 27: the report names each repository's check and why; FlashAttention's cases
    keep their table, another check's cases are listed by name, verdict and detail."""
    report = json.loads((FIXTURES / "shipped-package-fails.json").read_text())
    first = dict(
        report["validation"],
        repo="ops-transformer",
        check="ops-transformer.flash_attention",
        why="FA",
    )
    other = {
        "repo": "ops-math",
        "check": "ops-math.segsum",
        "why": "a masked cumulative sum | exp",
        "status": "PASS",
        "reason": "",
        "checks": [{"id": "capi", "status": "PASS", "message": "2/2 cases PASS"}],
        "cases": [
            {
                "name": "segsum_fp32_4",
                "status": "PASS",
                "message": "max err 1e-7",
                "precision": {"mere": 1e-8, "mare": 2e-8, "status": "PASS"},
            },
        ],
    }
    report["validation"]["repos"] = [first, other]
    text = render_markdown(report)
    assert "| ops-math | ops-math.segsum | PASS | a masked cumulative sum \\| exp |" in text
    assert "### ops-transformer (ops-transformer.flash_attention):" in text
    assert "### ops-math (ops-math.segsum): PASS" in text
    assert "| segsum_fp32_4 | PASS | 1e-08 | 2e-08 | PASS | max err 1e-7 |" in text
    # one repository: the report as it was (the fixtures above carry one or none)
    report["validation"]["repos"] = [first]
    assert "### " not in render_markdown(report).split("## Validation")[1]
