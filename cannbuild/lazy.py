"""Modules imported on first use, declared at the top of the module that uses them.

A no-op run, `--help` or `doctor` must not pay for what it does not touch (Jinja, rich,
the http stack, the sandbox builder), yet a reader should find every import where
imports are read.  Such a module is declared at the top as

    if TYPE_CHECKING:
        from ..sandbox import create
    else:
        create = lazy_module("cannbuild.sandbox.create")

and imported by the first attribute read (`create.create_sandbox(...)`).  Type checkers
see the real module; bench/house.py counts the declaration as an import edge.  A
`try: import x / except ImportError` that turns a missing optional package into a
verdict stays where it is handled, named in a comment beside the declarations.
"""

from __future__ import annotations

import sys
from types import ModuleType

_TARGET = "__lazy_target__"


class _LazyModule(ModuleType):
    """Stands for a module until an attribute is read; every read, write and delete then
    goes to the real module, so a value set on either is seen through both.  (pytest's
    monkeypatch reads the target's own `__dict__` to undo: patch the real module, not this.)  Not put in sys.modules: `"jinja2" in sys.modules` still says whether
    Jinja was imported."""

    def _target(self) -> ModuleType:
        target = self.__dict__.get(_TARGET)
        if target is None:
            # the interpreter's own import (as an `import` statement does), not
            # importlib.import_module: both hold the module's import lock (threads that
            # race here all get the one module object, and storing it twice stores the
            # same thing), but only this one is reported by `python -X importtime`
            __import__(self.__name__)
            target = sys.modules[self.__name__]
            self.__dict__[_TARGET] = target
        return target

    def __getattr__(self, attr: str) -> object:
        return getattr(self._target(), attr)

    def __setattr__(self, attr: str, value: object) -> None:
        setattr(self._target(), attr, value)

    def __delattr__(self, attr: str) -> None:
        delattr(self._target(), attr)

    def __repr__(self) -> str:
        state = "imported" if _TARGET in self.__dict__ else "not imported yet"
        return f"<lazy module {self.__name__!r} ({state})>"


def lazy_module(name: str) -> ModuleType:
    """The module `name` (absolute), imported when an attribute is first read."""
    return _LazyModule(name)
