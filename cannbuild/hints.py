"""Known failure messages of the CANN builds and installers, each with its fix.

The messages and their fixes are data (recipes/hints/*.toml, which says how they
match); a failed step's log is matched against them here.  A rejected
archive is judged against the copies cannbuild put into the checkouts (when the
caller passes them): which file CMake refused, and whether it was cannbuild's.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, List, Literal, Optional, Sequence, Tuple

from msgspec import Struct

from . import facts
from .bounded import ARCHIVE, digest
from .errors import UsageError
from .redact import redact
from .resources import data_dir

if TYPE_CHECKING:
    from .sources.checkout import PlacedCopy


class Hint(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pattern: str
    text: str
    # "hash": the text is the fallback of rejected_copy(), used when no copies are known
    kind: Literal["", "hash"] = ""


class HintsFile(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    hint: Tuple[Hint, ...] = ()


def hints(cwd: Optional[Path] = None) -> Tuple[Hint, ...]:
    """recipes/hints/*.toml in their order, a user's cannbuild-recipes/hints/*.toml before
    them (a shipped generic hint would otherwise answer first); a pattern that is not a
    regular expression is exit 2 naming its file."""
    found: List[Hint] = []
    shipped = data_dir("recipes")
    for path, data in sorted(
        facts.read(facts.HINTS, HintsFile, cwd), key=lambda f: shipped in f[0].parents
    ):
        for hint in data.hint:
            try:
                re.compile(hint.pattern)
            except re.error as exc:
                raise UsageError(
                    f"hints file {path}: pattern {hint.pattern!r} is not a regular expression "
                    f"({exc}).",
                    "Fix the pattern (Python's re syntax); the shipped recipes/hints/ show some.",
                ) from None
        found += data.hint
    return tuple(found)


# The time ops-transformer's build.sh (and its siblings') puts before every line it prints,
# `} | gawk '{print strftime("[%Y-%m-%d %H:%M:%S]"), $0}'` at v8.5.0 and 9.0, `date '+...'`
# in a `while read` loop at 9.1: taken off before matching, so a message CMake prints over
# several lines (the hash rejection) still reads as one.
_STAMP = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] ", re.MULTILINE)


def match_hint(
    lines: Iterable[str], copies: Optional[Sequence[PlacedCopy]] = None
) -> Optional[str]:
    """The hint for a failed step's log; `copies`: the archives cannbuild put into the
    checkouts (sources.checkout.placed_copies), None when not known."""
    text = _STAMP.sub("", "\n".join(lines))
    for hint in hints():
        match = re.search(hint.pattern, text)
        if match:
            if hint.kind == "hash" and copies is not None:
                return rejected_copy(match, text, copies)
            # An optional group that did not take part fills its `{n}` with "".
            groups = [g or "" for g in match.groups()]
            out = hint.text
            for i, g in enumerate(groups, 1):
                out = out.replace("{" + str(i) + "}", g)
            # The whole line of the match, for the `{line}` of the generic compiler hint.
            line = text[text.rfind("\n", 0, match.start()) + 1 :].split("\n", 1)[0].strip()
            return out.replace("{line}", line[:200])
    return None


def rejected_copy(match: re.Match, text: str, copies: Sequence[PlacedCopy]) -> str:
    """Which file CMake's hash check refused, whether it is the copy cannbuild placed
    (by path, then by name; compared by the same hash with its download), and what to do."""
    verify, algo, path, expected, actual = match.groups()
    name = Path(path).name
    parts: List[str] = [
        f"CMake rejected {path}: its {algo} is {actual}, this ref's CMake expects {expected}"
        if expected and actual
        else f"CMake rejected {path}: its {algo} is not the one this ref's CMake expects"
    ]
    exact = next((c for c in copies if _same_file(c.path, path)), None)
    copy = exact or next(
        (c for c in copies if not c.dest.endswith("/") and c.path.name == name), None
    )
    downloaded = not verify and "Hash mismatch, removing" in text
    if copy is None:
        existed = "File already exists but hash mismatch" in text
        parts.append(
            f"cannbuild put no copy of {name} into a checkout"
            + (
                ": the file was there before the build (left by an earlier one, or put by hand)"
                if existed and not downloaded
                else ""
            )
        )
    else:
        parts.append(_judged(copy, exact is not None, downloaded, algo, expected, actual))
    source = re.search(r"-- Using src='([^']+)'", text)
    if downloaded and source:
        parts.append(
            f"the download from {redact(source.group(1))} served another file than this ref "
            "pins (check the server, a proxy or the mirror)"
        )
    if "File already exists but hash mismatch" in text:
        failed = re.search(r"error: downloading '([^']+)' failed", text)
        parts.append(
            "CMake removed the rejected file and downloaded the archive itself"
            + (f", which failed ({redact(failed.group(1))})" if failed else "")
        )
    if copy is None:
        parts.append(
            "to have cannbuild fetch the archive (through a mirror rule, pinned in the lock) and "
            "put it where this ref looks, name it in the recipe's [[repos.<repo>.third_party]] "
            "with that place (see recipes/*.toml)"
        )
    return "; ".join(parts) + "."


def _judged(
    copy: PlacedCopy, exact: bool, downloaded: bool, algo: str, expected: str, actual: str
) -> str:
    """What the rejected file is to cannbuild's copy of that name: that copy, a file the
    build downloaded or moved beside it, or a changed one; by the copy's download's hash."""
    ours = _digest(copy.cached, algo)
    name = copy.path.name
    copy_of = f"{copy.repo}'s {copy.dest}, sha256 {copy.sha256[:12]} as the lock pins it"
    relock = (
        "the lock pins another archive than this ref's CMake: the mirror served other bytes "
        "when it was locked, or the recipe overrides the hash. Fix cannbuild.mirrors (or "
        f"the recipe's [[repos.{copy.repo}.third_party]]) and run `cannbuild lock`"
    )
    if exact:
        that = f"cannbuild put its copy of {name} there ({copy_of})"
    elif downloaded:
        that = f"the build downloaded it instead of taking the copy cannbuild put at {copy.path} ({copy_of})"
    else:
        that = f"it is a file of the name of the copy cannbuild put at {copy.path} ({copy_of})"
    if ours is None:
        return f"{that}, whose download is no longer in the cache to compare: run `cannbuild fetch` and build again"
    if ours == actual:
        if exact:
            return f"that is the copy cannbuild put there ({copy_of}), unchanged: {relock}"
        return f"{that}, with the same bytes: {relock}"
    if ours == expected:
        if exact:
            return (
                f"{that}, which has the expected {algo}: the file was changed or replaced after "
                "cannbuild placed it (by an earlier build or by hand). Delete "
                f"{copy.checkout} and run again: cannbuild puts the locked archive back"
            )
        return (
            f"{that}, which has the expected {algo}: the build did not look for it there. Check "
            f"the place the recipe's [[repos.{copy.repo}.third_party]] gives {name} against where "
            "this ref looks"
        )
    return (
        f"{that}, with {algo} {ours}: neither that copy nor the file CMake read is the one this "
        "ref pins. Fix the mirror (cannbuild.mirrors) and run `cannbuild lock`"
    )


def _same_file(placed: Path, printed: str) -> bool:
    if os.path.normpath(str(placed)) == os.path.normpath(printed):
        return True
    return os.path.realpath(placed) == os.path.realpath(printed)


def _digest(path: Optional[Path], algo: str) -> Optional[str]:
    """`path`'s hash by CMake's algorithm name (MD5, SHA256, SHA3_256), None if unreadable."""
    if path is None:
        return None
    try:
        return digest(path, ARCHIVE, algo)
    except (UsageError, ValueError):  # unreadable, or an algorithm hashlib does not know
        return None
