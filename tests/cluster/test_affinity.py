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

from actors.cluster.forward import FORWARDED_HEADER, Forwarder, is_unreachable
from actors.cluster.lease import LEASE_PREFIX, Leases, redis_client
from actors.tools import ErrorType
from tests.cluster.conftest import WAIT, RedisServer
from tests.gateway.conftest import http_gateway, write_config
from tests.runtime.conftest import stdio_server
from tests.servers.http import free_port

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
    assert a.claim("memory").result(WAIT).mine
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
    assert a.claim("memory").result(WAIT).mine
    assert a.claim("browser").result(WAIT).mine
    with redis_client(redis_server.url) as look:
        look.delete(LEASE_PREFIX + "memory")
    assert lost.setdefault("memory", threading.Event()).wait(TTL + 5)
    assert not a.holds("memory")
    assert a.holds("browser") and "browser" not in lost


def test_redis_gone_fails_claims_at_once_and_loses_held_leases_after_their_ttl(
    leases: dict[str, Leases], redis_server: RedisServer
) -> None:
    a = leases["a"]
    lost = lost_events(a)
    assert a.claim("memory").result(WAIT).mine
    redis_server.stop()
    start = time.monotonic()
    with pytest.raises(redis.RedisError):
        a.claim("other").result(WAIT)
    # Held on while Redis may still count it as ours (the TTL), then given up: by then Redis
    # (restarted empty, say) may have handed it to another replica.
    assert lost.setdefault("memory", threading.Event()).wait(TTL + 5)
    assert time.monotonic() - start >= TTL * 0.5
    assert not a.holds("memory")
    redis_server.start()
    assert a.claim("memory").result(WAIT).mine


# ---- the forwarder ------------------------------------------------------------------------


def test_forwarder_calls_reads_and_gets_a_prompt_at_another_gateway_with_its_token(tmp_path: Path) -> None:
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

        anyio.run(scenario)
        assert len(gateway.servers()) == 1


def test_forwarder_to_nobody_is_unreachable_and_a_slow_owner_times_out(tmp_path: Path) -> None:
    forwarder = Forwarder("replica-x")
    nobody = f"http://127.0.0.1:{free_port()}/mcp"

    async def unreachable() -> None:
        result = await forwarder.call_tool(nobody, "counter__increment", {}, WAIT)
        assert result.error_type == ErrorType.CONNECTION and is_unreachable(result), result

    anyio.run(unreachable)
    config = write_config(tmp_path, {"counter": stdio_server("counter_server")})
    with http_gateway(config, tmp_path) as gateway:

        async def slow() -> None:
            result = await forwarder.call_tool(gateway.url, "counter__sleep", {"seconds": 30}, 1.0)
            assert result.error_type == ErrorType.TIMEOUT and not is_unreachable(result), result

        anyio.run(slow)
    assert FORWARDED_HEADER.startswith("x-")
