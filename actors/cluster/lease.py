"""`Leases`: which replica runs a single-affinity server, held in Redis with a TTL.

A lease is the key ``mcp-actors:lease:<name>`` whose value is the owner's replica id. Every
request for it runs one script (`actors.cluster.lease_script`): a take when this replica does not
count the lease as its own, a renewal (compare-and-set on our id) when it does. The owner renews
it while it believes it; a replica that dies stops renewing and its lease lapses, so the next call
anywhere takes it. Every Redis command runs on the leases' own thread (never an actor thread,
never an event loop), with socket timeouts and no retries, so nothing waits on Redis unbounded.

What the replica believes, and when it stops believing, is decided by `LeaseBook` (pure, on given
times): a lease is served here only until `LeaseTiming.belief` after the granted request was
*sent*, which ends before Redis could let another replica take it by the time to stop the local
copy. When a belief ends, or Redis says the key is another's or gone, or Redis changed epoch and
the re-confirmation failed, ``on_lost`` is told (it must stop the local server, and not block).
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from actors.cluster.lease_book import LeaseAction, LeaseBook, LeaseEvent, LeaseTiming
from actors.cluster.lease_script import Answer, LeaseOutcome, LeaseScript
from actors.runtime.clock import Clock, SystemClock

__all__ = ["DEFAULT_TTL", "LEASE_PREFIX", "MEMBER_PREFIX", "Claim", "Leases", "redis_client"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

LEASE_PREFIX = "mcp-actors:lease:"
MEMBER_PREFIX = "mcp-actors:member:"
"""A replica's member hash (kept by `actors.cluster.members`): its ``address`` among others."""

DEFAULT_TTL = 10.0
"""Seconds a lease outlives its owner's last renewal (``serve --lease-ttl``)."""

_REDIS_TIMEOUT = 1.0
"""Seconds any one Redis command (or connect) may take."""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def redis_client(url: str) -> redis.Redis:
    """A client for ``url`` whose every command and connect times out, tried once (text answers):
    a lease's timing counts on no command taking longer than `_REDIS_TIMEOUT`."""
    return redis.Redis.from_url(
        url,
        socket_timeout=_REDIS_TIMEOUT,
        socket_connect_timeout=_REDIS_TIMEOUT,
        retry=Retry(NoBackoff(), 0),
        decode_responses=True,
    )


@dataclass(frozen=True)
class Claim:
    """The answer to a claim: who holds the lease now. ``owner`` is empty when the claim is to be
    asked again: the lease is free but may not be taken yet (Redis changed epoch; ``quiet``
    says for how long, at most), or it was granted too late to be believed. Immutable: it goes
    from the leases' thread to the caller's through a future."""

    owner: str
    mine: bool
    quiet: float = 0.0


