"""Build tools on the host, and the environment `set_env.sh` produces.

The environment is captured once, by sourcing the toolkit's own script in a
clean bash; it is what every build step runs under, and where `bisheng` must
be found.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

from msgspec import Struct
from packaging.version import InvalidVersion, Version

from ..bounded import BINARY, HOST_FILE, MEMO, head, read_state, read_text
from ..errors import UsageError
from ..proc import run
from ..workspace import remember
from .published import ToolSpec, tools

ENV_CAPTURE_TIMEOUT_S = 30.0
TOOL_TIMEOUT_S = 10.0

# bash's own per-shell variables: they differ on every run and say nothing about the toolkit.
_IGNORED_VARS = frozenset({"_", "SHLVL", "PWD", "OLDPWD", "BASH_EXECUTION_STRING"})
# The first dotted number of `cmake version 3.28.3`, `Python 3.10.12`, `git version 2.34.1`.
_VERSION_RE = re.compile(r"(?<!\d)(\d+\.\d+(?:\.\d+)?)")  # from a first digit: linear


class ToolResult(Struct, frozen=True, kw_only=True):
    spec: ToolSpec
    path: Optional[str]
    version: Optional[str]
    error: Optional[str] = None
    binary: Optional[str] = None  # what answered, where it is not `path` (a pyenv shim's target)

    @property
    def too_old(self) -> bool:
        if not (self.spec.minimum and self.version):
            return False
        try:
            return Version(self.version) < Version(self.spec.minimum)
        except InvalidVersion:
            return False


def probe_tool(
    spec: ToolSpec, env: Mapping[str, str], known: Optional[Mapping[str, str]] = None
) -> ToolResult:
    path = shutil.which(spec.name, path=env.get("PATH", os.defpath))
    if path is None:
        return ToolResult(spec=spec, path=None, version=None)
    target = pyenv_target(path, env)
    binary = target or path
    key = binary_key(spec, binary)
    if key is not None and known and key in known:
        return ToolResult(spec=spec, path=path, version=known[key], binary=target)
    try:
        proc = run([binary, *spec.version_args], timeout=TOOL_TIMEOUT_S, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return ToolResult(
            spec=spec,
            path=path,
            version=None,
            error=f"'{spec.name} {' '.join(spec.version_args)}' failed: {exc}",
        )
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    match = _VERSION_RE.search(text)
    return ToolResult(
        spec=spec, path=path, version=match.group(1) if match else None, binary=target
    )


def probe_tools(
    env: Mapping[str, str],
    specs: Optional[Sequence[ToolSpec]] = None,
    known: Optional[Mapping[str, str]] = None,
) -> List[ToolResult]:
    """Probe in parallel: a dozen `--version` calls must not add up.  A binary `known`
    names (read_tool_memo) with the same file identity is not asked again; `specs`
    default to the build tools of recipes/facts/hosts.toml."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda s: probe_tool(s, env, known), specs or tools()))


def read_tool_memo(memo: Optional[Path]) -> Dict[str, str]:
    """The versions remember_tools kept; a memo that cannot be read (garbage, a FIFO)
    is one warning (bounded.read_state) and read as empty."""
    return (read_state(memo, MEMO, Dict[str, str]) if memo is not None else None) or {}


def remember_tools(memo: Path, results: Sequence[ToolResult], known: Mapping[str, str]) -> None:
    """Keep the versions read from binaries for later runs (any run, doctor's too: the
    memo is the user's cache, shared by every workspace and sysroot, as its keys name
    the binary).  What `known` (the memo as read) held stays while its file is there;
    written only when something new was learned, atomically; a memo that cannot be
    written (full disk, read-only home) only costs the next run its probes."""
    seen = {
        key: r.version
        for r in results
        if r.path and r.version and (key := binary_key(r.spec, r.binary or r.path)) is not None
    }
    if seen.items() <= known.items():
        return
    kept = {k: v for k, v in known.items() if os.path.exists(k.split("|", 1)[0])}
    remember(memo, {**kept, **seen})


