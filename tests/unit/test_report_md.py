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
