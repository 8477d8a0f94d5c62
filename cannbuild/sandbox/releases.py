"""What the sandbox emulates for each CANN release, and the stand-in repo history.

The stand-in `opbase` and `ops-transformer` repositories carry one commit per
state of the real repositories that matters (the late-2025 master that the
8.3 commercial guide builds, the v8.5.0 tag, the v9.0.0 and v9.0.1 tags, v9.1.0.pre and the
9.1.0 branch the 9.1.0 manifest names), each with the options, messages and
opbase hand-over the real scripts have at that point (flavors.py,
shared/reference/cann-build-systems.md, docs/upstream-9.1.md).  Commit dates are
fixed so commit ids are reproducible; only the 2025-11 dates matter (the 8.3
recipe pins "master as of 2025-11-16").
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple, Union

from msgspec import Struct, field

from ..errors import UsageError
from .flavors import (
    OPBASE_2025_11,
    OPBASE_V850,
    OPBASE_V900,
    OPBASE_V910,
    OT_2025_11,
    OT_V850,
    OT_V900,
    OT_V910,
    OpbaseFlavor,
    OpsTransformerFlavor,
)

# The makeself archive every ref's CMake downloads (reference real-host-findings.md §2).
MAKESELF_URL = (
    "https://gitcode.com/cann-src-third-party/makeself/releases/download/"
    "release-2.5.0-patch1.0/makeself-release-2.5.0-patch1.tar.gz"
)
UPSTREAM = "https://gitcode.com/"
COMMON_OPTS = "-v,--verbose"


class Commit(Struct, frozen=True, kw_only=True):
    """One commit of a stand-in repository."""

    repo: str
    flavor: Union[OpbaseFlavor, OpsTransformerFlavor]
    date: str
    message: str
    tags: Tuple[str, ...] = ()
    # branches made at this commit besides master (the 9.1.0 manifest names branch `9.1.0`)
    branches: Tuple[str, ...] = ()
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
    # ops-nn v9.0.0 (and v9.0.1) pins this one (ec88904b upstream, 2026-02-11), 17 days before
    # the commit ops-transformer, ops-math and ops-cv pin (siblings-facts §2).
    Commit(
        repo="opbase",
        flavor=OPBASE_V900,
        date="2026-02-11T16:56:41+08:00",
        message="fix: broadcast compile warning",
        note="The commit ops-nn v9.0.0 pins.",
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
    # At 9.1 ops-math and ops-cv pin ee5334d1 (2026-05-21) and ops-nn b8bd9e66 (2026-05-29), both
    # before the commit ops-transformer pins (siblings-facts §2).
    Commit(
        repo="opbase",
        flavor=OPBASE_V910,
        date="2026-05-21T17:58:07+08:00",
        message="rename the tiling files",
        note="The commit ops-math and ops-cv 9.1 pin.",
    ),
    Commit(
        repo="opbase",
        flavor=OPBASE_V910,
        date="2026-05-29T10:21:40+08:00",
        message="error codes EZ0035 and EZ0036",
        note="The commit ops-nn 9.1 pins.",
    ),
    # The commit ops-transformer 9.1 pins (cd48c600 upstream, 2026-06-10 "fix EZ0037"), then
    # v9.1.0.pre (5884feaa) and the head of branch 9.1.0 (0e247b8c), whose build files are the
    # same (docs/upstream-9.1.md §0, §1, §3f).
    Commit(
        repo="opbase",
        flavor=OPBASE_V910,
        date="2026-06-10T11:15:10+08:00",
        message="fix EZ0037",
    ),
    Commit(
        repo="opbase",
        flavor=OPBASE_V910,
        date="2026-07-09T21:42:52+08:00",
        message="kernel path initialised before static kernels are enabled",
        tags=("v9.1.0.pre",),
        note="Tag v9.1.0.pre.",
    ),
    Commit(
        repo="opbase",
        flavor=OPBASE_V910,
        date="2026-07-23T17:30:33+08:00",
        message="dfx check of mc2 launch arguments",
        branches=("9.1.0",),
        note="Branch 9.1.0, the revision of the 9.1.0 manifest.",
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
    # v9.1.0.pre (121f37de) and the head of branch 9.1.0 (3311e26e): the same build files
    # (docs/upstream-9.1.md §1).
    Commit(
        repo="ops-transformer",
        flavor=OT_V910,
        date="2026-07-09T22:30:15+08:00",
        message="mega_moe A2/A3 bugfix",
        tags=("v9.1.0.pre",),
    ),
    Commit(
        repo="ops-transformer",
        flavor=OT_V910,
        date="2026-07-23T21:25:06+08:00",
        message="mega_moe A3 int4 receive count check",
        branches=("9.1.0",),
        note="Branch 9.1.0, the revision of the 9.1.0 manifest.",
    ),
)


def _opbase_index(message: str) -> int:
    return next(i for i, c in enumerate(OPBASE_HISTORY) if c.message == message)


# ops-transformer v9.0.0 (and v9.0.1) pins this opbase commit (not the v9.0.0 tag), as the
# real one does (929902e5 upstream)...
OT_V900_OPBASE_PIN_INDEX = _opbase_index("log reporting changes")
# ...and 9.1 this one (cd48c600 upstream: 37 commits behind opbase's 9.1.0 branch, §3f).
OT_V910_OPBASE_PIN_INDEX = _opbase_index("fix EZ0037")


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

    @property
    def host_side_from_repos(self) -> bool:
        """The toolkit's host side comes from the open-source repositories the recipe
        names (`toolkit = true`): from 8.5, the first release hicann/manifest lists them
        for; 8.3's is the sandbox's emulation."""
        return self.layout == "cann"


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
    # The 9.1.0 release notes pair it with HDK 26.1.0 (docs/upstream-9.1.md §1); the inner
    # versions are sandbox values (not published), one train on from 9.0.0's.
    "9.1.0": Release(
        version="9.1.0",
        layout="cann",
        innerversion="V100R001C27SPC001B100",
        # the toolkit's compatible_version names the driver's train (as 9.0.0's names C10, 26.0.RC1's)
        # and the driver's the toolkit's: host/compat.py reads them where no published row pairs
        # the two
        compatible_version="[V100R001C23],[V100R001C25],[V100R001C26],[V100R001C10],[V100R001C11]",
        driver="26.1.0",
        driver_inner="V100R001C11B100",
        driver_compatible=(
            "[V100R001C21],[V100R001C22],[V100R001C23],[V100R001C25],[V100R001C10],[V100R001C11],"
            "[V100R001C27]"
        ),
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
