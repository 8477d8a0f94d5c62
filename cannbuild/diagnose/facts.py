"""What the operator accepts, read where the operator states it: the installed package's
op_impl config (dtypes per SoC), the operator's docs in the checkout (约束说明: the B, N,
S, D ranges, each with its file and line), the tiling source (the head-dim padding),
else a built-in copy of the v8.5.0 docs that says so."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from msgspec import Struct

from ..bounded import INSTALLED_FILE, OPERATOR_FILE, Absent, read_state, read_text, walk
from ..profile.ops import dtype_word
from ..validate.cases import FA_OP
from ..workspace import Workspace

# The aclnn two-phase entry points a package must export for FA to be callable.
ENTRY_POINTS = ("aclnnFlashAttentionScoreGetWorkspaceSize", "aclnnFlashAttentionScore")
OP_TYPE = "FlashAttentionScore"
OP_DIR = Path("attention") / FA_OP
# V2 first: the doc the built-in facts below were copied from (BUILTIN_SOURCE).
DOCS = ("aclnnFlashAttentionScoreV2.md", "aclnnFlashAttentionScore.md")
# The layouts the non-VarLen APIs take (docs/aclnnFlashAttentionScoreV2.md).
LAYOUTS = ("BSH", "SBH", "BSND", "BNSD")
# The Cube unit works on 16-element fractals; the tiling's FRACTAL_NUM, read below when the sources
# are at hand.
ALIGN = 16
# what the operator's docs say at v8.5.0/v9.0.0, when no checkout has them (or its docs do not say)
BUILTIN_COPY = "ops-transformer v8.5.0 docs/aclnnFlashAttentionScoreV2.md"
BUILTIN_SOURCE = f"{BUILTIN_COPY} (no checkout here)"
# The v8.5.0 docs' B 1-2M, N 1-256, S 1-1M, D 1-768.
BUILTIN_RANGES = {"B": 2 * 1024 * 1024, "N": 256, "S": 1024 * 1024, "D": 768}
BUILTIN_DTYPES = ("fp16", "bf16", "fp32")
# A bullet of the 约束说明 section, as tests/unit/test_diagnose_rules.py models the doc:
#       -   D：取值范围为1\~768。
# (取值范围为 = "the value range is"; an English `range is` is taken too).  `\~` is
# Markdown's escaped tilde; K / M scale the upper bound by 1024 / 1024**2.
_RANGE = re.compile(
    r"^\s*[-*]\s*([BNSD])\s*[：:]\s*(?:取值范围(?:为)?|(?:value )?range(?: is)?:?)\s*"
    r"(\d+)\s*\\?[~～\-]\s*(\d+)\s*([KkMm]?)"
)
# The parameter table's cells (参数说明): the docs at v8.5.0 to 9.1.0 write it in HTML, one cell a
# line (`<td>FLOAT16、BFLOAT16、FLOAT32</td>` under `<th>数据类型</th>`, 数据类型 = "data
# type"); other ops' READMEs in Markdown pipes (`| query | 输出 | ... | FLOAT16, BF16 |`).
# Each pattern here runs in time linear in its line (a doc is the checkout's, and a 4 MiB
# line of `<td` or of digits must not hang diagnose): a tag's attributes end at the next
# `<` or `>`, and a number starts where a run of digits starts.
_TAG = re.compile(r"<(/?)t([dh])\b[^<>]{0,200}>")
_INNER_TAG = re.compile(r"<[^<>]{0,200}>")
_DTYPE_HEADER = re.compile(r"数据类型|data ?types?", re.IGNORECASE)
_SOURCES_HINT = (
    "Pass --workspace with the checkout of the repo that ships it, which cannbuild fetched."
)
# `FRACTAL_NUM = 16` in the tiling sources.
_FRACTAL = re.compile(r"FRACTAL_NUM\s*=\s*(\d+)")
# a constraint line that makes D's alignment a rule, as some FA docs state it (MindSpore's
# flash_attention_score: "D：取值范围为16的倍数，最大值为512")
_D_BULLET = re.compile(r"\s*[-*]\s*D\s*[：:]")
_ALIGN_RULE = re.compile(r"(?<!\d)(\d+)\s*的(?:整数)?倍数|multiple of\s*(\d+)|(?<!\d)(\d+)\s*对齐")


class Limit(Struct, frozen=True, kw_only=True):
    axis: str  # B | N | S | D
    low: int
    high: int
    source: str  # file:line (the doc's own words), or the built-in reference


class OperatorFacts(Struct, frozen=True, kw_only=True):
    limits: Dict[str, Limit]
    dtypes: Tuple[str, ...]
    dtype_source: str
    align: int
    align_source: str
    align_required: bool = False  # the docs make it a rule (else the tiling only pads)


def fa_checkout(ws: Workspace) -> Path:
    """The workspace's checkout that has the operator's folder (`attention/<op>`), else
    where none is (the built-in facts are used then)."""
    found = sorted(ws.src.glob(f"*/{OP_DIR}")) if ws.src.is_dir() else []
    return found[0].parent.parent if found else ws.src / FA_OP


def ops_info(path: Path) -> Optional[Dict[str, object]]:
    data = read_state(path, INSTALLED_FILE.named("op_impl config"))
    return data if isinstance(data, dict) else None


def ops_info_path(vendor: Path, soc: str) -> Path:
    return vendor / "op_impl" / "ai_core" / "tbe" / "config" / soc / f"aic-{soc}-ops-info.json"


def operator_facts(vendor: Optional[Path], soc: str, checkout: Path) -> OperatorFacts:
    """`vendor` None: no package to read (diagnose off the NPU host)."""
    doc, lines = _doc(checkout)
    limits = _doc_limits(doc, lines) if doc else {}
    builtin = f"{BUILTIN_COPY} ({doc} does not say)" if doc else BUILTIN_SOURCE
    for axis, high in BUILTIN_RANGES.items():
        limits.setdefault(axis, Limit(axis=axis, low=1, high=high, source=builtin))
    dtypes, source = _installed_dtypes(vendor, soc) if vendor is not None else ([], "")
    if not dtypes and doc:
        dtypes, source = _doc_dtypes(doc, lines)
    if not dtypes:
        dtypes, source = list(BUILTIN_DTYPES), builtin
    rule = _doc_align_rule(doc, lines) if doc else None
    align, align_source = rule or _alignment(checkout)
    return OperatorFacts(
        limits=limits,
        dtypes=tuple(dtypes),
        dtype_source=source,
        align=align,
        align_source=align_source,
        align_required=rule is not None,
    )


def _doc(checkout: Path) -> Tuple[Optional[Path], List[str]]:
    for name in DOCS:
        path = checkout / OP_DIR / "docs" / name
        try:
            text = read_text(path, OPERATOR_FILE.named("operator doc"), errors="replace")
            return path, text.splitlines()
        except Absent:
            continue
    return None, []


def _constraint_lines(lines: Sequence[str]) -> Iterator[Tuple[int, str, str]]:
    """(line number, line, the line as said) inside the doc's constraints sections."""
    inside = False
    for number, line in enumerate(lines, 1):
        # `## 约束说明` ("constraints") in the Chinese docs, `## Constraints` in the English ones.
        if line.startswith("## "):
            inside = "约束" in line or "onstraint" in line
        elif inside:
            # The section's bullet text as the doc words it, without the list marker.
            yield number, line, line.strip().lstrip("-* ").replace("\\~", "~")


