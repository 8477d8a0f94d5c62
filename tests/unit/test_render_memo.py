"""A no-op run renders without Jinja: plain `{{ a.b }}` lookups are done directly, and a
step command rendered before is taken from the workspace's memo while the template
files it came from are unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cannbuild.render.templates import Raw, Templates, _lookup, render_string

CONTEXT = {
    "cann": {"version": "8.5.0", "home": "/opt/cann"},
    "src": {"opbase": "/w/src/opbase"},
    "jobs": 8,
    "flag": True,
    "nothing": None,
    "table": {"items": "shadowed by dict.items"},
}


@pytest.mark.parametrize(
    "template",
    [
        "v{{ cann.version }}",
        "{{src.opbase}}/build_out/*.run",
        "{{ cann.home }}:{{ jobs }} and {{ cann.version }}",
        "-j{{ jobs }}",
        "${#array[@]} {# not a comment here #}",
    ],
)
def test_a_plain_lookup_renders_as_jinja_renders_it(template):
    expected = render_string(template + "{% if true %}{% endif %}", CONTEXT, quote=False)
    assert _lookup(template, CONTEXT) == expected


@pytest.mark.parametrize(
    "template",
    [
        "{{ cann.version | upper }}",  # a filter
        "{% if jobs %}x{% endif %}",  # a block
        "{{ missing }}",  # Jinja's StrictUndefined must say so
        "{{ flag }}",  # a bool is not a plain string
        "{{ nothing }}",
        "{{ table.items }}",  # Jinja would return dict.items
        "{{ cann.version }}\r",  # Jinja rewrites newlines
        "{{- cann.version }}",
    ],
)
def test_anything_beyond_a_plain_lookup_is_left_to_jinja(template):
    assert _lookup(template, CONTEXT) is None


def _tree(tmp_path: Path):
    own, shipped = tmp_path / "recipe", tmp_path / "shipped"
    (shipped / "steps").mkdir(parents=True)
    own.mkdir()
    (shipped / "steps" / "build.sh.j2").write_text(
        "bash build.sh --soc {{ soc }} {% include 'steps/extra.j2' %}\n"
    )
    (shipped / "steps" / "extra.j2").write_text("-j{{ jobs }}")
    return [own, shipped], tmp_path / "memo.json"


def render_command(search, memo, **values):
    templates = Templates(search, memo=memo)
    text = templates.render("steps/build.sh.j2", {"soc": "ascend910b", "jobs": 8, **values})
    templates.save()
    return text


def test_a_remembered_command_is_the_one_jinja_rendered(tmp_path):
    search, memo = _tree(tmp_path)
    first = render_command(search, memo)
    assert first == "bash build.sh --soc ascend910b -j8\n"
    assert render_command(search, memo) == first
    entries = json.loads(memo.read_text())
    assert len(entries) == 1
    files = json.loads(next(iter(entries.values())))["files"]
    assert [f[0] for f in files] == ["steps/build.sh.j2", "steps/extra.j2"]


def test_a_changed_included_template_is_rendered_again(tmp_path):
    search, memo = _tree(tmp_path)
    render_command(search, memo)
    (search[1] / "steps" / "extra.j2").write_text("--jobs {{ jobs }}")
    assert render_command(search, memo) == "bash build.sh --soc ascend910b --jobs 8\n"


def test_a_template_placed_earlier_in_the_search_path_is_used(tmp_path):
    search, memo = _tree(tmp_path)
    render_command(search, memo)
    (search[0] / "steps").mkdir()
    (search[0] / "steps" / "build.sh.j2").write_text("own {{ soc }}\n")
    assert render_command(search, memo) == "own ascend910b\n"


def test_another_context_is_another_render(tmp_path):
    search, memo = _tree(tmp_path)
    render_command(search, memo)
    assert (
        render_command(search, memo, soc="ascend910_93") == "bash build.sh --soc ascend910_93 -j8\n"
    )
    # a value that renders differently though it prints the same is not confused
    quoted = Templates(search, memo=memo).render("steps/extra.j2", {"jobs": Raw("8 9")})
    assert quoted == "-j8 9"
    assert Templates(search, memo=memo).render("steps/extra.j2", {"jobs": "8 9"}) == "-j'8 9'"


def test_a_damaged_memo_is_not_trusted(tmp_path):
    search, memo = _tree(tmp_path)
    render_command(search, memo)
    key = next(iter(json.loads(memo.read_text())))
    memo.write_text(json.dumps({key: "{not json"}))
    assert render_command(search, memo) == "bash build.sh --soc ascend910b -j8\n"


def test_a_plan_that_does_not_save_writes_no_memo(tmp_path):
    search, memo = _tree(tmp_path)
    Templates(search, memo=memo).render("steps/build.sh.j2", {"soc": "x", "jobs": 1})
    assert not memo.exists()


def test_a_remembered_render_does_not_import_jinja(tmp_path):
    search, memo = _tree(tmp_path)
    render_command(search, memo)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from cannbuild.render.templates import Templates\n"
        "t = Templates([Path(p) for p in sys.argv[1:3]], memo=Path(sys.argv[3]))\n"
        "print(t.render('steps/build.sh.j2', {'soc': 'ascend910b', 'jobs': 8}), end='')\n"
        "print('jinja2' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *map(str, search), str(memo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.stdout == "bash build.sh --soc ascend910b -j8\nFalse\n", proc.stderr
