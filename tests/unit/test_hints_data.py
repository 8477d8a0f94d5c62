"""The failure hints are data (recipes/hints/*.toml): a user's file adds one, tried before
the shipped ones, and a pattern that is not a regular expression is exit 2 naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cannbuild.errors import UsageError
from cannbuild.hints import match_hint

LOG = ["[ 40%] Building CXX object foo.cpp.o", "foo.cpp:3:1: error: frobnicator exploded"]


def _user_hints(folder: Path, text: str) -> None:
    hints = folder / "cannbuild-recipes" / "hints"
    hints.mkdir(parents=True)
    (hints / "mine.toml").write_text(text)


def test_shipped_hints_give_the_generic_compiler_hint(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    hint = match_hint(LOG)
    assert hint is not None and "a compiler error in the sources" in hint
    assert "frobnicator exploded" in hint  # {line}: the whole line of the match


def test_a_users_hint_file_answers_before_the_shipped_ones(tmp_path: Path, monkeypatch) -> None:
    _user_hints(tmp_path, "[[hint]]\npattern = 'frobnicator (\\w+)'\ntext = 'it {1}: fix it'\n")
    monkeypatch.chdir(tmp_path)
    assert match_hint(LOG) == "it exploded: fix it"


def test_a_pattern_that_is_no_regular_expression_names_its_file(
    tmp_path: Path, monkeypatch
) -> None:
    _user_hints(tmp_path, "[[hint]]\npattern = 'frob(nicator'\ntext = 'x'\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as caught:
        match_hint(LOG)
    assert caught.value.exit_code == 2
    assert "mine.toml" in caught.value.paragraph() and "frob(nicator" in caught.value.paragraph()


def test_an_unknown_key_in_a_hints_file_is_refused(tmp_path: Path, monkeypatch) -> None:
    _user_hints(tmp_path, "[[hint]]\npattern = 'x'\ntext = 'y'\nkidn = 'hash'\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="kidn"):
        match_hint(LOG)
