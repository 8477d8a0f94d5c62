"""This machine's pip settings, handed to a container: the same indexes and wheel folders.

A CI machine may reach PyPI only through its pip configuration (local wheel folders and
file:// indexes, a constraints file, a CA bundle).  A container started from a bare base
knows none of it, so a test that installs inside one gets the settings as PIP_* variables
and every local folder or file they name bind-mounted read-only at the same path.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple
from urllib.parse import unquote, urlparse

# The settings that say where packages come from and how to reach them; the rest (a
# user's log file, cache folder, --user) are about the host and stay there.
FORWARDED = (
    "index-url",
    "extra-index-url",
    "find-links",
    "no-index",
    "constraint",
    "cert",
    "client-cert",
    "trusted-host",
    "proxy",
    "timeout",
    "default-timeout",
    "retries",
    "disable-pip-version-check",
)
# pip's own order: the environment beats the install section, which beats global.
_SECTIONS = (":env:", "install", "global")


def pip_config_list(python: str = sys.executable) -> str:
    """What `pip config list` prints for this interpreter's pip (every file and PIP_* variable)."""
    proc = subprocess.run(
        [python, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=120
    )
    return proc.stdout if proc.returncode == 0 else ""


def settings(listing: str) -> Dict[str, str]:
    """The forwarded settings of a `pip config list` output, each from the section that wins."""
    found: Dict[Tuple[str, str], str] = {}
    for line in listing.splitlines():
        head, eq, value = line.partition("=")
        section, dot, key = head.rpartition(".")
        if not (eq and dot) or key not in FORWARDED or section not in _SECTIONS:
            continue
        try:
            found[(section, key)] = str(ast.literal_eval(value))
        except (SyntaxError, ValueError):
            found[(section, key)] = value
    chosen: Dict[str, str] = {}
    for key in FORWARDED:
        for section in _SECTIONS:
            if (section, key) in found:
                chosen[key] = found[(section, key)]
                break
    return chosen


# Files the settings name are mounted here (the image's own CA bundle, which apt may
# rewrite, stays writable); folders keep their path, since a local index links beside itself.
FILES_AT = "/opt/hostpip"


def for_container(chosen: Dict[str, str]) -> Tuple[Dict[str, str], List[Tuple[str, str]]]:
    """PIP_* variables for the settings, and the (host, container) paths to mount read-only."""
    env: Dict[str, str] = {}
    mounts: List[Tuple[str, str]] = []
    for key, value in chosen.items():
        items = []
        for item in value.split():
            path = _local_path(key, item)
            if not path or not os.path.exists(path) or ":" in path:
                items.append(item)
                continue
            if os.path.isfile(path) and key in ("constraint", "cert", "client-cert"):
                inside = f"{FILES_AT}/{key}-{os.path.basename(path)}"
                items.append(inside)
            else:
                inside = path
                items.append(item)
            if (path, inside) not in mounts:
                mounts.append((path, inside))
        env["PIP_" + key.upper().replace("-", "_")] = " ".join(items)
    return env, mounts


def _local_path(key: str, item: str) -> str:
    if key in ("constraint", "cert", "client-cert"):
        return item if os.path.isabs(item) else ""
    if key == "find-links":
        if item.startswith("file://"):
            return unquote(urlparse(item).path)
        return item if "://" not in item and os.path.isabs(item) else ""
    if key in ("index-url", "extra-index-url") and item.startswith("file://"):
        # a local "simple" index links its files beside it (../../files/x.whl): its parent
        return str(Path(unquote(urlparse(item).path)).parent)
    return ""
