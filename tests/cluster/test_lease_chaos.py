"""Chaos under a single-affinity server: it runs at most once, whatever happens to Redis or a
replica (issue 24). Loopback only: a real ``redis-server`` without persistence, three real
``serve --http --cluster`` replicas, the stateful counter server (a real process of its own, so
``/proc`` shows every copy), and clients spreading requests round-robin over the live replicas,
each request on a client of its own (a stateless balancer: 2026-07-28 requests, no session).

The schedule: the owner of the counter SIGKILLed and started again; Redis killed for longer
than the lease TTL, then back empty; Redis killed for one second, then back empty (where the
old code ran two copies at once: the owner believed its lease while a new Redis had none). A
sampler counts the counter's copies in ``/proc`` every 100 ms throughout.

It asserts: every reply answers its own request; no call outlives its timeout; at most one copy
at every sample; no copy left after the replicas stop. It prints the recovery times (from each
fault until the counter answers again) and the tallies.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from mcp import Client
from mcp_types import CallToolResult

from actors.testing import procfs
from tests.cluster.conftest import WAIT, RedisServer, Replica, ReplicaFactory
from tests.conftest import wait_until
from tests.gateway.conftest import write_config
from tests.runtime.conftest import stdio_server

pytestmark = [pytest.mark.timeout(240), pytest.mark.real_process]

LEASE_TTL = 5.0
"""``--lease-ttl``: the owner believes 2.4 s after a renewal it sent, stops its copy within
2.5 s more, and a new Redis epoch is quiet for 5.1 s (actors.cluster.lease_book)."""
CALL_TIMEOUT = 20.0
"""The counter's ``callTimeout``: a call waits out a lapsing lease or a quiet period within it."""
CALL_SLACK = 10.0
"""What a call may take beyond its timeout (the hop between replicas, a busy machine)."""
CLIENTS = 6
SAMPLE_EVERY = 0.1
REDIS_LONG_OUTAGE = LEASE_TTL + 2.0
REDIS_SHORT_OUTAGE = 1.0
RECOVERY_LIMIT = 30.0
"""Seconds the counter may take to answer again after a fault."""


@pytest.fixture
def redis_server(own_redis: RedisServer) -> RedisServer:
    """This test kills Redis: a server of its own (the replicas use it too)."""
    return own_redis


