"""What each stand-in state of opbase and ops-transformer does: its build.sh options,
messages, opbase hand-over and third-party layout (one record per real ref that matters).

shared/reference/cann-build-systems.md and docs/upstream-9.1.md are the sources; each
field says which ref it mirrors.
"""

from __future__ import annotations

from typing import Tuple

from msgspec import Struct

# opbase's build dependencies, checked by check_build_dependencies.py against
# share/info/<pkg>/version.info: the v8.5.0 tag lists these five (`>=8.5.0`), master adds hcomm
# (reference cann-build-systems.md §1.2).
DEPS_85 = (
    ("runtime", ">=8.5"),
    ("metadef", ">=8.5"),
    ("bisheng-compiler", ">=8.5"),
    ("asc-devkit", ">=8.5"),
    ("ge-executor", ">=8.5"),
)
# ops-transformer's build dependencies at 9.0 (version.cmake; reference §2.2 lists runtime, opbase,
# hcomm, ge-executor, metadef, ge-compiler, asc-devkit, bisheng-compiler at master).
OT_DEPS_90 = (
    ("runtime", ">=8.5"),
    ("opbase", ">=8.5"),
    ("hcomm", ">=8.5"),
    ("ge-executor", ">=8.5"),
    ("metadef", ">=8.5"),
    ("ge-compiler", ">=8.5"),
    ("asc-devkit", ">=8.5"),
    ("bisheng-compiler", ">=8.5"),
    ("asc-tools", ">=8.5"),
)
# ...and at 9.1: the same without asc-tools (OT@9.1.0:version.cmake:13-20, set_cann_build_dependencies).
OT_DEPS_91 = tuple(dep for dep in OT_DEPS_90 if dep[0] != "asc-tools")
# opbase 9.1 (OB@9.1.0:version.cmake): the v9.0.0 five plus hcomm.
OPBASE_DEPS_91 = (*DEPS_85, ("hcomm", ">=8.5"))


class OpbaseFlavor(Struct, frozen=True, kw_only=True):
    label: str
    version: str
    version_dir: str
    # build.sh's getopt spec: `getopt -a -o <short_opts> -l <long_opts>`.
    short_opts: str
    long_opts: str
    has_pkg: bool
    # The default ASCEND_HOME_PATH's last part: `/usr/local/Ascend/latest` up to v8.5.0,
    # `/usr/local/Ascend/cann` from v9.0.0 on.
    default_home_tail: str
    deps: Tuple[Tuple[str, str], ...] = ()
    run_deps: Tuple[Tuple[str, str], ...] = ()
    # CMakeLists.txt:7-10 from v8.5.0: the ccache PATH finds becomes the compiler launcher
    finds_ccache: bool = False
    # `-s` has a case arm from v8.5.0 to v9.0.0; at 9.1 it is still in the getopt spec but its arm
    # is gone, so it reaches `*)` "Undefined option" (OB@9.1.0:build.sh:92, v9.0.0:95).
    s_arm: bool = True
    # 9.1: `--extra-cmake-args=A=B,...`, of which only ENABLE_BUILD_DEVICE= gets through
    # (OB@9.1.0:build.sh:44-66).
    extra_cmake_args: bool = False
    # 9.1: third-party libraries come from the shared cann/cmake repository
    # (cmake/fetch_cann_cmake.cmake, add_cann_third_party), not cmake/third_party/*.cmake.
    cann_cmake: bool = False


