"""torch / torch_npu versions from package metadata (importing torch takes seconds).

The `*.dist-info` folder names on sys.path are read directly: importing
`importlib.metadata` alone costs ~50 ms, a sixth of doctor's time budget.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Dict, Iterable, Mapping, Optional, Tuple

from msgspec import Struct

from ..bounded import HOST_FILE, head
from ..errors import UsageError

# torch's switch for loading installed device backends (torch_npu) at `import torch`.
AUTOLOAD = "TORCH_DEVICE_BACKEND_AUTOLOAD"
# What libtorch_npu.so and its libtensorpipe.so link from the toolkit (DT_NEEDED).
TORCH_NPU_CANN_LIBRARIES = (
    "libascendcl.so",
    "libhccl.so",
    "libacl_op_compiler.so",
    "libge_runner.so",
    "libgraph.so",
    "libacl_tdt_channel.so",
)
# `torch-2.7.1+cpu.dist-info`, `torch_npu-2.7.1.dev20250724.dist-info`: the folder name
# writes the project's `-` as `_` and a version holds no `-`, so the first `-` splits them.
_DIST_RE = re.compile(r"^(?P<name>[A-Za-z0-9_.]+?)-(?P<version>[^-]+?)\.(?:dist-info|egg-info)$")


# A build for an accelerator other than the CPU: a local version tag (`2.13.0+cu130`,
# `2.5.1+rocm6.2`, `2.7.1+xpu`) or a value in the generated torch/version.py (PyPI's default
# Linux x86_64 wheel is a CUDA build without a tag: `__version__ = '2.13.0'`, `cuda = '13.0'`).
_LOCAL_BUILD = re.compile(r"\+(cu\d+|rocm[\d.]+|xpu)\b")
_VERSION_PY = re.compile(r"^(cuda|hip|xpu)\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
_BUILD_NAMES = {"cuda": "CUDA", "hip": "ROCm", "xpu": "XPU"}
VERSION_PY_BYTES = 64 << 10  # torch/version.py: a dozen lines


class PythonStack(Struct, frozen=True, kw_only=True):
    python: Tuple[int, int]
    torch: Optional[str]
    torch_npu: Optional[str]
    # `CUDA 13.0` for a torch built for an accelerator, None for the CPU build (or unknown)
    torch_device: Optional[str] = None


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def installed_versions(names: Iterable[str], path: Iterable[str]) -> Dict[str, str]:
    """First match on the import path wins, as it would for `import`."""
    wanted = {_normalise(n) for n in names}
    found: Dict[str, str] = {}
    for entry in path:
        if not entry or not os.path.isdir(entry):
            continue
        try:
            listing = os.listdir(entry)
        except OSError:
            continue
        for item in listing:
            match = _DIST_RE.match(item)
            if not match:
                continue
            key = _normalise(match.group("name"))
            if key in wanted and key not in found:
                found[key] = match.group("version")
        if len(found) == len(wanted):
            break
    return found


def read_python_stack() -> PythonStack:
    versions = installed_versions(("torch", "torch_npu"), sys.path)
    torch = versions.get("torch")
    return PythonStack(
        python=(sys.version_info[0], sys.version_info[1]),
        torch=torch,
        torch_npu=versions.get("torch_npu"),
        torch_device=device_build(torch, sys.path) if torch else None,
    )


def device_build(version: Optional[str], path: Iterable[str]) -> Optional[str]:
    """`CUDA 13.0` when torch is built for an accelerator: from the torch/version.py that
    `import torch` would find first on `path` (read, not imported), else from the version's
    local tag; None for the CPU build."""
    for entry in path:
        if not entry or not os.path.isfile(os.path.join(entry, "torch", "__init__.py")):
            continue
        try:
            version_py = Path(entry, "torch", "version.py")
            text = head(version_py, HOST_FILE, VERSION_PY_BYTES).decode("utf-8", "replace")
        except UsageError:
            break
        for key, value in _VERSION_PY.findall(text):
            return f"{_BUILD_NAMES[key]} {value}"
        break
    tagged = _LOCAL_BUILD.search(version or "")
    if tagged is None:
        return None
    tag = tagged.group(1)
    name = "CUDA" if tag.startswith("cu") else "ROCm" if tag.startswith("rocm") else "XPU"
    return f"{name} (+{tag})"


def plain_import_problem(
    stack: PythonStack, env: Mapping[str, str], sourced: bool = False
) -> Optional[str]:
    """Why a plain `import torch` fails in `env`, or None; read without importing torch.

    Once torch_npu is installed, torch auto-loads it at import, and torch_npu needs the
    CANN libraries on the loader path and, with ASCEND_HOME_PATH set, ASCEND_OPP_PATH and
    the home's runtime/ and compiler/ folders (its `_cann_package_check`).  `sourced`: `env`
    is what the toolkit's set_env.sh gave, so a missing library is not for want of it."""
    if stack.torch is None or stack.torch_npu is None or env.get(AUTOLOAD) == "0":
        return None
    dirs = [d for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    for lib in TORCH_NPU_CANN_LIBRARIES:
        if not any(os.path.isfile(os.path.join(d, lib)) for d in dirs):
            why = "after sourcing set_env.sh" if sourced else "(the CANN set_env.sh is not sourced)"
            return f"{lib} is not on LD_LIBRARY_PATH {why}"
    home = env.get("ASCEND_HOME_PATH")
    if home is None:
        return None
    if not os.path.isdir(home):
        return f"ASCEND_HOME_PATH {home} does not exist"
    opp = env.get("ASCEND_OPP_PATH")
    if not opp or not os.path.isdir(opp):
        return f"ASCEND_OPP_PATH {'is not set' if not opp else opp + ' does not exist'}"
    for folder in ("runtime", "compiler"):
        if not os.path.isdir(os.path.join(home, folder)):
            return f"{os.path.join(home, folder)} does not exist"
    return None
