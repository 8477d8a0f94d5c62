"""Small file and process helpers for laying out the emulated host."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Mapping, Optional, Sequence, Union

from msgspec import Struct

from ..errors import SandboxError
from ..proc import run as run_process
from ..safefs import discard

# rwxr-xr-x: the stand-in scripts (npu-smi, bisheng, build.sh) run for every user.
EXEC_MODE = stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH


def write(path: Path, content: Union[str, bytes], executable: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    if executable:
        path.chmod(EXEC_MODE)
    return path


def write_tree(work: Path, files: Mapping[str, Union[str, bytes]]) -> None:
    """Each file of `files` (path relative to `work` -> content) written under `work`."""
    for name, content in files.items():
        write(work / name, content)


def copy(src: Path, target: Path) -> None:
    """A file, or a folder and everything under it, to `target` (its folders made)."""
    if src.is_dir():
        shutil.copytree(src, target, dirs_exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)


def symlink(link: Path, target: str) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    # A link replaces whatever is there, so laying out a sandbox again never fails on the last one.
    discard(link)
    link.symlink_to(target)


class CommandLog(Struct, kw_only=True):
    """Every command sandbox creation runs, with its output, in one file."""

    path: Path

    def run(
        self,
        argv: Sequence[str],
        cwd: Optional[Path] = None,
        env: Optional[Mapping[str, str]] = None,
        what: str = "",
    ) -> str:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as log:
            log.write(f"$ {' '.join(argv)}  (in {cwd or os.getcwd()})\n")
            log.flush()
            proc = run_process(argv, cwd=cwd, env=env, merge_stderr=True)
            output = proc.stdout.decode("utf-8", "replace")
            log.write(output)
        if proc.returncode != 0:
            tail = "\n".join(output.strip().splitlines()[-15:])
            raise SandboxError(
                f"sandbox creation failed while {what or argv[0]} ('{' '.join(argv)}' exited with "
                f"{proc.returncode}); the full output is in {self.path}.\n{tail}",
                "Check that cmake and a C++ compiler work on this machine (cannbuild doctor), "
                "then run the same command again.",
            )
        return output
