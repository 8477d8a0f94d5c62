"""What a stand-in repository does at one real ref (a flavor): its build.sh options,
messages, opbase hand-over, third-party layout and pins.  The flavors are data,
`[flavor.<repo>."<ref>"]` in recipes/sandbox/*.toml, each field citing the ref it mirrors
(shared/reference/cann-build-systems.md, docs/upstream-9.1.md, siblings-facts); these are
their shapes, which the templates in templates/sandbox/ read."""

from __future__ import annotations

from typing import Tuple

from msgspec import Struct

Deps = Tuple[Tuple[str, str], ...]  # (package, version spec) of version.info / version.cmake


class StandIn(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What every flavor says."""

    label: str
    version: str
    ref: str = ""  # the upstream state it stands in for: its key in the data
    deps: Deps = ()  # build dependencies, checked against share/info/<pkg>/version.info
    # the third-party modules its package build includes (cmake/third_party/<module>.cmake),
    # in the real CMakeLists' order, and the test-only ones it carries but never includes
    modules: Tuple[str, ...] = ()
    test_modules: Tuple[str, ...] = ()
    # 9.1: third-party libraries come from the shared cann/cmake repository
    # (cmake/fetch_cann_cmake.cmake, add_cann_third_party), at tag `cmake_tag`
    cann_cmake: bool = False
    cmake_tag: str = ""
    cann_cmake_hash: bool = True  # the tarball declared with its URL_HASH (ops-nn 9.1: without)
    # the commits its CMake pins as source, by their message in the stand-in's history
    opbase_pin: str = ""
    optensor_pin: str = ""


class OpbaseFlavor(StandIn, frozen=True, kw_only=True, forbid_unknown_fields=True):
    version_dir: str
    # build.sh's getopt spec: `getopt -a -o <short_opts> -l <long_opts>`.
    short_opts: str
    long_opts: str
    has_pkg: bool  # also: its package installs headers, so the commit carries its packaging XML
    # The default ASCEND_HOME_PATH's last part: `latest` up to v8.5.0, `cann` from v9.0.0.
    default_home_tail: str
    run_deps: Deps = ()
    finds_ccache: bool = False  # the ccache PATH finds becomes the compiler launcher
    s_arm: bool = True  # `-s` has a case arm (not at 9.1: "Undefined option")
    extra_cmake_args: bool = False  # 9.1: `--extra-cmake-args=A=B,...`


class OpsTransformerFlavor(StandIn, frozen=True, kw_only=True, forbid_unknown_fields=True):
    socs: Tuple[str, ...]  # SUPPORT_COMPUTE_UNIT_SHORT
    stamp_stderr: bool  # `{ ...; } 2>&1 | gawk` (the 2025-11 script) or stdout alone
    has_3rd_lib_flag: bool
    tiling_key_eq: bool
    extra_flags: Tuple[str, ...]
    extra_eq_flags: Tuple[str, ...]
    soc_warnings: bool
    run_example_soc_check: bool
    example_links_opapi_math: bool
    # Where ops-transformer finds opbase: installed `<arch>-linux/include`, installed
    # `<arch>-linux/pkg_inc`, or source in third_party/opbase at OPBASE_TAG_ID.
    opbase_mode: str  # installed-include | installed-pkg_inc | source
    fa_head_dim_max: int = 768  # FlashAttentionScore's head dim limit as its docs state
    # (the real examples/test_aclnn_*.cpp name, the stand-in source shipped under it)
    examples: Tuple[Tuple[str, str], ...] = ()
    example_lookup: str = "custom-opp"  # "opp": only ${ASCEND_OPP_PATH}/vendors
    example_summary: bool = True  # "execute samples success" / "Example completed successfully"
    gawk: bool = True  # output stamped through gawk's strftime (else a `while read` loop)
    removed_flags: Tuple[str, ...] = ()  # common stand-in flags this ref no longer parses


class SiblingOp(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The one operator a sibling stand-in builds, with its emulated kernel (kernels/standin/<name>)."""

    category: str  # math | activation | image
    name: str  # the folder, --ops and --run_example name
    op_type: str
    header: str  # op_host/op_api/<header>, installed into op_api/include
    sources: Tuple[str, ...]  # relative to <category>/<name>
    example: str  # examples/<example>
    dtypes: str  # what the op_impl config lists for the A2/A3 kernels
    formats: str
    # CANNBUILD_SANDBOX_FAULT=<fault> compiles SANDBOX_FAULT_<fault_define> into the kernel
    fault: str
    fault_define: str


class SiblingFlavor(StandIn, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ops-math, ops-nn or ops-cv at one ref: build.sh in the bash builtin getopts style."""

    repo: str
    suffix: str  # the vendor folder is <vendor>_<suffix> (REPOSITORY_NAME in build.sh)
    package: str  # the version.cmake / share/info package name
    op: SiblingOp
    socs: Tuple[str, ...]
    sort_socs: bool  # ops-nn re-sorts SUPPORT_COMPUTE_UNIT_SHORT by length
    release_targets: Tuple[str, ...]
    ut_targets: Tuple[str, ...]  # emptied in checkopts before the loop (from v9.0.0)
    ut_targets_kept: bool = False  # v8.5.0: not emptied, so `--<ut target>` is taken
    long_opts: Tuple[str, ...]  # SUPPORTED_LONG_OPTS as written
    # long options with a `name=*)` arm beyond ops/soc/vendor_name/cann_3rd_lib_path
    value_arms: Tuple[str, ...]
    # long options with a plain arm beyond help/pkg/run_example/make_clean (no effect here)
    flag_arms: Tuple[str, ...]
    stamp_stderr: bool  # `main "$@" 2>&1 | ...` (ops-math) or stdout only
    gawk: bool
    unparsed_exits: bool  # "unparsed param", usage, `exit` (status 0)
    no_args_usage: bool  # `if [ $# -eq 0 ]; then usage` before main
    no_args_exits: bool  # ... then exit 0
    example_args: str  # "checkopts_run_example" (math, cv) | "set_example_opt" (nn)
    example_report: str  # "math" (`execute samples success|failed`) | "nn" (`Run ... success.`)
    example_lookup: str  # "home-opp" (v9.0.0) | "custom-opp" (every ASCEND_CUSTOM_OPP_PATH entry)
    links_opapi_math: bool  # the cust example links -lopapi_math too
    install_deps: bool  # build.sh sources ./install_deps.sh (pigz, dos2unix)
    run_name: str  # the .run file, with ${VENDOR_NAME} and ${ARCH} for CMake
    cann_cmake_file: str = "cmake/fetch_cann_cmake.cmake"
    cann_third_party: Tuple[str, ...] = ()  # add_cann_third_party(...) in CMakeLists.txt
    # where a 9.1 build asks for gtest: "cmake/ut.cmake", included by every build, or
    # "ENABLE_TEST", an if() around the call
    gtest: str = ""
    # where opbase comes from: "source", cmake/third_party/opbase.cmake's pin (from v9.0.0), or
    # "installed-pkg_inc", the toolkit's <arch>-linux/pkg_inc and lib64/libops_base.so through
    # cmake/modules/FindOPBASE.cmake (v8.5.0)
    opbase_mode: str = "source"
    # --soc values build.sh rewrites before its check (v8.5.0: ascend950 -> ascend910_95)
    soc_renames: Tuple[Tuple[str, str], ...] = ()
    # the eigen archive its cmake/third_party/eigen.cmake names (v8.5.0: eigen34)
    eigen: str = "eigen50"
    opbase_fetch: bool = False  # `git fetch origin <pin>` before the checkout
    opbase_checkout_fatal: bool = False  # a failed checkout of the pin is FATAL
    ops_tensor: bool = False  # pins ops-tensor too
