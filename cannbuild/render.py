"""Jinja environments for cannbuild's templates.

Commands: every interpolated value is shell-quoted by `finalize`, so a path
with a space or a `;` can never change what runs; `raw` opts a value out (for
values that are themselves rendered command fragments).  Files (shell scripts,
CMake, Dockerfiles): no quoting.  All use Jinja's immutable sandbox and
StrictUndefined, and comments are `{=# … #=}` so bash's `${#array[@]}` is not read
as a Jinja comment.

Templates are data a user may hand us (a recipe, the step templates beside it), so the
sandbox also bounds what they compute: arithmetic, string and list sizes, format widths,
ranges, and the text a render and a recipe value may come to (the MAX_* constants below).
Past a bound, the render fails with a TemplateError naming it (exit 2 where a recipe is
rendered), before the machine's memory or a minute of CPU is spent.  Loops are bounded
through `range` (per call and per render); a loop over a long string or list is not
counted, but every value it can build is.

Jinja is imported only when something is rendered for the first time: a no-op run
renders recipe values that are plain `{{ name }}` lookups (`_lookup`) and step
commands it rendered before (`Templates` remembers them with the template files they
came from), so it does not pay for Jinja's import.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import json
import re
import shlex
import string
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Mapping,
    NoReturn,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from .errors import UsageError
from .workspace import read_text_map, remember

if TYPE_CHECKING:
    import jinja2


class Raw(str):
    """A string that is inserted into a command as it is."""


def _quote(value: Any) -> str:
    if isinstance(value, Raw):
        return str(value)
    if value is None:
        raise UsageError("a template tried to insert an empty (None) value into a command.")
    text = str(value)
    return shlex.quote(text)


def _quoted(value: Any) -> str:
    return _quote(_counted(value))


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


# --- what a template may compute ------------------------------------------------------
# One rendered recipe value (a tag, a cwd, an env entry, an output pattern).  Linux refuses
# one argument or environment string over 128 KiB (MAX_ARG_STRLEN, E2BIG); real values are
# under 1 KiB.
MAX_VALUE_CHARS = 64 * 1024
# One rendered step command, all its arguments: far above any real one (under 2 KiB), well
# under the 2 MiB a whole command line and environment may take (ARG_MAX).
MAX_COMMAND_CHARS = 256 * 1024
# Any string a template builds on the way, and about what a list or dict prints as.
MAX_TEXT_CHARS = 256 * 1024
# All the `{{ ... }}` output of one render, and its whole text: the largest file cannbuild
# renders (a stand-in build.sh) is 14 KiB.
MAX_RENDER_CHARS = 1024 * 1024
# Any list, tuple, dict or range a template builds (a step template loops over a few ops).
MAX_ITEMS = 10_000
# The range items one render may loop over in all (nested loops multiply).
MAX_RANGE_ITEMS = 100_000
# An integer a template computes: about 1200 digits.  `10 ** 10000000` would cost half a
# minute of CPU to print (Python then refuses, past 4300 digits).
MAX_INT_BITS = 4096
# Compiled templates are cached by name and source; a change to what the environment
# compiles into them (intercepted operators, finalize) must not load older code.
_COMPILED_AS = "bounded-1"


class _Budget:
    """What one render has used so far: range items looped over, characters output."""

    __slots__ = ("chars", "items")

    def __init__(self) -> None:
        self.items = 0
        self.chars = 0


_BUDGET: contextvars.ContextVar[Optional[_Budget]] = contextvars.ContextVar(
    "cannbuild_render_budget", default=None
)


def _refuse(what: str, bound: int, name: str) -> NoReturn:
    from jinja2.exceptions import SecurityError

    raise SecurityError(f"{what}: over the bound of {bound} ({name} in cannbuild/render.py)")


def _short(value: Any) -> str:
    """`value` for a message, cut to a line."""
    import reprlib

    short = reprlib.Repr()
    short.maxstring = short.maxother = short.maxlong = 60
    return short.repr(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _weight(value: Any, limit: int = MAX_TEXT_CHARS) -> int:
    """About how many characters `value` prints as, counted until past `limit` (so at most
    about `limit` items are visited): a list holding one long string many times is long,
    though its len() is not."""
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, (str, bytes, bytearray)):
            total += len(item)
        elif _is_int(item):
            total += item.bit_length() // 3 + 1
        elif isinstance(item, Mapping):
            total += 2 * len(item) + 2
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += len(item) + 2
            stack.extend(item)
        else:
            total += 8
    return total


def _check_result(value: Any, what: str) -> Any:
    """`value` when it is within the bounds on what a template builds."""
    if isinstance(value, str):
        if len(value) > MAX_TEXT_CHARS:
            _refuse(f"{what} makes {len(value)} characters", MAX_TEXT_CHARS, "MAX_TEXT_CHARS")
    elif _is_int(value):
        if value.bit_length() > MAX_INT_BITS:
            _refuse(
                f"{what} makes a {value.bit_length()}-bit integer", MAX_INT_BITS, "MAX_INT_BITS"
            )
    elif isinstance(value, (list, tuple, set, frozenset, dict)):
        if len(value) > MAX_ITEMS:
            _refuse(f"{what} makes {len(value)} items", MAX_ITEMS, "MAX_ITEMS")
        if _weight(value) > MAX_TEXT_CHARS:
            _refuse(f"{what} makes a value this long", MAX_TEXT_CHARS, "MAX_TEXT_CHARS")
    return value


def _check_text(size: int, what: str) -> None:
    if size > MAX_TEXT_CHARS:
        _refuse(f"{what} would make {size} characters", MAX_TEXT_CHARS, "MAX_TEXT_CHARS")


def _check_repeat(seq: Any, times: Any, what: str) -> None:
    """`seq * times`: a string or a list repeated."""
    if not _is_int(times) or times <= 0:
        return
    if isinstance(seq, str):
        _check_text(len(seq) * times, what)
    elif isinstance(seq, (list, tuple)):
        if len(seq) * times > MAX_ITEMS:
            _refuse(f"{what} would make {len(seq) * times} items", MAX_ITEMS, "MAX_ITEMS")
        _check_text(_weight(seq) * times, what)


def _check_binop(operator: str, left: Any, right: Any) -> None:
    what = f"{_short(left)} {operator} {_short(right)}"
    if operator == "**" and _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
        if (abs(left).bit_length() - 1) * right > MAX_INT_BITS:
            _refuse(f"{what} has more than {MAX_INT_BITS} bits", MAX_INT_BITS, "MAX_INT_BITS")
    elif operator == "*":
        if _is_int(left) and _is_int(right):
            if left.bit_length() + right.bit_length() > MAX_INT_BITS + 1:
                _refuse(f"{what} has more than {MAX_INT_BITS} bits", MAX_INT_BITS, "MAX_INT_BITS")
        else:
            _check_repeat(left, right, what)
            _check_repeat(right, left, what)
    elif operator == "+" and isinstance(left, (str, list, tuple)) and type(left) is type(right):
        _check_text(_weight(left) + _weight(right), what)
    elif operator == "%" and isinstance(left, str):
        _check_percent(left, right, what)


# a printf-style conversion: %(name)-08.3f, %*d, %%
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.)", re.S)


def _values(data: Any) -> List[Any]:
    if isinstance(data, Mapping):
        return list(data.values())
    if isinstance(data, tuple):
        return list(data)
    return [data]


def _check_formatting(
    fmt: str, fields: int, widths: List[int], from_args: bool, data: Any, what: str
) -> None:
    """A format of `fields` fields with these widths (and widths taken from the
    arguments, `from_args`) applied to `data`: bounded before Python pads anything."""
    if from_args:
        widths += [abs(v) for v in _values(data) if _is_int(v)]
    widest = max(widths, default=0)
    if isinstance(data, tuple):  # each field takes its own argument
        size = len(fmt) + _weight(data) + fields * widest
    else:  # a mapping or a single value: a field may repeat it
        size = len(fmt) + fields * (_weight(data) + widest)
    _check_text(size, what)


def _check_percent(fmt: str, data: Any, what: str) -> None:
    fields, widths, star = 0, [], False
    for width, precision, _ in _PERCENT_SPEC.findall(fmt):
        fields += 1
        for number in (width, precision):
            if number == "*":
                star = True
            elif number:
                widths.append(int(number))
    _check_formatting(fmt, fields, widths, star, data, what)


def _check_str_format(fmt: str, data: Any, what: str) -> None:
    fields, widths, nested = 0, [], False
    for _, field, spec, _ in string.Formatter().parse(fmt):
        if field is None:
            continue
        fields += 1
        if spec:
            nested = nested or "{" in spec
            widths += [int(d) for d in re.findall(r"\d+", spec)]
    _check_formatting(fmt, fields, widths, nested, data, what)


def _bounded_items(value: Any, what: str) -> Any:
    """`value` as a list when it is an iterator (a join would consume it unseen)."""
    if isinstance(value, (str, list, tuple, dict, set, frozenset)):
        return value
    import itertools

    items = list(itertools.islice(iter(value), MAX_ITEMS + 1))
    if len(items) > MAX_ITEMS:
        _refuse(f"{what} is over {MAX_ITEMS} items", MAX_ITEMS, "MAX_ITEMS")
    return items


def _check_join(sep: Any, items: Any, what: str) -> None:
    _check_text(_weight(items) + len(str(sep)) * len(items), what)


def _check_replace(text: Any, old: Any, new: Any, what: str) -> None:
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
        count = text.count(old) if old else len(text) + 1
        _check_text(len(text) + count * len(new), what)


def _check_call(obj: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Tuple[Any, ...]:
    """The arguments of a call from a template, checked (a macro's too: recursion that
    doubles a string stops at the bound); str methods that pad or multiply are bounded
    before they run."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, (str, list, tuple, dict)) and _weight(value) > MAX_TEXT_CHARS:
            _refuse("a call's argument is too long", MAX_TEXT_CHARS, "MAX_TEXT_CHARS")
    owner = getattr(obj, "__self__", None)
    if not isinstance(owner, str):
        return args
    name = getattr(obj, "__name__", "")
    what = f"{_short(owner)}.{name}(...)"
    first: Any = args[0] if args else None
    if name in ("center", "ljust", "rjust", "zfill") and _is_int(first):
        _check_text(first, what)
    elif name == "expandtabs":
        tab: Any = kwargs.get("tabsize", first if args else 8)
        if _is_int(tab):
            _check_text(len(owner) + owner.count("\t") * max(tab, 0), what)
    elif name == "replace" and len(args) >= 2:
        _check_replace(owner, args[0], args[1], what)
    elif name == "join" and args:
        items = _bounded_items(first, what)
        _check_join(owner, items, what)
        args = (items, *args[1:])
    elif name == "translate" and isinstance(first, Mapping):
        widest = max((_weight(v) for v in first.values()), default=1)
        _check_text(len(owner) * max(widest, 1), what)
    return args


