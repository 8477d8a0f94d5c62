"""Reproducible packages: SOURCE_DATE_EPOCH for the builds, and what makes a .run vary.

Each build step gets SOURCE_DATE_EPOCH (reproducible-builds.org): the environment's, or
else the committer time of the commit it builds, so the same lock gives the same value
in every workspace.  The sandbox's makeself reads it; the real makeself 2.5.0 that CANN
pins does not: its header carries the packaging date, its payload the files' build
times and the gzip header the time of the tar it compressed.  `what_varies` reads a
built package and names each such file and why (a date, a build time, the workspace
path a library embeds), so the report says where two builds of the same lock differ.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Dict, Iterable, List, Mapping, Optional, Tuple

from msgspec.structs import replace

from ..bounded import ARCHIVE, CHECKOUT_RECORD, MEMO, decode_json, head, open_binary, read_state
from ..errors import UsageError
from ..lazy import lazy_module
from ..proc import run
from ..sources.lock import COMMIT, SHA256
from ..workspace import remember

if TYPE_CHECKING:
    import tarfile

    from .plan import PlannedStep
else:  # only a package not read before is opened
    tarfile = lazy_module("tarfile")

# A makeself header carries the date as text and as a shell assignment; a value starting with `$`
# (`Date of packaging: $DATE`, the line that prints the variable) is not a date.
_DATE_LINE = re.compile(rb"Date of packaging: *([^\s\"$][^\"\n]*)")
_DATE_VAR = re.compile(rb"^DATE=\"([^\"\n$]+)\"", re.MULTILINE)
HEADER_SCAN_BYTES = 4 * 1024 * 1024  # a makeself header is a few kB of shell
CHUNK_BYTES = 1024 * 1024


def _head(checkout: Path) -> Optional[str]:
    """The commit a detached checkout is at, read from .git/HEAD (cannbuild checks out
    locked commits detached); None for anything else."""
    try:
        # A detached HEAD file holds the bare commit id; a branch checkout holds `ref: refs/...`.
        text = head(checkout / ".git" / "HEAD", CHECKOUT_RECORD, 128).decode("ascii").strip()
    except (UsageError, ValueError):
        return None
    return text if COMMIT.fullmatch(text) else None


def commit_time(checkout: Path, memo: Optional[Path] = None) -> Optional[int]:
    """The committer time of the commit checked out in `checkout`, or None.  With
    `memo` (a workspace file), a commit's time is read once and remembered: it is part
    of the commit, so it cannot change."""
    if not (checkout / ".git").exists():
        return None
    head = _head(checkout) if memo is not None else None
    known = (
        read_state(memo, MEMO, Dict[str, str]) if memo is not None and head is not None else None
    ) or {}
    if head is not None and known.get(head, "").isdigit():
        return int(known[head])
    when = _git_commit_time(checkout)
    if head is not None and memo is not None and when is not None:
        remember(memo, {**known, head: str(when)})
    return when


def _git_commit_time(checkout: Path) -> Optional[int]:
    try:
        # %ct: the committer time in Unix seconds, the form SOURCE_DATE_EPOCH takes.
        proc = run(["git", "show", "-s", "--format=%ct", "HEAD"], cwd=checkout, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = proc.stdout.decode().strip()
    return int(text) if proc.returncode == 0 and text.isdigit() else None


def with_source_date(step: PlannedStep) -> PlannedStep:
    """The step with SOURCE_DATE_EPOCH set (unless its environment already has one)."""
    if step.env.get("SOURCE_DATE_EPOCH") or not step.spec.repo:
        return step
    when = commit_time(step.cwd)
    if when is None:
        return step
    extra = {"SOURCE_DATE_EPOCH": str(when)}
    return replace(step, env={**step.env, **extra}, env_delta={**step.env_delta, **extra})


def _split(data: bytes) -> Optional[int]:
    """Where the gzip payload of a makeself archive starts (after the shell header)."""
    # The shell header ends with a newline, then the gzip magic 1f 8b and method 08 (deflate).
    index = data.find(b"\n\x1f\x8b\x08")
    return index + 1 if index >= 0 else None


def what_varies(
    package: Path, workspace: Optional[Path], epoch: Optional[int]
) -> List[Dict[str, str]]:
    """Each part of a makeself .run that depends on when or where it was built: the
    header's packaging date, the gzip time, members' build times, members embedding the
    workspace path.  Empty: nothing found that would differ between two builds.  The
    package is streamed (a built-in ops-transformer package runs to gigabytes)."""
    with open_binary(package, ARCHIVE) as fh:
        top = fh.read(HEADER_SCAN_BYTES)
        start = _split(top)
        if start is None or len(top) < start + 8:
            return [{"file": package.name, "why": "not a makeself archive with a gzip payload"}]
        found = _header_varies(top[:start], top[start : start + 8], epoch)
        fh.seek(start)
        found += _payload_varies(fh, workspace, epoch)
    return found


def _header_varies(header: bytes, gz_head: bytes, epoch: Optional[int]) -> List[Dict[str, str]]:
    found: List[Dict[str, str]] = []
    match = _DATE_VAR.search(header) or _DATE_LINE.search(header)
    if match:
        date = match.group(1).decode("utf-8", "replace").strip()
        if epoch is None or date != _utc_date(epoch):
            found.append(
                {"file": "(makeself header)", "why": f"embeds the packaging date {date!r}"}
            )
    # Bytes 4-7 of a gzip header are MTIME, little-endian (RFC 1952); 0 means none recorded.
    gz_time = int.from_bytes(gz_head[4:8], "little")
    if gz_time and gz_time != epoch:
        found.append(
            {
                "file": "(gzip header)",
                "why": f"carries the time of the tar it compressed ({gz_time})",
            }
        )
    return found


def _payload_varies(
    stream: IO[bytes], workspace: Optional[Path], epoch: Optional[int]
) -> List[Dict[str, str]]:
    found: List[Dict[str, str]] = []
    needle = str(workspace).encode() if workspace else None
    late: List[str] = []
    try:
        # `r|gz`: a forward-only stream, so a gigabyte package is never held or seeked.
        with tarfile.open(fileobj=stream, mode="r|gz") as tar:
            for member in tar:
                name = member.name.lstrip("./") or "."
                if epoch is not None and member.mtime > epoch:
                    late.append(name)
                content = tar.extractfile(member) if needle and member.isfile() else None
                if content is not None and needle is not None and _contains(content, needle):
                    found.append(
                        {
                            "file": name,
                            "why": f"embeds the workspace path {workspace} (an RPATH, "
                            "__FILE__ or a configured path)",
                        }
                    )
    except (OSError, EOFError, tarfile.TarError) as exc:
        found.append({"file": "(payload)", "why": f"cannot be read as tar.gz: {exc}"})
        return found
    if late:
        found.append(
            {
                "file": late[0] if len(late) == 1 else f"{late[0]} and {len(late) - 1} more",
                "why": "carries its build time, later than SOURCE_DATE_EPOCH "
                f"{epoch} (the tar was not made with --mtime)",
            }
        )
    return found


def _contains(content: IO[bytes], needle: bytes) -> bool:
    """Whether `needle` occurs in the stream, read a chunk at a time."""
    tail = b""
    while True:
        chunk = content.read(CHUNK_BYTES)
        if not chunk:
            return False
        if needle in tail + chunk:
            return True
        # Keep the last len(needle) - 1 bytes: a path split across two chunks is still found.
        tail = chunk[-(len(needle) - 1) :] if len(needle) > 1 else b""


def _utc_date(epoch: int) -> str:
    """`LC_ALL=C TZ=UTC date -d @epoch`, as the sandbox's makeself writes it."""
    # %e pads the day with a space, as `date` prints it (`Thu Mar  5 ...`).
    return time.strftime("%a %b %e %H:%M:%S UTC %Y", time.gmtime(epoch))


