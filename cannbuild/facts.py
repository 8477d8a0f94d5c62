"""Release facts as data: what each CANN release publishes (`recipes/facts/*.toml`: SoC
families, torch pairings, drivers, ops pairings) and what the sandbox emulates of it
(`recipes/sandbox/*.toml`: the toolkit's records and the stand-in repositories), and the
failure messages of the CANN builds with their fixes (`recipes/hints/*.toml`, hints.py),
each fact citing its source in a comment.

A user's `cannbuild-recipes/facts/` and `cannbuild-recipes/sandbox/` in the folder a
command runs in are read after the shipped files, as `cannbuild-recipes/<train>.toml`
adds a recipe: adding a train is adding data.  Each file is read through the bounded
reader and decoded by msgspec into the caller's schema; a mistake is exit 2 naming the
file and the key."""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Tuple, Type, TypeVar

import msgspec

from .bounded import RECIPE, read_text
from .decoded import convert
from .lazy import lazy_module
from .resources import USER_DATA, data_dir

if TYPE_CHECKING:
    from . import usercache
else:  # its imports (the fetch module's) are paid when a file is read
    usercache = lazy_module("cannbuild.usercache")

T = TypeVar("T", bound=msgspec.Struct)
FACTS = "facts"
SANDBOX = "sandbox"
HINTS = "hints"
# doctor reads the host in threads that each read the facts: one decodes them, the others
# wait for its cached result (two decoded them all again, 3 ms)
_DECODING = threading.Lock()


def files(kind: str, cwd: Optional[Path] = None) -> Tuple[Path, ...]:
    """`recipes/<kind>/*.toml`, then the user's `cannbuild-recipes/<kind>/*.toml`."""
    found = []
    for folder in (data_dir("recipes") / kind, (cwd or Path.cwd()) / USER_DATA / kind):
        if folder.is_dir():
            found += sorted(folder.glob("*.toml"))
    return tuple(found)


def read(kind: str, schema: Type[T], cwd: Optional[Path] = None) -> Tuple[Tuple[Path, T], ...]:
    """Each file of `kind` and its content decoded as `schema`, in the order `files` gives
    (a later file's entry of a name replaces an earlier one's where the caller merges by
    name); the path, for a mistake only the whole data shows to name its file."""
    paths = files(kind, cwd)
    stamps = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            continue  # went away since listed: read what is there
        stamps.append((str(path), st.st_mtime_ns, st.st_size))
    with _DECODING:
        return _decoded(kind, schema, tuple(stamps))


@functools.lru_cache(maxsize=16)
def _decoded(
    kind: str, schema: Type[T], stamps: Tuple[Tuple[str, int, int], ...]
) -> Tuple[Tuple[Path, T], ...]:
    # keyed by each file's name, time and size: one parse per process unless a file changes
    return tuple((Path(name), _decode(Path(name), kind, schema)) for name, _, _ in stamps)


def _decode(path: Path, kind: str, schema: Type[T]) -> T:
    # a data file under recipes/ (or the user's cannbuild-recipes/): read as a recipe is
    hint = f"Fix the file; the shipped recipes/{kind}/*.toml show each key with its source."
    data = usercache.parsed_toml(read_text(path, RECIPE), path, RECIPE)
    return convert(data, schema, f"{kind} file {path}", hint)
