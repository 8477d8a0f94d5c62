"""diagnose --profile off the NPU host: profiles are usually copied off the cluster, to a
machine with no CANN toolkit.  The profile is analysed as on the host; the operator's
limits come from a checkout in the workspace when there is one (else the built-in copy
of its docs, which says so); the registration rows, which read the installed package and
this shell's environment, are marked as not checkable here."""

from __future__ import annotations

from pathlib import Path
from typing import List, Mapping, Optional

from ..host.check import SKIP, Check
from ..host.reading import detection_env
from ..host.sysroot import Sysroot
from ..host.toolkit import find_toolkit
from ..options import Options
from ..profile.shape import AttentionShape
from ..profile.summary import ProfileSummary
from .facts import operator_facts
from .rules import attention_checks, profile_checks

# What the rows say the SoC is when no hardware and no --soc tell.
ANY_SOC = "the NPU host's SoC"


def no_toolkit(options: Options, env: Mapping[str, str]) -> Optional[str]:
    """Why this machine has no CANN toolkit (the places looked in), or None when it has
    one, or when the user named one that is wrong (--cann-path: that stays exit 3), or
    on the sandbox (which has its own)."""
    if options.sandbox:
        return None
    search = find_toolkit(
        Sysroot.at(options.sysroot), detection_env(options, env), options.cann_path
    )
    if search.toolkit is not None or search.explicit_failure:
        return None
    places = sorted({path for _rule, path, _outcome in search.tried})
    return f"no CANN toolkit on this machine (looked in {', '.join(places) or 'nothing'})"


def off_host_checks(
    why: str,
    shape: AttentionShape,
    profile: Path,
    summary: ProfileSummary,
    checkout: Path,
    soc: Optional[str],
) -> List[Check]:
    """The rows diagnose gives here: registration skipped (why), dtype and shape against
    the operator's docs, and each unfused chain's cause."""
    target = soc or ANY_SOC
    facts = operator_facts(None, target, checkout)
    checks = [
        Check(
            id="registration",
            status=SKIP,
            detail=f"not checkable here: {why}; the package, ASCEND_CUSTOM_OPP_PATH, the SoC "
            "config, the exports and the library torch_npu loads are read on the NPU host",
            hint="Run cannbuild diagnose on the NPU host (where the package is installed and the "
            "framework runs) for these rows.",
        ),
    ]
    checks += attention_checks(shape, summary, facts, target)
    checks += profile_checks(profile, facts, target, checks, summary, off_host=True)
    return checks
