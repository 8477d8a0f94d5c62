"""Where a CANN repository's files land in an installed toolkit, read from the repository's
own packaging data.

Each open-source CANN repository (ge, metadef, runtime, asc-devkit, opbase) describes its
`.run` package in `scripts/package/<pkg>/<pkg>.xml` and the blocks that file names
(`scripts/package/module/<block_conf_path>/<Block>.xml`): every `<file_info>` gives the
folder its `<file>`s are installed to (`install_path`, `$(TARGET_ENV)` = `<arch>-linux`,
relative to the toolkit root), a `<file install_softlink="a;b">` or a `<dir_info><path>`
with one adds links to it, and `<generate_info>` writes a file from the XML itself
(hicann/metadef@v9.0.0 scripts/package/common/py/pkg_parser.py and package.py; the
installer's common_func_v2.inc:681-697 and :863-900 make the links).  The packer copies
from a staging folder that the repository's CMake install rules fill; rather than
interpret that CMake, a file is found in the checkout by the longest tail of its installed
path (`x86_64-linux/include/graph/types.h` <- `inc/external/graph/types.h`), which picks
the file the install rules stage for 99% of the headers and CMake files of ge, metadef,
runtime and asc-devkit at v8.5.0, v9.0.0 and 9.1.0.  What has no source in the checkout (a
library, a program, a file the build generates) is listed as such, never invented.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple
from xml.parsers import expat

from msgspec import Struct

from ..bounded import SOURCE_FILE, head
from ..errors import UsageError

PACKAGE_DIR = "scripts/package"
MAX_XML_BYTES = 4 << 20
MAX_REPO_FILES = 200_000
# where a repository keeps what is not installed: its tests, examples and docs
_NOT_SHIPPED = ("tests/", "test/", "examples/", "example/", "docs/", ".git/")


class Node(Struct, kw_only=True):
    tag: str
    attrs: Dict[str, str]
    line: int
    children: List[Node]
    text: str = ""


class Placement(Struct, frozen=True, kw_only=True):
    """One entry of a package: `installed` relative to the toolkit root."""

    installed: str
    kind: str  # "file", "dir" (a checkout file or folder), "link", "generated"
    source: str = ""  # the checkout path (a file or a folder), or the link's target
    repo: str = ""  # the checkout `source` is in (a third-party one, e.g. libboundscheck)
    package: str = ""
    xml: str = ""  # the XML file:line that installs it
    text: str = ""  # a generated file's content
    executable: bool = False  # its install_mod has an x bit (asc-devkit's asc_opc: "550")


def parse_xml(path: Path) -> Optional[Node]:
    """The element tree of one XML file with line numbers (None when it is no XML)."""
    try:
        data = head(path, SOURCE_FILE, MAX_XML_BYTES)
    except (OSError, UsageError):
        return None
    stack: List[Node] = []
    root: List[Node] = []
    parser = expat.ParserCreate()

    def start(tag: str, attrs: Dict[str, str]) -> None:
        node = Node(tag=tag, attrs=dict(attrs), line=parser.CurrentLineNumber, children=[])
        (stack[-1].children if stack else root).append(node)
        stack.append(node)

    def end(tag: str) -> None:
        stack.pop()

    def data_(text: str) -> None:
        if stack:
            stack[-1].text += text

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = data_
    try:
        parser.Parse(data, True)
    except expat.ExpatError:
        return None
    return root[0] if root else None


def _walk(node: Node) -> Iterable[Node]:
    yield node
    for child in node.children:
        yield from _walk(child)


class RepoIndex:
    """The checkout's shipped files by name, for finding an installed file's source."""

    def __init__(self, name: str, root: Path) -> None:
        self.name, self.root = name, root
        self.files: Dict[str, List[str]] = {}
        self.dirs: Dict[str, List[str]] = {}
        count = 0
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
            dirnames[:] = sorted(d for d in dirnames if not _skipped(rel_dir + d + "/"))
            for d in dirnames:
                self.dirs.setdefault(d, []).append(rel_dir + d)
            for name in filenames:
                self.files.setdefault(name, []).append(rel_dir + name)
                count += 1
            if count > MAX_REPO_FILES:
                break

    def find(self, installed: str) -> Tuple[str, str]:
        """(kind, path) of the checkout file or folder whose path ends with the longest
        tail of `installed`; ("", "") when none does."""
        parts = installed.split("/")
        # a folder matched by its own name only must be the one of that name: `impl` or
        # `tiling` names many
        for kind, table in (("file", self.files), ("dir", self.dirs)):
            found = table.get(parts[-1], ())
            least = 2 if kind == "dir" and len(found) > 1 else 1
            best = _longest_tail(parts, found, least)
            if best:
                return kind, best
        return "", ""


def _skipped(rel: str) -> bool:
    return any(rel.startswith(p) or f"/{p}" in rel for p in _NOT_SHIPPED)


def _longest_tail(parts: Sequence[str], candidates: Sequence[str], least: int) -> str:
    best: List[Tuple[int, int, str]] = []
    for cand in candidates:
        cparts = cand.split("/")
        n = 0
        while n < min(len(parts), len(cparts)) and parts[-1 - n] == cparts[-1 - n]:
            n += 1
        if n >= least:
            best.append((-n, len(cparts), cand))
    # the longest common tail, then the shortest path (an `external/` copy before a deep one)
    return min(best)[2] if best else ""


_CREATE_LINK = re.compile(
    r"file\s*\(\s*CREATE_LINK\s+(\S+)\s+(\S+)\s+SYMBOLIC\s*\)", re.IGNORECASE | re.DOTALL
)


def staged_links(checkout: Path, arch: str) -> Dict[str, str]:
    """The links the repository's install scripts make in the staging folder
    (`install(CODE|SCRIPT ...)` running `file(CREATE_LINK <target> <prefix>/<path>
    SYMBOLIC)`, e.g. hicann/asc-devkit@v9.0.0 impl/utils/CMakeLists.txt:35-40), by staged
    path: the part after the install prefix's variables, under `<arch>-linux/` as
    INSTALL_LIBRARY_DIR is (asc-devkit CMakeLists.txt:34)."""
    links: Dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(checkout):
        rel_dir = os.path.relpath(dirpath, checkout).replace(os.sep, "/")
        dirnames[:] = sorted(d for d in dirnames if not _skipped(f"{rel_dir}/{d}/".lstrip("./")))
        for name in filenames:
            if not (name == "CMakeLists.txt" or name.endswith(".cmake")):
                continue
            try:
                raw = head(Path(dirpath) / name, SOURCE_FILE, MAX_XML_BYTES)
            except (OSError, UsageError):
                continue
            text = raw.decode("utf-8", "replace")
            for m in _CREATE_LINK.finditer(text):
                target, path = m.group(1).strip('"'), m.group(2).strip('"')
                if "}/" not in path and "@/" not in path:
                    continue
                tail = re.split(r"[}@]/", path)[-1]
                if "$" in tail or "$" in target:
                    continue
                links[f"{arch}-linux/{tail}"] = target
    return links


def package_xmls(checkout: Path) -> List[Path]:
    """`scripts/package/<pkg>/<pkg>.xml` of each package the repository makes."""
    top = checkout / PACKAGE_DIR
    if not top.is_dir():
        return []
    return sorted(
        p / f"{p.name}.xml" for p in top.iterdir() if p.is_dir() and (p / f"{p.name}.xml").is_file()
    )


def _subst(value: str, arch: str) -> Optional[str]:
    value = value.replace("$(TARGET_ENV)", f"{arch}-linux").strip().strip("/")
    return None if "$(" in value else value


def placements(
    index: RepoIndex,
    arch: str,
    values: Mapping[str, str],
    others: Sequence[RepoIndex] = (),
) -> List[Placement]:
    """Every entry the packages of the checkout `index` reads install, in XML order; a
    file its build stages from a third-party source (securec.h from libboundscheck) is
    looked for in `others`; `values` fill a generated header's `$(NAME)`s (ASCEND_VER)."""
    checkout = index.root
    ctx = _Context(
        arch=arch, values=values, indexes=(index, *others), links=staged_links(checkout, arch)
    )
    out: List[Placement] = []
    for xml in package_xmls(checkout):
        config = parse_xml(xml)
        if config is None or config.tag != "config":
            continue
        package = xml.parent.name
        nodes = [(xml, config, "")]
        for info in (n for n in config.children if n.tag == "block_info"):
            conf = info.attrs.get("block_conf_path", "")
            block_dst = _subst(info.attrs.get("dst_path", ""), arch) or ""
            for block in (b for b in info.children if b.tag == "block"):
                path = checkout / PACKAGE_DIR / "module" / conf / f"{block.attrs.get('name')}.xml"
                parsed = parse_xml(path)
                if parsed is not None:
                    nodes.append((path, parsed, block_dst))
        for path, node, block_dst in nodes:
            rel = path.relative_to(checkout).as_posix()
            out += _entries(node, rel, package, block_dst, ctx)
    return out


