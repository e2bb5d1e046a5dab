"""The gateway's own answers carry caching hints (SEP-2549) derived from its backends': a
2026-07-28 client sees ``ttlMs`` as the freshness left of the merged lists (or the backend's
read) and ``cacheScope`` public only when every backend said so and the answer does not depend
on the caller; never the SDK's default. A handshake-era client sees none.

``mcp-actors serve --http`` before tests/servers/cache_hint_server.py, real ``mcp.Client``s.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from tests.gateway.conftest import GatewayProcess, http_gateway, write_config
from tests.harness import forkserver
from tests.runtime.conftest import ROOT

MODERN = "2026-07-28"
TOKEN = "cache-hints-token"
HOUR_MS = 3_600_000

pytestmark = pytest.mark.timeout(180)


def backend(ttl_ms: int, scope: str, era: str = MODERN, *, listen: bool = True) -> dict[str, Any]:
    command, *args = forkserver.python_module(
        "tests.servers.cache_hint_server",
        "--ttl-ms",
        str(ttl_ms),
        "--scope",
        scope,
        *(() if listen else ("--no-listen",)),
    )
    return {
        "command": command,
        "args": args,
        "cwd": str(ROOT),
        "protocol": era,
        "healthCheckInterval": 0,
    }


def hint(result: Any) -> tuple[int, str] | None:
    """``(ttlMs, cacheScope)`` as the client received them; None if the wire carried neither."""
    if not {"ttl_ms", "cache_scope"} & result.model_fields_set:
        return None
    return result.ttl_ms, result.cache_scope


def client(gateway: GatewayProcess, mode: str = MODERN, token: str | None = None) -> Client:
    """A client without a response cache of its own: each request reaches the gateway."""
    if token is None:
        return Client(gateway.url, mode=mode, cache=None)  # type: ignore[arg-type]
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(gateway.url, http_client=http), mode=mode, cache=None)  # type: ignore[arg-type]


def run(gateway: GatewayProcess, check: Callable[[Client], Awaitable[None]], **options: Any) -> None:
    async def main() -> None:
        async with client(gateway, **options) as session:
            await check(session)

    anyio.run(main)


def every_answer(session: Client) -> list[Callable[[], Awaitable[Any]]]:
    return [
        session.list_tools,
        session.list_resources,
        session.list_resource_templates,
        session.list_prompts,
        lambda: session.read_resource("hint://value"),
    ]


def test_public_backend_lists_are_public_with_the_ttl_left(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"h": backend(HOUR_MS, "public")})
    with http_gateway(config, tmp_path) as gateway:

        async def check(session: Client) -> None:
            for ask in every_answer(session):
                seen = hint(await ask())
                assert seen is not None and seen[1] == "public", (ask, seen)
                # What is left of the backend's hour: the list was received moments ago.
                assert HOUR_MS - 60_000 < seen[0] <= HOUR_MS, (ask, seen)
            # Within the TTL, the gateway's lists cost the backend no tools/list.
            for _ in range(3):
                await session.list_tools()
            listed = await session.call_tool("h__listed", {})
            assert listed.structured_content == {"result": 1}

        run(gateway, check)

        async def legacy(session: Client) -> None:
            for ask in every_answer(session):
                assert hint(await ask()) is None, ask  # hints are a 2026-07-28 thing

        run(gateway, legacy, mode="legacy")


def test_a_private_backend_makes_every_answer_private(tmp_path: Path) -> None:
    # Both serve hint://value; "h" lists first (by name), so it answers the read.
    config = write_config(tmp_path, {"h": backend(HOUR_MS, "private"), "p": backend(HOUR_MS, "public")})
    with http_gateway(config, tmp_path) as gateway:

        async def check(session: Client) -> None:
            for ask in every_answer(session):
                seen = hint(await ask())
                assert seen is not None and seen[1] == "private" and seen[0] > 0, (ask, seen)

        run(gateway, check)


def test_behind_a_token_nothing_is_public(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"h": backend(HOUR_MS, "public")})
    with http_gateway(config, tmp_path, token=TOKEN) as gateway:

        async def check(session: Client) -> None:
            for ask in every_answer(session):
                seen = hint(await ask())
                assert seen is not None and seen[1] == "private" and seen[0] > 0, (ask, seen)

        run(gateway, check, token=TOKEN)


def test_a_backend_without_hints_makes_the_lists_stale_at_once(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"old": backend(HOUR_MS, "public", era="legacy")})
    with http_gateway(config, tmp_path) as gateway:

        async def check(session: Client) -> None:
            for ask in every_answer(session):
                assert hint(await ask()) == (0, "private"), ask

        run(gateway, check)


def test_a_ttl_of_0_is_stale_at_once_and_relisted_on_each_list(tmp_path: Path) -> None:
    # A backend that tells no list changes: its TTL of 0 is all the gateway can go by.
    config = write_config(tmp_path, {"h": backend(0, "public", listen=False)})
    with http_gateway(config, tmp_path) as gateway:

        async def check(session: Client) -> None:
            for _ in range(3):
                assert hint(await session.list_tools()) == (0, "public")
            listed = await session.call_tool("h__listed", {})
            assert listed.structured_content == {"result": 3}  # its start (the first list), then one per list

        run(gateway, check)


def test_the_tool_search_view_is_the_gateways_own(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"h": backend(HOUR_MS, "private")})
    with http_gateway(config, tmp_path, extra_args=("--tool-search",)) as gateway:

        async def check(session: Client) -> None:
            tools = await session.list_tools()
            assert {tool.name for tool in tools.tools} == {"search_tools", "call_tool"}
            assert hint(tools) == (0, "public")

        run(gateway, check)
