"""The house's layers point one way, and no import runs in a circle.

The dependency direction (docs/architecture.md, issue 20): ``tools <- builtin``,
``tools <- mcp <- runtime <- gateway <- cli``, with ``cluster`` under ``gateway`` through a
protocol only. Nothing in ``tools/`` knows MCP or the actors; the runtime knows nothing of the
gateway; ``actors.testing`` (what tests need) is never imported by the product.

The rule for the kinds of import (tests/architecture/house.py reads them):

- **Layering counts every import**: module-level, under ``if TYPE_CHECKING:``, and deferred
  into a function. A type annotation is a dependency a reader must follow (issue 20 names
  ``cluster/affinity.py``, typed against the concrete ``Gateway`` under TYPE_CHECKING, as an
  import that runs back up), and a deferred import still loads the layer above when it runs.
  So a TYPE_CHECKING-only import may not run back up either.
- **Cycles are checked twice**: among the imports that run when a module is imported
  (module-level: a cycle there is a partly initialised module at run time), and among every
  import, TYPE_CHECKING and deferred included (a cycle there is two modules that cannot be
  read, typed or changed apart, as ``tools/spec.py`` and ``tools/schema.py`` were).

Each rule is data: the table of layers below, and an allow-list of today's violations with one
entry each. A new violation fails; so does an allow-listed one that is gone (delete its line).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable

from tests.architecture.allowances import assert_only_allowed
from tests.architecture.house import Import, ImportKind, actors_imports, cycles, imports, modules

# ---- the layers ---------------------------------------------------------------------------------

# A module's layer is its subpackage of actors/ ...
SUBPACKAGES = frozenset(
    {
        *("tools", "builtin", "sandbox", "mcp", "pins", "runtime"),
        *("agents", "gateway", "cluster", "cli", "demo", "testing"),
    }
)

# ... or, for a module at the top of actors/, the layer named here.
TOP_LEVEL = {
    "actors": "facade",  # the public names, loaded lazily (PEP 562)
    "actors.__main__": "cli",  # python -m actors
    "actors.exports": "base",  # the lazy-export helper: standard library only
    "actors.config": "config",  # the user's one configuration file, parsed for every layer
}

# A module of the gateway that only declares protocols (typing.Protocol classes, no functions,
# nothing of the gateway or the cluster imported) is the narrow seam the cluster may use.
GATEWAY_PROTOCOL = "gateway-protocol"

_RUNTIME_AND_BELOW = frozenset({"base", "tools", "builtin", "sandbox", "mcp", "pins", "config", "runtime"})
_PRODUCT = _RUNTIME_AND_BELOW | {"demo", "cluster", "gateway", GATEWAY_PROTOCOL, "cli"}

# What a module of each layer may import besides its own layer: the dependency direction.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "base": frozenset(),
    "tools": frozenset({"base"}),
    "builtin": frozenset({"base", "tools"}),
    # A server's boundary (actors/sandbox): bubblewrap, the egress proxy, limits; no MCP.
    "sandbox": frozenset({"base"}),
    "mcp": frozenset({"base", "tools", "sandbox"}),
    # Tool definitions pinned on first sight (actors/pins): plain parts the runtime uses.
    "pins": frozenset({"base", "tools", "mcp"}),
    "config": frozenset({"base", "tools", "sandbox", "mcp"}),
    "runtime": frozenset({"base", "tools", "builtin", "sandbox", "mcp", "pins", "config"}),
    "demo": frozenset({"base", "tools", "mcp", "config"}),
    # The agent frameworks' adapters: over the runtime, beside the gateway, never under it.
    "agents": _RUNTIME_AND_BELOW,
    GATEWAY_PROTOCOL: _RUNTIME_AND_BELOW,
    "cluster": _RUNTIME_AND_BELOW | {GATEWAY_PROTOCOL},
    "gateway": _RUNTIME_AND_BELOW | {"cluster", GATEWAY_PROTOCOL},
    "cli": _PRODUCT,
    "facade": _PRODUCT | {"testing"},  # only under TYPE_CHECKING: see test_the_product_never_imports_testing
    "testing": _PRODUCT,
}

# Distributions a layer must not import: the core knows no MCP and no actors; MCP knows no actors.
_NO_SDK_NO_ACTORS = frozenset({"mcp", "mcp_types", "pykka", "anyio"})
MAY_NOT_IMPORT_FROM_OUTSIDE: dict[str, frozenset[str]] = {
    "tools": _NO_SDK_NO_ACTORS,
    "builtin": _NO_SDK_NO_ACTORS,
    "mcp": frozenset({"pykka"}),
}

# ---- today's violations (the other parts of issue 20 remove them; then delete the line) ---------

# (importing file, imported module)
ALLOWED_LAYER_VIOLATIONS: frozenset[tuple[str, str]] = frozenset(
    [
    ]
)

# Import cycles, each a sorted tuple of the modules in it.
ALLOWED_RUNTIME_CYCLES: frozenset[tuple[str, ...]] = frozenset()
ALLOWED_CYCLES: frozenset[tuple[str, ...]] = frozenset(
    [
    ]
)

# Modules at the top of actors/ that belong in a subpackage (the report of the cli part of
# issue 20 proposes where; the integrator moves them).
ALLOWED_UNGROUPED: frozenset[str] = frozenset(
    [
    ]
)
# What may stay at the top: the package, python -m, its name loader and the user's config file.
TOP_LEVEL_BY_DESIGN = frozenset({"actors", "actors.__main__", "actors.exports", "actors.config"})


# ---- the rules ----------------------------------------------------------------------------------


@functools.cache
def _is_protocol_module(name: str) -> bool:
    """A module of the gateway that declares protocols only (see GATEWAY_PROTOCOL)."""
    tree = modules()[name].tree
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    protocols = all(
        any(
            (isinstance(base, ast.Name) and base.id == "Protocol")
            or (isinstance(base, ast.Attribute) and base.attr == "Protocol")
            for base in node.bases
        )
        for node in classes
    )
    reaches = {
        i.target
        for i in imports()
        if i.source == name and i.target.startswith(("actors.gateway", "actors.cluster"))
    }
    return bool(classes) and protocols and not functions and not reaches - {name}


def layer_of(name: str) -> str:
    parts = name.split(".")
    # A module at the top, or a package that replaced one (actors/config.py -> actors/config/).
    top = ".".join(parts[:2])
    if name in TOP_LEVEL or top in TOP_LEVEL:
        return TOP_LEVEL[name if name in TOP_LEVEL else top]
    assert parts[0] == "actors" and len(parts) > 1 and parts[1] in SUBPACKAGES, (
        f"{name} is in no layer: put it in a subpackage of actors/ (tests/architecture/test_layers.py "
        "says which layers there are)"
    )
    if parts[1] == "gateway" and name in modules() and _is_protocol_module(name):
        return GATEWAY_PROTOCOL
    return parts[1]


def _describe(edge: Import) -> str:
    return f"({edge.kind.value} import at {edge.where()}: {layer_of(edge.source)} -> {layer_of(edge.target)})"


def _module_of(path: str) -> str:
    """``actors/cli/main.py`` -> ``actors.cli.main`` (also for a file that is gone)."""
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _layer_violations(
    wanted: Callable[[str, str], bool],
) -> tuple[dict[tuple[str, str], str], frozenset[tuple[str, str]]]:
    """The imports from a layer to a layer that ``wanted(source, target)`` picks, as
    (file, module) with a description each, and the entries of the allow-list it picks."""
    found: dict[tuple[str, str], str] = {}
    for edge in actors_imports(ImportKind):
        if wanted(layer_of(edge.source), layer_of(edge.target)):
            found.setdefault((modules()[edge.source].path, edge.target), _describe(edge))
    allowed = frozenset(
        entry
        for entry in ALLOWED_LAYER_VIOLATIONS
        if wanted(layer_of(_module_of(entry[0])), layer_of(entry[1]))
    )
    return found, allowed


def test_every_layer_is_in_the_table() -> None:
    # A layer no module has any more (a top-level module moved into a subpackage) may stay.
    assert {*SUBPACKAGES, GATEWAY_PROTOCOL, *TOP_LEVEL.values()} <= set(MAY_IMPORT)
    for layer, allowed in MAY_IMPORT.items():
        assert allowed <= set(MAY_IMPORT), f"{layer} may import an unknown layer"
    for name in modules():
        layer_of(name)  # fails for a module in no layer


def test_imports_point_down_the_layers() -> None:
    found, allowed = _layer_violations(lambda source, target: target not in {source, *MAY_IMPORT[source]})
    assert_only_allowed("imports point down the layers", found, allowed)


def test_the_cluster_reaches_the_gateway_through_a_protocol_only() -> None:
    # Part of the rule above, said on its own: issue 20 asks for it by name.
    found, allowed = _layer_violations(lambda source, target: (source, target) == ("cluster", "gateway"))
    assert_only_allowed("cluster -> gateway only through a protocol", found, allowed)


def test_the_runtime_imports_nothing_of_the_gateway() -> None:
    above = {"gateway", GATEWAY_PROTOCOL, "cluster", "cli"}
    found, allowed = _layer_violations(lambda source, target: source == "runtime" and target in above)
    assert_only_allowed("the runtime knows nothing of the gateway", found, allowed)


def test_the_core_imports_no_sdk_and_no_actors() -> None:
    found = {}
    for edge in imports():
        forbidden = MAY_NOT_IMPORT_FROM_OUTSIDE.get(layer_of(edge.source), frozenset())
        if not edge.internal and edge.target in forbidden:
            found[(modules()[edge.source].path, edge.target)] = f"({edge.kind.value} at {edge.where()})"
    assert_only_allowed("tools and builtin know no MCP and no actors", found, frozenset())


def test_the_product_never_imports_testing() -> None:
    # The package's lazy name table may name a testing class for type checkers (TYPE_CHECKING in
    # actors/__init__.py); that imports nothing at run time. Nothing else may.
    found = {
        (modules()[edge.source].path, edge.target): _describe(edge)
        for edge in actors_imports(ImportKind)
        if layer_of(edge.target) == "testing"
        and layer_of(edge.source) != "testing"
        and not (edge.source == "actors" and edge.kind is ImportKind.TYPING)
    }
    assert_only_allowed("the product never imports actors.testing", found, frozenset())


def test_no_cycle_among_the_imports_that_run_at_import() -> None:
    found = cycles(actors_imports([ImportKind.RUNTIME]))
    assert_only_allowed("no cycle among module-level imports", found, ALLOWED_RUNTIME_CYCLES)


def test_no_cycle_among_all_imports_type_checking_and_deferred_included() -> None:
    found = cycles(actors_imports(ImportKind))
    assert_only_allowed("no cycle among all imports", found, ALLOWED_CYCLES)


def test_the_top_of_actors_holds_only_the_package_itself() -> None:
    found = [name for name in modules() if name.count(".") <= 1 and name not in TOP_LEVEL_BY_DESIGN]
    found = [name for name in found if name.split(".")[-1] not in SUBPACKAGES]
    assert_only_allowed("modules at the top of actors/ are grouped", found, ALLOWED_UNGROUPED)


def test_the_reader_sees_the_imports_it_must() -> None:
    # The rules above are only as good as the reading: pin known imports of each kind.
    seen = {(i.source, i.target, i.kind) for i in imports()}
    assert ("actors.cli.serve", "actors.gateway.command", ImportKind.DEFERRED) in seen
    assert ("actors.cli.listing", "actors.runtime.schema_cache", ImportKind.RUNTIME) in seen
    # `from actors.runtime import Runtime` (deferred) and `... import ServerStatus` (TYPE_CHECKING)
    # are imports of the modules that define them, not of the package that re-exports them.
    for source, kind in (
        ("actors.cli.startup", ImportKind.DEFERRED),
        ("actors.cli.output", ImportKind.TYPING),
    ):
        targets = {t for s, t, k in seen if (s, k) == (source, kind)}
        assert targets and all(t.startswith("actors.runtime.") for t in targets), (source, targets)
    assert any(
        s.startswith("actors.runtime.") and (t, k) == ("pykka", ImportKind.RUNTIME) for s, t, k in seen
    )
