"""Jinja environments for cannbuild's templates.

Commands: every interpolated value is shell-quoted by `finalize`, so a path
with a space or a `;` can never change what runs; `raw` opts a value out (for
values that are themselves rendered command fragments).  Files (shell scripts,
CMake, Dockerfiles): no quoting.  All use Jinja's immutable sandbox and
StrictUndefined, and comments are `{=# … #=}` so bash's `${#array[@]}` is not read
as a Jinja comment.

A recipe's templates and values are data a user may hand us: they compile and render
under a deadline and an output cap (render/sandbox.py); past a bound the render fails
naming it, exit 2.

Jinja is imported only when something is rendered for the first time: a no-op run
renders recipe values that are plain `{{ name }}` lookups (`_lookup`) and step
commands it rendered before (`Templates` remembers them with the template files they
came from), so it does not pay for Jinja's import.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os.path
import re
import reprlib
import shlex
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    cast,
)

from msgspec import Struct

from ..bounded import MEMO, STEP_TEMPLATE, decode_json, read_bytes, read_state, read_text
from ..errors import UsageError
from ..lazy import lazy_module
from ..workspace import remember

if TYPE_CHECKING:
    import jinja2
    from jinja2 import sandbox as jinja_sandbox
    from jinja2.bccache import Bucket

    from . import sandbox as bounded_child
    from .sandbox import RenderChild
else:  # Jinja (and the child it renders in) is imported on the first render that needs it
    jinja2 = lazy_module("jinja2")
    jinja_sandbox = lazy_module("jinja2.sandbox")
    bounded_child = lazy_module("cannbuild.render.sandbox")

# One rendered recipe value (a tag, a cwd, an env entry, an output pattern).  Linux refuses
# one argument or environment string over 128 KiB (MAX_ARG_STRLEN, E2BIG); real values are
# under 1 KiB.
MAX_VALUE_CHARS = 64 * 1024
# One rendered step command, all its arguments: far above any real one (under 2 KiB), well
# under the 2 MiB a whole command line and environment may take (ARG_MAX).
MAX_COMMAND_CHARS = 256 * 1024
# Compiled templates are cached by name and source; a change to what the environment
# compiles into them must not load older code.
COMPILED_AS = "sandbox-3"


def short(value: object) -> str:
    """`value` for a message, cut to a line."""
    cut = reprlib.Repr()
    cut.maxstring = cut.maxother = cut.maxlong = 60
    return cut.repr(value)


class Raw(str):
    """A string that is inserted into a command as it is."""


def _quote(value: object) -> str:
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


def _bytecode_cache(path: Path) -> jinja2.BytecodeCache:
    class QuietCache(jinja2.FileSystemBytecodeCache):
        """A cache that cannot be written (full disk, read-only folder) only costs a compile."""

        def get_cache_key(self, name: str, filename: Optional[str] = None) -> str:
            return super().get_cache_key(f"{COMPILED_AS}:{name}", filename)

        def dump_bytecode(self, bucket: Bucket) -> None:
            with contextlib.suppress(OSError):
                super().dump_bytecode(bucket)

    return QuietCache(str(path))


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
    bytecode_cache = None
    if cache is not None:
        try:
            cache.mkdir(parents=True, exist_ok=True)
            bytecode_cache = _bytecode_cache(cache)
        except OSError:
            bytecode_cache = None  # a read-only workspace compiles every time; nothing else changes
    env = jinja_sandbox.ImmutableSandboxedEnvironment(
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
    return _environment(_loader(paths), True, cache=cache)


def file_env(search_path: Path, cache: Optional[Path] = None) -> jinja2.Environment:
    return _environment(_loader([search_path]), False, cache=cache)


# What makes a string a template in the shell syntax (and `\r`, which Jinja normalises).
_TEMPLATE_MARKS = ("{{", "{%", "{=#", "\r")
_LOOKUP = re.compile(r"\{\{ *([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*) *\}\}")


def _lookup(template: str, context: Mapping[str, object]) -> Optional[str]:
    """`template` rendered as plain text when all it does is `{{ name }}` or `{{ a.b }}`
    lookups of strings and integers in dicts, exactly as Jinja would; None otherwise
    (filters, blocks, a missing name, anything an attribute would shadow)."""
    out: List[str] = []
    pos = 0
    for match in _LOOKUP.finditer(template):
        out.append(template[pos : match.start()])
        value: object = context
        for part in match.group(1).split("."):
            if not isinstance(value, dict) or part not in value or hasattr(value, part):
                return None
            value = value[part]
        if type(value) is not str and type(value) is not int:
            return None
        out.append(str(value))
        pos = match.end()
    literal = template[pos:]
    if any(mark in text for text in (*out[::2], literal) for mark in _TEMPLATE_MARKS):
        return None
    return "".join(out) + literal


def render_string(template: str, context: Mapping[str, object], *, quote: bool) -> str:
    if not quote:
        text = _lookup(template, context)  # plain text or plain lookups: no Jinja at all
        if text is not None:
            return text
    env = _environment(jinja2.BaseLoader(), quote=quote)
    return bounded_child.run_bounded(lambda: env.from_string(template).render(**context))


def ci_env(search_path: Path) -> jinja2.Environment:
    """CI workflows are full of `${{ ... }}`: these templates use `[[ ]]` and `[% %]`."""
    return _environment(_loader([search_path]), quote=False, syntax=_CI_SYNTAX)


def render_value(template: str, context: Mapping[str, object], what: str) -> str:
    """A recipe value (a tag, a cwd, an output pattern) rendered as plain text; a value
    the sandbox refuses, that names an unknown variable or that renders longer than
    MAX_VALUE_CHARS is a usage error naming it."""
    text = _lookup(template, context)
    if text is None:
        try:
            text = render_string(template, context, quote=False)
        except jinja2.TemplateError as exc:
            raise UsageError(
                f"{what} = {short(template)} does not render: {exc}.",
                "Recipe values may only use the documented variables (cann, ops_release, soc, "
                "jobs, src, third_party, vendor_name, ...), not Python, and stay within the bounds "
                "cannbuild/render/sandbox.py states.",
            ) from None
    if len(text) > MAX_VALUE_CHARS:
        raise UsageError(
            f"{what} = {short(template)} renders {len(text)} characters, over the bound of "
            f"{MAX_VALUE_CHARS} for one recipe value (MAX_VALUE_CHARS in cannbuild/render/templates.py).",
            "A tag, path or env entry is a short string; check the recipe.",
        )
    return text


class TemplateFailure(Exception):
    """A template that does not render; `undefined`: it used a name the context lacks."""

    def __init__(self, message: str, undefined: bool) -> None:
        super().__init__(message)
        self.undefined = undefined


def _canonical(value: object) -> object:
    """Context values as JSON that tells apart what renders differently (a `Raw` from a
    str, a str from an int)."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if value is None or type(value) in (str, int, float, bool):
        return value
    return [type(value).__name__, str(value)]


