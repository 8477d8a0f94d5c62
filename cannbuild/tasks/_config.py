"""The invoke config a task reads its `cannbuild` key from, as `invoke TASK` loads it:
/etc/invoke.*, ~/.invoke.*, the project's invoke.*, then --config (or
INVOKE_RUNTIME_CONFIG), then INVOKE_* variables.  invoke's own loader reads them, so both
routes agree on every file format and merge rule; each file is checked first
(check_config_file), and one that cannot be read is a usage error naming it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Set, Tuple

from invoke import Config
from invoke.util import yaml

from ..bounded import CONFIG, StateIgnored, open_regular, read_bytes
from ..errors import UsageError
from ..ui import printable

SUFFIXES = ("yaml", "yml", "json", "py")
# What invoke's loader may be handed (it builds the whole document, then merges and
# `repr`s it).  A YAML alias stands for its whole anchored node: nine levels of
# `&a [*a, *a, ...]` in 200 bytes are 9**9 nodes, minutes and gigabytes.  Real
# invoke.yaml files use no aliases, so a few for shared values are plenty.
MAX_CONFIG_ALIASES = 100
# invoke merges and copies a config one recursion per level: a config is two or three
# levels deep (`cannbuild:` then `key: value`); 600 levels were a RecursionError.
MAX_CONFIG_DEPTH = 64
# Characters of scalars plus one per node, aliases expanded: an alias-free file is at
# most about twice its size, so only aliases reach this (2 per level for 50 levels pass
# the alias count and would still be 2**50 nodes).
MAX_CONFIG_EXPANDED = 4 * (CONFIG.max_bytes or 0)


def _candidates(cwd: Path, home: Optional[str]) -> Iterator[Path]:
    for suffix in SUFFIXES:
        yield Path(f"/etc/invoke.{suffix}")
        if home:
            yield Path(home) / f".invoke.{suffix}"
        yield cwd / f"invoke.{suffix}"


def load_config(runtime: Optional[str], cwd: Path, env: Mapping[str, str]) -> Config:
    """The merged config; a file that cannot be read is a usage error naming it."""
    given = "--config" if runtime else "INVOKE_RUNTIME_CONFIG"
    runtime = runtime or env.get("INVOKE_RUNTIME_CONFIG")
    if runtime and not Path(runtime).exists():
        raise UsageError(
            f"{given} {runtime}: no such file.",
            "Pass a YAML file with a `cannbuild:` key, e.g. --config ci.yaml.",
        )
    found = [p for p in _candidates(cwd, env.get("HOME")) if p.exists()]
    for path in found + ([Path(runtime)] if runtime else []):
        check_config_file(path, given if runtime and path == Path(runtime) else "config file")
    try:
        config = Config()  # reads /etc/invoke.* and ~/.invoke.*
        config.set_project_location(str(cwd))
        config.load_project()
    except Exception as exc:  # yaml's errors, a binary file, a folder: all the user's file
        where = " or ".join(str(p) for p in found) or str(cwd / "invoke.yaml")
        said = _first_line(exc)
        syntax = (
            'JSON: {"cannbuild": {"key": value}}'
            if found and all(p.suffix == ".json" for p in found)
            else "YAML: `cannbuild:` then indented `key: value` lines"
        )
        # invoke reads its files itself, and its JSON reader takes no byte-order mark
        bom = "; save it as UTF-8 without a byte-order mark" if "BOM" in said else ""
        raise UsageError(
            f"{where} cannot be read as a config file ({said}).",
            f"Fix its syntax ({syntax}){bom}, or remove it.",
        ) from None
    config.set_runtime_path(runtime)  # type: ignore[arg-type]  # invoke takes a str too
    try:
        config.load_runtime(merge=False)
    except Exception as exc:
        raise UsageError(
            f"--config {runtime} cannot be read ({_first_line(exc)}).",
            "Pass a YAML file with a `cannbuild:` key.",
        ) from None
    config.merge()
    config.load_shell_env()
    return config


def check_config_file(path: Path, what: str) -> None:
    """invoke's loader reads a config file whole and blocks on a FIFO: only a regular
    file within CONFIG.max_bytes reaches it (bounded.py), and a YAML or JSON one only
    within the bounds above.  A .py config is code the user wrote; invoke runs it."""
    kind = CONFIG.named(what, _TOO_BIG)
    if path.suffix not in (".yaml", ".yml", ".json"):
        os.close(open_regular(path, kind))
        return
    data = read_bytes(path, kind)
    if path.suffix == ".json":
        found = _json_shape(data)
        repeated = None if found else _json_repeated(data)
    else:
        found, repeated = _yaml_shape(data)
    if found:
        raise UsageError(
            f"{what} {path} holds {found}; cannbuild hands invoke a config of at most "
            f"{MAX_CONFIG_ALIASES} aliases, {MAX_CONFIG_DEPTH} levels and "
            f"{_EXPANDED} with its aliases expanded.",
            "A config holds a few `cannbuild:` keys: write the values out instead.",
        )
    if repeated:
        raise UsageError(
            f"{what} {path} sets {repeated}: invoke keeps the last one and drops the "
            "other without a word.",
            "Keep one of them (two `cannbuild:` sections: merge them into one).",
        )


_EXPANDED = f"{MAX_CONFIG_EXPANDED >> 20} M characters"
_TOO_BIG = "A config file holds a few `cannbuild:` keys: is this the right file?"


def _yaml_shape(data: bytes) -> Tuple[Optional[str], Optional[str]]:
    """What in a YAML document is past a bound, and the first key a mapping sets twice
    (with both lines), read as parser events in one walk (nothing is built, and the walk
    stops at the first of either); (None, None) if neither is, or if it is not valid YAML
    (invoke's loader then words the syntax error).  `<<` merges are left to YAML."""
    aliases = 0
    weights: Dict[str, int] = {}  # anchor -> its node's size, aliases expanded
    # each unclosed collection: [anchor, size so far, a mapping's keys (None: a sequence),
    # whether a key comes next]
    open_nodes: List[List[Any]] = []
    total = 0
    try:
        for event in yaml.parse(data, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                if len(open_nodes) >= MAX_CONFIG_DEPTH:
                    return f"more than {MAX_CONFIG_DEPTH} levels of nesting", None
                keys: Optional[Dict[str, int]] = (
                    {} if isinstance(event, yaml.MappingStartEvent) else None
                )
                open_nodes.append([event.anchor, 1, keys, True])
                continue
            if isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > MAX_CONFIG_ALIASES:
                    return f"more than {MAX_CONFIG_ALIASES} aliases (*name)", None
                if any(node[0] == event.anchor for node in open_nodes):
                    return f"an alias *{event.anchor} inside the node it names (a loop)", None
                weight = weights.get(event.anchor, 1)
            elif isinstance(event, yaml.ScalarEvent):
                weight = 1 + len(event.value)
                if event.anchor:
                    weights[event.anchor] = weight
                seen = open_nodes[-1][2] if open_nodes and open_nodes[-1][3] else None
                if seen is not None and event.value != "<<":
                    line = event.start_mark.line + 1
                    if event.value in seen:
                        return None, f"'{event.value}' twice (lines {seen[event.value]} and {line})"
                    seen[event.value] = line
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, weight, _keys, _key_next = open_nodes.pop()
                if anchor:
                    weights[anchor] = weight
            else:
                continue
            if open_nodes:
                open_nodes[-1][1] += weight
                size = open_nodes[-1][1]
                if open_nodes[-1][2] is not None:  # a key or a value ended: the other is next
                    open_nodes[-1][3] = not open_nodes[-1][3]
            else:  # a document's root
                total += weight
                size = total
            if size > MAX_CONFIG_EXPANDED:
                return f"more than {_EXPANDED} once its aliases are expanded", None
    except yaml.YAMLError:
        return None, None
    return None, None


def _json_repeated(data: bytes) -> Optional[str]:
    """The first key an object of the file sets twice; None if none is (or it does not
    parse: invoke's loader words that)."""

    def pairs(items: List[Any]) -> Dict[str, Any]:
        seen: Dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                raise _Repeated(key)
            seen[key] = value
        return seen

    try:
        # the stdlib's hook sees each object's pairs (msgspec keeps the last of two)
        # bounded: bytes read_bytes read, nested at most MAX_CONFIG_DEPTH (_json_shape)
        json.loads(data, object_pairs_hook=pairs)
    except _Repeated as exc:
        return f"'{exc.args[0]}' twice in one object"
    except ValueError:
        return None
    return None


class _Repeated(Exception):
    pass


# a JSON string (its brackets are text), then any bracket outside one
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def _json_shape(data: bytes) -> Optional[str]:
    """Nesting past MAX_CONFIG_DEPTH in a JSON file (json.load recurses once per level
    and invoke's merge again): the brackets outside strings, counted."""
    depth = 0
    text = _JSON_STRING.sub("", data.decode("utf-8", "replace"))
    for match in _JSON_BRACKET.finditer(text):
        depth += 1 if match.group() in "[{" else -1
        if depth > MAX_CONFIG_DEPTH:
            return f"more than {MAX_CONFIG_DEPTH} levels of nesting"
    return None


@contextlib.contextmanager
def state_warnings() -> Iterator[None]:
    """While a task runs, a state file read as absent (bounded.StateIgnored) is said once,
    in one line on stderr; other warnings as Python says them.  Python's "once" is once per
    module that reads the file (a stamp read by status and by the stamps module was said
    twice): the lines said are kept here."""
    with warnings.catch_warnings():
        warnings.simplefilter("once", StateIgnored)
        shown = warnings.showwarning
        said: Set[str] = set()

        def show(message: object, category: type, *rest: object) -> None:
            if not issubclass(category, StateIgnored):
                return shown(message, category, *rest)  # type: ignore[arg-type]
            line = f"cannbuild: warning: {printable(str(message))}\n"
            if line not in said:
                said.add(line)
                sys.stderr.write(line)

        warnings.showwarning = show  # type: ignore[assignment]
        yield


def _first_line(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else "no detail"
    return f"{type(exc).__name__}: {text}"


__all__ = ["check_config_file", "load_config"]
