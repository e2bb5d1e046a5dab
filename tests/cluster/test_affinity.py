"""Single-affinity servers across replicas: one lease in Redis says which replica runs the server,
the others forward its calls there, and when the owner dies the next call starts it elsewhere.

The leases and the forwarder are tested on their own first (a real Redis, a real gateway), then
whole replicas: ``mcp-actors serve --http ... --cluster redis://...`` processes in front of the
stateful counter server (tests/servers/counter_server.py), with a round-robin client.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis
from mcp_types import CallToolResult

from actors.cluster.forward import Forwarder, is_unreachable
from actors.cluster.lease import LEASE_PREFIX, Leases, redis_client
from actors.testing import procfs
from actors.tools import ErrorType
from tests.cluster.conftest import WAIT, RedisServer, Replica, ReplicaFactory, RoundRobin
from tests.conftest import wait_until
from tests.gateway.conftest import http_gateway, write_config
from tests.runtime.conftest import stdio_server
from tests.servers.http_server import free_port

# The counter reports its own pid, which the tests find among a replica's children: each server
# a process the replica started, never a fork of the harness's (tests/harness/forkserver.py).
pytestmark = pytest.mark.real_process

TTL = 1.5
"""The lease TTL of these tests, in seconds (short, so expiry is seen quickly)."""
TOKEN = "affinity-test-token"


def counter(**keys: Any) -> dict[str, Any]:
    """The stateful counter server, marked single."""
    return stdio_server("counter_server", affinity="single", **keys)


@pytest.fixture
def leases(redis_server: RedisServer) -> Iterator[dict[str, Leases]]:
    """Leases of two replicas, "a" and "b", on one Redis; each records the leases it lost."""
    made: dict[str, Leases] = {}
    try:
        for replica in ("a", "b"):
            made[replica] = Leases(redis_client(redis_server.url), replica, TTL)
        yield made
    finally:
        for lease in made.values():
            lease.close()


def take(leases: Leases, name: str) -> None:
    """Take the free lease ``name``, waiting out a quiet period (a young Redis may have lost
    leases: nobody takes a free one for a TTL)."""
    assert wait_until(lambda: leases.claim(name).result(WAIT).mine, WAIT, interval=0.05)


def lost_events(leases: Leases) -> dict[str, threading.Event]:
    events: dict[str, threading.Event] = {}

    def lost(name: str) -> None:
        events.setdefault(name, threading.Event()).set()

    leases.on_lost = lost
    return events


# ---- the lease ----------------------------------------------------------------------------


def test_one_owner_at_a_time_renewed_past_its_ttl_and_released_on_close(
    leases: dict[str, Leases], redis_server: RedisServer
) -> None:
    a, b = leases["a"], leases["b"]
    take(a, "memory")
    assert a.holds("memory")
    claim = b.claim("memory").result(WAIT)
    assert (claim.owner, claim.mine) == ("a", False)
    assert not b.holds("memory")
    # Renewed every TTL/3: after three TTLs it is still a's.
    time.sleep(3 * TTL)
    assert a.holds("memory")
    assert b.claim("memory").result(WAIT).owner == "a"
    with redis_client(redis_server.url) as look:
        assert 0 < look.pttl(LEASE_PREFIX + "memory") <= TTL * 1000
    a.close()
    assert b.claim("memory").result(WAIT).mine


def test_a_lease_nobody_renews_lapses_within_its_ttl(
    leases: dict[str, Leases], redis_server: RedisServer
) -> None:
    # A replica that died: its lease stays, unrenewed, until the TTL runs out.
    with redis_client(redis_server.url) as look:
        look.set(LEASE_PREFIX + "memory", "dead-replica", px=int(TTL * 1000))
    b = leases["b"]
    assert b.claim("memory").result(WAIT).owner == "dead-replica"
    start = time.monotonic()
    while not b.claim("memory").result(WAIT).mine:
        assert time.monotonic() - start < TTL + 5, "the dead replica's lease never lapsed"
        time.sleep(0.1)
    assert time.monotonic() - start >= TTL * 0.5


def test_a_lease_deleted_in_redis_is_lost_and_said_so(
    leases: dict[str, Leases], redis_server: RedisServer
) -> None:
    a = leases["a"]
    lost = lost_events(a)
    take(a, "memory")
    take(a, "browser")
    with redis_client(redis_server.url) as look:
        look.delete(LEASE_PREFIX + "memory")
    assert lost.setdefault("memory", threading.Event()).wait(TTL + 5)
    assert not a.holds("memory")
    assert a.holds("browser") and "browser" not in lost


def test_redis_gone_fails_claims_at_once_and_loses_held_leases_after_their_ttl(
    own_redis: RedisServer,
) -> None:
    redis_server = own_redis
    with Leases(redis_client(redis_server.url), "a", TTL) as a:
        redis_gone(a, redis_server)


def redis_gone(a: Leases, redis_server: RedisServer) -> None:
    lost = lost_events(a)
    take(a, "memory")
    redis_server.stop()
    start = time.monotonic()
    with pytest.raises(redis.RedisError):
        a.claim("other").result(WAIT)
    # Held on while Redis may still count it as ours, then given up before Redis's TTL could run
    # out (by the time to stop the copy): by then Redis, restarted empty, say, may hand it on.
    assert lost.setdefault("memory", threading.Event()).wait(TTL + 5)
    assert time.monotonic() - start <= a.timing.belief + 1.0
    assert not a.holds("memory")
    redis_server.start()
    # Back empty: nobody takes a free lease for a quiet period (any belief from before ends).
    claim = a.claim("memory").result(WAIT)
    assert (claim.mine, claim.owner) == (False, "") and claim.quiet > a.timing.belief, claim
    take(a, "memory")
    assert time.monotonic() - start >= a.timing.quiet


# ---- the forwarder ------------------------------------------------------------------------


def test_forwarder_calls_reads_gets_a_prompt_and_classifies_failures(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"counter": stdio_server("counter_server")})
    with http_gateway(config, tmp_path, token=TOKEN) as gateway:
        forwarder = Forwarder("replica-x", TOKEN)

        async def scenario() -> None:
            first = await forwarder.call_tool(gateway.url, "counter__increment", {}, WAIT)
            second = await forwarder.call_tool(gateway.url, "counter__increment", {}, WAIT)
            assert first.success and second.success, (first, second)
            counts = [(r.output or {})["structuredContent"]["count"] for r in (first, second)]
            assert counts[1] == counts[0] + 1
            assert second.metadata["forwarded_to"] == gateway.url
            read = await forwarder.read_resource(gateway.url, "counter://value", WAIT)
            assert read.success and (read.output or {})["contents"][0]["text"] == "2", read
            prompt = await forwarder.get_prompt(gateway.url, "counter__count", {}, WAIT)
            assert prompt.success and "the count is 2" in json.dumps(prompt.output), prompt
            unknown = await forwarder.call_tool(gateway.url, "counter__nope", {}, WAIT)
            assert not unknown.success and not is_unreachable(unknown)
            missing = await forwarder.read_resource(gateway.url, "counter://missing", WAIT)
            assert missing.error_type == ErrorType.NOT_FOUND, missing
            refused = await Forwarder("replica-x", "wrong").call_tool(
                gateway.url, "counter__increment", {}, WAIT
            )
            assert not refused.success and not is_unreachable(refused), refused
            slow = await forwarder.call_tool(gateway.url, "counter__sleep", {"seconds": 30}, 1.0)
            assert slow.error_type == ErrorType.TIMEOUT and not is_unreachable(slow), slow
            # Nobody at the address: unreachable (the call never ran anywhere).
            nobody = await forwarder.call_tool(
                f"http://127.0.0.1:{free_port()}/mcp", "counter__increment", {}, WAIT
            )
            assert nobody.error_type == ErrorType.CONNECTION and is_unreachable(nobody), nobody

        anyio.run(scenario)
        assert len(gateway.servers()) == 1


def test_forwarder_keeps_one_client_per_owner_for_concurrent_calls_and_reopens_after_a_failure(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"counter": stdio_server("counter_server")})
    forwarder = Forwarder("replica-x", TOKEN)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with http_gateway(config, tmp_path / "a", token=TOKEN) as first:

        async def calls() -> None:
            results = []

            async def one() -> None:
                results.append(await forwarder.call_tool(first.url, "counter__increment", {}, WAIT))

            async with anyio.create_task_group() as group:
                for _ in range(20):
                    group.start_soon(one)
            assert all(r.success for r in results) and len(results) == 20, results
            counts = sorted((r.output or {})["structuredContent"]["count"] for r in results)
            assert counts == list(range(counts[0], counts[0] + 20)), counts
            # One client carried them all, and is kept for the next call.
            assert forwarder.addresses == [first.url]
            again = await forwarder.read_resource(first.url, "counter://value", WAIT)
            assert again.success and forwarder.addresses == [first.url], again
            forwarder.close_address(first.url)
            assert forwarder.addresses == []
            await forwarder.call_tool(first.url, "counter__increment", {}, WAIT)
            assert forwarder.addresses == [first.url]

        anyio.run(calls)
        gone = first.url
    with http_gateway(config, tmp_path / "b", token=TOKEN) as second:

        async def after_the_owner_died() -> None:
            # The client opened on another loop is not reused; the one opened here finds nobody.
            await forwarder.call_tool(gone, "counter__increment", {}, WAIT)  # opens it
            dead = await forwarder.call_tool(gone, "counter__increment", {}, WAIT)
            assert dead.error_type == ErrorType.CONNECTION and is_unreachable(dead), dead
            assert gone not in forwarder.addresses  # dropped: the next call opens a new one
            moved = await forwarder.call_tool(second.url, "counter__increment", {}, WAIT)
            assert moved.success and forwarder.addresses == [second.url], moved

        anyio.run(after_the_owner_died)
    forwarder.close()
    assert forwarder.addresses == []


# ---- whole replicas -----------------------------------------------------------------------

LEASE_TTL = 2.0
"""``--lease-ttl`` of the replicas here."""
MARGIN = 15.0
"""Seconds beyond the TTL that failover may take on a slow, busy machine."""


def replica_config(tmp_path: Path, **keys: Any) -> tuple[Path, Path]:
    """A config with the counter server marked single, and a token file."""
    token = tmp_path / "token"
    token.write_text(TOKEN)
    return write_config(tmp_path, {"counter": counter(**keys)}), token


def count_of(result: CallToolResult) -> tuple[int, int]:
    """``(count, pid)`` of an ``increment`` answer."""
    assert not result.is_error, result
    data = result.structured_content or {}
    return int(data["count"]), int(data["pid"])


def server_pids(replicas: list[Replica]) -> dict[int, set[int]]:
    """Per replica (by index), the server processes it runs."""
    return {
        i: r.servers() for i, r in enumerate(replicas) if r.process is not None and r.process.poll() is None
    }


def lease_keys(url: str) -> list[str]:
    with redis_client(url) as look:
        return sorted(look.scan_iter(f"{LEASE_PREFIX}counter:*"))


def test_three_replicas_share_one_counter_and_its_owner_killed_moves_it(
    tmp_path: Path, replicas: ReplicaFactory, redis_server: RedisServer
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    config, token = replica_config(tmp_path, env={"FIXTURE_MARKER_DIR": str(markers)})
    cluster = replicas(
        3, config, token_file=token, extra_args=("--lease-ttl", str(LEASE_TTL), "--log-level", "INFO")
    )

    async def shared() -> None:
        async with RoundRobin([r.url for r in cluster], token=TOKEN) as clients:
            answers = [count_of(await clients.call_tool("counter__increment")) for _ in range(12)]
            # One process in the whole cluster: every replica's calls counted by the same one.
            assert [count for count, _ in answers] == list(range(1, 13)), answers
            assert len({pid for _, pid in answers}) == 1, answers
            for session in clients.sessions:
                read = await session.read_resource("counter://value")
                assert getattr(read.contents[0], "text", None) == "12"
                prompt = await session.get_prompt("counter__count")
                assert "the count is 12" in json.dumps(prompt.model_dump(mode="json"))

    anyio.run(shared)
    running = {i: pids for i, pids in server_pids(cluster).items() if pids}
    assert len(running) == 1 and len(next(iter(running.values()))) == 1, running
    [(owner_index, owner_servers)] = running.items()
    owner = cluster[owner_index]
    survivors = [r for i, r in enumerate(cluster) if i != owner_index]
    assert len(lease_keys(redis_server.url)) == 1

    async def failover() -> None:
        async with RoundRobin([r.url for r in survivors], token=TOKEN) as clients:
            # A call in flight at the owner, forwarded there by another replica.
            async with anyio.create_task_group() as group:
                outcome: list[CallToolResult] = []

                async def sleeper() -> None:
                    outcome.append(await clients.sessions[0].call_tool("counter__sleep", {"seconds": 60}))

                group.start_soon(sleeper)
                with anyio.fail_after(WAIT):
                    while not (markers / "sleep.started").exists():
                        await anyio.sleep(0.05)
                killed = time.monotonic()
                owner.kill()
                with anyio.fail_after(WAIT):
                    while not outcome:
                        await anyio.sleep(0.05)
            failed = outcome[0]
            assert failed.is_error, failed
            assert "connection" in json.dumps(failed.model_dump(mode="json")), failed
            # The next calls start it on a surviving replica, within the lease TTL (+ margin).
            while True:
                result = await clients.call_tool("counter__increment")
                if not result.is_error:
                    break
                assert time.monotonic() - killed < LEASE_TTL + MARGIN, result
                await anyio.sleep(0.2)
            count, pid = count_of(result)
            assert count == 1 and pid not in owner_servers, (count, pid)
            assert time.monotonic() - killed < LEASE_TTL + MARGIN
            again = [count_of(await clients.call_tool("counter__increment")) for _ in range(4)]
            assert again == [(n, pid) for n in range(2, 6)], again

    anyio.run(failover)
    # The dead replica's server went with it (its parent-death signal), and one runs now.
    assert wait_until(lambda: not any(procfs.is_alive(p) for p in owner_servers), WAIT), owner_servers
    assert sum(len(pids) for pids in server_pids(survivors).values()) == 1


def test_a_lost_lease_stops_the_local_copy_and_an_idle_stop_releases_it(
    tmp_path: Path, replicas: ReplicaFactory, redis_server: RedisServer
) -> None:
    config, token = replica_config(tmp_path, idleTimeout=6)
    cluster = replicas(
        2, config, token_file=token, extra_args=("--lease-ttl", str(LEASE_TTL), "--log-level", "INFO")
    )

    async def calls(n: int) -> list[tuple[int, int]]:
        async with RoundRobin([r.url for r in cluster], token=TOKEN) as clients:
            return [count_of(await clients.call_tool("counter__increment")) for _ in range(n)]

    first = anyio.run(calls, 2)
    assert [count for count, _ in first] == [1, 2]
    [pid] = {pid for _, pid in first}
    [owner] = [r for r in cluster if pid in r.servers()]
    [key] = lease_keys(redis_server.url)
    with redis_client(redis_server.url) as look:
        look.delete(key)
    # The owner notices at its next renewal and stops its copy: a new owner may start one.
    assert wait_until(lambda: not procfs.is_alive(pid), LEASE_TTL + MARGIN), pid
    assert "lost by" in owner.log(), owner.log()  # stopped for the loss, not by its idle timeout
    second = anyio.run(calls, 2)
    assert [count for count, _ in second] == [1, 2], second
    running = server_pids(cluster)
    assert sum(len(pids) for pids in running.values()) == 1, (running, second, [r.log() for r in cluster])
    assert len(lease_keys(redis_server.url)) == 1
    # Idle (idleTimeout 6 s): stopped, and its lease given up for any replica to take.
    assert wait_until(lambda: not lease_keys(redis_server.url), 6 + LEASE_TTL + MARGIN)
    assert sum(len(pids) for pids in server_pids(cluster).values()) == 0
