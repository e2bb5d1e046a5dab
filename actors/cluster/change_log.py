"""`ChangeLog`: entries in Redis whose every write is numbered, so that a replica reads only
what changed.

Every write of an entry (a Lua script: atomic) sets it, bumps ``mcp-actors:<name>-version`` and
records the new version as the entry's score in the sorted set ``mcp-actors:<name>-changes``.
A `refresh` reads the version (one small GET); only when it moved does it read which entries
changed since the version last seen. A full resync is asked for when the version went back or
vanished (Redis lost its data) and every ``full_resync`` seconds, in case anything was missed.
The pins (`actors.cluster.pin_store`) and the schema cache (`actors.cluster.schema_store`) keep
their entries this way.

Owned by the link's thread: everything but the constructor runs there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

import redis

from actors.cluster.link import RedisLink

__all__ = ["ChangeLog"]

_WRITE = """
redis.call('SET', KEYS[1], ARGV[1])
local version = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[3], version, KEYS[1])
return version
"""
"""Write an entry and record its change: KEYS = entry, version, changes; ARGV = the JSON."""


class ChangeLog:
    """The numbered writes of the entries called ``name`` (``pins``, ``schema``)."""

    def __init__(
        self, link: RedisLink, name: str, full_resync: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.full_resync = full_resync
        self._version_key = link.key(f"{name}-version")
        self._changes_key = link.key(f"{name}-changes")
        self._clock = clock
        self.seen = 0
        """The version up to which the entries that changed have been read."""
        self.next_full = 0.0
        """When (``clock``) the next full resync is due: at the first refresh."""

    def write(self, client: Any, key: str, text: str) -> None:
        """Set entry ``key`` to ``text`` and number the write (``client``: a client or a pipeline)."""
        client.eval(_WRITE, 3, key, self._version_key, self._changes_key, text)

    def version(self, client: redis.Redis) -> int:
        """The version now (none yet: 0)."""
        value = client.get(self._version_key)
        try:
            return int(value) if isinstance(value, str | bytes | int) else 0
        except ValueError:
            return 0

    def refresh(
        self, client: redis.Redis, read: Callable[[list[str]], None], resync: Callable[[int], None]
    ) -> None:
        """``read(keys)`` the entries written since the last look; ``resync(version)`` instead
        when a full resync is due (it calls `resynced`)."""
        version = self.version(client)
        due = self._clock() >= self.next_full
        if version == self.seen and not due:
            return
        if version < self.seen or due:
            resync(version)
            return
        changed = cast(
            "list[tuple[str, float]]",
            client.zrangebyscore(self._changes_key, f"({self.seen}", "+inf", withscores=True),
        )
        read([str(key) for key, _ in changed])
        self.seen = max([version, *(int(score) for _, score in changed)])

    def resynced(self, version: int) -> None:
        """Every entry was read as of ``version``: the next full resync is ``full_resync`` away."""
        self.seen = version
        self.next_full = self._clock() + self.full_resync
