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


SILENCE = 1.5
"""Seconds a test waits after an update to see that no duplicate of it follows."""


async def _subscribed(client: Client, era: str, told: Told, *, task_status: Any) -> None:
    """Subscribed to the counter (resources/subscribe, or a listen stream) until cancelled;
    each update it hears is noted in ``told``."""
    if era == "legacy":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.subscribe_resource(COUNTER_URI)
        task_status.started()
        await anyio.sleep_forever()
    async with client.listen(resource_subscriptions=[COUNTER_URI]) as events:
        task_status.started()
        async for event in events:
            if isinstance(event, ResourceUpdated):
                told.told(event.uri)


def _legacy(url: str, told: Told) -> Client:
    return Client(url, mode="legacy", message_handler=told.handler)


def test_one_backend_update_is_heard_once_by_each_subscriber_on_every_replica(
    tmp_path: Path, replicas: ReplicaFactory
) -> None:
    config = write_config(tmp_path, {"s": stdio_server("surface_server")})
    here, there = replicas(2, config)
    method = "notifications/resources/updated"
    # Here: two handshake-era sessions and a listen stream on one URI (one backend update);
    # there: one of each era, told through Redis.
    told = {name: Told(method) for name in ("old-1", "old-2", "new", "there-old", "there-new")}

    async def session() -> None:
        async with (
            _legacy(here.url, told["old-1"]) as old_1,
            _legacy(here.url, told["old-2"]) as old_2,
            Client(here.url, mode="2026-07-28") as new,
            _legacy(there.url, told["there-old"]) as there_old,
            Client(there.url, mode="2026-07-28") as there_new,
            anyio.create_task_group() as tasks,
        ):
            for name, client, era in (
                ("old-1", old_1, "legacy"),
                ("old-2", old_2, "legacy"),
                ("new", new, "2026-07-28"),
                ("there-old", there_old, "legacy"),
                ("there-new", there_new, "2026-07-28"),
            ):
                await tasks.start(_subscribed, client, era, told[name])
            # The backend subscription is made once the server runs: bump until all hear.
            with anyio.fail_after(WAIT):
                while not all(each.heard.is_set() for each in told.values()):
                    assert not (await old_1.call_tool("s__bump", {})).is_error
                    with anyio.move_on_after(BUMP_EVERY):
                        for each in told.values():
                            await each.heard.wait()
            await anyio.sleep(SILENCE)  # what those bumps sent has arrived
            for each in told.values():
                each.uris.clear()
                each.heard = anyio.Event()
            # Now one bump.
            assert not (await old_1.call_tool("s__bump", {})).is_error
            with anyio.fail_after(WAIT):
                for each in told.values():
                    await each.heard.wait()
            await anyio.sleep(SILENCE)  # a duplicate would come right behind the first
            tasks.cancel_scope.cancel()

    try:
        anyio.run(session)
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        raise leaf from None
    heard = {name: len(each.uris) for name, each in told.items()}
    assert heard == dict.fromkeys(told, 1), heard
    assert len(here.servers()) == 1


def test_a_single_affinity_servers_resource_is_followed_at_its_owner_only(
    tmp_path: Path, replicas: ReplicaFactory
) -> None:
    config = write_config(tmp_path, {"s": stdio_server("surface_server", affinity="single")})
    owner, other = replicas(2, config)
    method = "notifications/resources/updated"
    told = {"old": Told(method), "new": Told(method)}

    async def session() -> None:
        async with (
            Client(owner.url, mode="2026-07-28") as bumper,
            _legacy(other.url, told["old"]) as old,
            Client(other.url, mode="2026-07-28") as new,
            anyio.create_task_group() as tasks,
        ):
            assert not (await bumper.call_tool("s__subscribed", {})).is_error  # the owner now
            await tasks.start(_subscribed, old, "legacy", told["old"])
            await tasks.start(_subscribed, new, "2026-07-28", told["new"])
            # The other replica follows it at the owner: no second copy of the server.
            assert not other.servers()
            with anyio.fail_after(WAIT):
                while not all(each.heard.is_set() for each in told.values()):
                    # A bump through the other replica: forwarded to the owner.
                    assert not (await new.call_tool("s__bump", {})).is_error
                    with anyio.move_on_after(BUMP_EVERY):
                        for each in told.values():
                            await each.heard.wait()
            tasks.cancel_scope.cancel()

    anyio.run(session)
    for each in told.values():
        assert set(each.uris) == {COUNTER_URI}, each.uris
    assert len(owner.servers()) == 1 and not other.servers()
