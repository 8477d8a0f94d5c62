"""The invoke-style config a task reads its `cannbuild` key from, as `invoke TASK` would
load it: /etc/invoke.*, ~/.invoke.*, ./invoke.*, then --config (or
INVOKE_RUNTIME_CONFIG), then INVOKE_* variables.

Where none of those files exists (the usual case) the config is empty and invoke is
not imported; where one does, invoke's own loader reads it, so both entry points
agree on every file format and merge rule."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

from msgspec import Struct

from ..bounded import CONFIG_BYTES, open_regular
from ..errors import UsageError

SUFFIXES = ("yaml", "yml", "json", "py")


class TaskContext(Struct, frozen=True):
    """What a task body gets as `c` from the `cannbuild` script: the config (`c.config`),
    as invoke's Context gives it under `invoke TASK`."""

    config: Any  # a Mapping, or invoke's Config where a config file was read


def _candidates(cwd: Path, home: Optional[str]) -> Iterator[Path]:
    for suffix in SUFFIXES:
        yield Path(f"/etc/invoke.{suffix}")
        if home:
            yield Path(home) / f".invoke.{suffix}"
        yield cwd / f"invoke.{suffix}"


def load_config(runtime: Optional[str], cwd: Path, env: Mapping[str, str]) -> TaskContext:
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
    if not runtime and not found:
        return TaskContext({})
    from invoke.config import Config

    try:
        config = Config()  # reads /etc/invoke.* and ~/.invoke.*
        config.set_project_location(str(cwd))
        config.load_project()
    except Exception as exc:  # yaml's errors, a binary file, a folder: all the user's file
        found = [p for p in _candidates(cwd, env.get("HOME")) if p.exists()]
        where = " or ".join(str(p) for p in found) or str(cwd / "invoke.yaml")
        raise UsageError(
            f"{where} cannot be read as a config file ({_first_line(exc)}).",
            "Fix its syntax (YAML: `cannbuild:` then indented `key: value` lines) or remove it.",
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
    return TaskContext(config)


def check_config_file(path: Path, what: str) -> None:
    """invoke's loader reads a config file whole and blocks on a FIFO: only a regular
    file of at most CONFIG_BYTES reaches it (bounded.py)."""
    try:
        os.close(open_regular(path, what, CONFIG_BYTES, _TOO_BIG))
    except OSError as exc:
        raise UsageError(
            f"{what} {path} cannot be read ({exc.strerror or exc}).",
            "Fix its permissions or remove it.",
        ) from None


_TOO_BIG = "A config file holds a few `cannbuild:` keys: is this the right file?"


def _first_line(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else "no detail"
    return f"{type(exc).__name__}: {text}"


__all__ = ["TaskContext", "check_config_file", "load_config"]
