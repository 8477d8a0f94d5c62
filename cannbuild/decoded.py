"""The one name for what a JSON, TOML or YAML reader hands back.

A decoded document is dicts, lists, strings, numbers, booleans and None in whatever shape
the file has: its type says nothing until the code that reads it checks it, so it is
`Any` here, and only here; everything past those checks is typed."""

from __future__ import annotations

from typing import Any, Dict

JSONValue = Any  # decoded JSON/TOML/YAML: checked where read
JSONObject = Dict[str, JSONValue]  # a decoded table or object, its values unchecked
