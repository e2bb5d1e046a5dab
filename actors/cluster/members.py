"""`Membership`: each replica's address, load and heartbeat, in Redis.

``mcp-actors:member:<replica id>`` is a hash (``address``, ``load`` = calls in flight,
``heartbeat`` = Unix time) whose key expires ``ttl`` seconds after the last heartbeat: a replica
that dies drops out on its own. The heartbeat runs on the link's thread.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from actors.cluster.link import RedisLink

__all__ = ["Member", "Membership"]

logger = logging.getLogger(__name__)

HEARTBEAT = 2.0
TTL = 6.0


@dataclass(frozen=True)
class Member:
    """A live replica as Redis last heard of it."""

    replica_id: str
    address: str
    load: int
    heartbeat: float


class Membership:
    """This replica's entry (heartbeat every ``interval`` seconds) and a view of the others."""

    def __init__(
        self,
        link: RedisLink,
        replica_id: str,
        address: str,
        load: Callable[[], int] = lambda: 0,
        *,
        interval: float = HEARTBEAT,
        ttl: float = TTL,
    ) -> None:
        self.link = link
        self.replica_id = replica_id
        self.address = address
        self.load = load
        self.ttl = ttl
        self._key = link.key("member", replica_id)
        link.every(interval, self._beat)

    def _beat(self, client: redis.Redis) -> None:
        try:
            load = int(self.load())
        except Exception:  # the load gauge is the host's: it must not stop the heartbeat
            logger.exception("cluster: reading this replica's load failed")
            load = -1
        pipe = client.pipeline(transaction=True)
        pipe.hset(self._key, mapping={"address": self.address, "load": load, "heartbeat": time.time()})
        pipe.pexpire(self._key, int(self.ttl * 1000))
        pipe.execute()

    def leave(self, timeout: float = 1.0) -> None:
        """Remove this replica's entry (a clean stop; a dead one expires)."""
        try:
            self.link.call(lambda client: client.delete(self._key), timeout)
        except (redis.RedisError, concurrent.futures.TimeoutError) as exc:
            logger.info("cluster: could not remove this replica's entry: %s", exc)

    def members(self, timeout: float = 1.0) -> list[Member]:
        """The live replicas (this one too), by id. Waits on the link: not for the event loop
        or an actor thread."""
        return self.link.call(_read_members(self.link.key("member", "")), timeout)


def _read_members(prefix: str) -> Callable[[redis.Redis], list[Member]]:
    def read(client: redis.Redis) -> list[Member]:
        found = []
        for key in client.scan_iter(match=f"{prefix}*", count=100):
            entry = client.hgetall(key)
            if not entry:
                continue
            try:
                found.append(
                    Member(
                        replica_id=str(key)[len(prefix) :],
                        address=str(entry["address"]),
                        load=int(entry.get("load", 0)),
                        heartbeat=float(entry.get("heartbeat", 0.0)),
                    )
                )
            except (KeyError, ValueError):
                continue
        return sorted(found, key=lambda member: member.replica_id)

    return read