class Copies:
    """The counter's live processes of this run, counted in ``/proc`` every 100 ms on a thread
    of its own (started and joined by the test). Found by a marker in their environment."""

    def __init__(self, marker: str) -> None:
        self.marker = f"CHAOS_RUN={marker}".encode()
        self.samples: list[tuple[float, frozenset[int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-sampler", daemon=True)

    def live(self) -> frozenset[int]:
        found = set()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if b"counter_server" not in cmdline.read():
                        continue
                with open(f"/proc/{entry}/environ", "rb") as environ:
                    if self.marker not in environ.read().split(b"\0"):
                        continue
            except OSError:
                continue  # gone meanwhile, or not ours to read
            if procfs.is_alive(int(entry)):
                found.add(int(entry))
        return frozenset(found)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY):
            self.samples.append((time.monotonic(), self.live()))

    def __enter__(self) -> Copies:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(WAIT)


@dataclass
class Tally:
    """What the clients saw."""

    calls: int = 0
    ok: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    crossed: list[str] = field(default_factory=list)
    slowest: float = 0.0
    hung: list[str] = field(default_factory=list)
    successes: list[tuple[float, float]] = field(default_factory=list)
    """When each ``increment`` that succeeded was sent, and when it was answered (monotonic)."""
    answered: threading.Condition = field(default_factory=threading.Condition)
    """Notified on each success: the schedule's thread waits on it for the counter to recover."""


class Balancer:
    """Round-robin over the replicas whose process is alive (a balancer's health check), each
    request on a client of its own."""

    def __init__(self, cluster: list[Replica]) -> None:
        self.cluster = cluster
        self._turn = itertools.count()

    def next_url(self) -> str | None:
        for _ in range(len(self.cluster)):
            replica = self.cluster[next(self._turn) % len(self.cluster)]
            if replica.process is not None and replica.process.poll() is None:
                return replica.url
        return None


async def one_call(balancer: Balancer, tally: Tally, number: int) -> None:
    """One request with a reply of its own to check: an ``increment`` (a count and a pid), or a
    ``sleep`` for a duration unique to it (its answer names it)."""
    url = balancer.next_url()
    if url is None:
        await anyio.sleep(0.1)
        return
    seconds = round(0.001 * (number % 50 + 1) + 1e-6 * number, 6)
    tool, arguments = ("increment", {}) if number % 2 else ("sleep", {"seconds": seconds})
    began = time.monotonic()
    result: CallToolResult | None = None
    with anyio.move_on_after(CALL_TIMEOUT + CALL_SLACK):
        try:
            async with Client(url, mode="2026-07-28") as client:
                result = await client.call_tool(f"counter__{tool}", arguments)
        except Exception as exc:  # a replica killed under the call: the client sees its end
            tally.errors[f"client: {type(exc).__name__}"] += 1
            tally.calls += 1
            return
    elapsed = time.monotonic() - began
    tally.calls += 1
    tally.slowest = max(tally.slowest, elapsed)
    if result is None:
        tally.hung.append(f"{tool} {arguments} at {url} after {elapsed:.1f} s")
        return
    text = " ".join(str(getattr(block, "text", "")) for block in result.content)
    if result.is_error:
        tally.errors[_kind(text)] += 1
        return
    data = result.structured_content or {}
    if tool == "increment":
        if not isinstance(data.get("count"), int) or not isinstance(data.get("pid"), int):
            tally.crossed.append(f"increment answered {text[:200]}")
            return
        with tally.answered:
            tally.successes.append((began, time.monotonic()))
            tally.answered.notify_all()
    elif text != f"slept {seconds}":
        tally.crossed.append(f"sleep {seconds} answered {text[:200]}")
        return
    tally.ok += 1


def _kind(text: str) -> str:
    """A short class of an error text, for the report (never decided on)."""
    for words in ("unreachable", "quiet", "did not lapse", "moved to replica", "timed out", "not renewed"):
        if words in text:
            return words
    return text[:60]


async def clients(balancer: Balancer, tally: Tally, stop: anyio.Event) -> None:
    numbers = itertools.count(1)

    async def client() -> None:
        while not stop.is_set():
            await one_call(balancer, tally, next(numbers))

    async with anyio.create_task_group() as group:
        for _ in range(CLIENTS):
            group.start_soon(client)


def recovered_after(tally: Tally, since: float) -> float:
    """Seconds from ``since`` to the first answer of an ``increment`` sent after it."""
    with tally.answered:
        found = tally.answered.wait_for(lambda: any(s > since for s, _ in tally.successes), RECOVERY_LIMIT)
        assert found, f"the counter did not answer within {RECOVERY_LIMIT} s of the fault"
        return min(t for s, t in tally.successes if s > since) - since


def owner_of(cluster: list[Replica], copies: Copies) -> Replica:
    """The replica whose child is the counter's one copy."""
    live = copies.live()
    for replica in cluster:
        if replica.process is not None and replica.process.poll() is None and replica.servers() & live:
            return replica
    raise AssertionError(f"no replica runs the counter ({sorted(live)})")


def test_one_copy_through_replica_kills_and_redis_outages(
    tmp_path: Path, redis_server: RedisServer, replicas: ReplicaFactory
) -> None:
    marker = uuid.uuid4().hex
    counter = stdio_server(
        "counter_server",
        real_process=True,
        affinity="single",
        callTimeout=CALL_TIMEOUT,
        env={"CHAOS_RUN": marker},
    )
    config = write_config(tmp_path, {"counter": counter})
    cluster = replicas(3, config, extra_args=("--lease-ttl", str(LEASE_TTL), "--log-level", "INFO"))
    balancer = Balancer(cluster)
    tally = Tally()
    recovery: dict[str, float] = {}

    def schedule() -> None:
        """The faults, on a thread of their own while the clients run on the loop."""
        recovered_after(tally, time.monotonic() - 1)  # serving before any fault
        time.sleep(3)
        owner = owner_of(cluster, copies)
        killed = time.monotonic()
        owner.kill()
        owner.start()  # a new process, a new port; the balancer follows
        recovery["owner SIGKILLed"] = recovered_after(tally, killed)
        time.sleep(3)
        redis_server.stop()
        stopped = time.monotonic()
        time.sleep(REDIS_LONG_OUTAGE)
        redis_server.start()
        back = time.monotonic()
        recovery[f"Redis down {REDIS_LONG_OUTAGE:g} s (since back)"] = recovered_after(tally, back)
        recovery[f"Redis down {REDIS_LONG_OUTAGE:g} s (since down)"] = recovery_since(tally, stopped, back)
        time.sleep(3)
        redis_server.stop()
        time.sleep(REDIS_SHORT_OUTAGE)
        redis_server.start()
        back = time.monotonic()
        recovery[f"Redis down {REDIS_SHORT_OUTAGE:g} s, back empty"] = recovered_after(tally, back)
        time.sleep(3)

    async def run() -> None:
        stop = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(clients, balancer, tally, stop)
            try:
                await anyio.to_thread.run_sync(schedule)
            finally:
                stop.set()

    began = time.monotonic()
    with Copies(marker) as copies:
        anyio.run(run)
        for replica in cluster:
            replica.stop()
        # A copy dies with its replica (stopped, or by its parent-death signal): soon, not never.
        wait_until(lambda: not copies.live(), WAIT)
        left = copies.live()
    elapsed = time.monotonic() - began
    most = max(len(pids) for _, pids in copies.samples)
    doubled = [(round(t - began, 1), sorted(pids)) for t, pids in copies.samples if len(pids) > 1]
    per_sample = Counter(len(pids) for _, pids in copies.samples)
    print(
        f"\nchaos: {elapsed:.0f} s, {tally.calls} calls ({tally.ok} answered, errors {dict(tally.errors)}), "
        f"slowest {tally.slowest:.1f} s; copies per sample {dict(sorted(per_sample.items()))} "
        f"of {len(copies.samples)} samples; recovery: "
        + ", ".join(f"{fault} {seconds:.2f} s" for fault, seconds in recovery.items())
    )
    assert not tally.crossed, tally.crossed[:5]
    assert not tally.hung, tally.hung[:5]
    assert tally.slowest <= CALL_TIMEOUT + CALL_SLACK
    assert most <= 1, f"two copies at once at {doubled[:10]} (s since start)"
    assert not left, f"counter processes left after the replicas stopped: {sorted(left)}"
    assert tally.ok > 0 and len(recovery) == 4


def recovery_since(tally: Tally, down: float, back: float) -> float:
    """Seconds from ``down`` to the first ``increment`` after ``back`` (the whole outage)."""
    return min(t for s, t in tally.successes if s > back) - down
