"""Readers for the key=value files Ascend packages install.

`ascend_toolkit_install.info`, `version.info`, `/etc/ascend_install.info` and
`version.cfg` are all `key=value` lines; values may be quoted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Optional, Tuple

from ..bounded import HOST_FILE, read_bytes
from ..errors import UsageError

# The list syntax of `compatible_version=[V100R001C19],[V100R001C20]` and of version.cfg's
# `[7.6.0.1.220:8.0.0]`.
_BRACKET_RE = re.compile(r"\[([^\]]*)\]")


class InfoFileError(ValueError):
    """A version/info file exists but cannot be read as key=value text."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def read_host_file(path: Path) -> bytes:
    """A host file within bounded.HOST_FILE's bound (real version files are a dozen lines:
    tests/fixtures/host/driver-version.info.25.3.rc1); a FIFO, socket or device where a
    version file should be is refused without blocking, so a stray `mkfifo version.cfg`
    cannot hang doctor."""
    try:
        return read_bytes(path, HOST_FILE)
    except UsageError as exc:
        problem = exc.message.removeprefix(f"{HOST_FILE.what} {path} ").rstrip(".")
        raise InfoFileError(path, problem) from None


def read_kv(path: Path) -> Dict[str, str]:
    """Parse `key=value` lines; raise InfoFileError if unreadable or not text."""
    data = read_host_file(path)
    if b"\0" in data:
        raise InfoFileError(path, "is binary, not a key=value version file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InfoFileError(path, "is not UTF-8 text") from exc
    values: Dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        # Lines look like `Driver_Install_Path_Param=/usr/local/Ascend` or `version=8.2.RC1`;
        # version.cfg opens with `# version: 1.0`, hence the comment skip.
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        # Quotes are dropped: version.info writes `required_package_amct_acl_version="8.5"`.
        values[key.strip()] = value.strip().strip('"').strip("'")
    return values


def get_ci(values: Dict[str, str], key: str) -> Optional[str]:
    """Case-insensitive lookup: installers disagree on `Version` vs `version`."""
    if key in values:
        return values[key]
    lowered = key.lower()
    for k, v in values.items():
        if k.lower() == lowered:
            return v
    return None


def version_cfg_running(values: Dict[str, str]) -> Optional[str]:
    """`toolkit_running_version=[7.6.0.1.220:8.0.0]` -> `8.0.0` (the CANN version)."""
    raw = values.get("toolkit_running_version")
    if not raw:
        return None
    match = _BRACKET_RE.search(raw)
    if not match or ":" not in match.group(1):
        return None
    # version.cfg's `*_installed_version` may list several `[..][..]`; a running version has
    # one, whose CANN version follows the last colon (the component version precedes it).
    return match.group(1).rsplit(":", 1)[1].strip() or None


def bracket_list(raw: Optional[str]) -> Tuple[str, ...]:
    """`[V100R001C21],[V100R001C23]` -> ('V100R001C21', 'V100R001C23')."""
    if not raw:
        return ()
    return tuple(item.strip() for item in _BRACKET_RE.findall(raw) if item.strip())
