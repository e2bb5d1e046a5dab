"""`Leases`: which replica runs a single-affinity server, held in Redis with a TTL.

A lease is the key ``mcp-actors:lease:<name>`` whose value is the owner's replica id, set with
``SET NX PX`` semantics (in one script that also renews a lease already ours). The owner renews it
every TTL/3; a replica that dies stops renewing and its lease expires, so the next call anywhere
takes it. Every Redis command runs on the leases' own thread (never an actor thread, never an
event loop), with socket timeouts, so nothing waits on Redis unbounded.

A lease is believed held only until TTL after the last renewal was *sent* (Redis may have let it
expire by then, and another replica taken it): past that, or when Redis says the key is another's
or gone, it is lost, and ``on_lost`` is told (it must stop the local server, and not block).
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import redis

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

# Take the lease if free, renew it if already ours; answer the owner.
_CLAIM = """
local owner = redis.call('GET', KEYS[1])
if not owner then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ARGV[1]
end
if owner == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return owner
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def redis_client(url: str) -> redis.Redis:
    """A client for ``url`` whose every command and connect times out (text answers)."""
    return redis.Redis.from_url(
        url,
        socket_timeout=_REDIS_TIMEOUT,
        socket_connect_timeout=_REDIS_TIMEOUT,
        decode_responses=True,
    )


@dataclass(frozen=True)
class Claim:
    """The answer to a claim: who holds the lease now."""

    owner: str
    mine: bool


class Leases:
    """The leases of one replica: claimed on demand, renewed every TTL/3, released on stop.

    ``on_lost(name)`` is called (on the leases' thread) when a lease held here is lost;
    ``on_tick()`` after each renewal round (for idle checks; it may use `release_now`).
    """

    def __init__(
        self,
        client: redis.Redis,
        replica_id: str,
        ttl: float = DEFAULT_TTL,
        *,
        on_lost: Callable[[str], None] | None = None,
        on_tick: Callable[[], None] | None = None,
    ) -> None:
        if ttl <= 0:
            raise ValueError(f"the lease TTL must be positive, got {ttl!r}")
        self.replica_id = replica_id
        self.ttl = ttl
        self.on_lost = on_lost
        self.on_tick = on_tick
        self._client = client
        self._claim = client.register_script(_CLAIM)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._lock = threading.Lock()
        self._held: dict[str, float] = {}
        """Lease name -> monotonic time until which it is surely ours."""
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]] | None]
        self._jobs = queue.SimpleQueue()
        self._redis_down = False
        self._thread = threading.Thread(target=self._run, name=f"mcp-actors-leases-{replica_id}", daemon=True)
        self._thread.start()

    # ---- asked from any thread -----------------------------------------------------------

    def holds(self, name: str) -> bool:
        """Whether the lease ``name`` is surely this replica's right now."""
        with self._lock:
            until = self._held.get(name)
        return until is not None and time.monotonic() < until

    def held(self) -> list[str]:
        """The leases this replica holds."""
        with self._lock:
            return list(self._held)

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
        for name in self.held():
            try:
                self.release(name).result(timeout)
            except (redis.RedisError, concurrent.futures.TimeoutError) as exc:
                logger.warning("lease %s: not released (it expires within %.0f s): %s", name, self.ttl, exc)
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
        was. Its Redis key stays until `drop_now` deletes it or it expires."""
        with self._lock:
            return self._held.pop(name, None) is not None

    def release_now(self, name: str) -> None:
        """`release`, on the leases' thread (from ``on_tick``). Forgotten here first: from
        then on no call serves under it, whether or not Redis hears of the release."""
        if self.forget(name):
            self.drop_now(name)

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

    def _claim_now(self, name: str) -> Claim:
        sent = time.monotonic()
        owner = str(self._claim(keys=[LEASE_PREFIX + name], args=[self.replica_id, self._ttl_ms()]))
        mine = owner == self.replica_id
        if mine:
            with self._lock:
                fresh = name not in self._held
                self._held[name] = sent + self.ttl
            if fresh:
                logger.info("lease %s: taken by %s", name, self.replica_id)
        return Claim(owner, mine)

    def _ttl_ms(self) -> int:
        return max(1, int(self.ttl * 1000))

    def _run(self) -> None:
        interval = self.ttl / 3
        due = time.monotonic() + interval
        while True:
            try:
                item = self._jobs.get(timeout=max(0.0, due - time.monotonic()))
            except queue.Empty:
                self._renew_all()
                self._tick()
                due = time.monotonic() + interval
                continue
            if item is None:
                return
            job, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job())
            except Exception as exc:
                self._noted(exc)
                future.set_exception(exc)
            else:
                self._noted(None)

    def _renew_all(self) -> None:
        for name in self.held():
            sent = time.monotonic()
            try:
                renewed = self._renew(keys=[LEASE_PREFIX + name], args=[self.replica_id, self._ttl_ms()])
            except redis.RedisError as exc:
                self._noted(exc)
                with self._lock:
                    expired = self._held.get(name, sent) <= sent
                if expired:
                    self._lost(name, f"not renewed within its TTL ({exc})")
                continue
            self._noted(None)
            if renewed:
                with self._lock:
                    if name in self._held:
                        self._held[name] = sent + self.ttl
            else:
                self._lost(name, "Redis says it is no longer ours")

    def _lost(self, name: str, why: str) -> None:
        with self._lock:
            known = self._held.pop(name, None)
        if known is None:
            return
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
