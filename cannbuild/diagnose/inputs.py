"""What diagnose is given: the package, the SoC, the checkout, the user's environment and
attention shape, and optionally a profile."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional, Tuple

from msgspec import Struct

from ..profile.shape import AttentionShape

if TYPE_CHECKING:
    from ..profile.summary import ProfileSummary


class DiagnoseInputs(Struct, frozen=True, kw_only=True):
    vendor_dir: Path
    soc: str  # the build.sh --soc value: ascend910b
    checkout: Path  # <workspace>/src/<the repo that ships the operator>
    env: Mapping[str, str]  # the user's shell: what torch_npu started from it would see
    opp_path: Optional[str]  # the toolkit's ASCEND_OPP_PATH (its default vendors)
    shape: AttentionShape
    profile: Optional[Path] = None
    # the profile read before anything else (a bad one is exit 2 before the host is probed)
    profile_summary: Optional[ProfileSummary] = None
    torch_npu: Optional[str] = None  # installed version, from package metadata
    # every vendor folder the run built (repo, folder), in the --repos order: with several,
    # registration is reported per vendor, and which one serves each operator
    vendors: Tuple[Tuple[str, Path], ...] = ()

    @property
    def library(self) -> Path:
        return self.vendor_dir / "op_api" / "lib" / "libcust_opapi.so"
