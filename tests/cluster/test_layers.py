"""The cluster sits under the gateway: it sees the gateway through `ServedGateway` only, never
through an import of the gateway's modules (which would run back up)."""

from __future__ import annotations

import ast
from pathlib import Path

import actors.cluster

CLUSTER = Path(actors.cluster.__file__).parent


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_cluster_module_imports_the_gateway() -> None:
    modules = sorted(CLUSTER.glob("*.py"))
    assert modules
    upward = {
        path.name: sorted(name for name in _imports(path) if name.startswith("actors.gateway"))
        for path in modules
    }
    assert not any(upward.values()), upward


def test_the_gateway_satisfies_the_protocol_the_cluster_is_typed_against() -> None:
    from actors.cluster.served import ServedGateway
    from actors.gateway import Gateway

    wanted = {name for name in dir(ServedGateway) if not name.startswith("_")}
    assert wanted == {
        "announce",
        "caller_meta",
        "config",
        "in_flight",
        "names",
        "server_states",
        "stop_server",
    }
    assert wanted <= set(dir(Gateway))