def _bounded_filter(name: str, func: Any) -> Any:
    """A Jinja filter whose arguments and result are checked: the ones that pad, repeat
    or join (center, indent, format, join, replace, batch, slice) before they run."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        head, rest = args[:skip], list(args[skip:])
        what = f"the {name} filter"
        value = rest[0] if rest else None
        if name == "center" and len(rest) > 1 and _is_int(rest[1]):
            _check_text(rest[1], what)
        elif name == "indent" and isinstance(value, str):
            width = rest[1] if len(rest) > 1 else kwargs.get("width", 4)
            pad = width if _is_int(width) else len(str(width))
            _check_text(len(value) + (value.count("\n") + 1) * pad, what)
        elif name == "format" and isinstance(value, str):
            _check_percent(value, kwargs or tuple(rest[1:]), what)
        elif name == "join" and rest:
            rest[0] = _bounded_items(value, what)
            _check_join(rest[1] if len(rest) > 1 else kwargs.get("d", ""), rest[0], what)
        elif name == "replace" and len(rest) >= 3:
            _check_replace(rest[0], rest[1], rest[2], what)
        elif (
            name in ("batch", "slice")
            and len(rest) > 1
            and _is_int(rest[1])
            and rest[1] > MAX_ITEMS
        ):
            _refuse(f"{what} of {rest[1]}", MAX_ITEMS, "MAX_ITEMS")
        return _check_result(func(*head, *rest, **kwargs), what)

    return bounded


def _bounded_range(*args: int) -> range:
    """Jinja's range, bounded per call and over the whole render (nested loops)."""
    numbers = range(*args)
    size = len(numbers)
    if size > MAX_ITEMS:
        _refuse(f"range of {size} items", MAX_ITEMS, "MAX_ITEMS")
    budget = _BUDGET.get()
    if budget is not None:
        budget.items += size
        if budget.items > MAX_RANGE_ITEMS:
            _refuse("the ranges this render loops over", MAX_RANGE_ITEMS, "MAX_RANGE_ITEMS")
    return numbers


