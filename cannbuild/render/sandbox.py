"""Cannbuild's Jinja sandbox: Jinja's immutable sandbox with every binary operator, call,
`str.format`, filter, `{% for %}` and `~` checked against the bounds in render/bounds.py.

Loops and `~` are compiled to go through the environment (`BoundedCodeGenerator`), as
operators and calls already do in Jinja's sandbox.  Jinja is imported only when
`bounded_classes()` is first called.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, List, Mapping, Optional, Tuple, Type

from ..lazy import lazy_module
from .bounds import (
    MAX_ITEMS,
    MAX_TEXT_CHARS,
    _bounded_items,
    _bounded_range,
    _charge,
    _check_binop,
    _check_call,
    _check_join,
    _check_percent,
    _check_replace,
    _check_result,
    _check_str_format,
    _check_text,
    _concat,
    _is_int,
    _joined,
    _refuse,
    _weight,
    budgeted,
    loop_items,
    short,
)

if TYPE_CHECKING:
    import jinja2
    from jinja2 import Template, nodes
    from jinja2 import compiler as jinja_compiler
    from jinja2 import exceptions as jinja_exceptions
    from jinja2 import runtime as jinja_runtime
    from jinja2 import sandbox as jinja_sandbox
    from jinja2 import utils as jinja_utils
    from jinja2.compiler import Frame
    from jinja2.runtime import Context
    from jinja2.sandbox import ImmutableSandboxedEnvironment
else:  # Jinja is imported when bounded_classes() is first called
    jinja2 = lazy_module("jinja2")
    jinja_compiler = lazy_module("jinja2.compiler")
    jinja_exceptions = lazy_module("jinja2.exceptions")
    jinja_runtime = lazy_module("jinja2.runtime")
    jinja_sandbox = lazy_module("jinja2.sandbox")
    jinja_utils = lazy_module("jinja2.utils")

# Filters that go through every item of their input: counted against MAX_LOOP_ITEMS.
_WALKING_FILTERS = frozenset((
    "batch", "dictsort", "groupby", "items", "join", "list", "map", "max", "min", "reject",
    "rejectattr", "reverse", "select", "selectattr", "slice", "sort", "sum", "unique",
))  # fmt: skip
# Filters that read no more than a few items of their input, whatever its size.
_GLANCING_FILTERS = frozenset((
    "abs", "attr", "count", "d", "default", "first", "float", "last", "length", "random",
    "round", "safe",
))  # fmt: skip


def _width(value: object) -> int:
    """What an indent or a separator argument adds: an int of spaces or a string."""
    if _is_int(value):
        return max(value, 0)
    return len(value) if isinstance(value, str) else 0


def _indented_size(value: object, indent: int) -> int:
    """About how many characters `value` takes as JSON indented by `indent` per level
    (each item on a line of its own), counted until past MAX_TEXT_CHARS."""
    total = 0
    stack = [(value, 1)]
    while stack and total <= MAX_TEXT_CHARS:
        item, depth = stack.pop()
        if isinstance(item, (Mapping, list, tuple)):
            total += (len(item) + 1) * (depth * indent + 2)
            items = [*item.keys(), *item.values()] if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in items)
        else:
            total += _weight(item)
    return total


def _check_filter_args(
    name: str, rest: List[object], kwargs: Mapping[str, object], what: str
) -> None:
    """Arguments that set how much a filter makes (a width, an indent, a count), checked
    before it runs: `tojson(indent=999999999)` took 4.8 GB before its result was refused."""
    value = rest[0] if rest else None

    def arg(position: int, keyword: str, default: object = None) -> object:
        return rest[position] if len(rest) > position else kwargs.get(keyword, default)

    width = arg(1, "width")
    if name == "center" and _is_int(width):
        _check_text(width, what)
    elif name == "indent" and isinstance(value, str):
        _check_text(len(value) + (value.count("\n") + 1) * _width(arg(1, "width", 4)), what)
    elif name == "format" and isinstance(value, str):
        _check_percent(value, kwargs or tuple(rest[1:]), what)
    elif name == "replace" and len(rest) >= 3:
        _check_replace(rest[0], rest[1], rest[2], what)
    elif name == "tojson":
        _check_text(_indented_size(value, _width(arg(1, "indent"))), what)
    elif name == "wordwrap" and isinstance(value, str) and _is_int(wrap := arg(1, "width", 79)):
        # a line holds a whole word or `width` characters
        lines = len(value.split()) + len(value) // max(wrap, 1) + 1
        lines += value.count("\n")
        _check_text(len(value) + lines * max(_width(arg(3, "wrapstring")), 1), what)
    elif name == "urlize" and isinstance(value, str):
        # each word may become <a href="word" rel=".." target="..">word</a>, escaped
        extra = _width(arg(3, "target")) + _width(arg(4, "rel")) + 64
        _check_text(12 * len(value) + len(value.split()) * extra, what)
    elif name in ("batch", "slice"):
        count = arg(1, "linecount" if name == "batch" else "slices")
        if _is_int(count) and count > MAX_ITEMS:
            _refuse(f"{what} of {count}", MAX_ITEMS, "MAX_ITEMS")


def _bounded_filter(name: str, func: Callable[..., object]) -> Callable[..., object]:
    """A Jinja filter whose arguments and result are checked: the arguments that set a
    size before it runs, the items it goes through and what it reads and makes against
    the render's bounds."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0
    walks = name in _WALKING_FILTERS
    reads = name not in _GLANCING_FILTERS

    @functools.wraps(func)
    def bounded(*args: object, **kwargs: object) -> object:
        head, rest = args[:skip], list(args[skip:])
        what = f"the {name} filter"
        if rest and reads:
            _charge(built=_weight(rest[0]))
            if walks and not _is_undefined(rest[0]):
                rest[0] = loop_items(rest[0])
        _check_filter_args(name, rest, kwargs, what)
        if name == "join" and rest:
            items = rest[0] = _bounded_items(rest[0], what)
            _check_join(rest[1] if len(rest) > 1 else kwargs.get("d", ""), items, what)
        return _check_result(func(*head, *rest, **kwargs), what)

    return bounded