class Templates:
    """A recipe's step templates (commands, every value shell-quoted), found along
    `search_path` as Jinja's FileSystemLoader finds them.

    With `memo` (a workspace file) a render is remembered with the template files it
    read (path and sha256); it is reused while the same name still resolves to the same
    files with the same contents and the context is the same, so a run that renders
    nothing new never imports Jinja.  `save()` writes the memo: only runs that act call
    it (a plan or a dry run changes no file)."""

    def __init__(
        self,
        search_path: Sequence[Path],
        cache: Optional[Path] = None,
        memo: Optional[Path] = None,
    ) -> None:
        self.search_path = tuple(search_path)
        self.cache = cache
        self.memo = memo
        self._known = (read_state(memo, MEMO, Dict[str, str]) if memo is not None else None) or {}
        self._used: Dict[str, str] = {}
        self._child: Optional[RenderChild] = None  # renders, with the environment it forked with

    def render(self, name: str, values: Mapping[str, object]) -> str:
        key = hashlib.sha256(
            json.dumps([name, _canonical(values)], sort_keys=True).encode()
        ).hexdigest()
        known = self._known.get(key)
        text = self._still_valid(known) if known is not None else None
        if text is not None and known is not None:
            entry = known
        else:
            text, read = self._render_reading(name, values)
            entry = json.dumps({"text": text, "files": read}, sort_keys=True)
        if len(text) > MAX_COMMAND_CHARS:
            raise TemplateFailure(
                f"{name} renders {len(text)} characters, over the bound of {MAX_COMMAND_CHARS} "
                "for one step command (MAX_COMMAND_CHARS in cannbuild/render/templates.py)",
                undefined=False,
            )
        self._used[key] = entry
        return text

    def save(self) -> None:
        if self.memo is not None and self._used and self._used != self._known:
            remember(self.memo, self._used)

    def _still_valid(self, entry: str) -> Optional[str]:
        try:
            data = decode_json(entry.encode(), self.memo, MEMO, _Entry)
        except UsageError:
            return None
        text, files = data.text, data.files
        for name, path, sha in files:
            found = _find(self.search_path, name)
            if found is None or found != path or _sha256(Path(found)) != sha:
                return None
        return text

    def _render_reading(
        self, name: str, values: Mapping[str, object]
    ) -> Tuple[str, List[List[str]]]:
        """The render (in the bounded child) and the template files it read."""
        if self._child is None:
            env = command_env(list(self.search_path), self.cache)
            self._child = bounded_child.RenderChild(functools.partial(_render_recording, env))
        try:
            return cast(
                Tuple[str, List[List[str]]], self._child((name, values), f"template {name}")
            )
        except jinja2.UndefinedError as exc:
            raise TemplateFailure(str(exc.message), undefined=True) from None
        except jinja2.TemplateError as exc:
            raise TemplateFailure(str(exc), undefined=False) from None


