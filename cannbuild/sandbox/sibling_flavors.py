"""What each stand-in state of ops-math, ops-nn and ops-cv does: its build.sh options
(the bash builtin getopts style), vendor folder, package name, opbase/cann-cmake/ops-tensor
pins and the one operator it builds (issue 27).

Source: /tmp/brief/siblings-facts.md, read from hicann/ops-math, ops-nn and ops-cv at
v9.0.0 (ce515930 / 0413e303 / 197f5fbc) and branch 9.1.0 (165d41f0 / 90ec4927 / bb717d07);
build.sh is byte-identical at v9.0.0 and v9.0.1, and at tag v9.1.0 and branch 9.1.0, so one
record serves each pair.  The option lists are the real scripts' SUPPORTED_LONG_OPTS (the
option-spec fixtures tests/fixtures/buildsh/ops-*@*.json hold their lines).
"""

from __future__ import annotations

from typing import Tuple

from msgspec import Struct
from msgspec.structs import replace


class SiblingOp(Struct, frozen=True, kw_only=True):
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


SEGSUM = SiblingOp(
    category="math",
    name="segsum",
    op_type="Segsum",
    header="aclnn_segsum.h",
    sources=("op_host/op_api/aclnn_segsum.cpp", "op_kernel/segsum_cpu.cpp"),
    example="test_aclnn_segsum.cpp",
    # math/segsum/op_host/segsum_def.cpp:21,26
    dtypes="float16,float,bfloat16",
    formats="ND,ND,ND",
    fault="segsum-diagonal",
    fault_define="SEGSUM_DIAGONAL",
)
SWI_GLU = SiblingOp(
    category="activation",
    name="swi_glu",
    op_type="SwiGlu",
    header="aclnn_swi_glu.h",
    sources=("op_host/op_api/aclnn_swi_glu.cpp", "op_kernel/swi_glu_cpu.cpp"),
    example="test_aclnn_swi_glu.cpp",
    # activation/swi_glu/op_host/swi_glu_def.cpp:25,30
    dtypes="float16,float,bfloat16",
    formats="ND,ND,ND",
    fault="swi_glu-sigmoid",
    fault_define="SWIGLU_SIGMOID",
)
UPSAMPLE_BILINEAR2D = SiblingOp(
    category="image",
    name="upsample_bilinear2d",
    op_type="UpsampleBilinear2d",
    header="aclnn_upsample_bilinear_2d.h",
    sources=(
        "op_host/op_api/aclnn_upsample_bilinear_2d.cpp",
        "op_kernel/upsample_bilinear2d_cpu.cpp",
    ),
    example="test_aclnn_upsample_bilinear2d.cpp",
    # image/upsample_bilinear2d/op_host/upsample_bilinear2d_def.cpp:26,36
    dtypes="bfloat16,float16,float",
    formats="NCHW,NCHW,NCHW",
    fault="upsample-half-pixel",
    fault_define="UPSAMPLE_HALF_PIXEL",
)


