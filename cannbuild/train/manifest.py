"""The official `repo`-tool manifest of a CANN release (hicann/manifest `cann.xml`, one
per release tag): the revision of each repository that makes up that release.

`<project name="opbase" ... revision="9.1.0"/>` (hicann/manifest@v9.1.0:cann.xml:6) names a
branch; `revision="refs/tags/v9.0.0"` (@v9.0.0:cann.xml:6) a tag; a project without one
takes `<default revision=...>` (:4).  Read with a pattern per element, so every revision
keeps the line it was read from for the recipe's citation; in one pass (an element ends
at the next `<`, lines are counted on from the last element), so the time is linear in
the file whatever it holds (bench/bench_bounded_reads.py: a 4 MiB manifest)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from msgspec import Struct
from msgspec.structs import replace

from ..bounded import MANIFEST, read_text
from ..errors import UsageError

_ELEMENT = re.compile(r"<(project|default|remote)\b([^<>]*)>")
# A name begins where a run of name characters begins: tried at every letter, a 4 MiB
# element of letters took hours.
_ATTR = re.compile(r'(?<![A-Za-z0-9_.-])([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*"([^"]*)"')
_COMMIT = re.compile(r"[0-9a-f]{40}")


class Revision(Struct, frozen=True, kw_only=True):
    kind: str  # "tag", "branch" or "commit"
    value: str
    cite: str  # "cann.xml:6"


class Manifest(Struct, frozen=True, kw_only=True):
    path: Path
    remote: str  # <remote fetch=...>: where the projects are
    projects: Tuple[Tuple[str, Revision], ...]

    def revision(self, name: str) -> Optional[Revision]:
        return dict(self.projects).get(name)


def revision_of(text: str, cite: str) -> Revision:
    """`refs/tags/X` -> tag X, `refs/heads/X` -> branch X, 40 hex -> commit, else a branch
    (the repo tool's reading of `revision`)."""
    for prefix, kind in (("refs/tags/", "tag"), ("refs/heads/", "branch")):
        if text.startswith(prefix):
            return Revision(kind=kind, value=text[len(prefix) :], cite=cite)
    return Revision(kind="commit" if _COMMIT.fullmatch(text) else "branch", value=text, cite=cite)


def _without_comments(text: str) -> str:
    """`text` with each `<!-- ... -->` blanked but for its line ends (a revision commented
    out is no revision; the lines after it keep their numbers); found by str.find, so an
    unclosed comment costs one scan, not one per `<!--`."""
    parts, at = [], 0
    while (start := text.find("<!--", at)) != -1:
        end = text.find("-->", start + 4)
        end = len(text) if end == -1 else end + 3
        parts += [text[at:start], "\n" * text.count("\n", start, end)]
        at = end
    return "".join(parts) + text[at:]


def read_manifest(path: Path) -> Manifest:
    text = _without_comments(read_text(path, MANIFEST))
    label = path.name
    line, counted = 1, 0
    default: Optional[Revision] = None
    remote = ""
    found: Dict[str, Revision] = {}
    pending: List[Tuple[str, str]] = []
    listed: Dict[str, str] = {}  # project name -> where
    for match in _ELEMENT.finditer(text):
        attrs = dict(_ATTR.findall(match.group(2)))
        line += text.count("\n", counted, match.start())
        counted = match.start()
        cite = f"{label}:{line}"
        if match.group(1) == "remote":
            remote = remote or attrs.get("fetch", "")
        elif match.group(1) == "default" and "revision" in attrs:
            default = revision_of(attrs["revision"], cite)
        elif match.group(1) == "project" and "name" in attrs:
            if attrs["name"] in listed:
                raise UsageError(
                    f"--manifest {path}: project {attrs['name']!r} is listed twice "
                    f"({listed[attrs['name']]} and {cite}).",
                    "Keep one of them: the repo tool refuses such a manifest too.",
                )
            listed[attrs["name"]] = cite
            if "revision" in attrs:
                found[attrs["name"]] = revision_of(attrs["revision"], cite)
            else:
                pending.append((attrs["name"], cite))
    for name, cite in pending:
        if default is not None:
            found[name] = replace(default, cite=f"{cite} (default {default.cite})")
    if not found:
        raise UsageError(
            f"--manifest {path}: no <project name=... revision=...> in it.",
            "Pass the cann.xml of a release (hicann/manifest, at the release's tag).",
        )
    return Manifest(path=path, remote=remote, projects=tuple(sorted(found.items())))