def _doc_limits(doc: Path, lines: Sequence[str]) -> Dict[str, Limit]:
    limits: Dict[str, Limit] = {}
    for number, line, said in _constraint_lines(lines):
        match = _RANGE.match(line)
        if match and match.group(1) not in limits:
            scale = {"k": 1024, "m": 1024 * 1024}.get(match.group(4).lower(), 1)
            limits[match.group(1)] = Limit(
                axis=match.group(1),
                low=int(match.group(2)),
                high=int(match.group(3)) * scale,
                source=f"{doc}:{number} ({said})",
            )
    return limits


def _doc_align_rule(doc: Path, lines: Sequence[str]) -> Optional[Tuple[int, str]]:
    for number, line, said in _constraint_lines(lines):
        bullet = _D_BULLET.match(line)
        match = _ALIGN_RULE.search(line, bullet.end()) if bullet else None
        if match:
            value = int(next(g for g in match.groups() if g))
            return value, f"{doc}:{number} ({said})"
    return None


def _doc_dtypes(doc: Path, lines: Sequence[str]) -> Tuple[List[str], str]:
    """The query row's cell under the parameter table's 数据类型 column."""
    column: Optional[int] = None
    row: List[str] = []
    for number, line in enumerate(lines, 1):
        text = line.strip()
        piped = text.startswith("|")  # a Markdown row: all its cells on this line
        cells = [c.strip() for c in text.strip("|").split("|")] if piped else []
        if piped or text.startswith("<tr"):
            row = []
        tagged = _cells(text)
        cells += [cell.strip() for _, cell in tagged]
        row += cells
        if piped or any(kind == "h" for kind, _ in tagged):
            header = next((i for i, c in enumerate(row) if _DTYPE_HEADER.fullmatch(c)), None)
            column = header if header is not None else column
        # the query row's dtype cell is on this line
        if column is None or row[:1] != ["query"] or not len(row) - len(cells) <= column < len(row):
            continue
        words = re.split(r"[、,，\s]+", row[column])
        found = [d for d in map(dtype_word, words) if d in BUILTIN_DTYPES]
        if found:
            return list(dict.fromkeys(found)), f"{doc}:{number}"
    return [], ""


