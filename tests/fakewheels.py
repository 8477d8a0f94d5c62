"""Small real wheels standing in for torch's (a CUDA build, the CPU build, torch_npu, an
nvidia-* library), and a venv that holds them: what a reader's pip installs, without the
gigabytes.  pip installs them for real; doctor reads them as it reads the real ones."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Dict, Iterable, Mapping, Sequence

ROOT = Path(__file__).resolve().parents[1]


def wheel(
    folder: Path,
    name: str,
    version: str,
    files: Mapping[str, str],
    requires: Sequence[str] = (),
) -> Path:
    """A py3-none-any wheel of `files` (path -> text) with its METADATA, WHEEL and RECORD."""
    dist = f"{name.replace('-', '_')}-{version}"
    info = f"{dist}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    members: Dict[str, str] = {
        **files,
        f"{info}/METADATA": meta,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    members[f"{info}/RECORD"] = "\n".join(record) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as zf:
        for path, text in members.items():
            zf.writestr(path, text)
    return out


def torch_wheel(folder: Path, version: str, cuda: str = "", requires: Sequence[str] = ()) -> Path:
    """torch `version`; with `cuda` its torch/version.py says so, as PyPI's CUDA wheel's does."""
    version_py = (
        f"__version__ = '{version}'\ncuda = {cuda!r}\n"
        if cuda
        else f"__version__ = '{version}'\ncuda = None\n"
    )
    return wheel(
        folder,
        "torch",
        version,
        {
            "torch/__init__.py": "from .version import __version__\n",
            "torch/version.py": version_py,
        },
        requires,
    )


def torch_npu_wheel(folder: Path, version: str) -> Path:
    # torch-npu 2.13.0 declares `Requires-Dist: torch==2.13.0.*` (real-host-findings.md)
    return wheel(
        folder,
        "torch-npu",
        version,
        {"torch_npu/__init__.py": f"__version__ = '{version}'\n"},
        [f"torch=={version}.*"],
    )


# What the venv borrows from the test's own environment (cannbuild's dependencies), never
# torch or what a torch brings: those are what the tests install.
_NOT_BORROWED = ("torch", "functorch", "nvidia", "triton", "pip", "setuptools", "_distutils_hack")


def venv_with_cannbuild(where: Path, torch: bool = False) -> Path:
    """A fresh venv (its own pip) that runs this checkout's cannbuild with the test
    environment's dependencies (linked, torch left out unless `torch`: then the test
    environment's torch without torch_npu); its bin folder is returned."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    borrowed = where / "borrowed"
    borrowed.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        low = entry.name.lower()
        wanted = torch and low.startswith(("torch", "functorch")) and "npu" not in low
        if (
            (low.startswith(_NOT_BORROWED) and not wanted)
            or entry.suffix == ".pth"
            or low.startswith("__editable__")
        ):
            continue
        os.symlink(entry, borrowed / entry.name)
    python = where / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    (Path(own) / "cannbuild-test.pth").write_text(f"{ROOT}\n{borrowed}\n")
    return where / "bin"


def empty_pip_env(bin_dir: Path, wheels: Path, base: Mapping[str, str]) -> Dict[str, str]:
    """A reader's shell in that venv: no pip configuration at all, and only a wheel folder
    (no index: the tests stay off the network)."""
    env = {k: v for k, v in base.items() if not k.startswith("PIP_")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{base.get('PATH', '')}",
        VIRTUAL_ENV=str(bin_dir.parent),
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheels),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    env.pop("PYTHONPATH", None)
    return env


def installed(listing: str) -> Iterable[str]:
    """Names of `pip list --format=freeze`."""
    return [line.split("==")[0].lower() for line in listing.splitlines() if "==" in line]