class _Context(Struct, frozen=True, kw_only=True):
    arch: str
    values: Mapping[str, str]
    indexes: Tuple[RepoIndex, ...]  # the repository's own first
    links: Mapping[str, str]


def _entries(
    root: Node, xml: str, package: str, block_dst: str, ctx: _Context
) -> Iterator[Placement]:
    for node in _walk(root):
        where = f"{xml}:{node.line}"
        if node.tag == "file_info":
            folder = _subst(node.attrs.get("install_path", ""), ctx.arch)
            staged_dir = _subst(node.attrs.get("dst_path", ""), ctx.arch)
            if folder is None or staged_dir is None:
                continue
            if staged_dir.startswith("real:"):
                staged_dir = staged_dir[len("real:") :]
            elif block_dst:
                staged_dir = posixpath.join(block_dst, staged_dir)
            mode = node.attrs.get("install_mod", "")
            executable = bool(re.fullmatch(r"[0-7]{3,4}", mode)) and int(mode, 8) & 0o111 != 0
            for f in (c for c in node.children if c.tag == "file"):
                value = f.attrs.get("value", "").strip("/")
                if not value or "*" in value:
                    continue
                name = f.attrs.get("rename") or posixpath.basename(value)
                installed = posixpath.join(folder, name) if folder else name
                staged = posixpath.join(staged_dir, value) if staged_dir else value
                placed = _place(installed, staged, package, f"{xml}:{f.line}", ctx, executable)
                yield from placed
                if placed:
                    yield from _links(
                        f.attrs.get("install_softlink", ""), installed, package, xml, f, ctx
                    )
        elif node.tag == "path" and node.attrs.get("install_softlink"):
            target = _subst(node.attrs.get("value", ""), ctx.arch)
            if target:
                yield from _links(node.attrs["install_softlink"], target, package, xml, node, ctx)
        elif node.tag == "generate_info" and node.attrs.get("value", "").endswith(".h"):
            folder = _subst(node.attrs.get("install_path", ""), ctx.arch)
            if folder is None:
                continue
            defines = "".join(
                f'#define {c.tag} "{_fill(c.text.strip(), ctx.values)}"\n' for c in node.children
            )
            yield Placement(
                installed=posixpath.join(folder, node.attrs["value"]),
                kind="generated",
                package=package,
                xml=where,
                text=f"/* generated from {where} */\n{defines}",
            )