def _is_undefined(value: object) -> bool:
    return isinstance(value, jinja2.Undefined)


@functools.cache
def bounded_classes() -> Tuple[Type[ImmutableSandboxedEnvironment], Type[Template]]:
    """(environment class, template class): Jinja's immutable sandbox with every binary
    operator, call, str.format and filter checked against the bounds above.  Made on
    first use: importing Jinja is what a no-op run avoids."""

    class BoundedCodeGenerator(jinja_compiler.CodeGenerator):
        """Every `{% for %}` iterates `environment.loop_items(...)`, and every `~` joins
        through `environment.concat_values`, so both are counted like the operators are.
        (Jinja allows no node types of our own: the loop's iterable is known by identity.)"""

        def visit_For(self, node: nodes.For, frame: Frame) -> None:
            self.__dict__.setdefault("loop_iters", {})[id(node.iter)] = node.iter
            super().visit_For(node, frame)

        def visit(self, node: nodes.Node, *args: object, **kwargs: object) -> object:
            if id(node) not in self.__dict__.get("loop_iters", ()):
                return super().visit(node, *args, **kwargs)
            self.write("environment.loop_items(")
            super().visit(node, *args, **kwargs)
            self.write(")")
            return None

        @jinja_compiler.optimizeconst
        def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
            # Jinja's own choice of join, with the values checked before it runs
            if frame.eval_ctx.volatile:
                join = "(markup_join if context.eval_ctx.volatile else str_join)"
            elif frame.eval_ctx.autoescape:
                join = "markup_join"
            else:
                join = "str_join"
            self.write(f"environment.concat_values({join}, (")
            for arg in node.nodes:
                self.visit(arg, frame)
                self.write(", ")
            self.write("))")

    class BoundedTemplate(jinja2.Template):
        def render(self, *args: object, **kwargs: object) -> str:
            with budgeted():
                try:
                    return super().render(*args, **kwargs)
                except (ArithmeticError, LookupError, RecursionError, TypeError, ValueError) as exc:
                    # 1 // 0, 'a' - 1, range(10 ** 100), a macro that calls itself forever
                    raise jinja_exceptions.TemplateRuntimeError(
                        f"{type(exc).__name__}: {exc}"
                    ) from None

    class BoundedNamespace(jinja_utils.Namespace):
        def __setitem__(self, name: str, value: object) -> None:
            what = f"namespace value {name!r}"
            super().__setitem__(name, _check_result(value, what, charge=False))

    class BoundedSandbox(jinja_sandbox.ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset(("+", "-", "*", "/", "//", "**", "%"))
        template_class = BoundedTemplate
        code_generator_class = BoundedCodeGenerator
        concat = staticmethod(_joined)
        concat_values = staticmethod(_concat)
        loop_items = staticmethod(loop_items)

        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            self.globals["range"] = _bounded_range
            self.globals["namespace"] = BoundedNamespace
            self.globals.pop("lipsum", None)  # lipsum(n=10**9): nothing a build needs
            for name, func in list(self.filters.items()):
                self.filters[name] = _bounded_filter(name, func)

        def _parse(
            self, source: str, name: Optional[str], filename: Optional[str]
        ) -> nodes.Template:
            try:
                return super()._parse(source, name, filename)
            except RecursionError:  # `{{ ((((...` thousands deep: a syntax error, not a crash
                raise jinja_exceptions.TemplateSyntaxError(
                    "brackets nested deeper than the parser recurses", 1, name, filename
                ) from None

        def call_binop(
            self, context: Context, operator: str, left: object, right: object
        ) -> object:
            _check_binop(operator, left, right)
            result = self.binop_table[operator](left, right)
            return _check_result(result, f"{short(left)} {operator} {short(right)}")

        def call(
            __self, __context: Context, __obj: object, *args: object, **kwargs: object
        ) -> object:
            args = _check_call(__obj, args, kwargs)
            # `loop(children)` of a recursive loop
            if isinstance(__obj, jinja_runtime.LoopContext) and args:
                args = (loop_items(args[0]), *args[1:])
            result = super().call(__context, __obj, *args, **kwargs)
            return _check_result(result, f"{short(__obj)}(...)")

        # Any as in Jinja's own signature: `value` is a str.format or format_map method
        # only once Jinja's wrapper says so
        def wrap_str_format(self, value: Any) -> Optional[Callable[..., str]]:
            wrapped = super().wrap_str_format(value)
            if wrapped is None:
                return None
            fmt = value.__self__
            mapping = value.__name__ == "format_map"

            @functools.wraps(wrapped)
            def bounded(*args: object, **kwargs: object) -> str:
                data = args[0] if mapping and args else (*args, *kwargs.values())
                what = f"{short(fmt)}.{value.__name__}(...)"
                _check_str_format(fmt, data, what)
                return _check_result(wrapped(*args, **kwargs), what)

            return bounded

    return BoundedSandbox, BoundedTemplate
