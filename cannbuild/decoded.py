"""The one name for what a JSON, TOML or YAML reader hands back, and the one way it
becomes typed data.

A decoded document is dicts, lists, strings, numbers, booleans and None in whatever shape
the file has: its type says nothing until it is checked, so it is `Any` here, and only
here.  `convert` checks it with msgspec into frozen Structs (unknown keys refused), and
words msgspec's "Expected `str`, got `int` - at `$.repos[...].tag`" as one paragraph
that names the file, the table and the key as the file writes them."""

from __future__ import annotations

import re
from pathlib import Path, PurePath
from typing import Any, Dict, List, Optional, Tuple, Type, TypeVar, Union, get_args, get_origin

import msgspec

from .errors import UsageError
from .lazy import lazy_module

difflib = lazy_module("difflib")  # only a mistake (a key not known) needs it

JSONValue = Any  # decoded JSON/TOML/YAML: checked where read
JSONObject = Dict[str, JSONValue]  # a decoded table or object, its values unchecked
T = TypeVar("T")

# msgspec's names of a value's kind, as the file's reader says them
_KINDS = {
    "str": "a string",
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "array": "an array",
    "object": "a table",
    "null": "empty",
}
_AT = re.compile(r"(.*) - at `\$(.*)`")
_PART = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_UNKNOWN = re.compile(r"Object contains unknown field `(.*)`")
_MISSING = re.compile(r"Object missing required field `(.*)`")
_EXPECTED = re.compile(r"Expected `([^`]+)`, got `\w+`")
_ENUM = re.compile(r"Invalid enum value (.*)")


def to_path(kind: type, value: JSONValue) -> Path:
    """msgspec's dec_hook for a Path field (written as its string)."""
    if kind is Path and isinstance(value, str):
        return Path(value)
    raise NotImplementedError


def to_plain(value: object) -> JSONValue:
    """`value` as a JSON document holds it, for --json and the files cannbuild writes:
    Structs as objects (their fields in order), tuples as lists, Paths as strings."""
    # bounded: the bytes this line encoded from `value`, not a file
    return msgspec.json.decode(msgspec.json.encode(value, enc_hook=_path_text))


def _path_text(value: object) -> str:
    if isinstance(value, PurePath):
        return str(value)
    raise NotImplementedError


def convert(data: JSONValue, kind: Type[T], what: str, hint: Optional[str] = None) -> T:
    """`data` as a `kind`, strictly (a string is no number, true no 1, an unknown key an
    error); a mistake is a UsageError `<what>: <table> <key> = <value> is not ...`."""
    try:
        return msgspec.convert(data, kind, strict=True, dec_hook=to_path)
    except msgspec.ValidationError as exc:
        problem, known = _explain(str(exc), data, kind)
        raise UsageError(f"{what}: {problem}", known or hint) from None


def _explain(message: str, data: JSONValue, kind: type) -> Tuple[str, Optional[str]]:
    """msgspec's message in the file's words, and the keys a misspelt one might mean."""
    match = _AT.fullmatch(message)
    problem, trail = match.groups() if match else (message, "")
    keys: List[Union[str, int]] = []
    tables = [0]  # how many keys lead to each table (Struct) on the way
    node, tp = data, kind
    for name, index in _PART.findall(trail):
        tp, key = _inner(tp, name or index), name or (int(index) if index.isdigit() else "")
        if index == "...":  # a table's key, which msgspec does not say: the first that fails
            key = next((k for k, v in node.items() if _fails(v, tp)), "...")
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            break
        keys.append(key)
        if _struct(tp):
            tables.append(len(keys))
    field = _UNKNOWN.match(problem) or _MISSING.match(problem)
    # a key's own mistake is said in its table; an unknown or missing key's in the table itself
    depth = len(keys) if field else max(d for d in tables if d < len(keys) or not keys)
    where = _table(keys[:depth])
    said = _dotted(keys[depth:])
    if field and field.re is _UNKNOWN:
        names = sorted(f.encode_name for f in msgspec.structs.fields(_struct(tp) or kind))
        close = difflib.get_close_matches(field.group(1), names, n=1)
        hint = f"Did you mean {close[0]!r}?" if close else f"Known keys: {', '.join(names)}."
        return f"{where or 'the top level'} has an unknown key {field.group(1)!r}.", hint
    if field:
        return f"{where or 'the file'} needs a {field.group(1)!r} key.", None
    lead = f"{where} {said}".strip() or "its top level"
    shown = repr(node)[:80]
    expected, enum = _EXPECTED.match(problem), _ENUM.match(problem)
    if expected:  # `str | null`: a key that may be left out is never written as null
        kinds = [_KINDS.get(k, k) for k in expected.group(1).split(" | ") if k != "null"]
        want = ", ".join(kinds[:-1]) + " or " + kinds[-1] if len(kinds) > 1 else kinds[0]
        return f"{lead} = {shown} is not {want}.", None
    if enum:
        choices = ", ".join(map(str, get_args(_plain(tp))))
        return f"{lead} = {shown} is not one of {choices}.", None
    return f"{lead}: {problem[:1].lower()}{problem[1:]}.", None


def _plain(tp: Any) -> Any:
    """`X` of an `Optional[X]`."""
    args = [a for a in get_args(tp) if a is not type(None)]
    return args[0] if get_origin(tp) is Union and len(args) == 1 else tp


def _struct(tp: Any) -> Optional[type]:
    tp = _plain(tp)
    return tp if isinstance(tp, type) and issubclass(tp, msgspec.Struct) else None


def _inner(tp: Any, part: str) -> Any:
    """The type of `part` (a field, an index, `...` a table's key) inside a `tp`."""
    struct = _struct(tp)
    if struct is not None:
        return next((f.type for f in msgspec.structs.fields(struct) if f.encode_name == part), Any)
    args = get_args(_plain(tp))
    return args[-1] if args and get_origin(_plain(tp)) is dict else (args[0] if args else Any)


def _fails(value: JSONValue, tp: Any) -> bool:
    try:
        msgspec.convert(value, tp, strict=True, dec_hook=to_path)
    except msgspec.ValidationError:
        return True
    return False


def _dotted(keys: List[Union[str, int]]) -> str:
    return "".join(f" #{k + 1}" if isinstance(k, int) else f".{k}" for k in keys).lstrip(".")


def _table(keys: List[Union[str, int]]) -> str:
    """A table as a TOML file heads it: `[repos.opbase]`, `[[steps]] #2`."""
    if not keys:
        return ""
    if isinstance(keys[-1], int):
        return f"[[{_dotted(keys[:-1])}]] #{keys[-1] + 1}"
    return f"[{_dotted(keys)}]"
