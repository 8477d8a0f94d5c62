"""What making the sources ready needs to know, as one record: the sources do not see
the build session (`build.session.Session.source_request` makes it), as `validate/`
takes `ValidationInputs`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional, Tuple

from msgspec import Struct

from ..recipes import Recipe
from ..workspace import Workspace
from .fetch import Fetcher


class SourceRequest(Struct, frozen=True, kw_only=True):
    recipe: Recipe
    values: Mapping[str, Any]  # the template values the refs render from (`v{{ cann.release }}`)
    toolkit_version: str  # the lock's header: what it was resolved for
    soc: str
    sandbox: bool  # resolved on the emulated host: the lock says so
    ops_release: str  # the operator release the refs render from: the lock records it
    ws: Workspace
    fetcher: Fetcher
    lock_file: Path
    locked: bool  # --locked: a lock that does not match is refused, never rewritten
    offline: bool
    bundle: Optional[Path] = None  # --bundle: seeds the caches (and the lock) first
    # repo -> why none of its steps runs (build.plan.idle_repos): its third-party archives are
    # neither fetched nor checked, and the lock says it leaves them out
    idle: Mapping[str, str] = {}
    # URL prefixes the sandbox's mirror rules send fetches to (its stand-in repositories): the
    # lock's header tells a stand-in's commit from one fetched elsewhere
    stand_ins: Tuple[str, ...] = ()
    # the --repos order when it is not the recipe's default_repos: the lock records it
    build_repos: Tuple[str, ...] = ()
    # the optional steps this run selects (--with-step): the lock records them
    with_steps: Tuple[str, ...] = ()
    # --vendor-name when it is not the default: the lock records it
    vendor_name: str = ""
    # --accept-stand-in: the archives (or "all") whose sandbox stand-in may be taken where
    # the checkout declares another file's hash, and the stand-ins' sha256 by URL
    accept_stand_ins: Tuple[str, ...] = ()
    stand_in_sha256: Mapping[str, str] = {}
