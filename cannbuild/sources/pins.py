"""Pinned sources: the git sources a checkout's own CMake clones at a pin it declares
(ops-transformer 9.0 opbase at OPBASE_TAG_ID; 9.1 also ops-tensor at OPTENSOR_TAG_ID and
the shared cann/cmake repository at the tag CANN_CMAKE_TAG).  cannbuild reads the pin
from the checkout at its locked commit, resolves it in the source's own git cache, and
locks it as a commit under `<repo>:<dest>`, naming the file and line that declared it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Tuple

from ..errors import FetchError, UsageError
from ..recipes import SourcePin
from ..redact import redact
from .checkout import has_commit, resolve_ref
from .fetch import Fetcher, GitFailed
from .lock import LockedRepo
from .state import pin_name

_COMMIT = re.compile(r"[0-9a-f]{40}")


def read_pin(
    fetcher: Fetcher, cache: Path, owner: str, commit: str, pin: SourcePin
) -> Tuple[str, int]:
    """(the value `pin_regex` captures in `pin_file` of `owner` at `commit`, its line)."""
    where = f"[repos.{owner}] pin {pin.dest!r}"
    try:
        text = fetcher.git(["show", f"{commit}:{pin.pin_file}"], cwd=cache)
    except GitFailed:
        raise UsageError(
            f"{owner} at {commit[:12]} has no {pin.pin_file}, where the recipe's {where} "
            "reads its pin.",
            "The recipe does not match this ref: check its pins (opbase_source, pinned_sources).",
        ) from None
    match = re.search(pin.pin_regex, text)
    if not match or not match.group(1):
        raise UsageError(
            f"{pin.pin_file} at {owner} {commit[:12]} has no line matching {pin.pin_regex!r}.",
            "The recipe does not match this ref; check [repos.*.opbase_source] or "
            "[[repos.*.pinned_sources]].",
        )
    return match.group(1), text.count("\n", 0, match.start()) + 1


def resolve_pin(
    fetcher: Fetcher,
    owner_cache: Path,
    cache: Path,
    owner: str,
    commit: str,
    pin: SourcePin,
    url: str,
) -> LockedRepo:
    """The lock entry of `pin`: its value read from the checkout (`owner` at `commit`,
    in `owner_cache`), resolved in the pinned source's git `cache` (a tag peeled to the
    commit it tags) and checked to be there, since the build checks it out offline."""
    value, line = read_pin(fetcher, owner_cache, owner, commit, pin)
    declared = f"{pin.pin_file}:{line}"
    if pin.pin == "tag":
        pinned, _ = resolve_ref(fetcher, cache, {"tag": value}, url)
        ref = f"tag {value}, pinned by {declared}"
    else:
        if not _COMMIT.fullmatch(value):
            raise UsageError(
                f"{declared} at {owner} {commit[:12]} pins {value!r}, which is not a commit id.",
                'If it is a tag name, set pin = "tag" in the recipe\'s pinned source.',
            )
        pinned = value
        ref = f"pinned by {declared}"
    if not has_commit(fetcher, cache, pinned):
        raise FetchError(
            f"{declared} at {owner} {commit[:12]} pins {pin.source} {pinned[:12]}, "
            f"which no branch or tag of {redact(url)} contains.",
            "Check the mirror serves the whole repository, or pin another commit.",
        )
    return LockedRepo(
        name=pin_name(owner, pin.dest),
        url=redact(url),
        ref=ref,
        commit=pinned,
        source=pin.name or "",
    )


__all__ = ["read_pin", "resolve_pin"]
