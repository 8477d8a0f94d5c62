"""The toolkit headers a checkout's host-side code includes, found by reading it.

Starts from the selected operators' host-side folders (`<category>/<op>/op_host`,
`op_api`, `op_graph`, the layout of cannmirror/ops-transformer, e.g.
attention/flash_attention_score/op_host/flash_attention_score_def.cpp) and the common
code the CMake compiles (`file(GLOB ...)` of common/src and of opbase's src/op_common,
read by derived_cmake), and follows every include that resolves inside the checkout or
the opbase source, as the compiler would: beside the including file for `"..."`, then
the folders the CMake puts on the include path.  An include found in neither is a
toolkit header when toolkit_packages knows its prefix; the rest (the C++ library,
third-party and generated headers) are counted, not checked.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

from msgspec import Struct

from ..bounded import SOURCE_FILE, head
from ..errors import UsageError
from .cmake_text import is_test_file
from .toolkit_packages import shipper_of, shippers

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
HOST_FOLDERS = ("op_host", "op_api", "op_graph")
SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".inc")
MAX_FILE_BYTES = 4 << 20  # a source past this is no hand-written host file
MAX_FILES = 20000  # a bound on one scan (the whole ops-transformer has about 12000)
MAX_SOURCES = 5  # includers named per header


class HeaderNeed(Struct, frozen=True, kw_only=True):
    header: str  # as included: "register/op_def_registry.h"
    package: str
    shipped_by: str  # where toolkit_packages read that
    sources: Tuple[str, ...]  # "attention/.../flash_attention_score_def.cpp:16", the first few
    includers: int  # how many files include it


class IncludeScan(Struct, frozen=True, kw_only=True):
    headers: Tuple[HeaderNeed, ...]
    unclassified: int  # includes found nowhere and of no known toolkit package
    files: int  # files read


def op_folders(repo: Path, ops: Sequence[str]) -> Dict[str, str]:
    """`<category>/<op>` (else `experimental/<category>/<op>`) of each selected op the
    checkout has."""
    found: Dict[str, str] = {}
    categories = sorted(p.name for p in _dirs(repo) if not p.name.startswith("."))
    for op in ops:
        hit = next((f"{c}/{op}" for c in categories if (repo / c / op).is_dir()), None)
        if hit is None and (repo / "experimental").is_dir():
            hit = next(
                (
                    f"experimental/{c.name}/{op}"
                    for c in _dirs(repo / "experimental")
                    if (c / op).is_dir()
                ),
                None,
            )
        if hit is not None:
            found[op] = hit
    return found


def _dirs(folder: Path) -> List[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []


def _walk(root: Path, rel: str) -> List[str]:
    out: List[str] = []
    for dirpath, dirnames, filenames in os.walk(root / rel):
        dirnames[:] = sorted(d for d in dirnames if not is_test_file(d + "/"))
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                out.append(posixpath.relpath(os.path.join(dirpath, name), root))
    return out


def _globbed(root: Path, patterns: Sequence[str]) -> List[str]:
    """The checkout's files a CMake glob names (op-level patterns, relative to an op's
    folder in obj_func.cmake, are not the common code and are left out)."""
    out: List[str] = []
    for pattern in patterns:
        if not pattern or any(f"{p}/" in pattern for p in HOST_FOLDERS) or "/" not in pattern:
            continue
        top = pattern.split("/", 1)[0]
        if any(ch in top for ch in "*?[") or not (root / top).is_dir():
            continue
        for path in sorted(root.glob(pattern)):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and not is_test_file(rel):
                out.append(rel)
    return out


class _Tree:
    """One checkout whose files the scan may read, with its include folders."""

    def __init__(self, root: Path, dirs: Sequence[str]) -> None:
        self.root = root
        self.dirs = [d.strip("/") for d in dirs]
        self._exists: Dict[str, bool] = {}

    def has(self, rel: str) -> bool:
        known = self._exists.get(rel)
        if known is None:
            known = self._exists[rel] = (self.root / rel).is_file()
        return known

    def find(self, name: str) -> Optional[str]:
        for d in self.dirs:
            rel = posixpath.normpath(posixpath.join(d, name)) if d else posixpath.normpath(name)
            if not rel.startswith("..") and self.has(rel):
                return rel
        return None


def scan_includes(
    *,
    repo: Path,
    repo_dirs: Sequence[str],
    ops: Sequence[str],
    repo_sources: Sequence[str] = (),
    opbase: Optional[Path] = None,
    opbase_dirs: Sequence[str] = (),
    opbase_sources: Sequence[str] = (),
) -> IncludeScan:
    folders = op_folders(repo, ops)
    trees = {"repo": _Tree(repo, repo_dirs)}
    queue: List[Tuple[str, str]] = []
    for folder in folders.values():
        for sub in HOST_FOLDERS:
            queue += [("repo", rel) for rel in _walk(repo, f"{folder}/{sub}")]
    queue += [("repo", rel) for rel in _globbed(repo, repo_sources)]
    if opbase is not None:
        trees["opbase"] = _Tree(opbase, opbase_dirs)
        queue += [("opbase", rel) for rel in _globbed(opbase, opbase_sources)]
    seen: Set[Tuple[str, str]] = set()
    rows = shippers()
    needs: Dict[str, List[str]] = {}
    unclassified: Set[str] = set()
    while queue and len(seen) < MAX_FILES:
        where, rel = queue.pop()
        if (where, rel) in seen:
            continue
        seen.add((where, rel))
        tree = trees[where]
        for line, quote, name in _includes(tree.root / rel):
            hit = _resolve(trees, where, rel, quote, name)
            if hit is not None:
                queue.append(hit)
                continue
            if shipper_of(name, rows) is None:
                unclassified.add(name)
                continue
            label = rel if where == "repo" else f"{where}:{rel}"
            needs.setdefault(name, []).append(f"{label}:{line}")
    headers = []
    for name in sorted(needs):
        shipper = shipper_of(name, rows)
        assert shipper is not None
        sources = sorted(set(needs[name]))
        headers.append(
            HeaderNeed(
                header=name,
                package=shipper.package,
                shipped_by=shipper.source,
                sources=tuple(sources[:MAX_SOURCES]),
                includers=len({s.rsplit(":", 1)[0] for s in sources}),
            )
        )
    return IncludeScan(
        headers=tuple(headers),
        unclassified=len(unclassified),
        files=len(seen),
    )


def _includes(path: Path) -> List[Tuple[int, str, str]]:
    try:
        data = head(path, SOURCE_FILE, MAX_FILE_BYTES)
    except UsageError:
        return []
    out = []
    line, counted = 1, 0  # lines counted on from the last match: linear in the file
    for m in _INCLUDE.finditer(data):
        line, counted = line + data.count(b"\n", counted, m.start()), m.start()
        out.append((line, m.group(1).decode(), m.group(2).decode("utf-8", "replace").strip()))
    return out


def _resolve(
    trees: Dict[str, _Tree], where: str, rel: str, quote: str, name: str
) -> Optional[Tuple[str, str]]:
    """Where the compiler finds `name` in the checkouts, if it does: beside the includer
    for a quoted include, then each tree's include folders (the repo's first)."""
    if quote == '"':
        beside = posixpath.normpath(posixpath.join(posixpath.dirname(rel), name))
        if not beside.startswith("..") and trees[where].has(beside):
            return (where, beside)
    for key in ("repo", "opbase"):
        tree = trees.get(key)
        found = tree.find(name) if tree is not None else None
        if found is not None:
            return (key, found)
    return None