def _cells(text: str) -> List[Tuple[str, str]]:
    """(d or h, text) of each table cell that opens and closes on this line."""
    cells: List[Tuple[str, str]] = []
    opened: Optional[Tuple[str, int]] = None
    for tag in _TAG.finditer(text):
        if not tag.group(1):
            opened = (tag.group(2), tag.end())
        elif opened is not None:
            cells.append((opened[0], _INNER_TAG.sub("", text[opened[1] : tag.start()])))
            opened = None
    return cells


def _installed_dtypes(vendor: Path, soc: str) -> Tuple[List[str], str]:
    config = ops_info_path(vendor, soc)
    info = ops_info(config)
    op = info.get(OP_TYPE) if info else None
    if not isinstance(op, dict):
        return [], ""
    # ops-info entries name their tensors: `"input0": {"name": "query", "dtype": "float16,..."}`.
    for key, value in sorted(op.items()):
        if key.startswith("input") and isinstance(value, dict) and value.get("name") == "query":
            words = str(value.get("dtype", "")).split(",")
            found = [d for d in map(dtype_word, words) if d]
            if found:
                return list(dict.fromkeys(found)), f"{config} (query dtypes)"
    return [], ""


def _alignment(checkout: Path) -> Tuple[int, str]:
    host = checkout / OP_DIR / "op_host"
    if host.is_dir():
        # .cpp first: the tiling defines FRACTAL_NUM there; a header may only use it.
        found = [
            folder / name
            for folder, names in walk(host, "the tiling sources", _SOURCES_HINT)
            for name in names
            if name.endswith((".cpp", ".h"))
        ]
        for path in sorted(p for p in found if p.suffix == ".cpp") + sorted(
            p for p in found if p.suffix == ".h"
        ):
            try:
                text = read_text(path, OPERATOR_FILE.named("tiling source"), errors="replace")
            except Absent:
                continue
            match = _FRACTAL.search(text)
            if match:
                line = text.count("\n", 0, match.start()) + 1
                return int(match.group(1)), f"{path}:{line} (the tiling pads D to FRACTAL_NUM)"
    return ALIGN, (
        "the Cube unit's 16-element fractals: ops-transformer's FA tiling pads D with "
        "AlignUp(dSize, FRACTAL_NUM=16)"
    )
