"""Every absolute system path cannbuild reads goes through a `Sysroot`.

Tests and the sandbox point the root at a tree; nothing is monkeypatched.
Absolute symlinks inside the tree (`ascend-toolkit/latest -> /usr/local/Ascend/cann`
on a real host) are followed *inside* the root, as a chroot would.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path, PurePosixPath
from typing import List, Mapping, Optional, Union

from msgspec import Struct

PathLike = Union[str, "os.PathLike[str]"]

# Linux's own limit: path resolution fails with ELOOP after 40 links.
_MAX_SYMLINK_HOPS = 40


class SymlinkLoopError(OSError):
    """A path under the sysroot does not resolve within 40 symlink hops."""


class Sysroot(Struct, frozen=True, kw_only=True):
    root: Path = Path("/")

    @classmethod
    def at(cls, root: PathLike) -> Sysroot:
        return cls(root=Path(os.path.abspath(root)))

    @property
    def is_host(self) -> bool:
        return self.root == Path("/")

    def path(self, abs_path: PathLike) -> Path:
        """`/usr/local/Ascend` -> `<root>/usr/local/Ascend`."""
        p = PurePosixPath(os.fspath(abs_path))
        if not p.is_absolute():
            raise ValueError(f"sysroot paths must be absolute, got {abs_path!r}")
        if self.is_host:
            return Path(p)
        return self.root.joinpath(*p.parts[1:])

    def from_user(self, value: PathLike) -> Path:
        """A path from the environment or a flag.

        Values already inside the root (what a sandbox `set_env.sh` exports) are
        kept; other absolute values are taken as host paths under the root.
        """
        # `~/Ascend` from a flag or HOME-relative config works as the shell would expand it.
        p = Path(os.path.abspath(os.path.expanduser(os.fspath(value))))
        if self.is_host or self.contains(p):
            return p
        return self.path(p)

    def contains(self, p: Path) -> bool:
        try:
            p.relative_to(self.root)
        except ValueError:
            return False
        return True

    def display(self, p: Path) -> str:
        """How a path under the root looks from inside the emulated host."""
        if self.is_host or not self.contains(p):
            return str(p)
        rel = p.relative_to(self.root)
        return "/" + str(rel) if str(rel) != "." else "/"

    def resolve(self, p: Path) -> Path:
        """realpath(), with absolute link targets rebased under the root.

        Raises SymlinkLoopError after 40 hops; missing components are kept as
        they are, like os.path.realpath.
        """
        root = self.root
        if not self.contains(p):
            p = self.path(p)
        parts: List[str] = list(p.relative_to(root).parts)
        resolved: List[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            current = root.joinpath(*resolved, part)
            if current.is_symlink():
                hops += 1
                if hops > _MAX_SYMLINK_HOPS:
                    raise SymlinkLoopError(f"too many levels of symbolic links at {p}")
                target = PurePosixPath(os.readlink(current))
                # `latest -> /usr/local/Ascend/cann` on an emulated host means the root's copy, not
                # the build machine's own /usr/local/Ascend.
                if target.is_absolute():
                    resolved = []
                    parts = list(target.parts[1:]) + parts
                else:
                    # `acllib -> ../8.2.RC2/runtime`: relative links resolve against the folder
                    # they sit in.
                    parts = list(target.parts) + parts
            else:
                resolved.append(part)
        return root.joinpath(*resolved)

    def home(self, env: Mapping[str, str]) -> Optional[Path]:
        home = env.get("HOME")
        # A relative or unset HOME names no folder to look in.
        return self.path(home) if home and home.startswith("/") else None

    def which(self, name: str, env: Mapping[str, str], extra: List[str]) -> Optional[Path]:
        """Find a host tool: first the given absolute paths under the root,
        then PATH, but PATH only on the real host (an emulated host has none)."""
        for candidate in extra:
            path = self.path(candidate)
            if path.is_file() and os.access(path, os.X_OK):
                return path
        # An emulated host must not find the build machine's real npu-smi or toolkit tools.
        if self.is_host:
            found = shutil.which(name, path=env.get("PATH", os.defpath))
            return Path(found) if found else None
        return None
