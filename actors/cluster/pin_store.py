"""`RedisPinStore`: the pins shared by every replica through Redis (`actors.pins`).

Every replica must hold the same definitions and see the same approvals: Redis holds each
server's entry as ``mcp-actors:pins:<actors.pins.pin_key>`` (the JSON of a file entry). A change
(`actors.pins.PinChange`) is applied to the entry in Redis as it is there (WATCH, then MULTI: a
change made meanwhile by another replica or by ``mcp-actors approve --cluster`` is never undone),
and also bumps ``mcp-actors:pins-version`` and records the new version as the entry's score in
``mcp-actors:pins-changes`` (as `actors.cluster.schema_store` does for the schema cache).

The local folder is the mirror the runtime reads (its `actors.pins.PinBook` stats and reads
files, off the loop and the actors): every write to it happens on the link's thread, right
after the Redis operation it mirrors, so an older entry never lands over a newer one. Every
`refresh` seconds the link's thread reads the version and copies in the entries that changed;
every entry is read at start (`pull`), after a reconnect, and every `full_resync` seconds.

While Redis is away a change is applied to the folder alone and kept; once Redis is back, the
kept changes are applied to it first, in order, then everything is read again.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import os
import threading
import time
from typing import Any, cast

import redis

from actors.cluster.link import RedisLink
from actors.pins.model import PinChange, ServerPins
from actors.pins.store import FilePinStore, default_pin_folder

__all__ = ["RedisPinStore"]

logger = logging.getLogger(__name__)

_REFRESH = 1.0
"""Seconds between reads of the version, and of the entries that changed (the link's thread)."""
_FULL_RESYNC = 60.0
_TIMEOUT = 5.0
"""Seconds a change waits for Redis before it is kept locally, to be applied when Redis is back."""
_WRITE = """
redis.call('SET', KEYS[1], ARGV[1])
local version = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[3], version, KEYS[1])
return version
"""
"""Write an entry and record its change: KEYS = entry, version, changes; ARGV = the JSON."""


def _text(pins: ServerPins) -> str:
    return json.dumps(pins.to_json(), ensure_ascii=False, indent=1, sort_keys=True)


class RedisPinStore(FilePinStore):
    """Pins in Redis, mirrored in ``folder`` (default: ``cluster/`` in the pins folder).

    ``follow``: keep the mirror in step (a replica); without it the mirror is only what `pull`
    and this store's own changes wrote (the command line, for one approval)."""

    def __init__(
        self,
        link: RedisLink,
        folder: str | os.PathLike[str] | None = None,
        *,
        refresh: float = _REFRESH,
        full_resync: float = _FULL_RESYNC,
        follow: bool = True,
        timeout: float = _TIMEOUT,
    ) -> None:
        super().__init__(folder if folder is not None else default_pin_folder() / "cluster")
        self.link = link
        self.timeout = timeout
        self.full_resync = full_resync
        self._version_key = link.key("pins-version")
        self._changes_key = link.key("pins-changes")
        self._prefix = link.key("pins", "")
        self._seen = 0
        self._next_full = 0.0
        self._lock = threading.Lock()
        self._kept: list[tuple[str, str, PinChange]] = []
        """Changes made while Redis was away, to apply to it once it is back (in order)."""
        if follow:
            link.every(refresh, self._refresh)
        link.on_reconnect(self._catch_up)

    def _redis_key(self, key: str) -> str:
        return self._prefix + key

    # ---- writing: on the caller's thread (a host thread), done on the link's ------------------

    def apply(self, key: str, server: str, change: PinChange) -> ServerPins:
        """Apply ``change`` in Redis (and the mirror); while Redis is away, to the folder alone,
        kept to apply to Redis once it is back."""
        try:
            return self.link.call(lambda client: self._apply(client, key, server, change), self.timeout)
        except (redis.RedisError, concurrent.futures.TimeoutError, RuntimeError) as exc:
            logger.warning(
                "cluster: pins of %s not written to Redis (%s): kept until it is back", server, exc
            )
            with self._lock:
                self._kept.append((key, server, change))
            return super().apply(key, server, change)

    def _apply(self, client: redis.Redis, key: str, server: str, change: PinChange) -> ServerPins:
        """On the link's thread: the change applied to the entry as Redis has it, then mirrored."""
        name = self._redis_key(key)
        result: list[ServerPins] = []

        def transaction(pipe: Any) -> None:
            text = pipe.get(name)
            before = _parse(text, name) if isinstance(text, str) else None
            after = (before or self._local(key) or ServerPins(server)).apply(change, server)
            pipe.multi()
            pipe.eval(_WRITE, 3, name, self._version_key, self._changes_key, _text(after))
            result[:] = [after]

        client.transaction(transaction, name)
        self.write_text(key, _text(result[0]))
        return result[0]

    def _local(self, key: str) -> ServerPins | None:
        """The mirror's entry, for an entry Redis lacks (Redis came back empty)."""
        return super().load(key)

    # ---- reading: the link's thread -------------------------------------------------------------

    def pull(self, timeout: float) -> None:
        """Copy every entry of Redis into the folder, waiting at most ``timeout`` (the caller's
        thread, at start). Without Redis, the folder is what there is (logged)."""
        try:
            self.link.call(self._resync, timeout)
        except (redis.RedisError, concurrent.futures.TimeoutError, RuntimeError) as exc:
            logger.warning("cluster: pins not read from Redis (%s): using the local copy", exc)

    def _refresh(self, client: redis.Redis) -> None:
        version = _version(client.get(self._version_key))
        due = time.monotonic() >= self._next_full
        if version == self._seen and not due:
            return
        if version < self._seen or due:
            self._resync(client)
            return
        changed = cast(
            "list[tuple[str, float]]",
            client.zrangebyscore(self._changes_key, f"({self._seen}", "+inf", withscores=True),
        )
        self._copy_in(client, [str(name) for name, _ in changed])
        self._seen = max([version, *(int(score) for _, score in changed)])

    def _resync(self, client: redis.Redis) -> None:
        """Every entry of Redis into the folder (and our own where Redis has none: it came back
        empty)."""
        version = _version(client.get(self._version_key))
        names = [str(name) for name in client.scan_iter(match=self._prefix + "*", count=200)]
        self._copy_in(client, names)
        self._seen = version
        self._next_full = time.monotonic() + self.full_resync
        if not names:
            self._restore(client)

    def _copy_in(self, client: redis.Redis, names: list[str]) -> None:
        if not names:
            return
        for name, text in zip(names, client.mget(names), strict=True):
            if isinstance(text, str) and _parse(text, name) is not None:
                self.write_text(name.removeprefix(self._prefix), text)

    def _restore(self, client: redis.Redis) -> None:
        """Redis has no pins at all (a new Redis, or one that lost its data): write ours back."""
        for path in sorted(self.folder.glob("*.json")):
            pins = self._local(path.stem)
            if pins is not None:
                client.eval(
                    _WRITE, 3, self._redis_key(path.stem), self._version_key, self._changes_key, _text(pins)
                )

    def _catch_up(self, client: redis.Redis) -> None:
        """Redis is back: apply the changes kept meanwhile, in order, then read everything."""
        with self._lock:
            kept, self._kept = self._kept, []
        for key, server, change in kept:
            try:
                self._apply(client, key, server, change)
            except redis.RedisError:
                with self._lock:
                    self._kept.insert(0, (key, server, change))
                raise
        self._resync(client)


def _parse(text: str, name: str) -> ServerPins | None:
    try:
        return ServerPins.from_json(json.loads(text))
    except ValueError as exc:
        logger.warning("cluster: ignoring the pins entry %s: %s", name, exc)
        return None


def _version(value: object) -> int:
    try:
        return int(value) if isinstance(value, str | bytes | int) else 0
    except ValueError:
        return 0
