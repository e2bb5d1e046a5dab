"""A server may list differently for clients that declare other capabilities: the schema cache
keeps one entry per set of declared capabilities, so the command line (none declared), a host
(roots and elicitation) and a gateway read back their own list from a warm cache, never each
other's (issue 41, "one cache, two answers")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actors import Runtime
from actors.mcp.config import ServerConfig
from actors.runtime.declared import declared_capabilities
from actors.runtime.handlers import HostHandlers
from actors.runtime.schema_cache import SchemaCache
from tests.conftest import child_pids, wait_until
from tests.runtime.conftest import config, stdio_server

WAIT = 30.0
SERVER = {"cap": stdio_server("capability_lists_server")}


def _decline(namespace: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "decline"}


def _answer(namespace: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}


NOTHING: dict[str, Any] = {}
HOST: dict[str, Any] = {"roots": ["file:///tmp"], "elicitation": _decline}


def _listed(cache: Path, **handlers: Any) -> list[str]:
    """What a runtime with ``handlers`` lists of the server, which runs for it (a cold list)."""
    with Runtime.start(config(SERVER), schema_cache=cache, **handlers) as rt:
        listed = sorted(spec.name for spec in rt.list_tools("cap", timeout=WAIT))
        assert child_pids(), "the cold list ran no server"
        return listed


def _entries(cache: Path) -> set[str]:
    return {path.name for path in cache.glob("*.json")}


def test_each_capability_set_reads_back_its_own_list_without_a_start(tmp_path: Path) -> None:
    cache = tmp_path / "schemas"
    # Cold: each runtime starts the server and lists what it is offered.
    assert _listed(cache, **NOTHING) == ["cap/plain"]
    assert wait_until(lambda: len(_entries(cache)) == 1, WAIT)
    assert _listed(cache, **HOST) == ["cap/plain", "cap/with_elicitation", "cap/with_roots"]
    assert wait_until(lambda: len(_entries(cache)) == 2, WAIT)
    # Warm: each reads its own entry, in either order, and no server process starts.
    for handlers, expected in (
        (HOST, ["cap/plain", "cap/with_elicitation", "cap/with_roots"]),
        (NOTHING, ["cap/plain"]),
    ):
        with Runtime.start(config(SERVER), schema_cache=cache, **handlers) as rt:
            assert sorted(spec.name for spec in rt.list_tools("cap", timeout=WAIT)) == expected
            assert not child_pids(), "a warm list started the server"


def test_the_command_line_does_not_read_a_hosts_entry(tmp_path: Path) -> None:
    """A `SchemaCache` no runtime has declared to (what ``mcp-actors tools`` reads first) is
    the entry of a runtime without handlers."""
    cache = tmp_path / "schemas"
    _listed(cache, **HOST)
    assert wait_until(lambda: len(_entries(cache)) == 1, WAIT)
    server = ServerConfig.model_validate({"name": "cap", **SERVER["cap"]})
    assert SchemaCache(cache).load(server) is None
    _listed(cache, **NOTHING)
    assert wait_until(lambda: len(_entries(cache)) == 2, WAIT)
    known = SchemaCache(cache).load(server)
    assert known is not None and [tool.tool_name for tool in known.tools] == ["plain"]


def _handlers(**given: Callable[..., Any] | list[str]) -> HostHandlers:
    return HostHandlers(**given)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("entry", "handlers", "declared"),
    [
        ({}, None, set()),
        ({}, _handlers(), set()),
        ({}, _handlers(roots=["file:///tmp"]), {"roots"}),
        ({}, _handlers(elicitation=_decline), {"elicitation"}),
        ({"elicitation": "decline"}, None, {"elicitation"}),  # a policy answers: declared
        ({"elicitation": "decline"}, _handlers(elicitation=_decline), {"elicitation"}),
        ({}, _handlers(sampling=_answer), set()),  # sampling only where the config allows it
        ({"sampling": "allow"}, _handlers(sampling=_answer), {"sampling"}),
        ({"sampling": "allow"}, None, set()),
    ],
)
def test_declared_capabilities(
    entry: dict[str, Any], handlers: HostHandlers | None, declared: set[str]
) -> None:
    server = ServerConfig.model_validate({"name": "s", "command": "x", **entry})
    assert declared_capabilities(server, handlers) == declared
    cache = SchemaCache("/nonexistent")
    cache.declare(handlers)
    suffix = "." + "+".join(sorted(declared)) if declared else ""
    assert cache.entry_key(server) == SchemaCache.key(server) + suffix