class Leases:
    """The leases of one replica: claimed on demand, renewed while believed, released on stop.

    Owned by its own thread (``mcp-actors-leases-<id>``): every Redis command and every change
    of the `LeaseBook` happen there. Other threads submit jobs (futures back) and read `holds`
    from the book's immutable ``beliefs``. ``on_lost(name)`` is called on the leases' thread
    when a lease held here is lost; ``on_tick()`` every renewal interval (for idle checks; it
    may use `release_now`).
    """

    def __init__(
        self,
        client: redis.Redis,
        replica_id: str,
        ttl: float = DEFAULT_TTL,
        *,
        on_lost: Callable[[str], None] | None = None,
        on_tick: Callable[[], None] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.timing = LeaseTiming(ttl)
        self.replica_id = replica_id
        self.ttl = ttl
        self.on_lost = on_lost
        self.on_tick = on_tick
        self.clock: Clock = clock or SystemClock()
        self._client = client
        self._script = LeaseScript(client, LEASE_PREFIX)
        self._release = client.register_script(_RELEASE)
        self._book = LeaseBook(self.timing)
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]] | None]
        self._jobs = queue.SimpleQueue()
        self._redis_down = False
        self._tick_at = self.clock.monotonic() + self.timing.renew_every
        self._thread = threading.Thread(target=self._run, name=f"mcp-actors-leases-{replica_id}", daemon=True)
        self._thread.start()

    # ---- asked from any thread -----------------------------------------------------------

    def holds(self, name: str, margin: float = 0.0) -> bool:
        """Whether calls of ``name`` may be served here right now, its belief lasting ``margin``
        seconds more (the time a call takes to reach the local server)."""
        return self._book.holds(name, self.clock.monotonic(), margin)

    def believes(self, name: str) -> bool:
        """Whether ``name`` counts as this replica's (held, or awaiting re-confirmation)."""
        return name in self._book.claimed

    def held(self) -> list[str]:
        """The leases this replica holds (believed and confirmed in Redis's current epoch)."""
        return list(self._book.beliefs)

    def claim(self, name: str) -> concurrent.futures.Future[Claim]:
        """Take the lease ``name`` if it is free (or renew it if ours); the owner either way.
        The future fails with a `redis.RedisError` when Redis cannot be reached."""
        return self._submit(lambda: self._claim_now(name))

    def address_of(self, replica_id: str) -> concurrent.futures.Future[str | None]:
        """The address a replica registered in its member hash; None once that key expired."""

        def look_up() -> str | None:
            address = self._client.hget(f"{MEMBER_PREFIX}{replica_id}", "address")
            return address.decode() if isinstance(address, bytes) else address

        return self._submit(look_up)

    def release(self, name: str) -> concurrent.futures.Future[None]:
        """Give the lease ``name`` up (a no-op when it is not ours)."""
        return self._submit(lambda: self.release_now(name))

    def close(self, timeout: float = 5.0) -> None:
        """Release every lease held here and stop the thread. Idempotent."""
        if not self._thread.is_alive():
            return
        done = self._submit(self._release_all)
        try:
            done.result(timeout)
        except (concurrent.futures.TimeoutError, RuntimeError) as exc:
            logger.warning("leases: not released (they lapse within %.0f s): %r", self.ttl, exc)
        self._jobs.put(None)
        self._thread.join(timeout)
        self._client.close()

    def __enter__(self) -> Leases:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- on the leases' thread -------------------------------------------------------------

    def forget(self, name: str) -> bool:
        """Stop believing the lease ``name`` is held (`holds` is false from now on); whether it
        was. Its Redis key stays until `drop_now` deletes it or it lapses."""
        if not self._book.believed(name):
            return False
        self._book.apply(name, LeaseEvent.RELEASED, self.clock.monotonic())
        return True

    def release_now(self, name: str) -> None:
        """`release`, on the leases' thread (from ``on_tick``). Forgotten here first: from
        then on no call serves under it, whether or not Redis hears of the release."""
        if self.forget(name):
            self.drop_now(name)

    def _release_all(self) -> None:
        for name in self._book.owned():
            try:
                self.release_now(name)
            except redis.RedisError as exc:
                logger.warning("lease %s: not released (it lapses within %.0f s): %s", name, self.ttl, exc)

    def drop_now(self, name: str) -> None:
        """Delete the lease's key if it is still this replica's (on the leases' thread)."""
        self._release(keys=[LEASE_PREFIX + name], args=[self.replica_id])
        logger.info("lease %s: released by %s", name, self.replica_id)

    def _submit(self, job: Callable[[], _T]) -> concurrent.futures.Future[_T]:
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()
        if not self._thread.is_alive():
            future.set_exception(RuntimeError("the leases are closed"))
            return future
        self._jobs.put((job, future))
        return future

    def _ask(self, name: str) -> tuple[Answer, float]:
        """Run the lease script for ``name``: a renewal if we count it as ours, else a take."""
        sent = self.clock.monotonic()
        answer = self._script.run(
            name,
            self.replica_id,
            ttl=self.ttl,
            quiet=self.timing.quiet,
            believed=self._book.believed(name),
            may_take=self._book.may_take(sent),
        )
        now = self.clock.monotonic()
        for other in self._book.observe_epoch(answer.epoch, now):
            if other != name:
                logger.warning("lease %s: Redis changed epoch; not served until re-confirmed", other)
        return answer, sent

    def _claim_now(self, name: str) -> Claim:
        fresh = not self._book.believed(name)
        answer, sent = self._ask(name)
        self._decided(name, answer, sent)
        mine = self.holds(name)
        if mine and fresh:
            logger.info("lease %s: taken by %s", name, self.replica_id)
        if answer.kind is LeaseOutcome.QUIET:
            return Claim("", False, max(answer.quiet, self._book.quiet_until - self.clock.monotonic()))
        if answer.kind is LeaseOutcome.MINE and not mine:
            return Claim("", False)  # granted, but its answer came after the belief it bought: ask again
        return Claim(answer.owner, mine)

    def _renew_now(self, name: str) -> None:
        try:
            answer, sent = self._ask(name)
        except redis.RedisError as exc:
            self._noted(exc)
            self._book.apply(name, LeaseEvent.UNREACHABLE, self.clock.monotonic())
            return
        self._noted(None)
        self._decided(name, answer, sent)

    def _decided(self, name: str, answer: Answer, sent: float) -> None:
        """Apply Redis's ``answer`` to a request for ``name`` sent at ``sent``."""
        now = self.clock.monotonic()
        if answer.kind is LeaseOutcome.MINE:
            action = self._book.apply(name, LeaseEvent.GRANTED, now, sent=sent)
            why = "its answer came after its belief ended"
        elif self._book.believed(name):
            action = self._book.apply(name, LeaseEvent.REFUSED, now)
            gone = answer.kind is LeaseOutcome.GONE
            why = f"Redis says it is {'gone' if gone else 'held by ' + answer.owner}"
        else:
            return
        if action is LeaseAction.STOP:
            self._lost(name, why)

    def _run(self) -> None:
        while True:
            now = self.clock.monotonic()
            wake = min(self._book.next_wake(now, self.timing.renew_every), self._tick_at)
            try:
                item = self._jobs.get(timeout=max(0.0, wake - now))
            except queue.Empty:
                self._maintain()
                continue
            if item is None:
                return
            job, future = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(job())
                except Exception as exc:
                    self._noted(exc)
                    future.set_exception(exc)
                else:
                    self._noted(None)
            self._maintain()

    def _maintain(self) -> None:
        """Stop what is no longer believed, renew what is due, tick the idle checks."""
        now = self.clock.monotonic()
        for name in self._book.expire(now):
            self._lost(name, "not renewed within its belief")
        for name in self._book.due(now):
            self._renew_now(name)
        for name in self._book.expire(self.clock.monotonic()):
            self._lost(name, "not renewed within its belief")
        if self.clock.monotonic() >= self._tick_at:
            self._tick_at = self.clock.monotonic() + self.timing.renew_every
            self._tick()

    def _lost(self, name: str, why: str) -> None:
        logger.warning("lease %s: lost by %s: %s; stopping the local server", name, self.replica_id, why)
        if self.on_lost is not None:
            try:
                self.on_lost(name)
            except Exception:
                logger.exception("lease %s: on_lost failed", name)

    def _tick(self) -> None:
        if self.on_tick is None:
            return
        try:
            self.on_tick()
        except Exception as exc:
            self._noted(exc)
            logger.debug("leases: tick failed: %r", exc)

    def _noted(self, exc: BaseException | None) -> None:
        """Log Redis going away once, and coming back once."""
        if isinstance(exc, redis.RedisError) and not self._redis_down:
            self._redis_down = True
            logger.warning("leases: Redis unreachable (%s); single-affinity servers wait for it", exc)
        elif exc is None and self._redis_down:
            self._redis_down = False
            logger.warning("leases: Redis reachable again")