class SiblingFlavor(Struct, frozen=True, kw_only=True):
    repo: str
    suffix: str  # the vendor folder is <vendor>_<suffix> (REPOSITORY_NAME in build.sh)
    package: str  # the version.cmake / share/info package name
    label: str
    ref: str  # "v9.0.0" or "v9.1.0": which generation of the build files
    version: str
    op: SiblingOp
    socs: Tuple[str, ...]
    sort_socs: bool  # ops-nn re-sorts SUPPORT_COMPUTE_UNIT_SHORT by length (build.sh:19)
    release_targets: Tuple[str, ...]
    ut_targets: Tuple[str, ...]  # emptied in checkopts before the loop (math :782, cv :742)
    long_opts: Tuple[str, ...]  # SUPPORTED_LONG_OPTS as written
    # long options with a `name=*)` arm beyond ops/soc/vendor_name/cann_3rd_lib_path
    value_arms: Tuple[str, ...]
    # long options with a plain arm beyond help/pkg/run_example/make_clean (no effect here)
    flag_arms: Tuple[str, ...]
    # `main "$@" 2>&1 | ...` (ops-math) or stdout only (ops-nn, ops-cv)
    stamp_stderr: bool
    gawk: bool  # v9.0.0 pipes through gawk strftime; 9.1 stamps in a `while read` loop
    unparsed_exits: bool  # ops-math: "unparsed param", usage, `exit` (status 0)
    no_args_usage: bool  # `if [ $# -eq 0 ]; then usage` before main (math, cv)
    no_args_exits: bool  # ... then exit 0 (math)
    example_args: str  # "checkopts_run_example" (math, cv) | "set_example_opt" (nn)
    example_report: str  # "math" (`execute samples success|failed`) | "nn" (`Run ... success.`)
    # v9.0.0: only ${ASCEND_HOME_PATH}/opp/vendors/<vendor>_<suffix>; 9.1: every
    # ASCEND_CUSTOM_OPP_PATH entry (math@9.1.0:1488-1496, nn :1361-1368, cv :1476-1484)
    example_lookup: str  # "home-opp" | "custom-opp"
    links_opapi_math: bool  # ops-nn's cust example links -lopapi_math too
    install_deps: bool  # ops-nn: build.sh sources ./install_deps.sh (pigz, dos2unix)
    run_name: str  # the .run file, with ${VENDOR_NAME} and ${ARCH} for CMake
    deps: Tuple[Tuple[str, str], ...]  # version.cmake build dependencies
    cann_cmake: bool = False
    cann_cmake_file: str = "cmake/fetch_cann_cmake.cmake"
    cann_cmake_hash: bool = True  # ops-nn 9.1 declares the tarball without URL_HASH
    cann_third_party: Tuple[str, ...] = ()  # add_cann_third_party(...) in CMakeLists.txt
    # where a 9.1 build asks for gtest: "cmake/ut.cmake", included by every build (math, cv),
    # or "ENABLE_TEST", an if() around the call (nn@9.1.0:CMakeLists.txt:134-136)
    gtest: str = ""
    modules: Tuple[str, ...] = ()  # 9.0: cmake/third_party/<module>.cmake included
    opbase_fetch: bool = False  # math/cv 9.1: `git fetch origin <pin>` before the checkout
    opbase_checkout_fatal: bool = False  # ops-nn: a failed checkout of the pin is FATAL
    ops_tensor: bool = False  # ops-nn 9.1 pins ops-tensor too