def _counted(value: Any) -> Any:
    """Each `{{ ... }}` output, counted against the render's bound (output inside a
    `{% set %}` block or a loop is counted too)."""
    budget = _BUDGET.get()
    if budget is not None:
        budget.chars += _weight(value, MAX_RENDER_CHARS)
        if budget.chars > MAX_RENDER_CHARS:
            _refuse("the rendered text", MAX_RENDER_CHARS, "MAX_RENDER_CHARS")
    return value


def _joined(parts: Any) -> str:
    """A render's text, refused past the bound while it is being joined."""
    out: List[str] = []
    total = 0
    for part in parts:
        total += len(part)
        if total > MAX_RENDER_CHARS:
            _refuse("the rendered text", MAX_RENDER_CHARS, "MAX_RENDER_CHARS")
        out.append(part)
    return "".join(out)


_CLASSES: Optional[Tuple[Any, Any]] = None


def _bounded_classes() -> Tuple[Any, Any]:
    """(environment class, template class): Jinja's immutable sandbox with every binary
    operator, call, str.format and filter checked against the bounds above.  Made on
    first use: importing Jinja is what a no-op run avoids."""
    global _CLASSES
    if _CLASSES is not None:
        return _CLASSES
    import jinja2
    from jinja2.exceptions import TemplateRuntimeError
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from jinja2.utils import Namespace

    class BoundedTemplate(jinja2.Template):
        def render(self, *args: Any, **kwargs: Any) -> str:
            token = _BUDGET.set(_Budget())
            try:
                return super().render(*args, **kwargs)
            except (ArithmeticError, LookupError, RecursionError, TypeError, ValueError) as exc:
                # 1 // 0, 'a' - 1, range(10 ** 100), a macro that calls itself forever
                raise TemplateRuntimeError(f"{type(exc).__name__}: {exc}") from None
            finally:
                _BUDGET.reset(token)

    class BoundedNamespace(Namespace):
        def __setitem__(self, name: str, value: Any) -> None:
            super().__setitem__(name, _check_result(value, f"namespace value {name!r}"))

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset(("+", "-", "*", "/", "//", "**", "%"))
        template_class = BoundedTemplate
        concat = staticmethod(_joined)

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.globals["range"] = _bounded_range
            self.globals["namespace"] = BoundedNamespace
            self.globals.pop("lipsum", None)  # lipsum(n=10**9): nothing a build needs
            for name, func in list(self.filters.items()):
                self.filters[name] = _bounded_filter(name, func)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_binop(operator, left, right)
            result = self.binop_table[operator](left, right)
            return _check_result(result, f"{_short(left)} {operator} {_short(right)}")

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            args = _check_call(__obj, args, kwargs)
            result = super().call(__context, __obj, *args, **kwargs)
            return _check_result(result, f"{_short(__obj)}(...)")

        def wrap_str_format(self, value: Any) -> Any:
            wrapped = super().wrap_str_format(value)
            if wrapped is None:
                return None
            fmt = value.__self__
            mapping = value.__name__ == "format_map"

            @functools.wraps(wrapped)
            def bounded(*args: Any, **kwargs: Any) -> Any:
                data = args[0] if mapping and args else (*args, *kwargs.values())
                what = f"{_short(fmt)}.{value.__name__}(...)"
                _check_str_format(fmt, data, what)
                return _check_result(wrapped(*args, **kwargs), what)

            return bounded

    _CLASSES = (BoundedSandbox, BoundedTemplate)
    return _CLASSES


