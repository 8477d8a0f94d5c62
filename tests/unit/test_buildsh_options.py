"""A build.sh's option spec is read from its text in the three declaration styles the real
scripts use (cannbuild/recipes/optspec.py, recipes/getopts.py), and a command line goes
through it the way the script would take it."""

from __future__ import annotations

import textwrap

import pytest

from cannbuild.errors import UsageError
from cannbuild.recipes.optspec import (
    CASE,
    GETOPT,
    GETOPTS,
    VARIABLE,
    NoOptionLoop,
    closest,
    judge,
    option_spec,
)
from cannbuild.train.check import text_spec

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


# The shape of ops-math's, ops-nn's and ops-cv's (hicann/ops-math@v9.0.0:build.sh:12-25,
# 782, 839-959), written for this test: a short list and a long list the script checks
# every word against first, the builtin getopts with `-:`, a `case $OPTARG` for the long
# options whose `*)` takes the names of two arrays (one emptied before the loop, as
# ops-math empties UT_TARGETS at :782), an arm that hands "$@" on to read the words after
# it; `debug` is listed with no arm, `secret` has an arm but is not listed.
GETOPTS_SCRIPT = textwrap.dedent(
    """\
    RELEASE_TARGETS=("ophost" "opapi")
    UT_TARGETS=("ophost_test")
    SUPPORTED_SHORT_OPTS="hj:v-:"
    SUPPORTED_LONG_OPTS=(
      "help" "ops=" "soc=" "pkg" "cann_3rd_lib_path" "run_example" "debug"
      "ophost" "opapi" "ophost_test"
    )
    checkopts() {
      UT_TARGETS=()
      while getopts $SUPPORTED_SHORT_OPTS opt; do
        case "${opt}" in
          h) usage; exit 0 ;;
          j) JOBS=$OPTARG ;;
          -) case $OPTARG in
            help) usage; exit 0 ;;
            ops=*) OPS=${OPTARG#*=} ;;
            soc=*)
              SOC=${OPTARG#*=}
              ;;
            pkg) PKG=TRUE ;;
            cann_3rd_lib_path=*) THIRD=${OPTARG#*=} ;;
            run_example)
              run_example_opts "$@"
              ;;
            secret) SECRET=TRUE ;;
            *)
              if ! in_array "$OPTARG" "${RELEASE_TARGETS[@]}" && ! in_array "$OPTARG" "${UT_TARGETS[@]}"; then
                exit 1
              fi
              ;;
          esac ;;
          *) echo "Undefined option: ${opt}"; exit 1 ;;
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


def test_a_getopts_script_accepts_what_its_lists_declare_and_an_arm_takes():
    spec = option_spec(GETOPTS_SCRIPT)
    assert (spec.style, spec.line) == (GETOPTS, 10)
    got = [(o.pattern, o.line, o.values, o.argument) for o in spec.options]
    assert got == [
        ("-h", 12, 0, ""),
        ("-j", 13, 1, "required"),
        ("--help", 15, 0, ""),
        ("--ops=*", 16, 0, ""),
        ("--soc=*", 17, 0, ""),
        ("--pkg", 20, 0, ""),
        ("--cann_3rd_lib_path=*", 21, 0, ""),
        ("--run_example", 22, VARIABLE, ""),
        ("--ophost", 26, 0, ""),  # through `*)`: RELEASE_TARGETS
        ("--opapi", 26, 0, ""),
    ]
    # `-v` is in the optstring with no arm; `--debug` listed, no arm; `--ophost_test`
    # listed, but UT_TARGETS is empty when the loop runs
    assert [(o.pattern, o.line) for o in spec.declared_only] == [
        ("-v", 10),
        ("--debug", 4),
        ("--ophost_test", 4),
    ]
    assert [o.pattern for o in spec.unlisted] == ["--secret"]


def test_a_command_line_goes_through_the_long_list_then_getopts_then_the_arms():
    spec = option_spec(GETOPTS_SCRIPT)
    words = "--pkg --soc=ascend910b -j8 -j 4 --cann_3rd_lib_path=/t --run_example add eager cust"
    words += " --opapi --ophost_test --debug --secret --ccache --cann_3rd_lib_path /t -v -x --pkg=1"
    verdicts = judge(spec, words.split())
    assert [(v.word, v.accepted, v.values) for v in verdicts] == [
        ("--pkg", True, ()),
        ("--soc=ascend910b", True, ()),
        ("-j8", True, ()),
        ("-j", True, ("4",)),
        ("--cann_3rd_lib_path=/t", True, ()),
        ("--run_example", True, ("add", "eager", "cust")),
        ("--opapi", True, ()),
        ("--ophost_test", False, ()),
        ("--debug", False, ()),
        ("--secret", False, ()),
        ("--ccache", False, ()),
        ("--cann_3rd_lib_path", False, ()),
        ("/t", False, ()),  # getopts stopped at it: nothing after it is read
        ("-v", False, ()),
        ("-x", False, ()),
        ("--pkg=1", False, ()),
    ]
    why = {v.word: v.why for v in verdicts if not v.accepted}
    assert "does not list it" in why["--secret"] and "does not list it" in why["--ccache"]
    assert "no arm of `case $OPTARG` takes it" in why["--debug"]
    assert "must be glued on: --cann_3rd_lib_path=VALUE" in why["--cann_3rd_lib_path"]
    assert why["/t"].startswith("getopts stops at the first word that is not an option")
    # before the stray word, -v, -x and --pkg=1 are each refused for their own reason
    alone = {v.word: v.why for v in judge(spec, ["-v", "-x", "--pkg=1", "-j"])}
    assert "no `case` arm takes it" in alone["-v"]
    assert "getopts does not declare -x" in alone["-x"]
    assert "no arm of `case $OPTARG` takes it" in alone["--pkg=1"]
    assert alone["-j"] == "its value is missing"


def test_an_arm_that_reads_the_words_by_position_and_shifts_them_off_takes_them():
    """ops-nn@v8.5.0:744-747 (and 9.0.0-beta.1) reads the example's words as `$2 $3 $4`
    and shifts them off, with no OPTIND: the real script takes `--run_example swi_glu
    eager cust --vendor_name=custom` whole, so none of it is a stray word."""
    script = (
        GETOPTS_SCRIPT.replace(
            'run_example_opts "$@"',
            "step=0\n              set_example_opt $2 $3 $4\n              shift $step",
        )
        .replace('"run_example" "debug"', '"run_example" "vendor_name=" "debug"')
        .replace(
            "secret) SECRET=TRUE ;;",
            "secret) SECRET=TRUE ;;\n            vendor_name=*) V=${OPTARG#*=} ;;",
        )
    )
    spec = option_spec(script)
    assert next(o for o in spec.options if o.name == "--run_example").values == VARIABLE
    verdicts = judge(spec, ["--run_example", "swi_glu", "eager", "cust", "--vendor_name=custom"])
    assert [(v.word, v.accepted, v.values) for v in verdicts] == [
        ("--run_example", True, ("swi_glu", "eager", "cust")),
        ("--vendor_name=custom", True, ()),
    ]


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


# hicann/ops-math@master:build.sh:14-28 (and 9.2.0-beta.2): the option loop moved to
# scripts/build_options.sh, which build.sh sources; `main "$@"` is all that is left here.
SOURCING_SCRIPT = """\
#!/bin/bash
SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"
source "${SCRIPT_DIR}/scripts/build.conf.sh"
source "${SCRIPT_DIR}/scripts/build_options.sh"
main() {
  checkopts "$@"
  source "${ASCEND_HOME_PATH}/bin/setenv.bash"
}
main "$@"
"""


def test_a_script_that_sources_its_option_loop_says_which_files_and_how_to_go_on():
    with pytest.raises(
        NoOptionLoop,
        match="it sources scripts/build.conf.sh at line 3, "
        "scripts/build_options.sh at line 4, which may parse its options",
    ):
        option_spec(SOURCING_SCRIPT)
    with pytest.raises(UsageError) as err:
        text_spec("ops-math", SOURCING_SCRIPT, "ops-math/build.sh")
    assert "Point --src" not in err.value.paragraph()
    assert "by hand against the script it sources" in err.value.paragraph()


def test_the_options_of_a_script_it_sources_are_read_and_cited_in_their_own_file(tmp_path):
    """From 9.2 (ops-math, ops-cv) build.sh sources build.conf.sh (the lists) and
    build_options.sh (the loop): read together, as bash does, they give the options a
    single script would, each cited at its own file's line."""
    conf, loop = GETOPTS_SCRIPT.split("checkopts() {\n")
    scripts = {"scripts/build.conf.sh": conf, "scripts/build_options.sh": "checkopts() {\n" + loop}
    one = option_spec(GETOPTS_SCRIPT)
    split = option_spec(SOURCING_SCRIPT, scripts.get)
    assert [(o.pattern, o.values) for o in split.options] == [
        (o.pattern, o.values) for o in one.options
    ]
    assert split.located(split.line) == ("scripts/build_options.sh", 3)
    soc = next(o for o in split.options if o.pattern == "--soc=*")
    assert split.located(soc.line) == ("scripts/build_options.sh", 10)
    assert split.located(split.declared_only[1].line) == ("scripts/build.conf.sh", 4)
    assert [v.accepted for v in judge(split, ["--pkg", "--soc=ascend910b", "--bogus"])] == [
        True,
        True,
        False,
    ]
    # from a checkout on disk, as recipe check reads it
    (tmp_path / "scripts").mkdir()
    for name, text in scripts.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "build.sh").write_text(SOURCING_SCRIPT)
    from cannbuild.train.check import script_spec

    assert script_spec("ops-math", tmp_path / "build.sh").spec == split
