"""Lazy behind the gateway: with a warm schema cache (on disk, written by an earlier gateway
process), a fresh gateway in front of 20 servers answers the lists without starting any, and
``/healthz`` wakes none; the first call starts exactly the one server it needs.

How fast those lists answer is a benchmark's claim (``python -m benchmarks.gateway_lists``),
not an assert.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.conftest import wait_until
from tests.gateway.conftest import WAIT, GatewayProcess, fixture, http_gateway, write_config

SERVERS = [f"s{i:02d}" for i in range(20)]

pytestmark = pytest.mark.timeout(240)


async def tool_names(url: str) -> set[str]:
    async with Client(url, mode="legacy") as client:
        return {tool.name for tool in (await client.list_tools()).tools}


def states(gateway: GatewayProcess) -> dict[str, str]:
    return {ns: server["state"] for ns, server in gateway.healthz()["servers"].items()}


def test_a_warm_cache_lists_20_servers_without_a_process_and_a_call_starts_one(tmp_path: Path) -> None:
    # Each server its own identity (its own cache entry): --name differs.
    config = write_config(tmp_path, {ns: fixture("--name", ns) for ns in SERVERS})
    cache = tmp_path / "cache"

    # A first gateway has never seen them: listing starts each once, and the cache is written.
    with http_gateway(config, tmp_path) as first:
        names = anyio.run(tool_names, first.url)
        assert {f"{ns}__echo" for ns in SERVERS} <= names
        assert wait_until(lambda: len(list(cache.glob("*.json"))) == len(SERVERS), WAIT), list(
            cache.iterdir()
        )

    with http_gateway(config, tmp_path) as gateway:
        assert gateway.servers() == set()
        assert set(states(gateway).values()) == {"idle"}, gateway.healthz()

        async def lists() -> None:
            async with Client(gateway.url, mode="legacy") as client:
                tools = {tool.name for tool in (await client.list_tools()).tools}
                assert tools == names
                await client.list_resources()
                await client.list_resource_templates()
                await client.list_prompts()

        anyio.run(lists)
        assert gateway.servers() == set(), "a list started a server"
        assert set(states(gateway).values()) == {"idle"}, gateway.healthz()

        async def call() -> str:
            async with Client(gateway.url, mode="legacy") as client:
                result = await client.call_tool("s07__add", {"a": 1, "b": 2})
                return str(result.content[0].text)  # type: ignore[union-attr]

        assert anyio.run(call) == "3"
        [child] = gateway.servers()
        health = gateway.healthz()["servers"]
        assert health["s07"]["state"] == "running" and health["s07"]["pid"] == child, health
        assert {ns for ns, state in states(gateway).items() if state != "idle"} == {"s07"}, health
