"""The CMake reader behind derived requirements and the pin readers: commands with the line
they start on, bracket comments dropped, a comment left open treated as a line comment; a
checkout's CMake file of megabytes is read in time linear in its size."""

from __future__ import annotations

import time

import pytest

from cannbuild.build.cmake_text import read_commands

ONE_MIB = 1 << 20


def test_commands_keep_their_lines_across_bracket_comments_and_quotes():
    text = (
        "set(a 1)\n"
        "#[[ set(b 2)\n more ]]\n"
        "set(c 3) # x\n"
        "#[=[ ]] still ]=]\n"
        'set(d "#[[")\n'
        "#[[ left open\n"
        "set(e 5)\n"
    )
    found = [(c.name, c.args, c.line) for c in read_commands("CMakeLists.txt", text)]
    assert found == [
        ("set", ("a", "1"), 1),
        ("set", ("c", "3"), 4),
        ("set", ("d", "#[["), 6),
        ("set", ("e", "5"), 8),
    ]


@pytest.mark.parametrize(
    "unit, commands",
    [("#[[", 0), ("a()\n", ONE_MIB // 4), ("#[[x]]\nset(x y)\n", ONE_MIB // 16)],
    ids=["comments-left-open", "a-command-a-line", "comments-between-commands"],
)
def test_a_1_mib_cmake_file_is_read_in_linear_time(unit, commands):
    """Each of these took from minutes to hours when every opening looked for its close with
    a regex and every command counted its line from the top."""
    start = time.monotonic()
    found = read_commands("CMakeLists.txt", unit * (ONE_MIB // len(unit)))
    assert time.monotonic() - start < 30  # a hang guard: linear is a few seconds at most
    assert len(found) == commands
    if commands:  # the last command is on the last line of the last unit
        assert found[-1].line == ONE_MIB // len(unit) * unit.count("\n")
