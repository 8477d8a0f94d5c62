"""A recipe mistake its types cannot tell (msgspec checks those, decoded.convert words
them), as one paragraph naming the file and the table (reader.py, pins.py, repodata.py)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Optional

from ..errors import UsageError


def fail(path: Path, where: str, problem: str, hint: Optional[str] = None) -> UsageError:
    return UsageError(f"recipe {path}: {where} {problem}", hint)


def relative(path: Path, place: str, where: str, key: str = "place") -> str:
    """A place inside the checkout: relative, without `..`."""
    parts = PurePosixPath(place).parts
    # A place is joined to the checkout: an absolute path, `..` or a backslash could put a file
    # outside it.
    if not place or place.startswith("/") or ".." in parts or "\\" in place:
        raise fail(
            path,
            where,
            f"{key} {place!r} is not a path inside the checkout.",
            "Write it relative to the repository root, e.g. 'third_party/pkg/x.tar.gz' "
            "(a trailing '/' means: unpacked there).",
        )
    return place