def _place(
    installed: str, staged: str, package: str, xml: str, ctx: _Context, executable: bool = False
) -> List[Placement]:
    """The entries for one `<file>`: a link the install scripts staged, the links they
    staged under a folder, or the checkout file or folder found by its installed path."""
    if staged in ctx.links:
        return [
            Placement(
                installed=installed, kind="link", source=ctx.links[staged], package=package, xml=xml
            )
        ]
    out = [
        Placement(
            installed=installed + path[len(staged) :],
            kind="link",
            source=target,
            package=package,
            xml=xml,
        )
        for path, target in sorted(ctx.links.items())
        if path.startswith(staged + "/")
    ]
    for index in ctx.indexes:
        kind, source = index.find(installed)
        if kind:
            found = Placement(
                installed=installed,
                kind=kind,
                source=source,
                repo=index.name,
                package=package,
                xml=xml,
                executable=executable,
            )
            return [found, *out]
    return out


def _fill(text: str, values: Mapping[str, str]) -> str:
    return re.sub(r"\$\((\w+)\)", lambda m: values.get(m.group(1), ""), text)


def _links(
    spec: str, target: str, package: str, xml: str, node: Node, ctx: _Context
) -> Iterator[Placement]:
    for name in (_subst(link, ctx.arch) for link in spec.split(";")):
        if name:
            yield Placement(
                installed=name,
                kind="link",
                source=posixpath.relpath(target, posixpath.dirname(name) or "."),
                package=package,
                xml=f"{xml}:{node.line}",
            )