def _render_recording(env: Any, request: object) -> Tuple[str, List[List[str]]]:
    """In the render child: `name` rendered with `values`, and each template file it read
    (path and sha256), read afresh through the loader."""
    name, values = cast(Tuple[str, Mapping[str, object]], request)
    read: List[List[str]] = []
    env.loader.recording = read
    env.cache.clear()  # every template of this render is read through the loader
    try:
        return env.get_template(name).render(**values), read
    finally:
        env.loader.recording = None


class _Entry(Struct, frozen=True):  # a remembered render, and (name, path, sha256) it read
    text: str
    files: List[Tuple[str, str, str]]


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(read_bytes(path, STEP_TEMPLATE)).hexdigest()
    except UsageError:
        return ""


def _find(search_path: Sequence[str | Path], name: str) -> Optional[str]:
    """The file FileSystemLoader would load for `name`, spelled as it reports it."""
    for folder in search_path:
        candidate = os.path.normpath(os.path.join(folder, *name.split("/")))
        if os.path.lexists(candidate):
            return candidate
    return None


def _loader(search_path: Sequence[Path]) -> jinja2.BaseLoader:
    """Jinja's FileSystemLoader through bounded.py: a FIFO, too big, not UTF-8: exit 2.
    While `recording` is a list, each template read goes into it (name, path, sha256)."""

    class Loader(jinja2.FileSystemLoader):
        recording: Optional[List[List[str]]] = None

        def get_source(
            self, environment: jinja2.Environment, template: str
        ) -> Tuple[str, str, Callable[[], bool]]:
            parts = jinja2.loaders.split_template_path(template)
            name = _find(self.searchpath, "/".join(parts))
            if name is None:
                raise jinja2.TemplateNotFound(template)
            text = read_text(Path(name), STEP_TEMPLATE)
            if self.recording is not None:
                self.recording.append([template, name, hashlib.sha256(text.encode()).hexdigest()])
            stamp = os.stat(name).st_mtime_ns
            return text, name, lambda: os.path.exists(name) and os.stat(name).st_mtime_ns == stamp

    return Loader([str(p) for p in search_path])
