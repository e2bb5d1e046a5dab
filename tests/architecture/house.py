"""The house read from its source text: the modules of ``actors/``, their imports, their classes
and their sizes, parsed with `ast` (nothing of ``actors`` is imported, so a rule can hold for a
module that would not import here).

An import is resolved to the module it really depends on:

- ``from actors.runtime import messages`` names a submodule: the import is of that submodule;
- ``from actors.runtime import Runtime`` names something a package's ``__init__`` re-exports
  (lazily or not): the import is of the module that defines it (``actors.runtime.facade``),
  found by following the ``__init__``'s own imports; the package's ``__init__`` is not counted
  (it only re-exports);
- anything else is an import of the named module (or of its nearest existing parent);
- an import from outside ``actors`` is recorded by its top-level name (``mcp``, ``pykka``).

Each import has a kind: `ImportKind.RUNTIME` (at module or class level: it runs when the
module is imported), `ImportKind.TYPING` (under ``if TYPE_CHECKING:``: only the type checker
follows it) or `ImportKind.DEFERRED` (inside a function: it runs when the function is called).
"""

from __future__ import annotations

import ast
import enum
import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PACKAGE",
    "ROOT",
    "ClassSize",
    "Import",
    "ImportKind",
    "Module",
    "actors_imports",
    "class_sizes",
    "cycles",
    "imports",
    "measure_classes",
    "modules",
]

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "actors"


class ImportKind(enum.Enum):
    RUNTIME = "module-level"
    TYPING = "TYPE_CHECKING"
    DEFERRED = "deferred"


@dataclass(frozen=True)
class Module:
    name: str  # actors.runtime.server
    path: str  # actors/runtime/server.py, relative to the repository
    tree: ast.Module
    lines: int

    @property
    def is_package(self) -> bool:
        return self.path.endswith("/__init__.py")


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # a module of actors, or a top-level name from outside (mcp, pykka)
    kind: ImportKind
    line: int

    @property
    def internal(self) -> bool:
        return self.target == "actors" or self.target.startswith("actors.")

    def where(self) -> str:
        return f"{modules()[self.source].path}:{self.line}"


@dataclass(frozen=True)
class ClassSize:
    path: str
    name: str  # qualified within its module: Outer.Inner
    lines: int  # from its first decorator to its last line


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def modules() -> Mapping[str, Module]:
    """Every module under ``actors/``, by dotted name."""
    found: dict[str, Module] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        name = _module_name(path)
        found[name] = Module(
            name, path.relative_to(ROOT).as_posix(), ast.parse(text, str(path)), len(text.splitlines())
        )
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@dataclass(frozen=True)
class _Raw:
    """An import as written: ``base`` (absolute), and the name taken from it (None for ``import``)."""

    base: str
    name: str | None
    kind: ImportKind
    line: int


class _Collector(ast.NodeVisitor):
    def __init__(self, module: Module) -> None:
        self._module = module
        self._kind = ImportKind.RUNTIME
        self.found: list[_Raw] = []

    def _within(self, kind: ImportKind, nodes: Iterable[ast.AST]) -> None:
        outer, self._kind = self._kind, kind
        for node in nodes:
            self.visit(node)
        self._kind = outer

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._within(ImportKind.DEFERRED, node.body)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._within(ImportKind.DEFERRED, node.body)

    def visit_If(self, node: ast.If) -> None:
        if self._kind is ImportKind.RUNTIME and _is_type_checking(node.test):
            self._within(ImportKind.TYPING, node.body)
            self._within(self._kind, node.orelse)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.found += [_Raw(alias.name, None, self._kind, node.lineno) for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            package = self._module.name.split(".")
            if not self._module.is_package:
                package.pop()
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, *([node.module] if node.module else [])])
        self.found += [_Raw(base, alias.name, self._kind, node.lineno) for alias in node.names]


@functools.cache
def _raw_imports(name: str) -> tuple[_Raw, ...]:
    collector = _Collector(modules()[name])
    collector.visit(modules()[name].tree)
    return tuple(collector.found)


def _existing(name: str) -> str:
    """``name``, or its nearest parent that is a module of actors."""
    known = modules()
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _resolve(base: str, name: str | None, seen: frozenset[tuple[str, str]] = frozenset()) -> str:
    """The module an import of ``name`` from ``base`` depends on (see the module's docstring)."""
    if not (base == "actors" or base.startswith("actors.")):
        return base.split(".", maxsplit=1)[0]
    known = modules()
    if name is None or name == "*":
        return _existing(base)
    if f"{base}.{name}" in known:
        return f"{base}.{name}"
    module = known.get(base)
    if module is not None and module.is_package and (base, name) not in seen:
        for raw in _raw_imports(base):
            if raw.name is not None and raw.name == name:
                return _resolve(raw.base, raw.name, seen | {(base, name)})
    return _existing(base)


@functools.cache
def imports() -> tuple[Import, ...]:
    """Every import of every module of actors, resolved."""
    return tuple(
        Import(source, _resolve(raw.base, raw.name), raw.kind, raw.line)
        for source in modules()
        for raw in _raw_imports(source)
    )


def actors_imports(kinds: Iterable[ImportKind]) -> list[Import]:
    """The imports of one module of actors by another, of the given kinds."""
    wanted = set(kinds)
    return [i for i in imports() if i.internal and i.kind in wanted and i.target != i.source]


def cycles(edges: Iterable[Import]) -> list[tuple[str, ...]]:
    """The import cycles among ``edges``: each strongly connected group of two or more modules,
    sorted (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[tuple[str, ...]] = []

    def visit(node: str) -> None:
        # Recursive: the house is a few hundred modules deep at most.
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(tuple(sorted(group)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def _classes(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.ClassDef]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            yield prefix + child.name, child
            yield from _classes(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _classes(child, f"{prefix}{child.name}.")
        else:
            yield from _classes(child, prefix)


def measure_classes(path: str, tree: ast.Module) -> list[ClassSize]:
    """The classes of one parsed module (nested ones too), each with its length in lines."""
    sizes = []
    for name, node in _classes(tree, ""):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        sizes.append(ClassSize(path, name, (node.end_lineno or node.lineno) - first + 1))
    return sizes


def class_sizes() -> list[ClassSize]:
    """Every class of actors (nested ones too) with its length in lines."""
    return [size for module in modules().values() for size in measure_classes(module.path, module.tree)]
