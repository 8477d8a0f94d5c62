"""Project hygiene the CI depends on."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_torch_stays_out_of_the_core_install():
    pyproject = (ROOT / "pyproject.toml").read_text()
    core = pyproject.split("dependencies = [", 1)[1].split("]", 1)[0]
    assert "torch" not in core


def test_no_two_test_modules_share_a_basename():
    """pytest imports test modules by basename (no packages under tests/): a second
    tests/**/test_x.py is an 'import file mismatch' error that only the full suite, which
    collects both folders, meets."""
    tests = Path(__file__).resolve().parents[1]
    seen: dict = {}
    for path in sorted(tests.rglob("test_*.py")):
        seen.setdefault(path.name, []).append(str(path.relative_to(tests)))
    assert {n: p for n, p in seen.items() if len(p) > 1} == {}
