"""No import cycle at any scope (bench/house.py counts a lazy import as an edge, as a reader
must): a cycle is a defect, so it is a test.  The house figures (modules, lines, the
largest modules, `Any` in annotations) steer review instead: .ci/run prints them in its
lint step, and the measure itself is proven here."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

from cachedmemo import cached_memo

ROOT = Path(__file__).resolve().parents[2]


def _house():
    spec = importlib.util.spec_from_file_location("house", ROOT / "bench" / "house.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["house"] = module
    spec.loader.exec_module(module)
    return module


# each module's import edges, kept in pytest's cache by what they are computed from
# (bench/house.py import_cycles): a run parses only the modules that changed, not all of
# them (1.6 s of CPU)
EDGES_MEMO = "cannbuild/house-import-edges"


def test_no_import_makes_a_cycle(request):
    with cached_memo(request.config, EDGES_MEMO) as memo:
        found = _house().import_cycles(memo=memo)
    assert found == []


def test_a_lazy_import_back_into_a_package_is_a_cycle(tmp_path):
    """The measure can fail: a function-local import closing a loop is found, and an import
    under TYPE_CHECKING (which never runs) is not."""
    pkg = tmp_path / "cannbuild"
    (pkg / "inner").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "inner" / "__init__.py").write_text("from .a import A\n")
    (pkg / "inner" / "a.py").write_text("A = 1\n")
    (pkg / "top.py").write_text("from .inner import A\n")
    (pkg / "inner" / "b.py").write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from ..top import A
            """
        )
    )
    house = _house()
    memo: dict = {}
    assert house.measure(pkg)["cycles"] == house.import_cycles(pkg, memo) == []
    (pkg / "inner" / "a.py").write_text("A = 1\ndef f():\n    from ..top import A\n    return A\n")
    # the memo of the run before holds a.py's old edges: its new text is read again
    assert (
        house.measure(pkg)["cycles"]
        == house.import_cycles(pkg, memo)
        == [["cannbuild.inner", "cannbuild.inner.a", "cannbuild.top"]]
    )
    assert len(memo) == 5  # one entry a module: a.py's old one is dropped


def test_a_lazy_module_declaration_is_an_edge_and_counted_apart(tmp_path):
    """`lazy_module("cannbuild.x")` ties two modules as an import does (a cycle through it
    is found); declared at the top it is a lazy declaration, called inside a function it
    is a function-local import."""
    pkg = tmp_path / "cannbuild"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "lazy.py").write_text("def lazy_module(name):\n    return name\n")
    (pkg / "a.py").write_text("from .b import B\n")
    top = """
        from typing import TYPE_CHECKING
        from .lazy import lazy_module
        if TYPE_CHECKING:
            from . import a
        else:
            a = lazy_module("cannbuild.a")
        B = 1
        """
    (pkg / "b.py").write_text(textwrap.dedent(top))
    house = _house()
    figures = house.measure(pkg)
    assert figures["cycles"] == [["cannbuild.a", "cannbuild.b"]]
    assert (figures["lazy_declarations"], figures["function_local_imports"]) == (1, 0)
    inside = """
        from .lazy import lazy_module
        def a():
            return lazy_module("cannbuild.a")
        B = 1
        """
    (pkg / "b.py").write_text(textwrap.dedent(inside))
    figures = house.measure(pkg)
    assert figures["cycles"] == [["cannbuild.a", "cannbuild.b"]]
    assert (figures["lazy_declarations"], figures["function_local_imports"]) == (0, 1)
    (pkg / "b.py").write_text("B = 1\n")
    assert house.measure(pkg)["cycles"] == []


def test_an_alias_of_any_counts_as_any_where_it_is_used(tmp_path):
    pkg = tmp_path / "cannbuild"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "decoded.py").write_text(
        "from typing import Any, Dict\nJSON = Any\nObj = Dict[str, JSON]\n"
    )
    (pkg / "user.py").write_text("def f(a: 'Obj', b: int) -> JSON:\n    return a\n")
    assert _house().measure(pkg)["any_in_annotations"] == 2
