"""Ten clients at once, 50 calls each, over five servers, through one HTTP gateway: one process
per server however many clients, every reply the answer to its own request (each call echoes a
text of its own), and no server left once the gateway is killed with SIGKILL.
"""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_types import TextContent

from tests.conftest import wait_until
from tests.gateway.conftest import WAIT, GatewayProcess, alive, fixture, write_config

SERVERS = [f"s{i}" for i in range(5)]
CLIENTS = 10
CALLS = 50
IN_FLIGHT = 10
"""Calls each client keeps in flight at once."""

pytestmark = pytest.mark.timeout(240)


async def client_run(url: str, number: int, era: str) -> list[tuple[str, str | None]]:
    """One client's calls, each to ``sN__echo`` with a text of its own: (sent, received) pairs."""
    pairs: list[tuple[str, str | None]] = []
    limit = anyio.Semaphore(IN_FLIGHT)
    async with Client(url, mode=era) as client:

        async def call(index: int) -> None:
            server = SERVERS[(number + index) % len(SERVERS)]
            sent = f"{server} client {number} call {index} {uuid.uuid4().hex}"
            async with limit:
                result = await client.call_tool(f"{server}__echo", {"text": sent})
            [content] = result.content
            received = content.text if isinstance(content, TextContent) and not result.is_error else None
            pairs.append((sent, received))

        async with anyio.create_task_group() as group:
            for index in range(CALLS):
                group.start_soon(call, index)
    return pairs


def test_ten_clients_share_one_process_per_server_and_get_their_own_replies(tmp_path: Path) -> None:
    config = write_config(tmp_path, {ns: fixture("--name", ns) for ns in SERVERS})
    gateway = GatewayProcess(config, tmp_path).start()
    try:
        results: list[list[tuple[str, str | None]]] = []

        async def all_clients() -> None:
            async def one(number: int) -> None:
                # Half the clients in each era.
                results.append(await client_run(gateway.url, number, ("legacy", "2026-07-28")[number % 2]))

            with anyio.fail_after(WAIT * 3):
                async with anyio.create_task_group() as group:
                    for number in range(CLIENTS):
                        group.start_soon(one, number)

        anyio.run(all_clients)
        pairs = [pair for result in results for pair in result]
        assert len(pairs) == CLIENTS * CALLS, "lost replies"
        crossed = [(sent, received) for sent, received in pairs if sent != received]
        assert not crossed, f"{len(crossed)} replies were not the answer to their request: {crossed[:5]}"
        assert len({sent for sent, _ in pairs}) == CLIENTS * CALLS

        servers = gateway.servers()
        assert len(servers) == len(SERVERS), servers
        health = gateway.healthz()["servers"]
        assert {health[ns]["pid"] for ns in SERVERS} == servers, health

        # SIGKILL: the gateway cannot stop them; their parent-death signal does.
        gateway.process.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
        gateway.process.wait(WAIT)  # type: ignore[union-attr]
        assert wait_until(lambda: not alive(servers), WAIT), f"servers left after SIGKILL: {alive(servers)}"
    finally:
        gateway.kill()
