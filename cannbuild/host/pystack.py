"""torch / torch_npu versions from package metadata (importing torch takes seconds).

The `*.dist-info` folder names on sys.path are read directly: importing
`importlib.metadata` alone costs ~50 ms, a sixth of doctor's time budget.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

_DIST_RE = re.compile(r"^(?P<name>[A-Za-z0-9_.]+?)-(?P<version>[^-]+?)\.(?:dist-info|egg-info)$")


@dataclass(frozen=True)
class PythonStack:
    python: Tuple[int, int]
    torch: Optional[str]
    torch_npu: Optional[str]


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
    return PythonStack(
        python=(sys.version_info[0], sys.version_info[1]),
        torch=versions.get("torch"),
        torch_npu=versions.get("torch_npu"),
    )
