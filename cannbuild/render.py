"""Jinja environments for cannbuild's templates.

Commands: every interpolated value is shell-quoted by `finalize`, so a path
with a space or a `;` can never change what runs; `raw` opts a value out (for
values that are themselves rendered command fragments).  Files (shell scripts,
CMake, Dockerfiles): no quoting.  All use Jinja's immutable sandbox and
StrictUndefined, and comments are `{=# … #=}` so bash's `${#array[@]}` is not read
as a Jinja comment.
"""

from __future__ import annotations

import contextlib
import shlex
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import jinja2

from .errors import UsageError


class Raw(str):
    """A string that is inserted into a command as it is."""


def _quote(value: Any) -> str:
    if isinstance(value, Raw):
        return str(value)
    if value is None:
        raise UsageError("a template tried to insert an empty (None) value into a command.")
    text = str(value)
    return shlex.quote(text)


# `{=# … #=}` comments for shell and CMake; CI files use `[[ ]]`/`[% %]` around `${{ }}`.
_SHELL_SYNTAX = {"comment_start_string": "{=#", "comment_end_string": "#=}"}
_CI_SYNTAX = {
    "variable_start_string": "[[",
    "variable_end_string": "]]",
    "block_start_string": "[%",
    "block_end_string": "%]",
    "comment_start_string": "[#",
    "comment_end_string": "#]",
}


class _QuietCache(jinja2.FileSystemBytecodeCache):
    """A cache that cannot be written (full disk, read-only folder) only costs a compile."""

    def dump_bytecode(self, bucket: Any) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def _environment(
    loader: jinja2.BaseLoader,
    quote: bool,
    syntax: Mapping[str, str] = _SHELL_SYNTAX,
    cache: Optional[Path] = None,
) -> jinja2.Environment:
    """Jinja's immutable sandbox: a recipe value or template is data, never code
    (`{{ cycler.__init__.__globals__.os.system(...) }}` is refused, not run).

    `cache` keeps compiled templates (keyed by name and source checksum) between runs:
    compiling them was most of a no-op rerun's own time."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    bytecode_cache = None
    if cache is not None:
        try:
            cache.mkdir(parents=True, exist_ok=True)
            bytecode_cache = _QuietCache(str(cache))
        except OSError:
            bytecode_cache = None  # a read-only workspace compiles every time; nothing else changes
    env = ImmutableSandboxedEnvironment(
        loader=loader,
        bytecode_cache=bytecode_cache,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        finalize=_quote if quote else None,
        **syntax,
    )
    env.filters["raw"] = Raw
    env.filters["q"] = lambda v: Raw(shlex.quote(str(v)))
    return env


def command_env(
    search_path: Union[Path, Sequence[Path]], cache: Optional[Path] = None
) -> jinja2.Environment:
    """Commands: every value shell-quoted; `search_path` may be several folders."""
    paths = [search_path] if isinstance(search_path, Path) else list(search_path)
    return _environment(jinja2.FileSystemLoader([str(p) for p in paths]), True, cache=cache)


def file_env(search_path: Path, cache: Optional[Path] = None) -> jinja2.Environment:
    return _environment(jinja2.FileSystemLoader(str(search_path)), False, cache=cache)


# What makes a string a template in the shell syntax (and `\r`, which Jinja normalises).
_TEMPLATE_MARKS = ("{{", "{%", "{=#", "\r")


def render_string(template: str, context: Mapping[str, Any], *, quote: bool) -> str:
    if not quote and not any(mark in template for mark in _TEMPLATE_MARKS):
        return template  # plain text renders as itself: no environment, no compile
    env = _environment(jinja2.BaseLoader(), quote=quote)
    return env.from_string(template).render(**context)


def ci_env(search_path: Path) -> jinja2.Environment:
    """CI workflows are full of `${{ ... }}`: these templates use `[[ ]]` and `[% %]`."""
    return _environment(jinja2.FileSystemLoader(str(search_path)), quote=False, syntax=_CI_SYNTAX)


def render_value(template: str, context: Mapping[str, Any], what: str) -> str:
    """A recipe value (a tag, a cwd, an output pattern) rendered as plain text; a value
    the sandbox refuses or that names an unknown variable is a usage error naming it."""
    try:
        return render_string(template, context, quote=False)
    except jinja2.TemplateError as exc:
        raise UsageError(
            f"{what} = {template!r} does not render: {exc}.",
            "Recipe values may only use the documented variables (cann, soc, jobs, src, "
            "third_party, vendor_name, ...), not Python.",
        ) from None
