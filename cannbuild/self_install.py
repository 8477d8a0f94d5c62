"""How files cannbuild renders (a container context, a CI workflow) install this very
cannbuild: from its tracked sources or its wheel when it runs from a checkout, else from
the VCS requirement pip recorded; never a name that does not resolve."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, List, Optional
from urllib.parse import urlsplit
from urllib.request import url2pathname

from . import __version__
from .bounded import ARCHIVE, DATA_FILE, decode_json, digest, read_bytes
from .errors import UsageError
from .proc import run
from .render.grammars import check_requirement
from .workspace import write_atomic


def source_files(root: Path) -> Optional[List[Path]]:
    """cannbuild's own sources as git tracks them, or None when not running from a checkout.

    Tracked files only: an untracked local recipe (perhaps holding a mirror token)
    must not end up in an image layer or an exported build cache."""
    if not (root / "pyproject.toml").is_file():
        return None
    try:
        listed = run(["git", "ls-files", "-z", "--cached"], cwd=root, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        listed = subprocess.CompletedProcess([], 1, b"", str(exc).encode())
    out = listed.stdout
    if listed.returncode != 0:
        why = listed.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise UsageError(
            f"cannot list cannbuild's sources in {root} with git ({why[0]}).",
            "Render from a git checkout of cannbuild, or from an installed cannbuild "
            "with --cannbuild-spec (a requirement the image can install).",
        )
    keep = ("cannbuild/", "templates/", "kernels/", "recipes/")
    names = {"pyproject.toml", "README.md", "tasks.py"}
    rels = [p for p in out.decode().split("\0") if p]
    return sorted(
        root / rel
        for rel in rels
        if (rel.startswith(keep) or rel in names)
        and "__pycache__" not in rel
        and (root / rel).is_file()
    )


def _direct_url() -> Dict[str, Any]:
    """What pip recorded of where the installed cannbuild came from (PEP 610), or {}."""
    try:
        # bounded: importlib.metadata reads its own record of the installed package
        text = metadata.distribution("cannbuild").read_text("direct_url.json")
        return decode_json((text or "").encode(), "direct_url.json", DATA_FILE, dict)
    except (metadata.PackageNotFoundError, UsageError):
        return {}


def installed_spec() -> Optional[str]:
    """A requirement for the installed cannbuild that resolves elsewhere: the VCS URL and
    commit pip recorded when it was installed from one (PEP 610 direct_url.json)."""
    data = _direct_url()
    vcs = data.get("vcs_info") or {}
    url = str(data.get("url", ""))
    if vcs.get("vcs") == "git" and vcs.get("commit_id") and not url.startswith("file:"):
        return f"cannbuild @ git+{url}@{vcs['commit_id']}"
    return None


def installed_wheel() -> Optional[Path]:
    """The wheel file pip installed this cannbuild from, when it is still there and still
    those bytes (PEP 610: a file: URL with archive_info): a CI job installs the wheel
    committed beside its workflow, and renders the container context with it."""
    data = _direct_url()
    url = str(data.get("url", ""))
    archive = data.get("archive_info")
    if not (isinstance(archive, dict) and url.startswith("file://") and url.endswith(".whl")):
        return None
    path = Path(url2pathname(urlsplit(url).path))
    if not path.is_file():
        return None
    hashes = archive.get("hashes") or {}
    if not isinstance(hashes, dict):
        return None
    recorded = hashes.get("sha256") or str(archive.get("hash", "")).partition("sha256=")[2]
    if recorded and digest(path, ARCHIVE) != recorded:
        return None  # replaced since it was installed: not what runs here
    if not recorded and not _holds_what_is_installed(path):
        return None  # pip kept no hash (a local file): its members say whether it is the same
    return path


def _holds_what_is_installed(wheel: Path) -> bool:
    """Whether every file of the installed cannbuild is in the wheel with the bytes the
    installed RECORD hashes (and each member read passes its CRC)."""
    try:
        ours = {
            str(f): f.hash.value
            for f in metadata.distribution("cannbuild").files or ()
            if f.hash is not None and f.hash.mode == "sha256" and str(f).startswith("cannbuild/")
        }
        with zipfile.ZipFile(io.BytesIO(read_bytes(wheel, ARCHIVE))) as zf:
            packed = set(zf.namelist())
            for name, recorded in ours.items():
                if name not in packed:
                    return False
                # RECORD's form: urlsafe base64 of the sha256, no padding
                got = base64.urlsafe_b64encode(hashlib.sha256(zf.read(name)).digest())
                if got.rstrip(b"=").decode() != recorded:
                    return False
    except (OSError, UsageError, zipfile.BadZipFile, EOFError, ValueError):
        return False  # a bad CRC is BadZipFile
    return bool(ours)


def build_own_wheel(root: Path, into: Path, epoch: Optional[int] = None) -> Path:
    """cannbuild's wheel from its tracked sources (an untracked local recipe, perhaps
    holding a token, stays out), built reproducibly: the same checkout, the same bytes."""
    files = source_files(root)
    if files is None:
        raise UsageError(f"{root} is not a checkout of cannbuild.")
    into.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cannbuild-wheel.") as tmp:
        staging = Path(tmp) / "src"
        for path in files:
            target = staging / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
        out = Path(tmp) / "out"
        env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        env.pop("SOURCE_DATE_EPOCH", None)
        if epoch is not None:
            env["SOURCE_DATE_EPOCH"] = str(epoch)
        proc = run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
             str(out), str(staging)],
            env=env,
        )  # fmt: skip
        wheels = sorted(out.glob("cannbuild-*.whl")) if out.is_dir() else []
        if proc.returncode != 0 or len(wheels) != 1:
            tail = " ".join(proc.stderr.decode("utf-8", "replace").strip().splitlines()[-2:])
            raise UsageError(
                f"could not build cannbuild's wheel from {root} ({tail or 'no wheel made'}).",
                "Check that pip can fetch the build backend (hatchling), or pass "
                "--cannbuild-spec with a requirement your runners can install.",
            )
        final = into / wheels[0].name
        # whole or not at all: the committed workflow checks this file's sha256
        write_atomic(final, read_bytes(wheels[0], DATA_FILE))
    return final


def install_requirement(given: Optional[str]) -> str:
    """What the rendered files install cannbuild with when not from a checkout:
    --cannbuild-spec (`given`, checked by the caller), else the VCS requirement pip
    recorded (checked here: it lands in a Dockerfile or a workflow's run block); with
    neither, nothing that resolves: refused."""
    if given is not None:
        return given
    recorded = installed_spec()
    if recorded is None:
        raise UsageError(
            f"cannbuild {__version__} is not running from a checkout, and no package index "
            "serves it: the rendered files would install a cannbuild that does not resolve.",
            "Pass --cannbuild-spec with a requirement your runners can install (e.g. "
            "'cannbuild @ git+https://git.example.com/cannbuild.git@<commit>' or a wheel URL), "
            "or render from a git checkout of cannbuild (its wheel is then written beside the "
            "files).",
        )
    check_requirement(recorded, "the install source pip recorded (direct_url.json)")
    return recorded