class OpsTransformerFlavor(Struct, frozen=True, kw_only=True):
    label: str
    version: str
    socs: Tuple[str, ...]
    # Only the 2025-11 script runs `{ ...; } 2>&1 | gawk` (stderr stamped too, no pipefail); v8.5.0
    # and v9.0.0 pipe stdout alone through gawk (reference real-host-findings.md §1).
    stamp_stderr: bool
    has_3rd_lib_flag: bool
    tiling_key_eq: bool
    extra_flags: Tuple[str, ...]
    extra_eq_flags: Tuple[str, ...]
    soc_warnings: bool
    run_example_soc_check: bool
    example_links_opapi_math: bool
    # Where ops-transformer finds opbase: installed `<arch>-linux/include` (c29bc10's
    # FindOPBASE.cmake:19), installed `<arch>-linux/pkg_inc` (v8.5.0), or source in
    # third_party/opbase at OPBASE_TAG_ID (v9.0.0).
    opbase_mode: str  # installed-include | installed-pkg_inc | source
    deps: Tuple[Tuple[str, str], ...] = ()
    # FlashAttentionScore's head dim limit, as its docs (and tiling) state at that ref:
    # 512 at the 8.3 pin (c29bc10), 768 from v8.5.0
    fa_head_dim_max: int = 768
    # the real */flash_attention_score/examples/test_aclnn_*.cpp at this ref, each with the
    # stand-in source (kernels/standin/flash_attention_score/examples) shipped under its name
    examples: Tuple[Tuple[str, str], ...] = ()
    example_lookup: str = "custom-opp"  # "opp": only ${ASCEND_OPP_PATH}/vendors (the 8.3 pin)
    example_summary: bool = True  # "execute samples success" / "Example completed successfully"
    # Up to v9.0.0 build.sh pipes its output through gawk's strftime (exit 127 without gawk); 9.1
    # stamps stdout with a `while IFS= read -r line` loop instead (OT@9.1.0:build.sh:2029).
    gawk: bool = True
    # Flags the common stand-in option list has that this ref no longer parses (9.1 dropped
    # `--disable_asan`, v9.0.0:1131).
    removed_flags: Tuple[str, ...] = ()
    # 9.1: cmake/fetch_cann_cmake.cmake + add_cann_third_party(...) from cann/cmake, ops-tensor
    # pinned as source beside opbase (cmake/third_party/ops-tensor.cmake), makeself for the
    # custom package hard-wired at <src>/third_party/makeself (OT@9.1.0:cmake/custom_build.cmake:1219).
    cann_cmake: bool = False


OPBASE_2025_11 = OpbaseFlavor(
    label="master, November 2025 (the 8.3 commercial guide)",
    version="8.5.0.alpha001",
    version_dir="8.5.0.alpha001",
    short_opts="j:hvuO:",
    long_opts="help,verbose,cov,make_clean_all,debug,noexec,cann_3rd_lib_path:",
    has_pkg=False,
    default_home_tail="latest",
    run_deps=(("compiler", ">=8.3"), ("runtime", ">=8.3")),
)
OPBASE_V850 = OpbaseFlavor(
    label="tag v8.5.0",
    version="8.5.0-beta.1",  # the v8.5.0 tag's version.info really says this
    version_dir="cann",
    short_opts="j:hvusO:",
    long_opts="help,verbose,cov,make_clean,build-type:,noexec,pkg,asan,cann_3rd_lib_path:",
    has_pkg=True,
    default_home_tail="latest",
    run_deps=tuple((p, ">=8.5.0") for p, _ in DEPS_85),
    finds_ccache=True,
)
OPBASE_V900 = OpbaseFlavor(
    label="tag v9.0.0",
    version="9.0.0",
    version_dir="cann",
    short_opts="j:hvusO:",
    long_opts="help,verbose,cov,make_clean,build-type:,noexec,pkg,asan,cann_3rd_lib_path:",
    has_pkg=True,
    default_home_tail="cann",
    deps=DEPS_85,
    run_deps=DEPS_85,
    finds_ccache=True,
)

_DENSE = "test_aclnn_flash_attention_score_v2_fp32.cpp"
_VARLEN = "test_aclnn_flash_attention_score_varlen_v4_fp32.cpp"