def artifact_records(
    packages: Iterable[Tuple[str, str, str, Optional[int]]],
    workspace: Path,
    memo: Optional[Path] = None,
) -> List[Dict[str, object]]:
    """A report's artifact entries, one per (step, path, sha256, epoch): the sha256 and
    what in the package varies between builds (`epoch`: the SOURCE_DATE_EPOCH its step
    had).  With `memo`, a package already read (same sha256, workspace and epoch) is
    not read again; the memo keeps only the entries of these packages."""
    known = (read_state(memo, MEMO, Dict[str, str]) if memo is not None else None) or {}
    kept: Dict[str, str] = {}
    records: List[Dict[str, object]] = []
    for step, path, sha256, epoch in packages:
        record: Dict[str, object] = {"step": step, "path": path, "sha256": sha256}
        records.append(record)
        package = Path(path)
        if not package.is_file() or package.suffix != ".run":
            continue
        # Only a real sha256 makes a memo key; anything else is read every time.
        key = f"{sha256} {workspace} {epoch}" if SHA256.fullmatch(sha256) else ""
        varies = _json_list(known.get(key), memo) if key else None
        if varies is None:
            try:
                varies = what_varies(package, workspace, epoch)
            except (OSError, UsageError) as exc:
                why = (
                    exc.message
                    if isinstance(exc, UsageError)
                    else f"cannot be read ({exc.strerror})"
                )
                varies = [{"file": package.name, "why": why}]
                key = ""  # read again next time
        if key:
            kept[key] = json.dumps(varies, sort_keys=True)
        record["reproducible"] = not varies
        record["varies"] = varies
    if memo is not None and kept != known:
        remember(memo, kept)
    return records


def _json_list(text: Optional[str], memo: Optional[Path]) -> Optional[List[Dict[str, str]]]:
    """An entry of the memo; None (read the package again) when it is not one."""
    if text is None:
        return None
    try:
        data: List[Dict[str, str]] = decode_json(text.encode(), memo, MEMO, List[Dict[str, str]])
    except UsageError:
        return None
    return data


def step_epoch(
    env: Mapping[str, str], checkout: Optional[Path], memo: Optional[Path] = None
) -> Optional[int]:
    """The SOURCE_DATE_EPOCH `with_source_date` gives a step of that checkout."""
    given = env.get("SOURCE_DATE_EPOCH", "")
    if given.strip().isdigit():
        return int(given)
    return commit_time(checkout, memo) if checkout is not None else None
