"""One server that cannot start (it never answers the handshake) does not slow every list:
after the first list found it could not start, lists answer from what is known without waiting
on it, and a list does not start it again (its supervisor's backoff does, or a call); a new
gateway learns it from the schema cache and does not wait on it even for its first list.

The figures are printed, not asserted: the bound is generous (half the handshake timeout)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.gateway.conftest import GatewayProcess, fixture, http_gateway, write_config
from tests.runtime.conftest import stdio_server

pytestmark = pytest.mark.timeout(240)

HANDSHAKE = 20.0
"""The silent server's ``connectTimeout``: what a list waiting on it would take."""


def starts(gateway: GatewayProcess) -> int:
    path = gateway.folder / "markers" / "silent-starts"
    return len(path.read_text().split()) if path.exists() else 0


def test_lists_do_not_wait_on_a_server_that_cannot_start(tmp_path: Path) -> None:
    dead = stdio_server(
        "silent_server",
        connectTimeout=HANDSHAKE,
        env={"FIXTURE_MARKER_DIR": str(tmp_path / "markers")},
        # The supervisor's own restart comes later than this test: only lists could start it.
        restartBackoff=600,
        restartBackoffMax=600,
    )
    servers = {"fx": fixture("--name", "fx"), "dead": dead}
    config = write_config(tmp_path, servers)
    took: dict[str, float] = {}

    async def lists(url: str) -> None:
        # No client-side list cache: each list goes to the gateway.
        async with Client(url, mode="legacy", cache=None) as client:
            began = time.monotonic()
            first = {tool.name for tool in (await client.list_tools()).tools}
            took["first tools/list"] = time.monotonic() - began
            assert "fx__echo" in first and not any(name.startswith("dead__") for name in first)
            for round_ in range(2):
                for kind, ask in (
                    ("tools/list", client.list_tools),
                    ("prompts/list", client.list_prompts),
                    ("resources/list", client.list_resources),
                ):
                    began = time.monotonic()
                    await ask()
                    took[f"{kind} #{round_ + 1}"] = time.monotonic() - began

    with http_gateway(config, tmp_path) as gateway:
        anyio.run(lists, gateway.url)
        print("a first gateway:", {what: f"{seconds:.3f} s" for what, seconds in took.items()})
        slow = {what: s for what, s in took.items() if what != "first tools/list" and s > HANDSHAKE / 2}
        assert not slow, (slow, gateway.log())
        assert starts(gateway) == 1, gateway.log()

    # A new gateway, from the cache the first one left: not even its first list waits on it (it
    # is asked to start once, in the background).
    took.clear()
    with http_gateway(config, tmp_path) as gateway:
        anyio.run(lists, gateway.url)
        print("from a warm cache:", {what: f"{seconds:.3f} s" for what, seconds in took.items()})
        slow = {what: s for what, s in took.items() if s > HANDSHAKE / 2}
        assert not slow, (slow, gateway.log())
        assert starts(gateway) <= 2, gateway.log()
