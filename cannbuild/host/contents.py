"""What the toolkit must contain, not just which versions it reports.

`share/info/*/version.info` says which packages claim to be installed; the real
builds then look for particular files: ops-transformer's `find_package` modules
(dlog, platform, metadef/register, runtime, nnopbase, tiling) and
`cmake/config.cmake` (the opbuild tool, the Ascend C kernel cmake), opbase its
hcc cross toolchain.  A recipe lists them (`[[toolkit.files]]`, read from the
upstream modules at its refs); a missing one is named with its component and the
CANN package that ships it, before any build runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

from msgspec import Struct

from ..bounded import BINARY, head
from ..errors import UsageError
from .check import FAIL, PASS, SKIP, Check

if TYPE_CHECKING:
    from ..recipes.model import ToolkitFile


class MissingFile(Struct, frozen=True, kw_only=True):
    component: str
    package: str
    step: str
    paths: Sequence[str]  # the alternatives looked for, arch filled in
    source: str

    def describe(self) -> str:
        where = " or ".join(self.paths)
        via = f", looked for by {self.source}" if self.source else ""
        return f"{self.component} ({where}; CANN package {self.package}{via})"


def missing_files(
    files: Sequence[ToolkitFile], steps: Sequence[str], home: Path, arch: str
) -> List[MissingFile]:
    """The recipe's toolkit files (for the steps that will run) that `home` lacks."""
    missing: List[MissingFile] = []
    for entry in files:
        if entry.step not in steps:
            continue
        # Recipes write `{{ arch }}-linux/include/...`; the arch is filled in without Jinja.
        paths = [p.replace("{{ arch }}", arch).replace("{{arch}}", arch) for p in entry.paths]
        # Any one of the alternatives will do: a file may sit in another folder at another release.
        if not any((home / p).exists() for p in paths):
            missing.append(
                MissingFile(
                    component=entry.component,
                    package=entry.package,
                    step=entry.step,
                    paths=paths,
                    source=entry.source,
                )
            )
    return missing


# The line a sandbox stand-in prints where a build of the real repositories reaches a toolkit
# part neither an open repository nor the sandbox provides (kernels/toolkit/files.toml [[wall]]).
WALL_MARKER = "cannbuild sandbox wall:"


def wall_of(path: Path) -> Optional[Tuple[str, str]]:
    """(component, what it is) when `path` is a sandbox wall, else None."""
    try:
        text = head(path, BINARY, 4096).decode("utf-8", "replace")
    except (OSError, UsageError):
        return None
    at = text.find(WALL_MARKER)
    if at < 0:
        return None
    said = text[at + len(WALL_MARKER) :].split("\n", 1)[0].strip()
    return said.split(" ", 1)[0], said


def wall_row(step: str, rel: str, where: str, said: Tuple[str, str]) -> Check:
    """A failing row, not blocking (the build runs up to the wall and stops there, naming
    it), for a toolkit program a step runs that is the sandbox's wall."""
    component, what = said
    return Check(
        id=f"recipe.wall.{component}",
        status=FAIL,
        detail=f"{step} runs {rel} ({where}), which is where the sandbox stops: {what}",
        hint="The build runs up to it and stops there, naming it; everything before it builds "
        "against the toolkit's real host side. On an Ascend host with the CANN toolkit the "
        "build goes on.",
    )


def wall_rows(
    files: Sequence[ToolkitFile],
    steps: Sequence[str],
    home: Path,
    arch: str,
    uses: Callable[[ToolkitFile], bool],
) -> List[Check]:
    """A row per sandbox wall among the recipe's toolkit files of the steps that run and
    whose checkout `uses` them (a stand-in checkout runs none), in recipe order (the order
    a build meets them)."""
    rows: Dict[str, Check] = {}
    for entry in files:
        if entry.step not in steps:
            continue
        walls = []
        for p in entry.paths:
            rel = p.replace("{{ arch }}", arch).replace("{{arch}}", arch)
            said = wall_of(home / rel)
            if said is not None and said[0] not in rows:
                walls.append((rel, said))
        # asked only of an entry with a wall (none on a real toolkit): it reads the cmake
        if walls and uses(entry):
            for rel, said in walls:
                rows.setdefault(said[0], wall_row(entry.step, rel, entry.source, said))
    return list(rows.values())


def contents_check(
    files: Sequence[ToolkitFile], steps: Sequence[str], home: Path, arch: str, recipe: str
) -> Check:
    wanted = [f for f in files if f.step in steps]
    if not wanted:
        return Check(
            id="recipe.toolkit_files",
            status=SKIP,
            detail=f"recipe {recipe} lists no toolkit files for the steps that will run",
            hint="Add [[toolkit.files]] to the recipe to have them checked before building.",
        )
    missing = missing_files(files, steps, home, arch)
    if not missing:
        return Check(
            id="recipe.toolkit_files",
            status=PASS,
            detail=f"all {len(wanted)} files recipe {recipe} needs are in {home}",
        )
    # The packages to install, not the files: that is what the user can act on.
    packages = sorted({m.package for m in missing})
    by_step = sorted({m.step for m in missing})
    return Check(
        id="recipe.toolkit_files",
        status=FAIL,
        detail=f"{home} lacks what {', '.join(by_step)} needs: "
        + "; ".join(m.describe() for m in missing),
        hint=f"Install the CANN package{'s' if len(packages) > 1 else ''} {', '.join(packages)} into "
        "this toolkit (same --install-path). Without them the real build stops at CMake "
        "configure ('Could NOT find ...') or at compile ('No such file or directory').",
        blocking=True,
    )