_MATH_SOCS_90 = (
    "ascend910b",
    "ascend910_93",
    "ascend950",
    "ascend310p",
    "ascend910",
    "ascend310b",
    "ascend630",
    "ascend610lite",
    "ascend031",
    "ascend035",
    "kirinx90",
    "kirin9030",
    "mc62cm12a",
)
_UT = ("ophost_test", "opapi_test", "opgraph_test", "opkernel_test", "opkernel_aicpu_test")
# ops-math@v9.0.0:build.sh:19-25
_MATH_LONG_90 = (
    "help", "ops=", "soc=", "vendor_name=", "debug", "cov", "noexec", "aicpu", "opkernel",
    "opkernel_aicpu", "jit", "pkg", "asan", "valgrind", "make_clean", "static", "build-type=",
    "no_force", "simulator", "ophost", "opapi", "opgraph", *_UT, "run_example", "genop=",
    "genop_aicpu=", "experimental", "cann_3rd_lib_path", "mssanitizer", "oom", "onnxplugin",
    "dump_cce", "bisheng_flags=", "kernel_template_input=",
)  # fmt: skip
# ops-math@9.1.0:build.sh:19-26
_MATH_LONG_91 = (
    "help", "ops=", "soc=", "vendor_name=", "debug", "cov", "noexec", "aicpu", "noaicpu",
    "opkernel", "opkernel_aicpu", "jit", "pkg", "asan", "valgrind", "make_clean", "static",
    "build-type=", "no_force", "simulator", "ophost", "opapi", "opgraph", *_UT, "run_example",
    "genop=", "genop_aicpu=", "experimental", "cann_3rd_lib_path", "mssanitizer", "oom",
    "onnxplugin", "tfplugin", "dump_cce", "bisheng_flags=", "kernel_template_input=",
    "module_extension=", "example_name=", "rule_launch=", "gtest_filter=",
)  # fmt: skip
# ops-nn@v9.0.0:build.sh:26-31
_NN_LONG_90 = (
    "help", "ops=", "soc=", "vendor_name=", "build-type=", "cov", "noexec", "noaicpu",
    "opkernel", "opkernel_aicpu", "opkernel_aicpu_test", "static", "jit", "pkg", "asan",
    "make_clean_all", "make_clean", "no_force", "ophost", "opgraph", "opapi", "run_example",
    "example_name=", "genop=", "genop_aicpu=", "experimental", "cann_3rd_lib_path=", "oom",
    "onnxplugin", "dump_cce", "simulator", "bisheng_flags=", "kernel_template_input=",
    "module_extension=", "noaclnn",
)  # fmt: skip
# ops-nn@9.1.0:build.sh:26-31: tfplugin, mssanitizer and rule_launch= added
_NN_LONG_91 = (*_NN_LONG_90[:29], "tfplugin", *_NN_LONG_90[29:], "mssanitizer", "rule_launch=")
# ops-cv@v9.0.0:build.sh:24-30
_CV_LONG_90 = (
    "help", "ops=", "soc=", "vendor_name=", "build-type=", "cov", "noexec", "aicpu", "noaicpu",
    "opkernel", "opkernel_aicpu", "jit", "pkg", "asan", "valgrind", "make_clean", "static",
    "simulator", "ophost", "opapi", "opgraph", *_UT, "run_example", "genop=", "genop_aicpu=",
    "cann_3rd_lib_path", "experimental", "mssanitizer", "oom", "onnxplugin", "dump_cce",
    "bisheng_flags=", "kernel_template_input=",
)  # fmt: skip
_CV_LONG_91 = (*_CV_LONG_90, "rule_launch=")  # ops-cv@9.1.0:build.sh:22-28

# The arms of the `-)` case (option-spec fixtures): names whose arm does something real in the
# stand-in (ops, soc, vendor_name, cann_3rd_lib_path, pkg, run_example, help, make_clean) are
# written out in the template; these take their value or flag and change nothing.
_VALUES_90 = ("genop", "genop_aicpu", "build-type", "bisheng_flags", "kernel_template_input")
_MATH_FLAGS_90 = (
    "mssanitizer", "oom", "dump_cce", "cov", "noexec", "aicpu", "static", "jit", "asan",
    "valgrind", "simulator", "experimental", "no_force",
)  # fmt: skip
_NN_FLAGS_90 = (
    "noaclnn", "oom", "dump_cce", "noexec", "noaicpu", "cov", "opkernel", "opkernel_aicpu",
    "opkernel_aicpu_test", "static", "jit", "asan", "experimental", "make_clean_all",
    "no_force", "simulator",
    # ops-nn@v9.0.0 has a `mssanitizer` arm (:796) but does not list it: "Invalid long option"
    "mssanitizer",
)  # fmt: skip
_CV_FLAGS_90 = (
    "mssanitizer", "oom", "dump_cce", "cov", "noexec", "aicpu", "noaicpu", "static", "jit",
    "asan", "valgrind", "simulator", "experimental",
)  # fmt: skip

# version.cmake build dependencies (facts §5): math and cv the same; nn@v9.0.0 adds asc-tools and
# has no ge-compiler, nn@9.1.0 neither.
_MATH_DEPS = (
    ("runtime", ">=8.5"),
    ("opbase", ">=8.5"),
    ("metadef", ">=8.5"),
    ("ge-compiler", ">=8.5"),
    ("bisheng-compiler", ">=8.5"),
    ("asc-devkit", ">=8.5"),
    ("ge-executor", ">=8.5"),
)
_NN_DEPS_91 = tuple(d for d in _MATH_DEPS if d[0] != "ge-compiler")
_NN_DEPS_90 = (*_NN_DEPS_91, ("asc-tools", ">=8.5"))
# ops-math@v9.0.0:CMakeLists.txt:86-93 (and package.cmake:13 for makeself)
_MODULES_90 = ("eigen", "abseil-cpp", "ascend_protobuf", "json", "makeself-fetch")

