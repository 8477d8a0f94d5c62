"""Why FlashAttention would not be used: one row per cause, each with its fix.

Three causes, as a CANN engineer checks them by hand:
- registration: the custom package is installed for this SoC, exports the aclnn
  entry points, and the framework would load it.  torch_npu finds
  aclnnFlashAttentionScore by dlopen of `op_api/lib/libcust_opapi.so` of each
  ASCEND_CUSTOM_OPP_PATH vendor in order, then of the toolkit's default vendors
  (`opp/vendors/config.ini` load_priority), then the toolkit's own libopapi.so
  (shared reference real-host-findings §4): the first library exporting the entry
  point wins, so a vendor earlier in the path shadows ours.
- dtype: what the installed operator supports on this SoC, read from the package's
  own op_impl config (`aic-<soc>-ops-info.json`, which the build generates from the
  op definition), else from the operator's docs in the checkout.
- shape: the limits the operator's docs in the checkout state (约束说明: the B, N, S,
  D ranges, Nq/Nkv whole, the layouts), with the file and line each comes from; and
  the head-dim alignment the tiling pads to (16-element fractals of the Cube unit:
  accepted, but padded, so a warning).
Given a profile, each group of unfused MatMul->Softmax->MatMul chains gets the first
cause that applies to its shapes and dtype.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .host.check import FAIL, PASS, SKIP, WARN, Check
from .profile.shape import AttentionShape

ENTRY_POINTS = ("aclnnFlashAttentionScoreGetWorkspaceSize", "aclnnFlashAttentionScore")
OP_TYPE = "FlashAttentionScore"
OP_DIR = Path("attention") / "flash_attention_score"
DOCS = ("aclnnFlashAttentionScoreV2.md", "aclnnFlashAttentionScore.md")
LAYOUTS = ("BSH", "SBH", "BSND", "BNSD")
ALIGN = 16
# ops-info dtype words -> cannbuild's
INFO_DTYPES = {
    "float16": "fp16",
    "bfloat16": "bf16",
    "float": "fp32",
    "float32": "fp32",
    "int8": "int8",
    "hifloat8": "hifloat8",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
}
DOC_DTYPES = {"FLOAT16": "fp16", "BFLOAT16": "bf16", "FLOAT32": "fp32", "FLOAT": "fp32"}
# what the operator's docs say at v8.5.0/v9.0.0, when no checkout has them
BUILTIN_SOURCE = "ops-transformer v8.5.0 docs/aclnnFlashAttentionScoreV2.md (no checkout here)"
BUILTIN_RANGES = {"B": 2 * 1024 * 1024, "N": 256, "S": 1024 * 1024, "D": 768}
BUILTIN_DTYPES = ("fp16", "bf16", "fp32")
_RANGE = re.compile(
    r"^\s*[-*]\s*([BNSD])\s*[：:]\s*(?:取值范围(?:为)?|(?:value )?range(?: is)?:?)\s*"
    r"(\d+)\s*\\?[~～\-]\s*(\d+)\s*([KkMm]?)"
)
_DOC_DTYPES = re.compile(r"query.*?数据类型支持([A-Z0-9_、,，\s]+)")
_FRACTAL = re.compile(r"FRACTAL_NUM\s*=\s*(\d+)")


@dataclass(frozen=True)
class Limit:
    axis: str  # B | N | S | D
    low: int
    high: int
    source: str  # file:line (the doc's own words), or the built-in reference


@dataclass(frozen=True)
class OperatorFacts:
    limits: Dict[str, Limit]
    dtypes: Tuple[str, ...]
    dtype_source: str
    align: int
    align_source: str


@dataclass(frozen=True)
class DiagnoseInputs:
    vendor_dir: Path
    soc: str  # the build.sh --soc value: ascend910b
    checkout: Path  # <workspace>/src/ops-transformer
    env: Mapping[str, str]  # the user's shell: what torch_npu started from it would see
    opp_path: Optional[str]  # the toolkit's ASCEND_OPP_PATH (its default vendors)
    shape: AttentionShape
    profile: Optional[Path] = None
    torch_npu: Optional[str] = None  # installed version, from package metadata

    @property
    def library(self) -> Path:
        return self.vendor_dir / "op_api" / "lib" / "libcust_opapi.so"


def diagnose(inp: DiagnoseInputs) -> List[Check]:
    facts = operator_facts(inp.vendor_dir, inp.soc, inp.checkout)
    checks = registration_checks(inp)
    checks.append(dtype_check(inp.shape.dtype, facts, inp.soc))
    checks += shape_checks(inp.shape, facts)
    if inp.profile is not None:
        checks += profile_checks(inp.profile, facts, inp.soc, checks)
    return checks


# ---- registration ----


def registration_checks(inp: DiagnoseInputs) -> List[Check]:
    vendor = inp.vendor_dir
    set_env = vendor / "bin" / "set_env.bash"
    if not inp.library.is_file():
        return [
            Check(
                "registration.package",
                FAIL,
                f"no custom package at {vendor} (no op_api/lib/libcust_opapi.so)",
                "Build and install it: cannbuild install (with --sandbox on the emulated host).",
            )
        ]
    checks = [Check("registration.package", PASS, f"installed at {vendor}")]
    entries = _path_entries(inp.env.get("ASCEND_CUSTOM_OPP_PATH", ""))
    ours = _real(vendor)
    if ours in [_real(Path(e)) for e in entries]:
        where = [_real(Path(e)) for e in entries].index(ours) + 1
        checks.append(
            Check(
                "registration.env",
                PASS,
                f"ASCEND_CUSTOM_OPP_PATH holds the vendor (entry {where} of {len(entries)})",
            )
        )
    else:
        now = inp.env.get("ASCEND_CUSTOM_OPP_PATH")
        state = f"is {now!r}" if now else "is not set"
        checks.append(
            Check(
                "registration.env",
                FAIL,
                f"ASCEND_CUSTOM_OPP_PATH {state} in this shell, without {vendor}: a framework "
                "started here does not see the package",
                f"source {set_env}"
                if set_env.is_file()
                else f"export ASCEND_CUSTOM_OPP_PATH={vendor}",
            )
        )
    checks.append(_soc_check(vendor, inp.soc))
    exported = _exports(inp.library)
    missing = [s for s in ENTRY_POINTS if s not in (exported or set())]
    if exported is None or missing:
        what = (
            "is not a readable ELF library"
            if exported is None
            else f"does not export {', '.join(missing)}"
        )
        checks.append(
            Check(
                "registration.exports",
                FAIL,
                f"{inp.library.name} {what}",
                "Rebuild and reinstall the package (cannbuild install --force ops-transformer-build); "
                "cannbuild validate checks the library too.",
            )
        )
    else:
        checks.append(
            Check(
                "registration.exports",
                PASS,
                f"{inp.library.name} exports {', '.join(ENTRY_POINTS)}",
            )
        )
    checks.append(_resolution_check(inp, entries))
    return checks


def _soc_check(vendor: Path, soc: str) -> Check:
    config = vendor / "op_impl" / "ai_core" / "tbe" / "config" / soc / f"aic-{soc}-ops-info.json"
    kernel = vendor / "op_impl" / "ai_core" / "tbe" / "kernel" / soc / "flash_attention_score"
    info = _ops_info(config)
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
        return Check(
            "registration.soc",
            FAIL,
            f"the package has {'; '.join(problems)} (it was built for {', '.join(built) or 'no SoC'})",
            f"Rebuild for this SoC: cannbuild install --soc {soc}",
        )
    return Check("registration.soc", PASS, f"{OP_TYPE} is configured and has kernels for {soc}")


def _resolution_check(inp: DiagnoseInputs, entries: Sequence[str]) -> Check:
    """Which library the lookup torch_npu does would take aclnnFlashAttentionScore from."""
    winner: Optional[Tuple[Path, str, str]] = None  # library, how it was found, its vendor
    for entry in entries:
        lib = Path(entry) / "op_api" / "lib" / "libcust_opapi.so"
        if ENTRY_POINTS[0] in (_exports(lib) or set()):
            winner = (lib, f"ASCEND_CUSTOM_OPP_PATH entry {entry}", entry)
            break
    if winner is None and inp.opp_path:
        for name in _default_vendors(Path(inp.opp_path)):
            lib = Path(inp.opp_path) / "vendors" / name / "op_api" / "lib" / "libcust_opapi.so"
            if ENTRY_POINTS[0] in (_exports(lib) or set()):
                winner = (lib, f"default vendor {name} of the toolkit", "")
                break
    who = f"torch_npu {inp.torch_npu}" if inp.torch_npu else "torch_npu (not installed here)"
    fix = f"source {inp.vendor_dir / 'bin' / 'set_env.bash'} (it puts the vendor first)"
    if winner is None:
        return Check(
            "registration.resolution",
            FAIL,
            f"{who} would find no custom library exporting {ENTRY_POINTS[0]} and fall back to "
            "the toolkit's built-in operator (libopapi), not this package",
            fix,
        )
    lib, how, entry = winner
    if _real(lib) == _real(inp.library):
        return Check(
            "registration.resolution", PASS, f"{who} would load this package's {lib.name} ({how})"
        )
    also = f", or take {entry} out of ASCEND_CUSTOM_OPP_PATH" if entry else ""
    return Check(
        "registration.resolution",
        FAIL,
        f"{who} would load {lib} ({how}), which shadows this package's {inp.library}",
        fix + also,
    )


def _default_vendors(opp: Path) -> List[str]:
    config = opp / "vendors" / "config.ini"
    try:
        text = config.read_text(errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "load_priority":
            return [v.strip() for v in value.split(",") if v.strip()]
    return []


def _path_entries(text: str) -> List[str]:
    return [e for e in text.split(":") if e.strip()]


def _real(path: Path) -> str:
    return os.path.realpath(str(path).rstrip("/"))


def _exports(lib: Path) -> Optional[set]:
    from elftools.common.exceptions import ELFError

    from .validate.elfcheck import read_elf

    if not lib.is_file():
        return None
    try:
        return set(read_elf(lib).exported)
    except (ELFError, OSError):
        return None


def _ops_info(path: Path) -> Optional[Dict[str, object]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# ---- what the operator accepts ----


def operator_facts(vendor: Path, soc: str, checkout: Path) -> OperatorFacts:
    doc, lines = _doc(checkout)
    limits = _doc_limits(doc, lines) if doc else {}
    for axis, high in BUILTIN_RANGES.items():
        limits.setdefault(axis, Limit(axis, 1, high, BUILTIN_SOURCE))
    dtypes, source = _installed_dtypes(vendor, soc)
    if not dtypes and doc:
        dtypes, source = _doc_dtypes(doc, lines)
    if not dtypes:
        dtypes, source = list(BUILTIN_DTYPES), BUILTIN_SOURCE
    align, align_source = _alignment(checkout)
    return OperatorFacts(limits, tuple(dtypes), source, align, align_source)


def _doc(checkout: Path) -> Tuple[Optional[Path], List[str]]:
    for name in DOCS:
        path = checkout / OP_DIR / "docs" / name
        try:
            return path, path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
    return None, []


def _doc_limits(doc: Path, lines: Sequence[str]) -> Dict[str, Limit]:
    limits: Dict[str, Limit] = {}
    inside = False
    for number, line in enumerate(lines, 1):
        if line.startswith("## "):
            inside = "约束" in line or "onstraint" in line
            continue
        match = _RANGE.match(line) if inside else None
        if match and match.group(1) not in limits:
            scale = {"k": 1024, "m": 1024 * 1024}.get(match.group(4).lower(), 1)
            said = line.strip().lstrip("-* ").replace("\\~", "~")
            limits[match.group(1)] = Limit(
                match.group(1),
                int(match.group(2)),
                int(match.group(3)) * scale,
                f"{doc}:{number} ({said})",
            )
    return limits


def _doc_dtypes(doc: Path, lines: Sequence[str]) -> Tuple[List[str], str]:
    for number, line in enumerate(lines, 1):
        match = _DOC_DTYPES.search(line)
        if match:
            words = re.split(r"[、,，\s]+", match.group(1).strip())
            found = [DOC_DTYPES[w] for w in words if w in DOC_DTYPES]
            if found:
                return list(dict.fromkeys(found)), f"{doc}:{number}"
    return [], ""


def _installed_dtypes(vendor: Path, soc: str) -> Tuple[List[str], str]:
    config = vendor / "op_impl" / "ai_core" / "tbe" / "config" / soc / f"aic-{soc}-ops-info.json"
    info = _ops_info(config)
    op = info.get(OP_TYPE) if info else None
    if not isinstance(op, dict):
        return [], ""
    for key, value in sorted(op.items()):
        if key.startswith("input") and isinstance(value, dict) and value.get("name") == "query":
            words = [w.strip().lower() for w in str(value.get("dtype", "")).split(",") if w.strip()]
            found = [INFO_DTYPES.get(w, w) for w in words]
            if found:
                return list(dict.fromkeys(found)), f"{config} (query dtypes)"
    return [], ""


def _alignment(checkout: Path) -> Tuple[int, str]:
    host = checkout / OP_DIR / "op_host"
    if host.is_dir():
        for path in sorted(host.rglob("*.cpp")) + sorted(host.rglob("*.h")):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            match = _FRACTAL.search(text)
            if match:
                line = text.count("\n", 0, match.start()) + 1
                return int(match.group(1)), f"{path}:{line} (the tiling pads D to FRACTAL_NUM)"
    return ALIGN, (
        "the Cube unit's 16-element fractals: ops-transformer's FA tiling pads D with "
        "AlignUp(dSize, FRACTAL_NUM=16)"
    )


# ---- the user's dtype and shapes ----


def dtype_check(dtype: Optional[str], facts: OperatorFacts, soc: str) -> Check:
    if dtype is None:
        return Check(
            "dtype",
            SKIP,
            f"not checked: the operator takes {', '.join(facts.dtypes)} on {soc}",
            "Pass --dtype with your attention's input dtype (fp16, bf16, fp32).",
        )
    if dtype in facts.dtypes:
        return Check("dtype", PASS, f"{dtype} is supported on {soc} (from {facts.dtype_source})")
    casts = [d for d in ("bf16", "fp16") if d in facts.dtypes]
    return Check(
        "dtype",
        FAIL,
        f"{dtype} is not among the dtypes FlashAttentionScore takes on {soc}: "
        f"{', '.join(facts.dtypes)} (from {facts.dtype_source})",
        f"Cast query/key/value to {' or '.join(casts) or facts.dtypes[0]} before attention "
        "(e.g. torch autocast), or install a package whose operator supports it.",
    )


def shape_checks(shape: AttentionShape, facts: OperatorFacts) -> List[Check]:
    checks: List[Check] = []
    lim = facts.limits
    if shape.layout is not None:
        if shape.layout in LAYOUTS:
            checks.append(
                Check("shape.layout", PASS, f"{shape.layout} is one of {', '.join(LAYOUTS)}")
            )
        else:
            checks.append(
                Check(
                    "shape.layout",
                    FAIL,
                    f"{shape.layout} is not a FlashAttentionScore layout (TND is for the VarLen APIs)",
                    f"Use one of {', '.join(LAYOUTS)}, or aclnnFlashAttentionVarLenScore for TND.",
                )
            )
    if shape.D is not None:
        checks.append(_head_dim(shape.D, lim["D"], facts))
    if shape.N1 is not None:
        checks.append(_heads(shape.N1, shape.N2, lim["N"]))
    for value, axis, cid, name, flag in (
        (shape.S, "S", "shape.seq_len", "sequence length", "--seq-len"),
        (shape.B, "B", "shape.batch", "batch", "--batch"),
    ):
        if value is not None:
            checks.append(_in_range(cid, value, lim[axis], name, flag))
    if not checks:
        checks.append(
            Check(
                "shape",
                SKIP,
                f"not checked: the operator takes D {_span(lim['D'])}, N {_span(lim['N'])}, "
                f"S {_span(lim['S'])} (from {lim['D'].source})",
                "Pass --head-dim, --heads, --seq-len (and --layout, --kv-heads, --batch) of your attention.",
            )
        )
    return checks


def _span(limit: Limit) -> str:
    return f"{limit.low}..{limit.high}"


def _in_range(cid: str, value: int, limit: Limit, name: str, flag: str) -> Check:
    if limit.low <= value <= limit.high:
        return Check(cid, PASS, f"{name} {value} is within {_span(limit)} ({limit.source})")
    return Check(
        cid,
        FAIL,
        f"{name} {value} is outside {_span(limit)}, the operator's limit ({limit.source})",
        f"Split the work so that {flag} stays within {_span(limit)} (e.g. chunk the sequence or the batch).",
    )


def _head_dim(d: int, limit: Limit, facts: OperatorFacts) -> Check:
    if not limit.low <= d <= limit.high:
        return Check(
            "shape.head_dim",
            FAIL,
            f"head dim {d} is outside {_span(limit)}: the operator rejects it ({limit.source})",
            f"Use a head dim within {_span(limit)} (split heads wider than {limit.high}).",
        )
    if d % facts.align:
        padded = -(-d // facts.align) * facts.align
        return Check(
            "shape.head_dim",
            WARN,
            f"head dim {d} is not a multiple of {facts.align}: the operator accepts it but pads "
            f"D to {padded} ({facts.align_source}), so {padded - d} of every {padded} columns are "
            "wasted work",
            f"Prefer a head dim that is a multiple of {facts.align} (64, 128), or pad D yourself.",
        )
    return Check(
        "shape.head_dim",
        PASS,
        f"head dim {d} is within {_span(limit)} ({limit.source}) and a multiple of {facts.align}",
    )


def _heads(n1: int, n2: Optional[int], limit: Limit) -> Check:
    if not limit.low <= n1 <= limit.high:
        return Check(
            "shape.heads",
            FAIL,
            f"{n1} query heads is outside {_span(limit)} ({limit.source})",
            f"Split the heads into groups of at most {limit.high}.",
        )
    if n2 is not None and (n2 <= 0 or n1 % n2):
        return Check(
            "shape.heads",
            FAIL,
            f"{n1} query heads is not a multiple of {n2} key/value heads: Nq/Nkv must be a whole "
            "number (GQA/MQA)",
            "Use key/value heads that divide the query heads, or repeat key/value heads yourself.",
        )
    ratio = f", {n1 // n2} query heads per key/value head" if n2 and n2 != n1 else ""
    return Check(
        "shape.heads", PASS, f"{n1} query heads within {_span(limit)}{ratio} ({limit.source})"
    )


# ---- a profile: the unfused chains and their cause ----


def profile_checks(
    path: Path, facts: OperatorFacts, soc: str, done: Sequence[Check]
) -> List[Check]:
    from .profile.summary import summarise

    summary = summarise(path, timeline=False)
    a = summary.analysis
    fused = sum(f.count for f in a.fused)
    if not a.chains:
        return [
            Check(
                "profile",
                PASS,
                f"no unfused MatMul->Softmax->MatMul chain in {path}; fused attention ran {fused} times",
            )
        ]
    # where the fused op ran in the same profile, the package was found there: registration
    # (this shell's env) is not why those chains were not fused
    registration = (
        [c for c in done if c.id.startswith("registration") and c.status == FAIL]
        if not fused
        else []
    )
    checks = []
    for i, group in enumerate(a.chains[:5], 1):
        dims = group.dims()
        dtype = group.dtype
        described = " > ".join(group.ops)
        facts_seen = []
        if dtype:
            facts_seen.append(dtype)
        if dims:
            facts_seen.append(f"S={dims[0]}, D={dims[2]}")
        what = (
            f"{group.count} unfused chain(s) {described} on {group.stream}, "
            f"{group.total_us:.1f} us" + (f" ({', '.join(facts_seen)})" if facts_seen else "")
        )
        cause, fix = _cause(dtype, dims, facts, soc, registration)
        checks.append(Check(f"profile.chain{i}", FAIL, f"{what}: {cause}", fix))
    if len(a.chains) > 5:
        rest = sum(c.count for c in a.chains[5:])
        checks.append(
            Check(
                "profile.more",
                FAIL,
                f"{rest} more unfused chains in {len(a.chains) - 5} other groups",
                "See cannbuild profile --json for all of them.",
            )
        )
    return checks


def _cause(
    dtype: Optional[str],
    dims: Optional[Tuple[int, int, int]],
    facts: OperatorFacts,
    soc: str,
    registration: Sequence[Check],
) -> Tuple[str, str]:
    if dtype and dtype not in facts.dtypes:
        return (
            f"cause: dtype {dtype} is not supported on {soc} ({', '.join(facts.dtypes)})",
            "Cast the attention inputs to fp16 or bf16 (e.g. torch autocast).",
        )
    if dims:
        _s, _skv, d = dims
        limit = facts.limits["D"]
        if not limit.low <= d <= limit.high:
            return (
                f"cause: head dim {d} is outside {_span(limit)} ({limit.source})",
                f"Use a head dim within {_span(limit)}.",
            )
    if registration:
        first = registration[0]
        return (f"cause: registration ({first.id}: {first.detail})", first.hint or "")
    if dtype is None and dims is None:
        return (
            "cause unknown: the profile has no shapes or dtypes (Level0)",
            "Profile at Level1 (torch_npu: experimental_config profiler_level=Level1, "
            "record_shapes=True; cannbuild profile --run --level 1) to see them.",
        )
    return (
        "no operator limit applies and the package is found: the model computes attention "
        "with separate ops",
        "Call torch_npu.npu_fusion_attention (or the model's flash-attention option) instead of "
        "matmul/softmax/matmul.",
    )
