"""Ten clients x 100 calls over five servers across three replicas, each client spreading its
calls round-robin over the replicas as a stateless load balancer would (half the clients in
each era): every reply is the answer to its own request (each call echoes a text of its own),
none lost; the replicas list the same tools; each replica runs at most one process per server.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import anyio
import pytest

from tests.cluster.conftest import ReplicaFactory, RoundRobin, text_of
from tests.gateway.conftest import fixture, write_config

SERVERS = [f"s{i}" for i in range(5)]
CLIENTS = 10
CALLS = 100
IN_FLIGHT = 10
"""Calls each client keeps in flight at once."""
ERRORS: list[str] = []
"""What the error results said (this test's, cleared as it starts)."""

pytestmark = pytest.mark.timeout(240)


async def client_run(urls: list[str], number: int, era: str) -> list[tuple[str, str | None]]:
    """One client's calls, each to ``sN__echo`` with a text of its own: (sent, received) pairs."""
    pairs: list[tuple[str, str | None]] = []
    errors = ERRORS
    limit = anyio.Semaphore(IN_FLIGHT)
    # Each client starts its turn at another replica.
    async with RoundRobin(urls[number % len(urls) :] + urls[: number % len(urls)], era=era) as clients:

        async def call(index: int) -> None:
            server = SERVERS[(number + index) % len(SERVERS)]
            sent = f"{server} client {number} call {index} {uuid.uuid4().hex}"
            async with limit:
                result = await clients.call_tool(f"{server}__echo", {"text": sent})
            received = text_of(result)
            if received is None:  # what the error said, for the report
                errors.append(" ".join(getattr(block, "text", "") for block in result.content)[:300])
            pairs.append((sent, received))

        async with anyio.create_task_group() as group:
            for index in range(CALLS):
                group.start_soon(call, index)
    return pairs


def test_ten_clients_round_robin_over_three_replicas_get_their_own_replies(
    tmp_path: Path, replicas: ReplicaFactory
) -> None:
    config = write_config(tmp_path, {ns: fixture("--name", ns) for ns in SERVERS})
    cluster = replicas(3, config)
    urls = [replica.url for replica in cluster]
    results: list[list[tuple[str, str | None]]] = []
    ERRORS.clear()

    async def all_clients() -> float:
        began = time.monotonic()

        async def one(number: int) -> None:
            results.append(await client_run(urls, number, ("legacy", "2026-07-28")[number % 2]))

        with anyio.fail_after(180):
            async with anyio.create_task_group() as group:
                for number in range(CLIENTS):
                    group.start_soon(one, number)
        return time.monotonic() - began

    elapsed = anyio.run(all_clients)
    pairs = [pair for result in results for pair in result]
    assert len(pairs) == CLIENTS * CALLS
    lost = [sent for sent, received in pairs if received is None]
    crossed = [(sent, received) for sent, received in pairs if received is not None and received != sent]
    errors = sorted(set(ERRORS))[:5]
    assert not lost, f"{len(lost)} calls got no answer, e.g. {lost[:3]}; the errors: {errors}"
    assert not crossed, f"{len(crossed)} replies answered another request, e.g. {crossed[:3]}"
    print(
        f"\n{len(pairs)} calls over {len(cluster)} replicas in {elapsed:.1f} s ({len(pairs) / elapsed:.0f}/s)"
    )
    # Every replica served calls of every server, each with one process per server.
    for replica in cluster:
        running = {ns: s["pid"] for ns, s in replica.healthz()["servers"].items() if s["state"] == "running"}
        assert sorted(running) == SERVERS, replica.healthz()
        assert len(replica.servers()) == len(SERVERS)
