"""Tensors kept per user and machine (usercache.py): FlashAttention's float64 references.

Why: the three 2048-row cases take about a second of CPU each, on every validation after a
rebuild, for the same seeded inputs every time.  The caller keys an entry by everything that
makes it and says whether a kept one fits this run's inputs before it is used; one that does
not (or cannot be read) is made again, so a stale or damaged entry costs time, never a verdict."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple

from .. import usercache

if TYPE_CHECKING:
    from torch import Tensor

KIND = "fa-references"
FILE = "tensors.pt"
Tensors = Dict[str, "Tensor"]


def kept(
    torch: ModuleType,
    key: Optional[str],
    make: Callable[[], Tensors],
    fits: Callable[[Tensors], bool],
) -> Tuple[Tensors, bool]:
    """The tensors kept under `key` where they exist and `fits` them (True), else made by
    `make` and kept (False); made in place where the user has no cache of their own (or
    there is no key)."""
    root = usercache.cache_root(os.environ)
    if root is None or key is None:
        return make(), False
    made: List[Tensors] = []

    def fill(folder: Path) -> None:
        made.append(make())
        torch.save(made[-1], folder / FILE)

    for _ in range(2):
        try:
            entry, _reused = usercache.cached(root, KIND, key, fill)
        except OSError:  # a full disk, a cache made read-only: the reference is not kept
            return (made[-1] if made else make()), False
        if made:
            return made[-1], False
        found = _load(torch, entry / FILE)
        # a tensor of another shape raises in `fits`: that entry is no fit either
        with contextlib.suppress(IndexError, RuntimeError, ValueError, KeyError):
            if found is not None and fits(found):
                return found, True
        # without its manifest the entry is made again next time round
        with contextlib.suppress(OSError):
            (entry / usercache.MANIFEST).unlink()
    return make(), False


def _load(torch: ModuleType, path: Path) -> Optional[Tensors]:
    try:
        found = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # any unreadable entry is made again, whatever torch raises
        return None
    if not isinstance(found, dict) or not all(isinstance(t, torch.Tensor) for t in found.values()):
        return None
    return found