def _bytecode_cache(path: Path) -> Any:
    import jinja2

    class QuietCache(jinja2.FileSystemBytecodeCache):
        """A cache that cannot be written (full disk, read-only folder) only costs a compile."""

        def get_cache_key(self, name: str, filename: Optional[str] = None) -> str:
            return super().get_cache_key(f"{_COMPILED_AS}:{name}", filename)

        def dump_bytecode(self, bucket: Any) -> None:
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
    import jinja2

    bytecode_cache = None
    if cache is not None:
        try:
            cache.mkdir(parents=True, exist_ok=True)
            bytecode_cache = _bytecode_cache(cache)
        except OSError:
            bytecode_cache = None  # a read-only workspace compiles every time; nothing else changes
    sandbox, _ = _bounded_classes()
    env = sandbox(
        loader=loader,
        bytecode_cache=bytecode_cache,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        finalize=_quoted if quote else _counted,
        **syntax,
    )
    env.filters["raw"] = Raw
    env.filters["q"] = lambda v: Raw(shlex.quote(str(v)))
    return env


def command_env(
    search_path: Union[Path, Sequence[Path]], cache: Optional[Path] = None
) -> jinja2.Environment:
    """Commands: every value shell-quoted; `search_path` may be several folders."""
    import jinja2

    paths = [search_path] if isinstance(search_path, Path) else list(search_path)
    return _environment(jinja2.FileSystemLoader([str(p) for p in paths]), True, cache=cache)


