"""Registration: the custom package is installed for this SoC, exports the aclnn entry
points, and the framework would load it.  torch_npu finds aclnnFlashAttentionScore by
dlopen of `op_api/lib/libcust_opapi.so` of each ASCEND_CUSTOM_OPP_PATH vendor in order,
then of the toolkit's default vendors (`opp/vendors/config.ini` load_priority), then the
toolkit's own libopapi.so (shared reference real-host-findings §4): the first library
exporting the entry point wins, so a vendor earlier in the path shadows ours."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from elftools.common.exceptions import ELFError

from .. import vendors
from ..bounded import HOST_FILE, Absent, read_text
from ..errors import UsageError
from ..host.check import FAIL, PASS, WARN, Check
from ..validate.elfcheck import read_elf
from .facts import ENTRY_POINTS, OP_TYPE, ops_info, ops_info_path
from .inputs import DiagnoseInputs


def registration_checks(inp: DiagnoseInputs) -> List[Check]:
    vendor = inp.vendor_dir
    # The custom installer run with `--install-path` (as templates/steps/ops-transformer-install.j2
    # does) writes this script, which exports ASCEND_CUSTOM_OPP_PATH (reference
    # cann-build-systems.md §2.5).
    set_env = vendor / "bin" / "set_env.bash"
    if not inp.library.is_file():
        return [
            Check(
                id="registration.package",
                status=FAIL,
                detail=f"no custom package at {vendor} (no op_api/lib/libcust_opapi.so)",
                hint="Build and install it: cannbuild install (with --sandbox on the emulated host).",
            )
        ]
    checks = [Check(id="registration.package", status=PASS, detail=f"installed at {vendor}")]
    entries = [e for e in inp.env.get("ASCEND_CUSTOM_OPP_PATH", "").split(":") if e.strip()]
    ours = _real(vendor)
    # Compared resolved: the path may reach the vendor through a link or with a trailing `/`.
    env = partial(Check, id="registration.env")
    if ours in [_real(Path(e)) for e in entries]:
        where = [_real(Path(e)) for e in entries].index(ours) + 1
        checks.append(
            env(
                status=PASS,
                detail=f"ASCEND_CUSTOM_OPP_PATH holds the vendor (entry {where} of {len(entries)})",
            )
        )
    else:
        now = inp.env.get("ASCEND_CUSTOM_OPP_PATH")
        state = f"is {now!r}" if now else "is not set"
        checks.append(
            env(
                status=FAIL,
                detail=f"ASCEND_CUSTOM_OPP_PATH {state} in this shell, without {vendor}: a framework "
                "started here does not see the package",
                hint=f"source {set_env}"
                if set_env.is_file()
                else f"export ASCEND_CUSTOM_OPP_PATH={vendor}",
            )
        )
    checks.append(_soc_check(vendor, inp.soc))
    exported = _exports(inp.library)
    exports = partial(Check, id="registration.exports")
    missing = [s for s in ENTRY_POINTS if s not in (exported or set())]
    if exported is None or missing:
        what = (
            "is not a readable ELF library"
            if exported is None
            else f"does not export {', '.join(missing)}"
        )
        checks.append(
            exports(
                status=FAIL,
                detail=f"{inp.library.name} {what}",
                hint="Rebuild and reinstall the package (cannbuild install --force ops-transformer-build); "
                "cannbuild validate checks the library too.",
            )
        )
    else:
        checks.append(
            exports(status=PASS, detail=f"{inp.library.name} exports {', '.join(ENTRY_POINTS)}")
        )
    checks.append(_resolution_check(inp, entries))
    if len(inp.vendors) > 1:
        checks += vendor_checks(inp, entries)
    return checks


def vendor_checks(inp: DiagnoseInputs, entries: Sequence[str]) -> List[Check]:
    """With several vendors built: each one's registration in this shell (installed, on
    ASCEND_CUSTOM_OPP_PATH at which entry), then which of them serves each operator in
    that path's order, with a warning where two ship one (vendors.py)."""
    real = [_real(Path(e)) for e in entries]
    checks: List[Check] = []
    for repo, vendor in inp.vendors:
        row = partial(Check, id=f"registration.vendor.{repo}")
        if not (vendor / "bin" / "set_env.bash").is_file():
            checks.append(
                row(
                    status=WARN,
                    detail=f"{repo}: no package installed at {vendor}",
                    hint="cannbuild install (with the same --repos).",
                )
            )
        elif _real(vendor) in real:
            at = real.index(_real(vendor)) + 1
            checks.append(
                row(
                    status=PASS,
                    detail=f"{repo}: {vendor.name} is entry {at} of {len(entries)} of "
                    "ASCEND_CUSTOM_OPP_PATH",
                )
            )
        else:
            source = vendors.source_file(vendor.parent.parent)
            checks.append(
                row(
                    status=WARN,
                    detail=f"{repo}: {vendor.name} is not on ASCEND_CUSTOM_OPP_PATH in this shell: "
                    "a framework started here does not see its operators",
                    hint=f"source {source}"
                    if source.is_file()
                    else f"source {vendor}/bin/set_env.bash",
                )
            )
    built = [vendors.read_vendor(v, _exports) for _, v in inp.vendors if v.is_dir()]
    ordered = vendors.in_path_order(built, ":".join(entries))
    checks += vendors.serving_checks(ordered, "this shell's ASCEND_CUSTOM_OPP_PATH order")
    return checks


