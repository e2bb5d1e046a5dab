"""The buckets replicas share (`actors.gateway.access.limits_redis`), against a real
``redis-server``: one bucket however many replicas take from it, atomic under concurrent takes,
gone once full again, and this replica's own buckets while Redis is away."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.config import load_config
from actors.gateway.access.limits import BucketDecision, BucketKey, Rate, RateLimits, Scope
from actors.gateway.access.limits_redis import LIMIT_PREFIX, RedisBuckets
from actors.gateway.access.principal import Principal
from actors.runtime.clock import ManualClock
from tests.cluster.conftest import RedisServer, redis_client
from tests.conftest import wait_until

WAIT = 30.0
ALICE = Principal("alice")


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def url(redis_url: str) -> str:
    with redis_client(redis_url) as client:
        client.flushdb()
    return redis_url


def bucket(name: str, rate: float, burst: float, scope: Scope = Scope.USER) -> BucketKey:
    return BucketKey(name, Rate(rate, burst), scope)


def takes(buckets: RedisBuckets, keys: list[BucketKey], count: int) -> list[BucketDecision | None]:
    return [buckets.take_now(keys, WAIT) for _ in range(count)]


def test_replicas_take_from_one_bucket(url: str) -> None:
    clock = ManualClock()
    one = bucket("user:alice", rate=2.0, burst=5)
    with RedisBuckets.start(url, clock=clock) as a, RedisBuckets.start(url, clock=clock) as b:
        answers = [*takes(a, [one], 3), *takes(b, [one], 3)]
        assert [d.allowed for d in answers if d is not None] == [True] * 5 + [False]
        refused = answers[-1]
        assert refused is not None and refused.key == one and refused.retry_after == pytest.approx(0.5)
        clock.advance(0.5)
        assert [d.allowed for d in takes(a, [one], 2) if d is not None] == [True, False]


def test_a_refused_take_leaves_every_bucket_as_it_was(url: str) -> None:
    clock = ManualClock()
    mine = bucket("tool:t:user:a", rate=1.0, burst=1, scope=Scope.TOOL_USER)
    everyone = bucket("tool:t", rate=1.0, burst=2, scope=Scope.TOOL)
    with RedisBuckets.start(url, clock=clock) as buckets:
        assert buckets.take_now([mine, everyone], WAIT) == BucketDecision(True)
        refused = buckets.take_now([mine, everyone], WAIT)
        assert refused is not None and not refused.allowed and refused.key == mine
        theirs = bucket("tool:t:user:b", rate=1.0, burst=1, scope=Scope.TOOL_USER)
        assert buckets.take_now([theirs, everyone], WAIT) == BucketDecision(True)
        last = buckets.take_now([bucket("tool:t:user:c", 1.0, 1, Scope.TOOL_USER), everyone], WAIT)
        assert last is not None and last.key == everyone


def test_concurrent_takes_from_two_replicas_never_overdraw(url: str) -> None:
    """Two replicas, each with 100 requests at once on its own loop: exactly the burst goes."""
    clock = ManualClock()  # no time passes: nothing refills
    one = bucket("tool:git/git_log", rate=1.0, burst=40, scope=Scope.TOOL)
    results: list[list[BucketDecision | None]] = []

    def replica() -> None:
        with RedisBuckets.start(url, clock=clock, wait=WAIT) as buckets:

            async def many() -> list[BucketDecision | None]:
                return list(await asyncio.gather(*(buckets.take([one]) for _ in range(100))))

            results.append(asyncio.run(many()))

    threads = [threading.Thread(target=replica, name=f"replica-{n}") for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    answers = [d for batch in results for d in batch]
    assert len(answers) == 200 and None not in answers
    assert sum(d.allowed for d in answers if d is not None) == 40


def test_a_bucket_is_gone_once_it_is_full_again(url: str) -> None:
    one = bucket("user:bob", rate=10.0, burst=10)
    with RedisBuckets.start(url) as buckets, redis_client(url) as client:
        # Redis's own clock: two tokens gone come back within 200 ms, and the key goes 1 s later.
        # What the time between the takes refilled (10 a second) is bounded by the time taken.
        began = time.monotonic()
        assert takes(buckets, [one], 2) == [BucketDecision(True)] * 2
        ttl = client.pttl(LIMIT_PREFIX + "user:bob")
        tokens = float(client.hget(LIMIT_PREFIX + "user:bob", "t") or 0)
        elapsed = time.monotonic() - began
        assert 8.0 <= tokens <= 8.0 + 10.0 * elapsed + 1e-6, (tokens, elapsed)
        assert 1000 - 1000 * elapsed < ttl <= 1200, (ttl, elapsed)


def test_redis_s_own_clock_refills(url: str) -> None:
    one = bucket("user:carol", rate=20.0, burst=1)
    with RedisBuckets.start(url) as buckets:
        assert buckets.take_now([one], WAIT) == BucketDecision(True)
        refused = buckets.take_now([one], WAIT)
        assert refused is not None and not refused.allowed and 0 < refused.retry_after <= 0.05
        assert wait_until(lambda: (buckets.take_now([one], WAIT) or BucketDecision(False)).allowed, WAIT)


def test_while_redis_is_away_each_replica_limits_alone(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis").start()
    limits_keys = load_config({"mcpServers": {}, "access": {"limits": {"perUser": {"rate": 1, "burst": 2}}}})
    clock = ManualClock()
    try:
        with RedisBuckets.start(server.url, clock=clock, timeout=0.5) as shared:
            a = RateLimits(limits_keys.access.limits, clock=clock, shared=shared)
            b = RateLimits(limits_keys.access.limits, clock=clock, shared=shared)

            async def admitted(limits: RateLimits) -> bool:
                return (await limits.admit_request(ALICE)).allowed

            # Shared: two tokens for the two replicas together.
            assert [asyncio.run(admitted(x)) for x in (a, b, a)] == [True, True, False]
            server.stop()
            began = time.monotonic()
            # Away: each replica's own bucket, full, answers, without waiting out Redis.
            assert [asyncio.run(admitted(x)) for x in (a, a, a, b, b)] == [True, True, False, True, True]
            assert time.monotonic() - began < 5.0
            assert not shared.up
            server.start()
            assert wait_until(lambda: shared.up, WAIT)
            # Back (empty, as after an outage that lost its data): shared buckets again, full.
            assert [asyncio.run(admitted(x)) for x in (b, a, b)] == [True, True, False]
            assert len(a.local) == 1 and len(b.local) == 1
    finally:
        server.stop()
