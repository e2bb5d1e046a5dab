"""The gateway sends a tool call straight to the server actor the registry named for its
namespace (one hop fewer per call); a route whose actor has died sends the call back through the
registry, which starts a new one. A gateway in this process, an SDK client in memory, a real
fixture server over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pykka
from mcp import Client

from actors.gateway import Gateway
from actors.runtime.registry import ServerRefs
from tests.gateway.conftest import WAIT
from tests.gateway_search.gateway_process import fixture_entry


def _text(result: Any) -> str:
    assert not result.is_error, result
    return str(result.content[0].text)


def _server_actors(gateway: Gateway) -> list[pykka.ActorRef[Any]]:
    refs = ServerRefs()
    gateway.runtime.registry.tell(refs)
    actors: list[pykka.ActorRef[Any]] = refs.reply.result(timeout=WAIT)
    return actors


def test_a_call_after_its_server_actor_died_is_served_by_a_new_one(tmp_path: Path) -> None:
    config = {"mcpServers": {"a": fixture_entry()}, "builtin": {"enabled": False}}
    with Gateway.start(config) as gateway:

        async def scenario() -> None:
            async with Client(gateway.server, mode="legacy") as client:
                with anyio.fail_after(WAIT):
                    # The first call goes through the registry, which names the route first.
                    assert _text(await client.call_tool("a__echo", {"text": "one"})) == "one"
                    assert _text(await client.call_tool("a__echo", {"text": "two"})) == "two"
                    [dead] = await anyio.to_thread.run_sync(_server_actors, gateway)
                    await anyio.to_thread.run_sync(lambda: dead.stop(block=True, timeout=WAIT))
                    assert _text(await client.call_tool("a__echo", {"text": "three"})) == "three"
                    [alive] = await anyio.to_thread.run_sync(_server_actors, gateway)
                    assert alive != dead and alive.is_alive()
                    assert _text(await client.call_tool("a__echo", {"text": "four"})) == "four"

        anyio.run(scenario)