OT_2025_11 = OpsTransformerFlavor(
    label="master, November 2025 (the 8.3 commercial guide)",
    version="8.5.0.alpha001",
    # `SUPPORT_COMPUTE_UNIT_SHORT` at each ref (reference cann-build-systems.md §2.3).
    socs=("ascend910b", "ascend910_93", "ascend910_95", "ascend310p", "ascend910"),
    stamp_stderr=True,
    has_3rd_lib_flag=False,
    tiling_key_eq=True,
    # `--debug` is parsed at this ref, as the sandbox models it; master prints help and exits 1 on
    # it.
    extra_flags=("--debug",),
    extra_eq_flags=(),
    soc_warnings=False,
    run_example_soc_check=False,
    example_links_opapi_math=False,
    opbase_mode="installed-include",
    fa_head_dim_max=512,
    # 8.3 ran two examples, v9.0.0 three (`build.sh --run_example` loops over every
    # `test_aclnn_*.cpp`; reference real-host-findings.md §1).
    examples=(
        ("test_aclnn_flash_attention_score.cpp", _DENSE),
        ("test_aclnn_flash_attention_varlen_score.cpp", _VARLEN),
    ),
    example_lookup="opp",
    example_summary=False,
)
OT_V850 = OpsTransformerFlavor(
    label="tag v8.5.0",
    version="8.5.0-beta.1",
    socs=("ascend910b", "ascend910_93", "ascend910_95", "kirinx90"),
    stamp_stderr=False,
    has_3rd_lib_flag=True,
    tiling_key_eq=True,
    extra_flags=(),
    extra_eq_flags=(),
    soc_warnings=False,
    run_example_soc_check=False,
    example_links_opapi_math=False,
    opbase_mode="installed-pkg_inc",
    examples=((_DENSE, _DENSE), (_VARLEN, _VARLEN)),
)
OT_V900 = OpsTransformerFlavor(
    label="tag v9.0.0",
    version="9.0.0",
    socs=(
        "ascend910b",
        "ascend910_93",
        "ascend950",
        "ascend310p",
        "kirinx90",
        "kirin9030",
        "mc62cm12a",
    ),
    stamp_stderr=False,
    has_3rd_lib_flag=True,
    tiling_key_eq=False,
    extra_flags=("--noaicpu",),
    extra_eq_flags=("--bisheng_flags", "--simulator", "--kernel_template_input"),
    soc_warnings=True,
    run_example_soc_check=True,
    example_links_opapi_math=True,
    opbase_mode="source",
    deps=OT_DEPS_90,
    examples=(
        ("test_aclnn_flash_attention_score.cpp", _DENSE),
        (_DENSE, _DENSE),
        (_VARLEN, _VARLEN),
    ),
)
# opbase at branch 9.1.0 (= v9.1.0.pre in every build file; docs/upstream-9.1.md §3b, §3c).
OPBASE_V910 = OpbaseFlavor(
    label="branch 9.1.0 (v9.1.0.pre)",
    # OB@9.1.0:version.cmake still says set_cann_package(opbase VERSION "9.0.0")
    version="9.0.0",
    version_dir="cann",
    short_opts="j:hvusO:",
    long_opts="help,verbose,cov,make_clean,build-type:,noexec,pkg,asan,cann_3rd_lib_path:,"
    "extra-cmake-args:",
    has_pkg=True,
    default_home_tail="cann",
    deps=OPBASE_DEPS_91,
    run_deps=DEPS_85,
    finds_ccache=True,
    s_arm=False,
    extra_cmake_args=True,
    cann_cmake=True,
)
# ops-transformer at branch 9.1.0 (= v9.1.0.pre in build.sh, cmake/, CMakeLists.txt; §3a).
OT_V910 = OpsTransformerFlavor(
    label="branch 9.1.0 (v9.1.0.pre)",
    version="9.1.0",
    # OT@9.1.0:build.sh:46: mc62 replaces mc62cm12a
    socs=(
        "ascend910b",
        "ascend910_93",
        "ascend950",
        "ascend310p",
        "kirinx90",
        "kirin9030",
        "mc62",
    ),
    stamp_stderr=False,
    has_3rd_lib_flag=True,
    # `--tiling-key|--tiling_key <k>` (:1319) and `--tiling_key=*` (:1323) are back
    tiling_key_eq=True,
    # new at 9.1: --aicpu_kernel (:1156), --asan (:1297)
    extra_flags=("--noaicpu", "--aicpu_kernel", "--asan"),
    # new at 9.1: --aicpu=* (:1152), --rule_launch=* (:1189), --example_name=* (:1205),
    # --genop_aicpu=* (:1436)
    extra_eq_flags=(
        "--bisheng_flags",
        "--simulator",
        "--kernel_template_input",
        "--aicpu",
        "--rule_launch",
        "--example_name",
        "--genop_aicpu",
    ),
    soc_warnings=True,
    run_example_soc_check=True,
    example_links_opapi_math=True,
    opbase_mode="source",
    deps=OT_DEPS_91,
    # the same three examples as v9.0.0 (the folder is unchanged, §3a)
    examples=(
        ("test_aclnn_flash_attention_score.cpp", _DENSE),
        (_DENSE, _DENSE),
        (_VARLEN, _VARLEN),
    ),
    gawk=False,
    removed_flags=("--disable_asan",),
    cann_cmake=True,
)
