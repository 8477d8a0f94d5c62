"""A workspace overlay of the CANN toolkit, so installing opbase never touches the toolkit.

opbase's .run is installed into an empty staging prefix; the overlay is then a
tree that looks like the toolkit with the staged files on top.  Only the
folders the staged files live in are real folders; every other entry is a
symlink to the toolkit's own file, so the overlay costs a few hundred links,
not a copy.  The build environment captured from set_env.sh is rewritten to
point at the overlay.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

from .. import safefs


def staged_root(stage: Path) -> Path:
    """The folder the installer filled: <stage>/cann, <stage>/<version_dir>, or <stage> itself."""
    # opbase's .run installs into `<install-path>/cann/` (reference cann-build-systems.md §1.3);
    # the `share/info/opbase/` it writes marks the root whichever folder it chose.
    if (stage / "share" / "info").is_dir():
        return stage
    candidates = (
        [p for p in sorted(stage.iterdir()) if (p / "share" / "info").is_dir()]
        if stage.is_dir()
        else []
    )
    if len(candidates) != 1:
        found = ", ".join(p.name for p in candidates) or "nothing with share/info"
        raise FileNotFoundError(f"expected one installed package root under {stage}, found {found}")
    return candidates[0]


def expose_op_common(stage_root: Path, arch: str, under: str) -> Optional[str]:
    """Make opbase's op_common headers visible where ops-transformer looks for them.

    opbase installs them under <arch>-linux/pkg_inc only; ops-transformer at the 8.3 pin
    looks under <arch>-linux/include.  A relative link in the (cannbuild-made) staging tree
    puts them in both places of the overlay.  Returns what was done, or None."""
    # 8.5 and later recipes keep `pkg_inc`, where both repos agree.
    if under == "pkg_inc":
        return None
    archdir = stage_root / f"{arch}-linux"
    src = archdir / "pkg_inc" / "op_common"
    dst = archdir / under / "op_common"
    if not src.is_dir() or os.path.lexists(dst):
        return None
    # the installer made this tree: a link on the way could lead into the toolkit
    safefs.make_dirs(stage_root, dst.parent, "the staged opbase tree")
    dst.symlink_to(os.path.join("..", "pkg_inc", "op_common"))
    return (
        f"opbase installed op_common under {arch}-linux/pkg_inc; ops-transformer looks under "
        f"{arch}-linux/{under}: exposed it there too"
    )


def build_overlay(
    toolkit_home: Path, stage_root: Path, overlay: Path, workspace: Optional[Path] = None
) -> int:
    """(Re)build `overlay` = toolkit with `stage_root` on top; returns the number of staged
    files.  The old overlay is removed without following a link on the way to it
    (safefs, below `workspace`, by default the overlay's folder)."""
    owner = workspace if workspace is not None else overlay.parent
    safefs.remove(owner, overlay, "the toolkit overlay")
    safefs.make_dirs(owner, overlay, "the toolkit overlay")
    root = Path(os.path.realpath(toolkit_home))
    return _merge(root, stage_root, overlay, root)


def _merge(real: Path, staged: Path, dst: Path, root: Path) -> int:
    names = set()
    if real.is_dir():
        names.update(os.listdir(real))
    names.update(os.listdir(staged))
    count = 0
    for name in sorted(names):
        r = real / name
        s = staged / name
        out = dst / name
        if os.path.lexists(s):
            # A folder both trees have is merged, entry by entry, so staged files sit beside links
            # to the toolkit's own.
            if s.is_dir() and not s.is_symlink() and r.is_dir():
                out.mkdir()
                count += _merge(Path(os.path.realpath(r)), s, out, root)
            # Only the staged package has it: copied whole (a few of opbase's folders).
            elif s.is_dir() and not s.is_symlink():
                shutil.copytree(s, out, symlinks=True)
                count += sum(1 for _ in out.rglob("*"))
            elif s.is_symlink():
                out.symlink_to(os.readlink(s))
            else:
                shutil.copy2(s, out)
                count += 1
        elif r.is_symlink() and _inside(r, root) and not os.path.isabs(os.readlink(r)):
            # e.g. lib64 -> x86_64-linux/lib64: keep it relative, so it reaches the overlay's copy
            out.symlink_to(os.readlink(r))
        else:
            # Everything the package does not replace stays the toolkit's own file, by absolute
            # link.
            out.symlink_to(os.path.realpath(r))
    return count


def _inside(link: Path, root: Path) -> bool:
    real = os.path.realpath(link)
    return real == str(root) or real.startswith(str(root) + os.sep)


def overlay_env(env: Mapping[str, str], toolkit_paths: List[Path], overlay: Path) -> Dict[str, str]:
    """Rewrite every value that points into the toolkit so it points into the overlay."""
    prefixes: List[Tuple[str, str]] = []
    for path in toolkit_paths:
        # The env may name the toolkit as found (`ascend-toolkit/latest`, `cann`) or resolved
        # (`cann-9.0.0`): both are rewritten.
        for variant in {str(path), os.path.realpath(path)}:
            prefixes.append((variant.rstrip("/"), str(overlay)))
    # Longest prefix first, should one of the toolkit's paths lie inside another.
    prefixes.sort(key=lambda kv: -len(kv[0]))
    real_roots = sorted({os.path.realpath(p) for p in toolkit_paths}, key=len, reverse=True)
    out: Dict[str, str] = {}
    for key, value in env.items():
        # PATH-like values are `:`-joined lists; each entry is rewritten on its own.
        out[key] = ":".join(
            _rewrite(part, prefixes, real_roots, overlay) for part in value.split(":")
        )
    return out


def _rewrite(
    part: str, prefixes: List[Tuple[str, str]], real_roots: List[str], overlay: Path
) -> str:
    for old, new in prefixes:
        if part == old or part.startswith(old + "/"):
            return new + part[len(old) :]
    if part.startswith("/"):
        # another path to the same toolkit (e.g. ascend-toolkit/latest -> cann)
        real = os.path.realpath(part)
        for root in real_roots:
            if real == root or real.startswith(root + "/"):
                return str(overlay) + real[len(root) :]
    return part