def file_env(search_path: Path, cache: Optional[Path] = None) -> jinja2.Environment:
    import jinja2

    return _environment(jinja2.FileSystemLoader(str(search_path)), False, cache=cache)


# What makes a string a template in the shell syntax (and `\r`, which Jinja normalises).
_TEMPLATE_MARKS = ("{{", "{%", "{=#", "\r")
_LOOKUP = re.compile(r"\{\{ *([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*) *\}\}")


def _lookup(template: str, context: Mapping[str, Any]) -> Optional[str]:
    """`template` rendered as plain text when all it does is `{{ name }}` or `{{ a.b }}`
    lookups of strings and integers in dicts, exactly as Jinja would; None otherwise
    (filters, blocks, a missing name, anything an attribute would shadow)."""
    out: List[str] = []
    pos = 0
    for match in _LOOKUP.finditer(template):
        out.append(template[pos : match.start()])
        value: Any = context
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


def render_string(template: str, context: Mapping[str, Any], *, quote: bool) -> str:
    if not quote:
        text = _lookup(template, context)  # plain text or plain lookups: no Jinja at all
        if text is not None:
            return text
    import jinja2

    env = _environment(jinja2.BaseLoader(), quote=quote)
    return env.from_string(template).render(**context)


def ci_env(search_path: Path) -> jinja2.Environment:
    """CI workflows are full of `${{ ... }}`: these templates use `[[ ]]` and `[% %]`."""
    import jinja2

    return _environment(jinja2.FileSystemLoader(str(search_path)), quote=False, syntax=_CI_SYNTAX)


