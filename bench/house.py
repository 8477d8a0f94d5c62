"""The shape of the package, measured the same way every time: module sizes (the five
largest), `Any` in annotations, imports inside functions, lazy declarations, comment
density, and import cycles at any scope.  .ci/run prints them in its lint step: figures
to steer review, not caps (a cycle is the one a test holds, tests/unit/test_house.py).

  python bench/house.py [--json]

An import cycle "at any scope" counts an edge for every `import` in a module, whether at
the top or inside a function (a lazy import still ties the two modules together), and
for every `lazy_module("cannbuild.x")` (cannbuild/lazy.py), `importlib.import_module` or
`__import__` of a constant name; it ignores only imports under `if TYPE_CHECKING:`, which never run.
An import done inside a function, by statement or by one of those calls, is a
function-local import; a `lazy_module` declaration at module level is counted apart
(`lazy_declarations`): it is read at the top, but it is lazy all the same.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import sys
import tokenize
from pathlib import Path
from typing import AbstractSet, Dict, List, MutableMapping, Optional, Set, Tuple

PACKAGE = Path(__file__).resolve().parent.parent / "cannbuild"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, is_package: bool, level: int, name: str) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


class Module:
    def __init__(
        self, path: Path, package: Path = PACKAGE, known: AbstractSet[str] = frozenset()
    ) -> None:
        self.path = path
        self.known = known
        self.name = module_name(path, package)
        self.source = path.read_text()
        self.tree = ast.parse(self.source)
        self.lines = len(self.source.splitlines())
        self.edges: Set[str] = set()
        self.local_imports = 0
        self.lazy_declarations = 0
        self._annotated: List[ast.AST] = []  # functions and annotated assignments, for any_count
        # One walk (three were 1.2 s of the quick loop): each node with whether it sits in a
        # function (a local import) and whether under `if TYPE_CHECKING:` (never runs).
        stack: List[Tuple[ast.AST, bool]] = [(self.tree, False)]
        while stack:
            node, in_function = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.AnnAssign)):
                self._annotated.append(node)
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.Call)):
                self._edges_of(node, in_function)
            inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            if _is_type_checking(node):
                assert isinstance(node, ast.If)
                # the body never runs; its test and else branch do
                stack.append((node.test, inner))
                stack.extend((child, inner) for child in node.orelse)
                self._annotated.extend(
                    n
                    for child in node.body
                    for n in ast.walk(child)
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.AnnAssign))
                )
                continue
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))

    def _edges_of(self, node: ast.AST, in_function: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            targets = self._targets(node)
        else:
            assert isinstance(node, ast.Call)
            name = _call_name(node)
            if name not in IMPORTING_CALLS:
                return
            targets = [t for t in _constant_arg(node) if t.startswith("cannbuild")]
            if not in_function and name == "lazy_module":
                self.lazy_declarations += 1
        if in_function:
            self.local_imports += 1
        for target in targets:
            # importing a.b.c runs a/__init__ and a/b/__init__ first: edges too, but
            # not to the packages this module sits in (they ran before it anyway)
            parts = target.split(".")
            for n in range(2, len(parts) + 1):
                edge = ".".join(parts[:n])
                if n == len(parts) or not self.name.startswith(edge + "."):
                    self.edges.add(edge)

    def _targets(self, node: ast.AST) -> List[str]:
        is_package = self.path.name == "__init__.py"
        if isinstance(node, ast.Import):
            return [a.name for a in node.names if a.name.startswith("cannbuild")]
        assert isinstance(node, ast.ImportFrom)
        if node.level:
            base = _resolve(self.name, is_package, node.level, node.module or "")
        else:
            base = node.module or ""
        if not base.startswith("cannbuild"):
            return []
        # `from pkg import x`: x is a submodule (an edge to it) or a name pkg/__init__ defines
        return [
            f"{base}.{a.name}" if f"{base}.{a.name}" in self.known else base for a in node.names
        ]

    def any_count(self, aliases: AbstractSet[str] = frozenset()) -> int:
        count = 0
        for node in self._annotated:
            annotations: List[ast.AST] = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                every = args.posonlyargs + args.args + args.kwonlyargs
                every += [a for a in (args.vararg, args.kwarg) if a is not None]
                annotations += [a.annotation for a in every if a.annotation is not None]
                if node.returns is not None:
                    annotations.append(node.returns)
            elif isinstance(node, ast.AnnAssign):
                annotations.append(node.annotation)
            for ann in annotations:
                count += sum(1 for tok in _annotation_names(ann) if tok == "Any" or tok in aliases)
        return count

    def any_aliases(self) -> Set[str]:
        """Module-level names that stand for Any (`JSONValue = Any`, `JSONObject = Dict[str,
        JSONValue]`): a use of one counts as an Any, so an alias cannot hide one."""
        found: Set[str] = set()
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                names = _names(ast.unparse(node.value))
                if isinstance(target, ast.Name) and ("Any" in names or found & set(names)):
                    found.add(target.id)
        return found

    def comment_lines(self) -> int:
        tokens = tokenize.generate_tokens(io.StringIO(self.source).readline)
        return sum(1 for t in tokens if t.type == tokenize.COMMENT)


# calls that import the module they name: cannbuild/lazy.py's proxy, importlib's, and
# the builtin the proxy imports with
IMPORTING_CALLS = ("lazy_module", "import_module", "__import__")


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _constant_arg(node: ast.Call) -> List[str]:
    """The module a call names, when its first argument is a string constant."""
    if node.args and isinstance(node.args[0], ast.Constant):
        value = node.args[0].value
        return [value] if isinstance(value, str) else []
    return []


def _annotation_names(ann: ast.AST) -> List[str]:
    """The names an annotation uses, looking inside quoted parts ('Dict[str, Any]')."""
    found: List[str] = []
    for node in ast.walk(ann):
        if isinstance(node, ast.Name):
            found.append(node.id)
        elif isinstance(node, ast.Attribute):
            found.append(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += _names(node.value)
    return found


def _names(text: str) -> List[str]:
    try:
        tree = ast.parse(text.strip("'\""), mode="eval")
    except SyntaxError:
        return []
    return [n.id for n in ast.walk(tree) if isinstance(n, ast.Name)] + [
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    ]


def cycles(modules: Dict[str, Module]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    return _cycles({name: m.edges for name, m in modules.items()})


def import_cycles(
    package: Path = PACKAGE, memo: Optional[MutableMapping[str, List[str]]] = None
) -> List[List[str]]:
    """`measure(package)["cycles"]` alone.  With `memo`, each module's edges are kept
    under a digest of all they are computed from (this file, the module's name, its
    text and the package's module names) and taken from there while none of it changed:
    parsing every module is most of the cost, and between two runs few modules change.
    Entries no module of the package uses any more are dropped."""
    paths = sorted(package.rglob("*.py"))
    known = {module_name(p, package) for p in paths}
    salt = hashlib.sha256(Path(__file__).read_bytes())
    salt.update("\0".join(sorted(known)).encode())
    edges: Dict[str, Set[str]] = {}
    used: Set[str] = set()
    for path in paths:
        name = module_name(path, package)
        digest = salt.copy()
        digest.update(b"\0" + name.encode() + b"\0" + path.read_bytes())
        key = digest.hexdigest()
        used.add(key)
        if memo is not None and key in memo:
            edges[name] = set(memo[key])
        else:
            edges[name] = Module(path, package, known).edges
            if memo is not None:
                memo[key] = sorted(edges[name])
    if memo is not None:
        for key in [k for k in memo if k not in used]:
            del memo[key]
    return _cycles(edges)


def _cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    graph = {
        name: sorted({e for e in targets if e in edges and e != name})
        for name, targets in edges.items()
    }
    # a package's __init__ importing its own submodules is not a cycle back to it
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    found: List[List[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return found


def measure(package: Path = PACKAGE, comments: bool = True) -> Dict[str, object]:
    """`comments=False` skips the tokenizer (most of the time) where only structure matters."""
    paths = sorted(package.rglob("*.py"))
    known = {module_name(p, package) for p in paths}
    modules = {m.name: m for m in (Module(p, package, known) for p in paths)}
    aliases = set().union(*(m.any_aliases() for m in modules.values()))
    code = sum(m.lines for m in modules.values())
    noted = sum(m.comment_lines() for m in modules.values()) if comments else 0
    largest = sorted(modules.values(), key=lambda m: -m.lines)[:5]
    flat = [m for m in modules.values() if m.path.parent == package and m.name != package.name]
    return {
        "modules": len(modules),
        "flat_modules": len(flat),
        "lines": code,
        "largest": {m.name: m.lines for m in largest},
        "any_in_annotations": sum(m.any_count(aliases) for m in modules.values()),
        "function_local_imports": sum(m.local_imports for m in modules.values()),
        "lazy_declarations": sum(m.lazy_declarations for m in modules.values()),
        "comment_lines_per_100": round(100 * noted / code, 1) if comments else None,
        "cycles": cycles(modules),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--package", type=Path, default=PACKAGE, help="another checkout's cannbuild/"
    )
    args = parser.parse_args()
    figures = measure(args.package.resolve())
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
