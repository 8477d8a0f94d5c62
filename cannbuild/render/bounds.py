"""What a template may compute: the bounds of cannbuild's Jinja sandbox.

Templates are data a user may hand us (a recipe, the step templates beside it), so the
sandbox bounds what they compute: arithmetic, string and list sizes, format widths,
ranges, and the text a render and a recipe value may come to (the MAX_* constants below).
Past a bound, the render fails with a TemplateError naming it (exit 2 where a recipe is
rendered), before the machine's memory or a minute of CPU is spent.  Work is bounded per
render too: the items its loops and filters go through, and the characters its checked
operations read and build (each within the bounds, ten thousand of them are not).
The checks are here; `render/sandbox.py` makes the Jinja environment that calls them, and
`render.py` its environments from that.  Jinja is imported here only to raise a refusal.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import re
import reprlib
import string
from typing import (
    TYPE_CHECKING,
    Callable,
    Iterable,
    Iterator,
    List,
    Mapping,
    NoReturn,
    Optional,
    Sized,
    Tuple,
    TypeVar,
    cast,
)

from ..lazy import lazy_module

if TYPE_CHECKING:
    from jinja2 import exceptions as jinja_exceptions
    from typing_extensions import TypeGuard
else:  # only a refused render pays for it
    jinja_exceptions = lazy_module("jinja2.exceptions")

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
# The items one render may go through in all: every pass of a `{% for %}` (nested loops
# multiply, a recursive loop's inner passes count) and every item a filter walks (map, sort,
# unique, join, ...).  A step template loops over a few ops; 10**5 passes take well under
# a second, two nested loops over a 9000-item list took minutes.
MAX_LOOP_ITEMS = 100_000
# The characters (or items) the checked operations of one render read and build in all:
# each result is within MAX_TEXT_CHARS, but ten thousand of them (a `map` that pads each
# item) took 2.5 GB before the list was refused.  Real renders handle under 100 KiB; a
# refused one stops at a few times this in memory.
MAX_BUILT_CHARS = 16 * 1024 * 1024
# An integer a template computes: about 1200 digits.  `10 ** 10000000` would cost half a
# minute of CPU to print (Python then refuses, past 4300 digits).
MAX_INT_BITS = 4096
# Compiled templates are cached by name and source; a change to what the environment
# compiles into them (intercepted operators, counted loops and `~`) must not load older code.
COMPILED_AS = "bounded-2"

T = TypeVar("T")


class _Budget:
    """What one render has used so far: range items, characters output, items looped
    over, characters read and built."""

    __slots__ = ("built", "chars", "items", "loops")

    def __init__(self) -> None:
        self.items = 0
        self.chars = 0
        self.loops = 0
        self.built = 0


_BUDGET: contextvars.ContextVar[Optional[_Budget]] = contextvars.ContextVar(
    "cannbuild_render_budget", default=None
)


def _refuse(what: str, bound: int, name: str) -> NoReturn:
    raise jinja_exceptions.SecurityError(
        f"{what}: over the bound of {bound} ({name} in cannbuild/render/bounds.py)"
    )


@contextlib.contextmanager
def budgeted() -> Iterator[None]:
    """The budget of one render, from its start to its end."""
    token = _BUDGET.set(_Budget())
    try:
        yield
    finally:
        _BUDGET.reset(token)


def _charge(loops: int = 0, built: int = 0) -> None:
    """Work the current render does, counted (none outside a bounded render)."""
    budget = _BUDGET.get()
    if budget is None:
        return
    budget.loops += loops
    budget.built += built
    if budget.loops > MAX_LOOP_ITEMS:
        _refuse("the items this render loops over", MAX_LOOP_ITEMS, "MAX_LOOP_ITEMS")
    if budget.built > MAX_BUILT_CHARS:
        _refuse("what this render reads and builds", MAX_BUILT_CHARS, "MAX_BUILT_CHARS")


def loop_items(iterable: object) -> object:
    """What a `{% for %}` or a filter goes through, counted against the render's bound: a
    sized value up front (all of it is gone through), an iterator item by item."""
    if _BUDGET.get() is None:
        return iterable
    if not isinstance(iterable, Sized):  # a filter's generator: counted as it is consumed
        # what is not iterable, iter() refuses, as the loop or the filter itself would
        return _counting(iter(cast(Iterable[object], iterable)))
    _charge(loops=len(iterable))
    return iterable


def _counting(items: Iterator[T]) -> Iterator[T]:
    for item in items:
        _charge(loops=1)
        yield item


def short(value: object) -> str:
    """`value` for a message, cut to a line."""
    short = reprlib.Repr()
    short.maxstring = short.maxother = short.maxlong = 60
    return short.repr(value)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _weight(value: object, limit: int = MAX_TEXT_CHARS) -> int:
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


def _check_result(value: T, what: str, charge: bool = True) -> T:
    """`value` when it is within the bounds on what a template builds; with `charge`, its
    size counts against what the render builds in all."""
    size = 0
    if isinstance(value, str):
        size = len(value)
        if size > MAX_TEXT_CHARS:
            _refuse(f"{what} makes {size} characters", MAX_TEXT_CHARS, "MAX_TEXT_CHARS")
    elif _is_int(value):
        size = value.bit_length() // 3 + 1
        if value.bit_length() > MAX_INT_BITS:
            _refuse(
                f"{what} makes a {value.bit_length()}-bit integer", MAX_INT_BITS, "MAX_INT_BITS"
            )
    elif isinstance(value, (list, tuple, set, frozenset, dict)):
        if len(value) > MAX_ITEMS:
            _refuse(f"{what} makes {len(value)} items", MAX_ITEMS, "MAX_ITEMS")
        size = _weight(value)
        if size > MAX_TEXT_CHARS:
            _refuse(f"{what} makes a value this long", MAX_TEXT_CHARS, "MAX_TEXT_CHARS")
    if charge:
        _charge(built=size)
    return value


def _check_text(size: int, what: str) -> None:
    if size > MAX_TEXT_CHARS:
        _refuse(f"{what} would make {size} characters", MAX_TEXT_CHARS, "MAX_TEXT_CHARS")


def _check_repeat(seq: object, times: object, what: str) -> None:
    """`seq * times`: a string or a list repeated."""
    if not _is_int(times) or times <= 0:
        return
    if isinstance(seq, str):
        _check_text(len(seq) * times, what)
    elif isinstance(seq, (list, tuple)):
        if len(seq) * times > MAX_ITEMS:
            _refuse(f"{what} would make {len(seq) * times} items", MAX_ITEMS, "MAX_ITEMS")
        _check_text(_weight(seq) * times, what)


def _check_binop(operator: str, left: object, right: object) -> None:
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


def _values(data: object) -> List[object]:
    if isinstance(data, Mapping):
        return list(data.values())
    if isinstance(data, tuple):
        return list(data)
    return [data]


def _check_formatting(
    fmt: str, fields: int, widths: List[int], from_args: bool, data: object, what: str
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


def _check_percent(fmt: str, data: object, what: str) -> None:
    fields, widths, star = 0, [], False
    for width, precision, _ in _PERCENT_SPEC.findall(fmt):
        fields += 1
        for number in (width, precision):
            if number == "*":
                star = True
            elif number:
                widths.append(int(number))
    _check_formatting(fmt, fields, widths, star, data, what)


def _check_str_format(fmt: str, data: object, what: str) -> None:
    fields, widths, nested = 0, [], False
    for _, field, spec, _ in string.Formatter().parse(fmt):
        if field is None:
            continue
        fields += 1
        if spec:
            nested = nested or "{" in spec
            widths += [int(d) for d in re.findall(r"\d+", spec)]
    _check_formatting(fmt, fields, widths, nested, data, what)


def _bounded_items(value: object, what: str) -> Sized:
    """`value` as a list when it is an iterator (a join would consume it unseen)."""
    if isinstance(value, (str, list, tuple, dict, set, frozenset)):
        return value
    # join's argument: iter() refuses what is not iterable, as the join itself would
    items = list(itertools.islice(iter(cast(Iterable[object], value)), MAX_ITEMS + 1))
    if len(items) > MAX_ITEMS:
        _refuse(f"{what} is over {MAX_ITEMS} items", MAX_ITEMS, "MAX_ITEMS")
    return items


def _check_join(sep: object, items: Sized, what: str) -> None:
    _check_text(_weight(items) + len(str(sep)) * len(items), what)


def _check_replace(text: object, old: object, new: object, what: str) -> None:
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
        count = text.count(old) if old else len(text) + 1
        _check_text(len(text) + count * len(new), what)


def _check_call(
    obj: object, args: Tuple[object, ...], kwargs: Mapping[str, object]
) -> Tuple[object, ...]:
    """The arguments of a call from a template, checked (a macro's too: recursion that
    doubles a string stops at the bound); str methods that pad or multiply are bounded
    before they run."""
    read = 0
    for value in (*args, *kwargs.values()):
        if isinstance(value, (str, list, tuple, dict)):
            weight = _weight(value)
            read += weight
            if weight > MAX_TEXT_CHARS:
                _refuse("a call's argument is too long", MAX_TEXT_CHARS, "MAX_TEXT_CHARS")
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, str):
        read += len(owner)
    _charge(built=read)  # a method that scans a long string, in a loop
    if not isinstance(owner, str):
        return args
    name = getattr(obj, "__name__", "")
    what = f"{short(owner)}.{name}(...)"
    first = args[0] if args else None
    if name in ("center", "ljust", "rjust", "zfill") and _is_int(first):
        _check_text(first, what)
    elif name == "expandtabs":
        tab = kwargs.get("tabsize", first if args else 8)
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


def counted(value: T) -> T:
    """Each `{{ ... }}` output, counted against the render's bound (output inside a
    `{% set %}` block or a loop is counted too)."""
    budget = _BUDGET.get()
    if budget is not None:
        budget.chars += _weight(value, MAX_RENDER_CHARS)
        if budget.chars > MAX_RENDER_CHARS:
            _refuse("the rendered text", MAX_RENDER_CHARS, "MAX_RENDER_CHARS")
    return value


def _concat(join: Callable[[Tuple[object, ...]], str], values: Tuple[object, ...]) -> str:
    """`a ~ b ~ c`: bounded before it is joined (each `~` of `s ~ s ~ s` would otherwise
    multiply a string Python then builds)."""
    _check_text(sum(_weight(v) for v in values), "a ~ concatenation")
    return _check_result(join(values), "a ~ concatenation")


def _joined(parts: Iterable[str]) -> str:
    """A render's text, refused past the bound while it is being joined."""
    out: List[str] = []
    total = 0
    for part in parts:
        total += len(part)
        if total > MAX_RENDER_CHARS:
            _refuse("the rendered text", MAX_RENDER_CHARS, "MAX_RENDER_CHARS")
        out.append(part)
    return "".join(out)