def _soc_check(vendor: Path, soc: str) -> Check:
    # An A2 build has kernels only under `kernel/ascend910b/`; on an A3 the operator finds no
    # kernel (reference cann-environment.md §6: "A2 vs A3 build").
    row = partial(Check, id="registration.soc")
    config = ops_info_path(vendor, soc)
    kernel = vendor / "op_impl" / "ai_core" / "tbe" / "kernel" / soc / "flash_attention_score"
    info = ops_info(config)
    problems = []
    if info is None:
        problems.append(f"no op_impl config for {soc} ({config.name})")
    elif OP_TYPE not in info:
        problems.append(f"{config.name} does not register {OP_TYPE}")
    if not kernel.is_dir():
        problems.append(f"no kernel folder for {soc}")
    if problems:
        built = sorted(
            p.name
            for p in (vendor / "op_impl" / "ai_core" / "tbe" / "config").glob("*")
            if p.is_dir()
        )
        return row(
            status=FAIL,
            detail=f"the package has {'; '.join(problems)} (it was built for {', '.join(built) or 'no SoC'})",
            hint=f"Rebuild for this SoC: cannbuild install --soc {soc}",
        )
    return row(
        status=PASS,
        detail=f"{OP_TYPE} is configured and has kernels for {soc}",
    )


def _resolution_check(inp: DiagnoseInputs, entries: Sequence[str]) -> Check:
    """Which library the lookup torch_npu does would take aclnnFlashAttentionScore from."""
    row = partial(Check, id="registration.resolution")
    winner: Optional[Tuple[Path, str, str]] = None  # library, how it was found, its vendor
    # The custom paths in order: the first library exporting the entry point wins.
    for entry in entries:
        lib = Path(entry) / "op_api" / "lib" / "libcust_opapi.so"
        if ENTRY_POINTS[0] in (_exports(lib) or set()):
            winner = (lib, f"ASCEND_CUSTOM_OPP_PATH entry {entry}", entry)
            break
    # Then the toolkit's own vendors, in `vendors/config.ini` load_priority order, which the custom
    # installer appends each vendor to.
    if winner is None and inp.opp_path:
        for name in _default_vendors(Path(inp.opp_path)):
            lib = Path(inp.opp_path) / "vendors" / name / "op_api" / "lib" / "libcust_opapi.so"
            if ENTRY_POINTS[0] in (_exports(lib) or set()):
                winner = (lib, f"default vendor {name} of the toolkit", "")
                break
    who = f"torch_npu {inp.torch_npu}" if inp.torch_npu else "torch_npu (not installed here)"
    fix = f"source {inp.vendor_dir / 'bin' / 'set_env.bash'} (it puts the vendor first)"
    if winner is None:
        return row(
            status=FAIL,
            detail=f"{who} would find no custom library exporting {ENTRY_POINTS[0]} and fall back to "
            "the toolkit's built-in operator (libopapi), not this package",
            hint=fix,
        )
    lib, how, entry = winner
    if _real(lib) == _real(inp.library):
        return row(
            status=PASS,
            detail=f"{who} would load this package's {lib.name} ({how})",
        )
    also = f", or take {entry} out of ASCEND_CUSTOM_OPP_PATH" if entry else ""
    return row(
        status=FAIL,
        detail=f"{who} would load {lib} ({how}), which shadows this package's {inp.library}",
        hint=fix + also,
    )


def _default_vendors(opp: Path) -> List[str]:
    config = opp / "vendors" / "config.ini"
    try:
        text = read_text(config, HOST_FILE.named("vendors config"), errors="replace")
    except Absent:
        return []
    for line in text.splitlines():
        # One line `load_priority=<vendor>,<vendor>,...`, first tried first.
        key, _, value = line.partition("=")
        if key.strip() == "load_priority":
            return [v.strip() for v in value.split(",") if v.strip()]
    return []


def _real(path: Path) -> str:
    return os.path.realpath(str(path).rstrip("/"))


def _exports(lib: Path) -> Optional[set]:
    if not lib.is_file():
        return None
    try:
        return set(read_elf(lib).exported)
    except (ELFError, OSError, UsageError):
        return None
