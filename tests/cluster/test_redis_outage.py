"""Redis killed and restarted under two serving replicas: nothing hangs (every call answers
within its timeout), calls and lists keep being served from each replica's own state while
Redis is away, and sharing resumes once it is back: a resource update heard by one replica
reaches a subscriber on the other again, and Redis holds the schema entries and members again
(it came back empty: no persistence).
"""

from __future__ import annotations

import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.cluster.conftest import PREFIX, WAIT, RedisServer, ReplicaFactory, redis_client, text_of
from tests.conftest import wait_until
from tests.gateway.conftest import fixture, write_config
from tests.runtime.conftest import stdio_server
from tests.servers.surface_server import COUNTER_URI

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def redis_server(own_redis: RedisServer) -> RedisServer:
    """This module stops Redis: a server of each test's own (the replicas use it too)."""
    return own_redis


CALL_TIMEOUT = 20.0
"""What a call may take while Redis is away (it needs nothing of Redis: far less)."""
OUTAGE_CALLS = 10
BUMP_EVERY = 0.3


def test_a_redis_outage_hangs_nothing_and_sharing_resumes_after_it(
    tmp_path: Path, redis_server: RedisServer, replicas: ReplicaFactory
) -> None:
    config = write_config(tmp_path, {"s": stdio_server("surface_server"), "f": fixture("--name", "f")})
    here, there = replicas(2, config)
    heard = anyio.Event()
    updates: list[str] = []
    slowest: list[float] = []

    async def handler(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/resources/updated":
            updates.append(str(message.params.uri))
            heard.set()

    async def subscribe(client: Client) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.subscribe_resource(COUNTER_URI)

    async def bump_until_heard(bumper: Client) -> None:
        with anyio.fail_after(WAIT):
            while not heard.is_set():
                assert not (await bumper.call_tool("s__bump", {})).is_error
                with anyio.move_on_after(BUMP_EVERY):
                    await heard.wait()

    async def served(client: Client) -> None:
        """One call and one list, each answered (and right) within its timeout."""
        text = uuid.uuid4().hex
        began = time.monotonic()
        with anyio.fail_after(CALL_TIMEOUT):
            assert text_of(await client.call_tool("f__echo", {"text": text})) == text
            assert len((await client.list_tools()).tools) > 2
        slowest.append(time.monotonic() - began)

    async def session() -> None:
        nonlocal heard
        async with (
            Client(there.url, mode="legacy", message_handler=handler) as listener,
            Client(here.url, mode="legacy") as bumper,
        ):
            await subscribe(listener)
            await subscribe(bumper)  # the bumper's replica follows the counter at its backend
            await bump_until_heard(bumper)  # sharing works before
            await served(bumper)  # f's server started on both replicas
            await served(listener)

            await anyio.to_thread.run_sync(redis_server.stop)
            for _ in range(OUTAGE_CALLS):
                await served(bumper)
                await served(listener)

            for replica in (here, there):  # each noticed (its heartbeat fails within seconds)
                noticed = await anyio.to_thread.run_sync(
                    lambda r=replica: wait_until(lambda: "is unavailable" in r.log(), WAIT, interval=0.1)
                )
                assert noticed, replica.log()
            await served(bumper)
            await served(listener)
            await anyio.to_thread.run_sync(redis_server.start)
            heard = anyio.Event()
            updates.clear()
            await bump_until_heard(bumper)  # sharing resumes
            await served(bumper)
            await served(listener)

    anyio.run(session)
    assert updates and set(updates) == {COUNTER_URI}, updates
    print(f"\nslowest call + list during and after the outage: {max(slowest) * 1000:.0f} ms")

    def restored() -> bool:
        with redis_client(redis_server.url) as client:
            schemas = list(client.scan_iter(match=f"{PREFIX}schema:*"))
            members = {client.hget(key, "address") for key in client.scan_iter(match=f"{PREFIX}member:*")}
        return len(schemas) == 2 and members == {here.url, there.url}

    assert wait_until(restored, WAIT, interval=0.2), "Redis did not get the schema entries and members back"
    for replica in (here, there):
        log = replica.log()
        assert log.count("is unavailable") == 1, log  # said once, however many operations failed
        assert "is back" in log, log
