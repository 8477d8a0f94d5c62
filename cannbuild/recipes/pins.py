"""Reading a recipe's pinned sources: `[repos.X.opbase_source]` (one, the 9.0 form) and
`[[repos.X.pinned_sources]]` (any number), each checked at load (model.SourcePin says
what they mean)."""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Set

from ..decoded import JSONValue
from .fields import Reader, relative
from .model import PIN_KINDS, RepoSpec, SourcePin

_PIN_KEYS = {"repo", "pin_file", "pin_regex", "dest"}
_PINNED_KEYS = _PIN_KEYS | {"name", "url", "pin"}


def read_pins(r: Reader, table: Mapping[str, JSONValue], where: str, name: str) -> List[SourcePin]:
    """The pins of `[repos.<name>]`: `opbase_source` first, then `pinned_sources`."""
    pins = [_source_pin(r, table, where)] if "opbase_source" in table else []
    pins += [
        _pinned(r, entry, f"[[repos.{name}.pinned_sources]] #{i}")
        for i, entry in enumerate(
            r.get(table, "pinned_sources", list, where, required=False) or [], 1
        )
    ]
    return pins


def _source_pin(r: Reader, table: Mapping[str, JSONValue], where: str) -> SourcePin:
    ptable = r.get(table, "opbase_source", dict, where)
    where = f"{where}.opbase_source"
    r.keys(ptable, _PIN_KEYS, where)
    pin = SourcePin(**{k: r.get(ptable, k, str, where) for k in _PIN_KEYS})
    _check_pin_values(r, pin, where)
    return pin


def _pinned(r: Reader, table: JSONValue, where: str) -> SourcePin:
    """One `[[repos.X.pinned_sources]]`: a recipe repo (`repo`) or a source of its own
    (`name` + `url`)."""
    if not isinstance(table, dict):
        raise r.fail(where, f"should be a table, got {type(table).__name__}.")
    r.keys(table, _PINNED_KEYS, where)
    values = {k: r.get(table, k, str, where, required=False) for k in _PINNED_KEYS}
    for key in ("pin_file", "pin_regex", "dest"):
        if values[key] is None:
            raise r.fail(where, f"needs a {key!r} key.")
    own = values["name"] is not None or values["url"] is not None
    if (values["repo"] is None) == (not own) or (own and None in (values["name"], values["url"])):
        raise r.fail(
            where,
            "needs either 'repo' (a [repos.*] whose repository holds the pinned commit) or "
            "both 'name' and 'url' (a source of its own), not both.",
        )
    pin = SourcePin(**{k: v for k, v in values.items() if v is not None})
    _check_pin_values(r, pin, where)
    return pin


def _check_pin_values(r: Reader, pin: SourcePin, where: str) -> None:
    # Compiled now so a bad pattern fails at load with the recipe's name, not mid-fetch:
    #   pin_regex = 'set\(OPBASE_TAG_ID\s+([0-9a-f]{40})\)'
    try:
        groups = re.compile(pin.pin_regex).groups
    except re.error as exc:
        raise r.fail(where, f"pin_regex is not a valid regex: {exc}.") from exc
    if groups < 1:
        raise r.fail(where, "pin_regex has no group: its group 1 must capture the pin.")
    if pin.pin not in PIN_KINDS:
        raise r.fail(where, f"pin = {pin.pin!r} is not one of {', '.join(PIN_KINDS)}.")
    if pin.name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", pin.name):
        # it names the source's git cache and its member of an offline bundle
        raise r.fail(where, f"name = {pin.name!r} is not a plain name (letters, digits, . _ -).")
    relative(r, pin.pin_file, where, "pin_file")
    relative(r, pin.dest, where, "dest")


def check_pins(r: Reader, repos: List[RepoSpec], names: Set[str]) -> None:
    """Each pin names a repo the recipe has, two pins of one name agree on the URL, and
    no two pins of a repo share a dest."""
    urls: Dict[str, str] = {}
    for repo in repos:
        dests: Set[str] = set()
        for pin in repo.pins:
            where = f"[repos.{repo.name}] pin {pin.dest!r}"
            if pin.repo is not None and (pin.repo not in names or pin.repo == repo.name):
                raise r.fail(where, f"names repo {pin.repo!r}, which is not another [repos.*].")
            if pin.name is not None:
                if pin.name in names:
                    raise r.fail(
                        where,
                        f"has name {pin.name!r}, which is a [repos.*] of this recipe.",
                        f"Write repo = {pin.name!r} instead of name and url.",
                    )
                if urls.setdefault(pin.name, pin.url or "") != pin.url:
                    raise r.fail(where, f"gives source {pin.name!r} another url than before.")
            if pin.dest.rstrip("/") in dests:
                raise r.fail(where, "has the dest of another pin of this repo.")
            dests.add(pin.dest.rstrip("/"))
