"""Reading one recipe table: its keys and value kinds checked, every error naming the
file and the key (shared by reader.py and pins.py)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Mapping, Optional, Tuple

from ..decoded import JSONValue
from ..errors import UsageError
from ..lazy import lazy_module

if TYPE_CHECKING:
    import difflib
else:  # difflib costs an import on every load; only a mistake (a key not known) needs it
    difflib = lazy_module("difflib")


class Reader:
    """Checks one table's keys and types; every error names the file and the key."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, problem: str, hint: Optional[str] = None) -> UsageError:
        return UsageError(f"recipe {self.path}: {where} {problem}", hint)

    def keys(self, table: Mapping[str, JSONValue], allowed: set, where: str) -> None:
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, sorted(allowed), n=1)
                raise self.fail(
                    where,
                    f"has an unknown key {key!r}.",
                    f"Did you mean {close[0]!r}?"
                    if close
                    else f"Known keys: {', '.join(sorted(allowed))}.",
                )

    def get(
        self,
        table: Mapping[str, JSONValue],
        key: str,
        kind: type,
        where: str,
        required: bool = True,
    ) -> JSONValue:
        if key not in table:
            if required:
                raise self.fail(where, f"needs a {key!r} key.")
            return None
        value = table[key]
        if not isinstance(value, kind):
            raise self.fail(
                where, f"key {key!r} should be a {kind.__name__}, got {type(value).__name__}."
            )
        return value

    def strings(self, table: Mapping[str, JSONValue], key: str, where: str) -> Tuple[str, ...]:
        value = self.get(table, key, list, where, required=False) or []
        if not all(isinstance(v, str) for v in value):
            raise self.fail(where, f"key {key!r} should be a list of strings.")
        return tuple(value)


def relative(r: Reader, place: str, where: str, key: str = "place") -> str:
    """A place inside the checkout: relative, without `..`."""
    parts = PurePosixPath(place).parts
    # A place is joined to the checkout: an absolute path, `..` or a backslash could put a file
    # outside it.
    if not place or place.startswith("/") or ".." in parts or "\\" in place:
        raise r.fail(
            where,
            f"{key} {place!r} is not a path inside the checkout.",
            "Write it relative to the repository root, e.g. 'third_party/pkg/x.tar.gz' "
            "(a trailing '/' means: unpacked there).",
        )
    return place
