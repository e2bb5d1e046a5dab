"""Resource updates through the gateway, in both client eras: a handshake-era client's
``resources/subscribe`` and a 2026-07-28 client's ``subscriptions/listen`` stream naming the
resource both hear of a backend's update (the surface server's ``bump`` changes its counter),
whatever the backend's own era; a stream's end releases the backend subscription."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.subscriptions import ResourceUpdated

from tests.gateway.conftest import WAIT, http_gateway, write_config
from tests.runtime.conftest import stdio_server
from tests.servers.surface_server import COUNTER_URI

pytestmark = pytest.mark.timeout(180)

BACKEND_ERAS = ("legacy", "2026-07-28")
BUMP_EVERY = 0.3
"""Seconds between bumps while a test waits for an update (a subscription takes effect a
moment after it is acknowledged, so the first bumps may go unheard)."""


def gateway_config(folder: Path, backend_era: str) -> Path:
    return write_config(folder, {"s": stdio_server("surface_server", protocol=backend_era)})


async def bump_until(client: Client, heard: anyio.Event) -> None:
    with anyio.fail_after(WAIT):
        while not heard.is_set():
            assert not (await client.call_tool("s__bump", {})).is_error
            with anyio.move_on_after(BUMP_EVERY):
                await heard.wait()


@pytest.mark.parametrize("backend_era", BACKEND_ERAS)
def test_a_listen_stream_naming_a_resource_hears_its_updates(tmp_path: Path, backend_era: str) -> None:
    with http_gateway(gateway_config(tmp_path, backend_era), tmp_path) as gateway:

        async def session() -> None:
            async with Client(gateway.url, mode="2026-07-28") as client:
                events: list[Any] = []
                heard = anyio.Event()
                async with (
                    client.listen(resource_subscriptions=[COUNTER_URI]) as stream,
                    anyio.create_task_group() as tasks,
                ):
                    assert list(stream.honored.resource_subscriptions or ()) == [COUNTER_URI]

                    async def collect() -> None:
                        async for event in stream:
                            events.append(event)
                            heard.set()

                    tasks.start_soon(collect)
                    await bump_until(client, heard)
                    tasks.cancel_scope.cancel()
                assert events and all(e == ResourceUpdated(COUNTER_URI) for e in events), events

        anyio.run(session)


def test_a_stream_that_ends_releases_the_backend_subscription(tmp_path: Path) -> None:
    # The backend (handshake era) tells which URIs its session subscribed to: the gateway's
    # subscription is there while a listen stream names the counter, and gone after.
    with http_gateway(gateway_config(tmp_path, "legacy"), tmp_path) as gateway:

        async def subscribed(client: Client) -> list[str]:
            result = await client.call_tool("s__subscribed", {})
            return list(json.loads(result.content[0].text))  # type: ignore[union-attr]

        async def session() -> None:
            async with Client(gateway.url, mode="2026-07-28") as client:
                assert await subscribed(client) == []
                async with client.listen(resource_subscriptions=[COUNTER_URI, "surface://nowhere"]):
                    assert await subscribed(client) == [COUNTER_URI]
                with anyio.fail_after(WAIT):
                    while await subscribed(client):
                        await anyio.sleep(0.1)

        anyio.run(session)


@pytest.mark.parametrize("backend_era", BACKEND_ERAS)
def test_a_handshake_era_subscription_hears_updates(tmp_path: Path, backend_era: str) -> None:
    with http_gateway(gateway_config(tmp_path, backend_era), tmp_path) as gateway:
        heard = anyio.Event()
        uris: list[str] = []

        async def handler(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/resources/updated":
                uris.append(str(message.params.uri))
                heard.set()

        async def session() -> None:
            async with Client(gateway.url, mode="legacy", message_handler=handler) as client:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await client.subscribe_resource(COUNTER_URI)
                await bump_until(client, heard)
            assert uris and set(uris) == {COUNTER_URI}, uris

        anyio.run(session)
