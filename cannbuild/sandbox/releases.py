"""What the sandbox emulates for each CANN release, and the stand-in repo history.

The stand-in `opbase` and `ops-transformer` repositories carry one commit per
state of the real repositories that matters (the late-2025 master that the
8.3 commercial guide builds, the v8.5.0 tag, the v9.0.0 and v9.0.1 tags), each with the
options, messages and opbase hand-over the real scripts have at that point
(shared/reference/cann-build-systems.md and the research notes behind it).
Commit dates are fixed so commit ids are reproducible; only the 2025-11 dates
matter (the 8.3 recipe pins "master as of 2025-11-16").
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple, Union

from msgspec import Struct, field

from ..errors import UsageError

# The makeself archive every ref's CMake downloads (reference real-host-findings.md §2).
MAKESELF_URL = (
    "https://gitcode.com/cann-src-third-party/makeself/releases/download/"
    "release-2.5.0-patch1.0/makeself-release-2.5.0-patch1.tar.gz"
)
UPSTREAM = "https://gitcode.com/"
COMMON_OPTS = "-v,--verbose"

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


class Commit(Struct, frozen=True, kw_only=True):
    """One commit of a stand-in repository."""

    repo: str
    flavor: Union[OpbaseFlavor, OpsTransformerFlavor]
    date: str
    message: str
    tags: Tuple[str, ...] = ()
    note: Optional[str] = None  # extra README line, to make a distinct commit


OPBASE_HISTORY: Tuple[Commit, ...] = (
    Commit(
        repo="opbase",
        flavor=OPBASE_2025_11,
        date="2025-11-11T10:59:02+08:00",
        message="add third party download path",
    ),
    Commit(
        repo="opbase",
        flavor=OPBASE_V850,
        date="2025-12-26T12:00:00+08:00",
        message="release 8.5.0",
        tags=("v8.5.0",),
    ),
    Commit(
        repo="opbase",
        flavor=OPBASE_V900,
        date="2026-02-28T12:00:00+08:00",
        message="log reporting changes",
    ),
    Commit(
        repo="opbase",
        flavor=OPBASE_V900,
        date="2026-03-20T12:00:00+08:00",
        message="release 9.0.0",
        tags=("v9.0.0",),
        note="Release 9.0.0.",
    ),
    # v9.0.1 (d838911a, 2026-05-14): 2 commits, 4 source and test files after v9.0.0, no build
    # file (docs/upstream-9.1.md §2): the same flavor, a commit of its own.
    Commit(
        repo="opbase",
        flavor=OPBASE_V900,
        date="2026-05-14T14:36:33+08:00",
        message="release 9.0.1",
        tags=("v9.0.1",),
        note="Release 9.0.1.",
    ),
)
OT_HISTORY: Tuple[Commit, ...] = (
    Commit(
        repo="ops-transformer",
        flavor=OT_2025_11,
        date="2025-11-15T19:15:16+08:00",
        message="nsa_select_attention_infer: rename",
    ),
    Commit(
        repo="ops-transformer",
        flavor=OT_V850,
        date="2025-12-27T12:00:00+08:00",
        message="release 8.5.0",
        tags=("v8.5.0",),
    ),
    Commit(
        repo="ops-transformer",
        flavor=OT_V900,
        date="2026-03-21T12:00:00+08:00",
        message="release 9.0.0",
        tags=("v9.0.0",),
    ),
    # v9.0.1 (8038339a, 2026-06-23): kernels, tiling and docs change, no build file, and
    # cmake/third_party/opbase.cmake:10 keeps OPBASE_TAG_ID 929902e5 (docs/upstream-9.1.md §2):
    # the v9.0.0 flavor and opbase pin.
    Commit(
        repo="ops-transformer",
        flavor=OT_V900,
        date="2026-06-23T19:53:29+08:00",
        message="release 9.0.1",
        tags=("v9.0.1",),
        note="Release 9.0.1.",
    ),
)
# ops-transformer v9.0.0 (and v9.0.1) pins this opbase commit (not the v9.0.0 tag), as the real one does.
OT_V900_OPBASE_PIN_INDEX = 2


class Release(Struct, frozen=True, kw_only=True):
    """A CANN release the sandbox can lay out."""

    version: str
    layout: str  # "ascend-toolkit" (<= 8.3) or "cann" (>= 8.5)
    innerversion: str
    compatible_version: str
    driver: str
    driver_inner: str
    driver_compatible: str
    opbase_in_toolkit: bool
    share_info: Tuple[str, ...] = field(default=())


_SHARE_INFO_85 = (
    "runtime",
    "metadef",
    "bisheng-compiler",
    "asc-devkit",
    "ge-executor",
    "ge-compiler",
    "hcomm",
    "asc-tools",
    "tbe-tik",
    "cann-ops-legacy",
    "cann-ops-math",
)

RELEASES: Dict[str, Release] = {
    # The values of tests/fixtures/host: ascend_toolkit_install.info.a2-cann8.3 and
    # driver-version.info.25.3.rc1 (C23 on both sides).
    "8.3.RC2": Release(
        version="8.3.RC2",
        layout="ascend-toolkit",
        innerversion="V100R001C23SPC002B210",
        compatible_version="[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]",
        driver="25.3.rc1",
        driver_inner="V100R001C23SPC002B212",
        driver_compatible="[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C22],[V100R001C23]",
        opbase_in_toolkit=False,
    ),
    "8.5.0": Release(
        version="8.5.0",
        layout="cann",
        # innerversion as the FaultDiag doc records 8.5.0 (`V100R001C25SPC001B212`); driver 25.5.1
        # is one of the HDKs its release notes list.
        innerversion="V100R001C25SPC001B212",
        compatible_version="[V100R001C21],[V100R001C23],[V100R001C25]",
        driver="25.5.1",
        driver_inner="V100R001C25SPC001B220",
        driver_compatible="[V100R001C21],[V100R001C22],[V100R001C23],[V100R001C25]",
        opbase_in_toolkit=True,
        share_info=_SHARE_INFO_85,
    ),
    "9.0.0": Release(
        version="9.0.0",
        layout="cann",
        innerversion="V100R001C26SPC001B100",  # sandbox value: not published
        compatible_version="[V100R001C23],[V100R001C25],[V100R001C10]",
        # 26.0.RC1 is listed for 9.0.0; its trains restarted at C10 (reference cann-environment.md
        # §4.2).
        driver="26.0.rc1",
        driver_inner="V100R001C10B100",
        driver_compatible="[V100R001C21],[V100R001C22],[V100R001C23],[V100R001C25],[V100R001C10]",
        opbase_in_toolkit=True,
        share_info=_SHARE_INFO_85,
    ),
    "9.0.1": Release(
        version="9.0.1",
        layout="cann",
        innerversion="V100R001C26SPC002B100",  # sandbox value: not published
        compatible_version="[V100R001C23],[V100R001C25],[V100R001C10]",
        # 26.0.RC3 heads the HDK list of the 9.0.1 release note
        # (hicann/release-management@cc6f9c23:9.0.1/release-notes.md §1); inner version and
        # compatible trains as the sandbox's 26.0.rc1 (not published).
        driver="26.0.rc3",
        driver_inner="V100R001C10SPC002B100",
        driver_compatible="[V100R001C21],[V100R001C22],[V100R001C23],[V100R001C25],[V100R001C10]",
        opbase_in_toolkit=True,
        share_info=_SHARE_INFO_85,
    ),
}


def release(version: str) -> Release:
    if version not in RELEASES:
        raise UsageError(
            f"--cann {version!r} is not a CANN release the sandbox can emulate.",
            f"Use one of {', '.join(RELEASES)}.",
        )
    return RELEASES[version]
