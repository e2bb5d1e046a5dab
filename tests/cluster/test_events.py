"""Events across replicas, in both client eras: a tool list change seen by one replica (its
backend added a tool during a call made there) reaches a client connected to another replica;
a resource update heard by one replica (a bump on its own backend process) reaches a client
subscribed on another, whose own backend process never changed.

The 1 s target for a list change is a benchmark figure: the test asserts a generous bound and
prints what it measured (``-s`` shows it).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.subscriptions import ResourceUpdated

from tests.cluster.conftest import WAIT, ReplicaFactory, text_of
from tests.gateway.conftest import fixture, write_config
from tests.runtime.conftest import stdio_server
from tests.servers.surface_server import COUNTER_URI

pytestmark = pytest.mark.timeout(180)

ERAS = ("legacy", "2026-07-28")
BOUND = 5.0
"""Seconds a list change may take to reach the other replica here (the target is 1 s)."""
BUMP_EVERY = 0.3


class Told:
    """When a client was told what it waits for (notifications, or its listen stream)."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.when: list[float] = []
        self.uris: list[str] = []
        self.heard = anyio.Event()

    def told(self, uri: str | None = None) -> None:
        self.when.append(time.monotonic())
        if uri is not None:
            self.uris.append(uri)
        self.heard.set()

    async def handler(self, message: Any) -> None:
        if getattr(message, "method", None) == self.method:
            self.told(str(message.params.uri) if self.method.endswith("updated") else None)


def test_a_list_change_on_one_replica_reaches_clients_of_another(
    tmp_path: Path, replicas: ReplicaFactory
) -> None:
    config = write_config(tmp_path, {"s": fixture("--name", "s")})
    here, there = replicas(2, config)
    news = {era: Told("notifications/tools/list_changed") for era in ERAS}

    async def listen(client: Client, told: Told, *, task_status: Any) -> None:
        async with client.listen(tools_list_changed=True) as events:
            task_status.started()
            async for _ in events:
                told.told()

    async def session() -> float:
        async with (
            Client(there.url, mode="legacy", message_handler=news["legacy"].handler) as old,
            Client(there.url, mode="2026-07-28") as new,
            Client(here.url, mode="legacy") as caller,
            anyio.create_task_group() as tasks,
        ):
            await old.list_tools()  # the replica now knows this client
            await tasks.start(listen, new, news["2026-07-28"])
            assert text_of(await caller.call_tool("s__echo", {"text": "warm"})) == "warm"
            started = time.monotonic()
            assert text_of(await caller.call_tool("s__add_tool", {"name": "added"})) is not None
            with anyio.fail_after(WAIT):
                for told in news.values():
                    await told.heard.wait()
            tasks.cancel_scope.cancel()
            return started

    started = anyio.run(session)
    for era, told in news.items():
        elapsed = told.when[0] - started
        print(f"\nlist_changed across replicas ({era} client): {elapsed * 1000:.0f} ms")
        assert elapsed < BOUND, f"the list change took {elapsed:.2f}s to reach the other replica ({era})"
    # The other replica's own backend never ran: the news came through Redis.
    assert not there.servers()


def test_a_resource_update_on_one_replica_reaches_subscribers_on_another(
    tmp_path: Path, replicas: ReplicaFactory
) -> None:
    config = write_config(tmp_path, {"s": stdio_server("surface_server")})
    here, there = replicas(2, config)
    news = {era: Told("notifications/resources/updated") for era in ERAS}

    async def subscribed(client: Client, era: str, told: Told | None, *, task_status: Any) -> None:
        """Subscribed to the counter (resources/subscribe, or a listen stream) until cancelled."""
        if era == "legacy":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.subscribe_resource(COUNTER_URI)
            task_status.started()
            await anyio.sleep_forever()
        async with client.listen(resource_subscriptions=[COUNTER_URI]) as events:
            task_status.started()
            async for event in events:
                if told is not None and isinstance(event, ResourceUpdated):
                    told.told(event.uri)

    async def session() -> None:
        async with (
            Client(there.url, mode="legacy", message_handler=news["legacy"].handler) as old,
            Client(there.url, mode="2026-07-28") as new,
            Client(here.url, mode="legacy") as bumper,
            Client(here.url, mode="2026-07-28") as watcher,
            anyio.create_task_group() as tasks,
        ):
            await tasks.start(subscribed, old, "legacy", None)
            await tasks.start(subscribed, new, "2026-07-28", news["2026-07-28"])
            # Subscriptions on the bumper's replica have it follow the counter at its backend
            # (one per era: each path publishes to the other replicas).
            await tasks.start(subscribed, bumper, "legacy", None)
            await tasks.start(subscribed, watcher, "2026-07-28", None)
            with anyio.fail_after(WAIT):
                while not all(told.heard.is_set() for told in news.values()):
                    assert not (await bumper.call_tool("s__bump", {})).is_error
                    with anyio.move_on_after(BUMP_EVERY):
                        await news["legacy"].heard.wait()
                        await news["2026-07-28"].heard.wait()
            tasks.cancel_scope.cancel()

    anyio.run(session)
    for told in news.values():
        assert told.uris and set(told.uris) == {COUNTER_URI}, told.uris
