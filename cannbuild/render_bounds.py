"""What a template may compute: the bounds of cannbuild's Jinja sandbox.

Templates are data a user may hand us (a recipe, the step templates beside it), so the
sandbox bounds what they compute: arithmetic, string and list sizes, format widths,
ranges, and the text a render and a recipe value may come to (the MAX_* constants below).
Past a bound, the render fails with a TemplateError naming it (exit 2 where a recipe is
rendered), before the machine's memory or a minute of CPU is spent.  Loops are bounded
through `range` (per call and per render); a loop over a long string or list is not
counted, but every value it can build is.  `render.py` makes its environments from
`bounded_classes()`; Jinja is imported only when that is first called.
"""

from __future__ import annotations

import contextvars
import functools
import re
import string
from typing import Any, Dict, List, Mapping, NoReturn, Optional, Tuple

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
COMPILED_AS = "bounded-1"


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

    raise SecurityError(f"{what}: over the bound of {bound} ({name} in cannbuild/render_bounds.py)")


def short(value: Any) -> str:
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
    what = f"{short(left)} {operator} {short(right)}"
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
    what = f"{short(owner)}.{name}(...)"
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


def counted(value: Any) -> Any:
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


@functools.cache
def bounded_classes() -> Tuple[Any, Any]:
    """(environment class, template class): Jinja's immutable sandbox with every binary
    operator, call, str.format and filter checked against the bounds above.  Made on
    first use: importing Jinja is what a no-op run avoids."""
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
            return _check_result(result, f"{short(left)} {operator} {short(right)}")

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            args = _check_call(__obj, args, kwargs)
            result = super().call(__context, __obj, *args, **kwargs)
            return _check_result(result, f"{short(__obj)}(...)")

        def wrap_str_format(self, value: Any) -> Any:
            wrapped = super().wrap_str_format(value)
            if wrapped is None:
                return None
            fmt = value.__self__
            mapping = value.__name__ == "format_map"

            @functools.wraps(wrapped)
            def bounded(*args: Any, **kwargs: Any) -> Any:
                data = args[0] if mapping and args else (*args, *kwargs.values())
                what = f"{short(fmt)}.{value.__name__}(...)"
                _check_str_format(fmt, data, what)
                return _check_result(wrapped(*args, **kwargs), what)

            return bounded

    return BoundedSandbox, BoundedTemplate