MATH_V900 = SiblingFlavor(
    repo="ops-math",
    suffix="math",
    package="ops_math",
    label="tag v9.0.0",
    ref="v9.0.0",
    version="9.0.0",
    op=SEGSUM,
    socs=_MATH_SOCS_90,
    sort_socs=False,
    release_targets=("ophost", "opapi", "opgraph", "opkernel", "opkernel_aicpu", "onnxplugin"),
    ut_targets=_UT,
    long_opts=_MATH_LONG_90,
    value_arms=_VALUES_90,
    # `debug` is listed but has no arm: "Invalid option: --debug" (math@v9.0.0:922-951)
    flag_arms=_MATH_FLAGS_90,
    stamp_stderr=True,
    gawk=True,
    unparsed_exits=True,
    no_args_usage=True,
    no_args_exits=True,
    example_args="checkopts_run_example",
    example_report="math",
    example_lookup="home-opp",
    links_opapi_math=False,
    install_deps=False,
    # ops-math cmake/package.cmake:26 PACK_CUSTOM_NAME
    run_name="cann-ops-math-${VENDOR_NAME}_linux-${ARCH}.run",
    deps=_MATH_DEPS,
    modules=_MODULES_90,
)
MATH_V910 = replace(
    MATH_V900,
    **{
        "label": "branch 9.1.0 (tag v9.1.0)",
        "ref": "v9.1.0",
        "version": "9.1.0",
        "socs": (*_MATH_SOCS_90[:-1], "mc62"),
        "release_targets": (*MATH_V900.release_targets, "tfplugin"),
        "long_opts": _MATH_LONG_91,
        "value_arms": (
            *_VALUES_90,
            "module_extension",
            "rule_launch",
            "gtest_filter",
            "example_name",
        ),
        "flag_arms": (*_MATH_FLAGS_90, "noaicpu"),
        "gawk": False,
        "example_lookup": "custom-opp",
        "cann_cmake": True,
        "cann_third_party": ("eigen", "protobuf", "json"),  # math@9.1.0:CMakeLists.txt:100-102
        "gtest": "cmake/ut.cmake",  # math@9.1.0:CMakeLists.txt:110, cmake/ut.cmake:11
        "modules": (),
        "opbase_fetch": True,  # math@9.1.0:cmake/third_party/opbase.cmake:20-26
    },
)
_NN_SOCS_90 = (
    "ascend031",
    "ascend035",
    "ascend310b",
    "ascend310p",
    "ascend910_93",
    "ascend950",
    "ascend910b",
    "ascend910",
    "kirinx90",
    "kirin9030",
    "mc62cm12a",
)
NN_V900 = SiblingFlavor(
    repo="ops-nn",
    suffix="nn",
    package="ops_nn",
    label="tag v9.0.0",
    ref="v9.0.0",
    version="9.0.0",
    op=SWI_GLU,
    socs=_NN_SOCS_90,
    sort_socs=True,
    release_targets=("ophost", "opapi", "onnxplugin", "opgraph"),
    ut_targets=(),
    long_opts=_NN_LONG_90,
    value_arms=(*_VALUES_90, "example_name", "module_extension"),
    flag_arms=_NN_FLAGS_90,
    stamp_stderr=False,
    gawk=True,
    unparsed_exits=False,
    no_args_usage=False,
    no_args_exits=False,
    example_args="set_example_opt",
    example_report="nn",
    example_lookup="home-opp",
    links_opapi_math=True,
    install_deps=True,
    # ops-nn cmake/variables.cmake:85 at v9.0.0: `-linux.<arch>`
    run_name="cann-ops-nn-${VENDOR_NAME}-linux.${ARCH}.run",
    deps=_NN_DEPS_90,
    modules=_MODULES_90,
    opbase_checkout_fatal=True,  # nn@v9.0.0:cmake/third_party/opbase.cmake:21-29
)
NN_V910 = replace(
    NN_V900,
    **{
        "label": "branch 9.1.0 (tag v9.1.0)",
        "ref": "v9.1.0",
        "version": "9.1.0",
        "socs": (*_NN_SOCS_90[:6], "ascend350", *_NN_SOCS_90[6:-1], "mc62"),
        "release_targets": (*NN_V900.release_targets, "tfplugin"),
        "long_opts": _NN_LONG_91,
        "value_arms": (*NN_V900.value_arms, "rule_launch"),
        "gawk": False,
        "example_lookup": "custom-opp",
        # cmake/variables.cmake:94 at 9.1.0: `_linux-<arch>`, as ops-math's
        "run_name": "cann-ops-nn-${VENDOR_NAME}_linux-${ARCH}.run",
        "deps": _NN_DEPS_91,
        "cann_cmake": True,
        "cann_cmake_file": "cmake/third_party/fetch_cann_cmake.cmake",
        "cann_cmake_hash": False,
        # nn@9.1.0:CMakeLists.txt:113-119
        "cann_third_party": ("json", "abseil-cpp", "protobuf", "eigen"),
        "gtest": "ENABLE_TEST",
        "modules": (),
        "ops_tensor": True,
    },
)
# ops-cv@v9.0.0:build.sh:15-17 spans several lines
_CV_SOCS = (
    "ascend031",
    "ascend035",
    "ascend310b",
    "ascend310p",
    "ascend610lite",
    "ascend630",
    "ascend910",
    "ascend910b",
    "ascend910_93",
    "ascend950",
    "kirinx90",
    "kirin9030",
)
CV_V900 = SiblingFlavor(
    repo="ops-cv",
    suffix="cv",
    package="ops_cv",
    label="tag v9.0.0",
    ref="v9.0.0",
    version="9.0.0",
    op=UPSAMPLE_BILINEAR2D,
    socs=_CV_SOCS,
    sort_socs=False,
    release_targets=("ophost", "opapi", "opgraph", "opkernel", "opkernel_aicpu", "onnxplugin"),
    ut_targets=_UT,
    long_opts=_CV_LONG_90,
    value_arms=_VALUES_90,
    flag_arms=_CV_FLAGS_90,
    stamp_stderr=False,
    gawk=True,
    unparsed_exits=False,
    no_args_usage=True,
    no_args_exits=False,
    example_args="checkopts_run_example",
    example_report="math",
    example_lookup="home-opp",
    links_opapi_math=False,
    install_deps=False,
    # ops-cv cmake/package.cmake:27 (both refs)
    run_name="cann-ops-cv-${VENDOR_NAME}-linux.${ARCH}.run",
    deps=_MATH_DEPS,
    modules=_MODULES_90,
)
CV_V910 = replace(
    CV_V900,
    **{
        "label": "branch 9.1.0 (tag v9.1.0)",
        "ref": "v9.1.0",
        "version": "9.1.0",
        "long_opts": _CV_LONG_91,
        "value_arms": (*_VALUES_90, "rule_launch"),
        "gawk": False,
        "example_lookup": "custom-opp",
        "cann_cmake": True,
        "cann_third_party": ("eigen", "protobuf", "json"),  # cv@9.1.0:CMakeLists.txt:120-122
        "gtest": "cmake/ut.cmake",  # cv@9.1.0:CMakeLists.txt:130, cmake/ut.cmake:13
        "modules": (),
        "opbase_fetch": True,  # cv@9.1.0:cmake/third_party/opbase.cmake:20-26
    },
)
SIBLING_FLAVORS = (MATH_V900, MATH_V910, NN_V900, NN_V910, CV_V900, CV_V910)
