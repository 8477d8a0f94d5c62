"""What upstream publishes, as `recipes/facts/*.toml` records it: SoC families, the
torch / torch_npu / CANN / Python pairings of each source, and per CANN release its HDK
drivers and its release note's ops pairings.  Each fact cites its source in the file.

No single pairing source is complete: the official table (Ascend/pytorch COMPATIBILITY)
stops at torch_npu 2.12.0, Huawei's installer (ascend-deployer) ships pairings the table
does not list, and torch_npu 2.14.0 names its CANN only in its own README.  Each source's
rows stay apart so doctor can say which one pairs a combination (host/compat.py judges).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Optional, Tuple

from msgspec import Struct, field

from .. import facts


class Family(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    soc: str  # the build.sh --soc value
    variant: str  # A2, A3, ...
    product: str
    pci_device: str  # lower-case hex, no 0x
    chips: Tuple[str, ...]
    dies_per_npu: int = 1


class ImageOs(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str
    version: str


class Source(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str  # what doctor prints: "paired by <name>"
    where: str  # the exact file read: repo@commit:path, or registry package and file
    # (CANN, torch_npu, cite): the torch it is built for is torch_npu's major.minor.patch
    torch_npu: Tuple[Tuple[str, str, str], ...] = ()
    # (torch, Python 3 minors, cite)
    python: Tuple[Tuple[str, Tuple[int, ...], str], ...] = ()


class NpuPairing(Struct, frozen=True, kw_only=True):
    """A torch_npu release, the torch it is built for, and a CANN release a source pairs it with."""

    torch_npu: str
    torch: str
    cann: str
    source: Source
    cite: str  # path:line inside the source


class PythonPairing(Struct, frozen=True, kw_only=True):
    """The Python versions a source pairs with one torch release."""

    torch: str
    pythons: Tuple[Tuple[int, int], ...]
    source: Source
    cite: str


class OpsRow(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One row of a release note: a package at one ops release and the toolkits it is
    published for (`9.0.x`: any released 9.0)."""

    package: str  # ascend-cann-ops (the ops bundle), cann-ops-transformer, cann-opbase
    ops: str
    toolkits: Tuple[str, ...]
    section: str  # the note's section
    line: Optional[int] = None  # its line, where the note was read from a snapshot


class ReleaseFacts(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What is published for one CANN release."""

    drivers: Tuple[str, ...] = ()  # HDK versions; `25.5.X` is any of that line
    min_driver: Optional[str] = None  # where only a floor is published
    note: str = ""  # its release note, repo@commit:path
    ops_pairings: Tuple[OpsRow, ...] = ()  # the note's pairing rows
    images: Tuple[str, ...] = ()  # quay.io/ascend/cann tags seen published


class ToolSpec(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A build tool doctor asks for ([[tool]] in recipes/facts/hosts.toml)."""

    name: str
    version_args: Tuple[str, ...] = ("--version",)
    minimum: Optional[str] = None
    required: bool = True
    hint: str = ""
    # No build step calls it unless the recipe lists it under [[host.tools]] (gawk up to 9.0)
    # or a compile cache is configured (ccache): missing, it is a note, not a warning.
    advisory: bool = False


class FactsFile(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    family: Tuple[Family, ...] = ()
    soc_words: Dict[str, str] = field(default_factory=dict)
    image_os: Tuple[ImageOs, ...] = ()
    tool: Tuple[ToolSpec, ...] = ()
    source: Dict[str, Source] = field(default_factory=dict)
    release: Dict[str, ReleaseFacts] = field(default_factory=dict)


def read(cwd: Optional[Path] = None) -> Tuple[FactsFile, ...]:
    return tuple(f for _, f in facts.read(facts.FACTS, FactsFile, cwd))


def releases(cwd: Optional[Path] = None) -> Dict[str, ReleaseFacts]:
    """Release -> its facts (a later file's release replaces an earlier one's)."""
    return {name: rel for f in read(cwd) for name, rel in f.release.items()}


def tools(cwd: Optional[Path] = None) -> Tuple[ToolSpec, ...]:
    """The build tools, in the files' order (a later file's tool of a name replaces it)."""
    return tuple({t.name: t for f in read(cwd) for t in f.tool}.values())


def families(cwd: Optional[Path] = None) -> Tuple[Family, ...]:
    return tuple(fam for f in read(cwd) for fam in f.family)


def torch_release(version: str) -> str:
    """`2.7.1.post2` / `2.7.1+cpu` / `2.12.0rc1` / `2.7.1.dev20250724` -> `2.7.1`, `2.12.0`:
    the torch release of a torch or torch_npu line (what a torch_npu, its release
    candidates and dev wheels included, is built for)."""
    found = re.match(r"\d+(?:\.\d+){0,2}", version.strip())
    return found.group(0) if found else version


def npu_pairings(cwd: Optional[Path] = None) -> Tuple[NpuPairing, ...]:
    return tuple(
        NpuPairing(torch_npu=npu, torch=torch_release(npu), cann=cann, source=src, cite=cite)
        for f in read(cwd)
        for src in f.source.values()
        for cann, npu, cite in src.torch_npu
    )


def python_pairings(cwd: Optional[Path] = None) -> Tuple[PythonPairing, ...]:
    return tuple(
        PythonPairing(torch=torch, pythons=tuple((3, m) for m in minors), source=src, cite=cite)
        for f in read(cwd)
        for src in f.source.values()
        for torch, minors, cite in src.python
    )
