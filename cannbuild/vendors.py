"""Several vendor packages side by side: what each ships, which one CANN takes for each
operator, and the one file a user sources to set that order.

CANN looks an operator up in the ASCEND_CUSTOM_OPP_PATH vendors in order and takes the
first that has it: the op types of its op_impl configs (`aic-<soc>-ops-info.json`), and
for the aclnn entry points the first `op_api/lib/libcust_opapi.so` exporting one
(shared reference real-host-findings §4; diagnose/registration.py).  A custom package's
installer writes `bin/set_env.bash`, which *prepends* its folder to that path
(ops-math@9.1.0 scripts/custom/install.sh:295-313, the ops-transformer template's), so
sourcing the vendors last-first leaves them in the order asked for: `<ws>/opp/set_env.bash`
does that, for the repos in the --repos order (vllm-ascend issues 13512, 11417, 9258,
7095: the wrong vendor's kernel, or none, when this order is left to chance).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Callable, Collection, Dict, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct

from . import safefs
from .bounded import INSTALLED_FILE, read_state
from .host.check import PASS, SKIP, WARN, Check
from .workspace import write_atomic

# what a library exports (None: not a readable ELF library); diagnose passes its ELF reader
Exports = Callable[[Path], Optional[Collection[str]]]

SOURCE_FILE = "set_env.bash"  # <ws>/opp/set_env.bash: every selected vendor, in order
VENDOR_SET_ENV = Path("bin") / "set_env.bash"  # what a custom package's installer writes
LIBRARY = Path("op_api") / "lib" / "libcust_opapi.so"
CONFIGS = Path("op_impl") / "ai_core" / "tbe" / "config"
# the two-phase aclnn API: `aclnnX` with `aclnnXGetWorkspaceSize`; the entry point is `aclnnX`
_WORKSPACE = "GetWorkspaceSize"
_HEADER = "# Written by cannbuild: source this file to use the vendor packages below."


class Vendor(Struct, frozen=True, kw_only=True):
    """One installed vendor folder and what it ships."""

    path: Path
    op_types: Tuple[str, ...]  # the op types its op_impl configs register (every SoC)
    ops: Tuple[str, ...]  # the same by their --ops name (the configs' opFile), sorted
    apis: Tuple[str, ...]  # the aclnn entry points its libcust_opapi.so exports

    @property
    def name(self) -> str:
        return self.path.name


def read_vendor(path: Path, exports: Optional[Exports] = None) -> Vendor:
    """What `path` ships, read from its files (a missing or unreadable one ships nothing);
    its library's aclnn entry points only given `exports`, the ELF reader."""
    types: Dict[str, str] = {}
    for config in sorted(path.glob(f"{CONFIGS}/*/aic-*-ops-info.json")):
        data = read_state(config, INSTALLED_FILE.named("op_impl config"))
        for op_type, entry in data.items() if isinstance(data, dict) else ():
            op_file = entry.get("opFile") if isinstance(entry, dict) else None
            value = op_file.get("value") if isinstance(op_file, dict) else None
            types.setdefault(str(op_type), str(value) if value else str(op_type))
    return Vendor(
        path=path,
        op_types=tuple(sorted(types)),
        ops=tuple(sorted(set(types.values()))),
        apis=_entry_points(path / LIBRARY, exports) if exports else (),
    )


def _entry_points(library: Path, exports: Exports) -> Tuple[str, ...]:
    exported = set(exports(library) or ()) if library.is_file() else set()
    return tuple(
        sorted(
            name
            for name in exported
            if name.startswith("aclnn")
            and not name.endswith(_WORKSPACE)
            and f"{name}{_WORKSPACE}" in exported
        )
    )


def installed(opp: Path, exports: Optional[Exports] = None) -> List[Vendor]:
    """The vendor folders under `<opp>/vendors` (by name), each read."""
    folder = opp / "vendors"
    if not folder.is_dir() or folder.is_symlink():
        return []
    return [
        read_vendor(p, exports)
        for p in sorted(folder.iterdir())
        if p.is_dir() and not p.is_symlink()
    ]


class Served(Struct, frozen=True, kw_only=True):
    """Who serves one operator (an op type or an aclnn entry point): the first vendor in
    order that ships it; `shadowed` are the later ones that ship it too."""

    name: str
    kind: str  # "op" (an op type) or "aclnn" (an entry point)
    by: Path
    shadowed: Tuple[Path, ...] = ()