def render_value(template: str, context: Mapping[str, Any], what: str) -> str:
    """A recipe value (a tag, a cwd, an output pattern) rendered as plain text; a value
    the sandbox refuses, that names an unknown variable or that renders longer than
    MAX_VALUE_CHARS is a usage error naming it."""
    text = _lookup(template, context)
    if text is None:
        import jinja2

        try:
            text = render_string(template, context, quote=False)
        except jinja2.TemplateError as exc:
            raise UsageError(
                f"{what} = {_short(template)} does not render: {exc}.",
                "Recipe values may only use the documented variables (cann, soc, jobs, src, "
                "third_party, vendor_name, ...), not Python, and stay within the bounds "
                "cannbuild/render.py states.",
            ) from None
    if len(text) > MAX_VALUE_CHARS:
        raise UsageError(
            f"{what} = {_short(template)} renders {len(text)} characters, over the bound of "
            f"{MAX_VALUE_CHARS} for one recipe value (MAX_VALUE_CHARS in cannbuild/render.py).",
            "A tag, path or env entry is a short string; check the recipe.",
        )
    return text


class TemplateFailure(Exception):
    """A template that does not render; `undefined`: it used a name the context lacks."""

    def __init__(self, message: str, undefined: bool) -> None:
        super().__init__(message)
        self.undefined = undefined


def _canonical(value: Any) -> Any:
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
        self._known = (read_text_map(memo) if memo is not None else None) or {}
        self._used: Dict[str, str] = {}
        self._env: Any = None

    def render(self, name: str, values: Mapping[str, Any]) -> str:
        key = hashlib.sha256(
            json.dumps([name, _canonical(values)], sort_keys=True).encode()
        ).hexdigest()
        known = self._known.get(key)
        text = self._still_valid(known) if known is not None else None
        if text is not None and known is not None:
            entry = known
        else:
            text, read = self._render(name, values)
            entry = json.dumps({"text": text, "files": read}, sort_keys=True)
        if len(text) > MAX_COMMAND_CHARS:
            raise TemplateFailure(
                f"{name} renders {len(text)} characters, over the bound of {MAX_COMMAND_CHARS} "
                "for one step command (MAX_COMMAND_CHARS in cannbuild/render.py)",
                undefined=False,
            )
        self._used[key] = entry
        return text

    def save(self) -> None:
        if self.memo is not None and self._used and self._used != self._known:
            remember(self.memo, self._used)

    def _find(self, name: str) -> Optional[str]:
        """The file FileSystemLoader would load for `name`, spelled as it reports it."""
        import os.path

        for folder in self.search_path:
            candidate = os.path.normpath(os.path.join(folder, *name.split("/")))
            if os.path.isfile(candidate):
                return candidate
        return None

    def _still_valid(self, entry: str) -> Optional[str]:
        try:
            data = json.loads(entry)
            files: List[Tuple[str, str, str]] = [tuple(f) for f in data["files"]]  # type: ignore[misc]
            text = data["text"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(text, str):
            return None
        for name, path, sha in files:
            found = self._find(name)
            if found is None or found != path or _sha256(Path(found)) != sha:
                return None
        return text

    def _render(self, name: str, values: Mapping[str, Any]) -> Tuple[str, List[List[str]]]:
        import jinja2

        if self._env is None:
            self._env = command_env(list(self.search_path), self.cache)
        read: List[List[str]] = []
        loader = self._env.loader
        original = loader.get_source

        def recording(environment: Any, template: str) -> Any:
            source, filename, uptodate = original(environment, template)
            read.append([template, filename, hashlib.sha256(source.encode()).hexdigest()])
            return source, filename, uptodate

        loader.get_source = recording
        try:
            self._env.cache.clear()  # every template of this render is read through the loader
            return self._env.get_template(name).render(**values), read
        except jinja2.UndefinedError as exc:
            raise TemplateFailure(str(exc.message), undefined=True) from None
        except jinja2.TemplateError as exc:
            raise TemplateFailure(str(exc), undefined=False) from None
        finally:
            loader.get_source = original


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_text(encoding="utf-8").encode()).hexdigest()
    except (OSError, ValueError):
        return ""
