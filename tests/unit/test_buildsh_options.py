"""A build.sh's option spec is read from its text in both declaration styles the real
scripts use (cannbuild/recipes/optspec.py), and a command line goes through it the way
the script would take it."""

from __future__ import annotations

import textwrap

import pytest

from cannbuild.recipes.optspec import (
    CASE,
    GETOPT,
    VARIABLE,
    NoOptionLoop,
    closest,
    judge,
    option_spec,
)

# The shape of ops-transformer's option loop (a `case` on $1 inside `while [[ $# -gt 0 ]]`),
# written for this test: one-line and multi-line arms, a pattern list continued with `\`, a
# nested `case` inside an arm, a help pre-scan `case` before the loop that must not count.
CASE_SCRIPT = textwrap.dedent(
    """\
    #!/bin/bash
    for arg in "$@"; do
        case "$arg" in
        --pkg) SHOW=package ;;
        esac
    done
    while [[ $# -gt 0 ]]; do
        case $1 in
        -h|--help)
            usage
            exit
            ;;
        --pkg) PKG=TRUE; shift ;;
        --soc=*)
            SOC=${1#*=}
            case "$SOC" in
                ascend*) ok=1 ;;
            esac
            shift
            ;;
        --ccache)
            CCACHE="$2"
            shift 2
            ;;
        -j*) JOBS=$1; shift ;;   # a comment with shift 3 in it
        -O[0-3]) shift ;;
        --run_example)
            step=1
            pick $2 $3 $4
            shift $step
            ;;
        --op_build_tool | --ascend_cmake_dir | \\
        --op_debug_config)
            shift 2 ;;
        *)
            usage
            exit 1
            ;;
        esac
    done
    """
)

# The shape of opbase's: getopt declares (with -a), a `case` handles what getopt returns;
# `-s` is declared but has no arm, `--debug` has an arm but is not declared.
GETOPT_SCRIPT = textwrap.dedent(
    """\
    checkopts() {
      parsed=$(getopt -a -o j:hs -l help,pkg,cann_3rd_lib_path:,opt:: -- "$@") || exit 1
      eval set -- "$parsed"
      while true; do
        case "$1" in
          -h | --help) usage; exit 0 ;;
          -j) JOBS="$2"; shift 2 ;;
          --pkg) shift ;;
          --cann_3rd_lib_path) THIRD="$2"; shift 2 ;;
          --opt) shift 2 ;;
          --debug) shift ;;
          --) shift; break ;;
          *) echo "Undefined option: $1"; exit 1 ;;
        esac
      done
    }
    """
)


def test_a_case_loop_gives_every_arm_pattern_with_its_line_and_value_count():
    spec = option_spec(CASE_SCRIPT)
    assert (spec.style, spec.line) == (CASE, 7)
    got = [(o.pattern, o.line, o.values) for o in spec.options]
    assert got == [
        ("-h", 9, 0),
        ("--help", 9, 0),
        ("--pkg", 13, 0),
        ("--soc=*", 14, 0),
        ("--ccache", 21, 1),
        ("-j*", 25, 0),  # the `shift 3` is in a comment
        ("-O[0-3]", 26, 0),
        ("--run_example", 27, VARIABLE),
        ("--op_build_tool", 32, 1),
        ("--ascend_cmake_dir", 32, 1),
        ("--op_debug_config", 32, 1),
    ]
    assert [o.name for o in spec.options[3:7]] == ["--soc", "--ccache", "-j", "-O"]


def test_a_getopt_script_accepts_what_getopt_declares_and_a_case_arm_takes():
    spec = option_spec(GETOPT_SCRIPT)
    assert (spec.style, spec.line, spec.alternative) == (GETOPT, 2, True)
    got = [(o.pattern, o.line, o.values, o.argument) for o in spec.options]
    assert got == [
        ("-j", 7, 1, "required"),
        ("-h", 6, 0, ""),
        ("--help", 6, 0, ""),
        ("--pkg", 8, 0, ""),
        ("--cann_3rd_lib_path", 9, 1, "required"),
        ("--opt", 10, 0, "optional"),
    ]
    assert [o.pattern for o in spec.declared_only] == ["-s"]  # `--debug`: not declared, no option


def test_a_command_line_goes_through_the_case_arms_in_order():
    spec = option_spec(CASE_SCRIPT)
    words = "--pkg --soc=ascend910b -j8 --ccache /c --run_example fa eager cust -O2 --nope x"
    verdicts = judge(spec, words.split())
    assert [(v.word, v.accepted, v.values) for v in verdicts] == [
        ("--pkg", True, ()),
        ("--soc=ascend910b", True, ()),
        ("-j8", True, ()),
        ("--ccache", True, ("/c",)),
        ("--run_example", True, ("fa", "eager", "cust")),
        ("-O2", True, ()),
        ("--nope", False, ()),
        ("x", False, ()),  # a stray word reaches `*)` too
    ]
    # `--soc` without `=` matches no arm; `--ccache` at the end has no value
    assert [v.accepted for v in judge(spec, ["--soc", "ascend910b"])] == [False, False]
    assert judge(spec, ["--ccache"])[0].why == "its value is missing"


def test_a_command_line_goes_through_getopt_then_the_case():
    spec = option_spec(GETOPT_SCRIPT)
    words = ["--pkg", "-j8", "-j", "4", "--cann_3rd_lib_path=/t", "--cann_3rd_lib_path", "/t"]
    words += ["-pkg", "--cann", "/t", "-s", "--debug", "--pkg=1", "stray"]
    verdicts = judge(spec, words)
    assert [(v.word, v.accepted) for v in verdicts] == [
        ("--pkg", True),
        ("-j8", True),
        ("-j", True),
        ("--cann_3rd_lib_path=/t", True),
        ("--cann_3rd_lib_path", True),
        ("-pkg", True),  # -a: a long option with one dash
        ("--cann", True),  # a unique prefix, as getopt takes it
        ("-s", False),
        ("--debug", False),
        ("--pkg=1", False),
        ("stray", False),
    ]
    why = {v.word: v.why for v in verdicts if not v.accepted}
    assert "no `case` arm takes it" in why["-s"]
    assert why["--debug"] == "getopt does not declare it"
    assert why["--pkg=1"] == "takes no value"
    assert "getopt moves it after `--`" in why["stray"]


def test_the_closest_option_is_offered_for_a_near_miss_only():
    spec = option_spec(CASE_SCRIPT)
    assert closest(spec, "--cache") == "--ccache"
    assert closest(spec, "--socs=ascend910b") == "--soc"
    assert closest(spec, "--zzzzzzzzzz") is None


def test_a_script_without_an_option_loop_is_refused():
    with pytest.raises(NoOptionLoop):
        option_spec("#!/bin/sh\nmake -j8\n")
