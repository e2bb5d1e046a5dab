"""A limit shared across replicas: two ``mcp-actors serve --http --cluster`` processes on one
real ``redis-server``, clients of both calling at once. The tool's bucket is one, in Redis: the
burst goes once in the whole cluster, not once per replica."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from actors.gateway.access.limits import RATE_LIMITED
from tests.cluster.conftest import WAIT, RedisServer, Replica, RoundRobin, redis_client
from tests.gateway.conftest import fixture, write_config

pytestmark = pytest.mark.timeout(180)

BURST = 6


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis").start()
    try:
        yield server
    finally:
        server.stop()


def test_two_replicas_share_one_bucket(tmp_path: Path, redis: RedisServer) -> None:
    limits = {"tools": {"fx/echo": {"all": {"rate": 1, "per": "hour", "burst": BURST}}}}
    config = write_config(tmp_path, {"fx": fixture()}, access={"limits": limits})
    replicas = [Replica(config, tmp_path / f"replica-{n}", redis.url) for n in range(2)]
    try:
        for replica in replicas:
            replica.launch()
        for replica in replicas:
            replica.ready()

        async def scenario() -> tuple[int, list[tuple[int, MCPError]]]:
            async with RoundRobin([r.url for r in replicas]) as clients:

                async def one(n: int) -> bool:
                    try:
                        result = await clients.sessions[n % 2].call_tool("fx__echo", {"text": str(n)})
                    except MCPError as exc:
                        refusals.append((n % 2, exc))
                        return False
                    return not result.is_error

                refusals: list[tuple[int, MCPError]] = []
                with anyio.fail_after(WAIT):
                    served = await asyncio.gather(*(one(n) for n in range(40)))
                return sum(served), refusals

        served, refusals = asyncio.run(scenario())
        assert served == BURST
        assert len(refusals) == 40 - BURST
        assert {(e.error.code, e.error.data["scope"]) for _, e in refusals} == {(RATE_LIMITED, "tool")}
        # Each replica served fewer than the burst it would have served alone: one bucket.
        assert {replica for replica, _ in refusals} == {0, 1}
        with redis_client(redis.url) as client:
            assert client.exists("mcp-actors:limit:tool:fx/echo")
    finally:
        for replica in replicas:
            replica.stop()