def serving(vendors: Sequence[Vendor]) -> List[Served]:
    """For each op type and aclnn entry point the vendors ship, the first of `vendors`
    (in ASCEND_CUSTOM_OPP_PATH order) that ships it, and who ships it after."""
    found: Dict[Tuple[str, str], List[Path]] = {}
    for vendor in vendors:
        for kind, names in (("op", vendor.op_types), ("aclnn", vendor.apis)):
            for name in names:
                found.setdefault((kind, name), []).append(vendor.path)
    return [
        Served(name=name, kind=kind, by=paths[0], shadowed=tuple(paths[1:]))
        for (kind, name), paths in sorted(found.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    ]


def in_path_order(vendors: Sequence[Vendor], custom_opp_path: str) -> List[Vendor]:
    """`vendors` in the order an ASCEND_CUSTOM_OPP_PATH value lists them (entries compared
    resolved); the ones it does not list are left out: CANN would not look there."""
    by_real = {str(v.path.resolve()): v for v in vendors}
    ordered: List[Vendor] = []
    for entry in (e for e in custom_opp_path.split(":") if e.strip()):
        vendor = by_real.get(str(Path(entry.rstrip("/")).resolve()))
        if vendor is not None and vendor not in ordered:
            ordered.append(vendor)
    return ordered


def source_file(opp: Path) -> Path:
    return opp / SOURCE_FILE


def write_source_file(root: Path, opp: Path, vendor_dirs: Sequence[Path], asked: str) -> Path:
    """`<opp>/set_env.bash`: each vendor's own set_env.bash sourced last-first, so that
    ASCEND_CUSTOM_OPP_PATH lists them in the order of `vendor_dirs` (first wins).  `asked`
    says how that order was asked for (the --repos value), in the file's comment."""
    lines = [
        _HEADER,
        f"# ASCEND_CUSTOM_OPP_PATH gets them in the order asked for ({asked}); CANN takes",
        "# each operator from the first that ships it.  Each vendor's own set_env.bash",
        "# prepends its folder, so they are sourced last-first.",
    ]
    lines += [f"source {shlex.quote(str(d / VENDOR_SET_ENV))}" for d in reversed(vendor_dirs)]
    path = source_file(opp)
    safefs.check_below(root, path, "the workspace's vendor source file")
    write_atomic(path, ("\n".join(lines) + "\n").encode())
    return path


def source_order(opp: Path) -> Optional[List[Path]]:
    """The vendor folders `<opp>/set_env.bash` puts on ASCEND_CUSTOM_OPP_PATH, first
    first (None: there is no such file of cannbuild's)."""
    path = source_file(opp)
    data = read_state(path, INSTALLED_FILE.named("vendor source file"), bytes)
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    if not text.startswith(_HEADER):
        return None
    order: List[Path] = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True) if line.strip() else []
        if len(words) == 2 and words[0] == "source":
            order.append(Path(words[1]).parent.parent)
    return list(reversed(order))


def serving_checks(vendors: Sequence[Vendor], where: str) -> List[Check]:
    """Doctor and diagnose rows: which vendor would serve each operator (in the order
    `where` names), and a warning for each operator two of them ship."""
    if not vendors:
        return [
            Check(
                id="vendors.serving",
                status=SKIP,
                detail=f"no vendor package in {where}",
                hint="Install one: cannbuild install (--repos to pick the repositories).",
            )
        ]
    served = serving(vendors)
    names = ", ".join(v.name for v in vendors)
    ops = "; ".join(f"{s.name}: {s.by.name}" for s in served if s.kind == "op")
    checks = [
        Check(
            id="vendors.serving",
            status=PASS,
            detail=f"{len(vendors)} vendors in {where} ({names}), first wins; "
            f"{ops or 'no op_impl config registers an op type'}",
        )
    ]
    for s in served:
        if not s.shadowed:
            continue
        others = ", ".join(p.name for p in s.shadowed)
        checks.append(
            Check(
                id="vendors.shadowed",
                status=WARN,
                detail=f"{'op type' if s.kind == 'op' else 'aclnn entry point'} {s.name} is "
                f"shipped by {s.by.name} and {others}: {s.by.name} serves it ({where}), "
                f"{others} is never used for it",
                hint=f"If {others} should serve {s.name}, put it first (--repos order, then "
                "source the workspace's opp/set_env.bash), or leave the operator out of "
                f"{s.by.name}'s --ops.",
            )
        )
    return checks


def workspace_checks(opp: Path, env: Mapping[str, str]) -> List[Check]:
    """doctor's rows for a workspace's vendors (none when it has none): served in this
    shell's ASCEND_CUSTOM_OPP_PATH order where that lists them, else in the order the
    workspace's set_env.bash sets."""
    found = installed(opp)
    if not found:
        return []
    shell = in_path_order(found, env.get("ASCEND_CUSTOM_OPP_PATH", ""))
    if shell:
        return serving_checks(shell, "this shell's ASCEND_CUSTOM_OPP_PATH order")
    order = source_order(opp)
    if order is not None:
        by_path = {v.path: v for v in found}
        ordered = [by_path[p] for p in order if p in by_path]
        return serving_checks(ordered, f"the order {source_file(opp)} sets")
    return serving_checks(found, f"{opp}/vendors, by name (no order is set)")
