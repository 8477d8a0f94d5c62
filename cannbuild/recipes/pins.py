"""Checking a recipe's pinned sources, `[repos.X.opbase_source]` (one, the 9.0 form) and
`[[repos.X.pinned_sources]]` (any number), at load (model.SourcePin says what they mean)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Set

from .fields import fail, relative
from .model import RepoSpec, SourcePin


def check_pins(path: Path, repos: List[RepoSpec]) -> None:
    """Each pin is whole and names a repo the recipe has, two pins of one name agree on
    the URL, and no two pins of a repo share a dest."""
    names = {repo.name for repo in repos}
    urls: Dict[str, str] = {}
    for repo in repos:
        wheres = [f"[repos.{repo.name}].opbase_source"] if repo.opbase_source else []
        wheres += [
            f"[[repos.{repo.name}.pinned_sources]] #{i}"
            for i in range(1, 1 + len(repo.pinned_sources))
        ]
        for where, pin in zip(wheres, repo.pins):
            _check_pin(path, pin, where)
        dests: Set[str] = set()
        for pin in repo.pins:
            where = f"[repos.{repo.name}] pin {pin.dest!r}"
            if pin.repo is not None and (pin.repo not in names or pin.repo == repo.name):
                raise fail(path, where, f"names repo {pin.repo!r}, which is not another [repos.*].")
            if pin.name is not None:
                if pin.name in names:
                    raise fail(
                        path,
                        where,
                        f"has name {pin.name!r}, which is a [repos.*] of this recipe.",
                        f"Write repo = {pin.name!r} instead of name and url.",
                    )
                if urls.setdefault(pin.name, pin.url or "") != pin.url:
                    raise fail(path, where, f"gives source {pin.name!r} another url than before.")
            if pin.dest.rstrip("/") in dests:
                raise fail(path, where, "has the dest of another pin of this repo.")
            dests.add(pin.dest.rstrip("/"))


def _check_pin(path: Path, pin: SourcePin, where: str) -> None:
    """A recipe repo (`repo`) or a source of its own (`name` + `url`), its regex compiled
    now so a bad pattern fails at load with the recipe's name, not mid-fetch:
    pin_regex = 'set\\(OPBASE_TAG_ID\\s+([0-9a-f]{40})\\)'."""
    own = pin.name is not None or pin.url is not None
    if (pin.repo is None) == (not own) or (own and None in (pin.name, pin.url)):
        raise fail(
            path,
            where,
            "needs either 'repo' (a [repos.*] whose repository holds the pinned commit) or "
            "both 'name' and 'url' (a source of its own), not both.",
        )
    try:
        groups = re.compile(pin.pin_regex).groups
    except re.error as exc:
        raise fail(path, where, f"pin_regex is not a valid regex: {exc}.") from exc
    if groups < 1:
        raise fail(path, where, "pin_regex has no group: its group 1 must capture the pin.")
    if pin.name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", pin.name):
        # it names the source's git cache and its member of an offline bundle
        raise fail(
            path, where, f"name = {pin.name!r} is not a plain name (letters, digits, . _ -)."
        )
    relative(path, pin.pin_file, where, "pin_file")
    relative(path, pin.dest, where, "dest")
