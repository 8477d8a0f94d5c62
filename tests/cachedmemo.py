"""A dict a test keeps in pytest's cache from one run to the next (`.pytest_cache`), for
results computed per file and keyed by a digest of all they are computed from: a check
over every module of cannbuild then parses only the modules that changed since the last
run.  Without the cache provider (`-p no:cacheprovider`) there is no memo: None."""

from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, Optional


@contextlib.contextmanager
def cached_memo(config: Any, key: str) -> Iterator[Optional[Dict[str, Any]]]:
    cache = getattr(config, "cache", None)
    if cache is None:
        yield None
        return
    memo = cache.get(key, None)
    if not isinstance(memo, dict):
        memo = {}  # none yet, or not one this helper wrote
    yield memo
    cache.set(key, memo)