def binary_key(spec: ToolSpec, path: str) -> Optional[str]:
    """What identifies the file a version was read from: its real path, inode, size,
    mtime and ctime (which no `cp -p` or `touch` can set back), and the name and
    arguments it was called with (a multi-call binary answers by its name).  None where
    the answer is not the file's own: a script (a pyenv shim answers for whatever it
    points at today) and ccache standing in for a compiler (it runs the next one on
    PATH); those are always asked."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
        if head(Path(real), BINARY, 4) != b"\x7fELF":
            return None
    except (OSError, UsageError):
        return None
    if os.path.basename(real) == "ccache" and spec.name != "ccache":
        return None
    args = " ".join([os.path.basename(path), *spec.version_args])
    return f"{real}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}|{args}"


def pyenv_target(path: str, env: Mapping[str, str]) -> Optional[str]:
    """The program a pyenv shim at `path` runs, found as pyenv finds it (PYENV_VERSION,
    else the nearest .python-version from the cwd up, else the global version file) when
    that names one installed version holding it; None otherwise, and the shim is asked.
    A shim is a bash script that runs about 40 processes (65 ms of CPU for `python3
    --version`): its answer cannot be remembered, the interpreter it picks can."""
    shims = os.path.dirname(path)
    root = env.get("PYENV_ROOT") or os.path.dirname(shims)
    if os.path.basename(shims) != "shims" or os.path.join(root, "shims") != shims:
        return None
    version = env.get("PYENV_VERSION")
    if version is None:
        here = Path(env.get("PYENV_DIR") or os.getcwd())
        files = [d / ".python-version" for d in (here, *here.parents)]
        found = next((f for f in [*files, Path(root) / "version"] if f.is_file()), None)
        try:
            version = read_text(found, HOST_FILE).strip() if found else ""
        except UsageError:
            return None
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", version) or version == "system":
        return None  # several versions, `system` or a comment: pyenv's own rules decide
    target = os.path.join(root, "versions", version, "bin", os.path.basename(path))
    return target if os.path.isfile(target) and os.access(target, os.X_OK) else None


def is_tool_memo(path: Path) -> bool:
    """Whether `path` holds a memo remember_tools wrote: keys as binary_key makes them
    (runs before the memo moved to the user cache kept it in a workspace's cache/, which
    ownership.py still takes as a sign that cannbuild made the workspace)."""
    memo = read_state(path, MEMO, Dict[str, str]) or {}
    return bool(memo) and all(re.fullmatch(r"/.*\|\d+\|\d+\|\d+\|.*", k) for k in memo)


class CapturedEnv(Struct, frozen=True, kw_only=True):
    env: Dict[str, str]
    status: int
    stderr: str
    # False when the script ended the shell sourcing it (`exit`, or a failing command under
    # `set -e`): nothing after it ran, so `env` holds nothing the script set.
    completed: bool = True


def capture_env(
    script: Path, base: Mapping[str, str], timeout: float = ENV_CAPTURE_TIMEOUT_S
) -> CapturedEnv:
    """Source `script` in a clean bash and return the resulting environment."""
    # The script's own output goes to /dev/null and its stdin is closed, so an echo or a prompt in
    # it cannot corrupt or stall the capture; its status travels as a NUL-ended pseudo variable,
    # and `env -0` separates values that may contain newlines.
    body = 'source "$1" >/dev/null </dev/null; s=$?; printf "__CANNBUILD_STATUS=%s\\0" "$s"; env -0'
    proc = run(
        ["bash", "-c", body, "cannbuild-set-env", str(script)],
        timeout=timeout,
        env=base,
    )
    env: Dict[str, str] = {}
    status = proc.returncode
    completed = False
    # `BASH_FUNC_<name>%%` entries are bash's exported functions, not variables set_env.sh sets.
    for entry in proc.stdout.decode("utf-8", "replace").split("\0"):
        if "=" not in entry:
            continue
        key, _, value = entry.partition("=")
        if key == "__CANNBUILD_STATUS":
            status = int(value) if value.isdigit() else 1
            completed = True
            continue
        if key in _IGNORED_VARS or key.startswith("BASH_FUNC_"):
            continue
        env[key] = value
    return CapturedEnv(
        env=env,
        status=status,
        stderr=proc.stderr.decode("utf-8", "replace").strip(),
        completed=completed,
    )


def free_bytes(path: Path) -> int:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free
