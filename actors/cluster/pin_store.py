"""`RedisPinStore`: the pins shared by every replica through Redis (`actors.pins`).

Every replica must hold the same definitions and see the same approvals: Redis holds each
server's entry as ``mcp-actors:pins:<actors.pins.pin_key>`` (the JSON of a file entry). A change
(`actors.pins.PinChange`) is applied to the entry in Redis as it is there (WATCH, then MULTI: a
change made meanwhile by another replica or by ``mcp-actors approve --cluster`` is never undone),
and is numbered in the ``pins`` `actors.cluster.change_log.ChangeLog` (as the schema cache's
entries are in theirs).

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
from typing import Any

import redis

from actors.cluster.change_log import ChangeLog
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
        self.changes = ChangeLog(link, "pins", full_resync)
        self._prefix = link.key("pins", "")
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
            self.changes.write(pipe, name, _text(after))
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
        self.changes.refresh(
            client, lambda names: self._copy_in(client, names), lambda _: self._resync(client)
        )

    def _resync(self, client: redis.Redis) -> None:
        """Every entry of Redis into the folder (and our own where Redis has none: it came back
        empty)."""
        version = self.changes.version(client)
        names = [str(name) for name in client.scan_iter(match=self._prefix + "*", count=200)]
        self._copy_in(client, names)
        self.changes.resynced(version)
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
                self.changes.write(client, self._redis_key(path.stem), _text(pins))

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
