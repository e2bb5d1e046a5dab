"""`RedisSchemaStore`: the schema cache shared by every replica through Redis.

A `SchemaCache` (the runtime takes it as one) whose local folder is both the mirror of Redis
and the fallback when Redis is away. Redis holds ``mcp-actors:schema:<SchemaCache.key>``: the
same JSON as a cache file (and ``...:<SchemaCache.context_key>`` for an entry private to the
credentials the replicas share: a replica with other credentials reads another key). What the
runtime saves (on a host thread) is written to the folder, then handed to the link's thread for
Redis; entries of the configured servers are read from
Redis into the folder at start (on the caller's thread, `pull`) and, after that, as they change
(on the link's thread), so the runtime's reads stay local file reads.

Reading is proportional to change: every write of an entry (a Lua script: atomic) also bumps
``mcp-actors:schema-version`` and records the new version as the entry's score in the sorted
set ``mcp-actors:schema-changes``. Every couple of seconds a replica reads the version (one
small GET); only when it moved does it read the entries that changed since the version it last
saw. A full resync (every entry of the configured servers, ours written back where Redis has
none) runs at start, after a reconnect, when the version went back or vanished (Redis lost its
data), and once a minute in case anything was missed.

``mcp-actors:learning:<key>`` (SET NX PX) makes a server nobody has seen start once in the
whole cluster to learn its lists: `claim` it, or wait for the replica that did.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import cast

import redis

from actors.cluster.link import RedisLink
from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.mcp.freshness import ListKind, Received
from actors.runtime.schema_cache import SchemaCache
from actors.tools import ToolSpec

__all__ = ["RedisSchemaStore"]

logger = logging.getLogger(__name__)

_REFRESH = 2.0
"""Seconds between reads of the version, and of the entries that changed (the link's thread)."""
_FULL_RESYNC = 60.0
"""Seconds between full reads of the shared entries."""
_WRITE = """
redis.call('SET', KEYS[1], ARGV[1])
local version = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[3], version, KEYS[1])
return version
"""
"""Write an entry and record its change: KEYS = entry, version, changes; ARGV = the JSON."""
LEARNING_TTL = 30.0
"""How long a replica may take to learn a server before another one may try."""


class RedisSchemaStore(SchemaCache):
    """A schema cache in ``folder`` (default: the usual one) kept in step with Redis."""

    def __init__(
        self,
        link: RedisLink,
        folder: str | os.PathLike[str] | None = None,
        *,
        refresh: float = _REFRESH,
        full_resync: float = _FULL_RESYNC,
    ) -> None:
        super().__init__(folder)
        self.link = link
        self.full_resync = full_resync
        self._version_key = link.key("schema-version")
        self._changes_key = link.key("schema-changes")
        self._seen = 0
        """The version up to which this replica has read the changed entries."""
        self._next_full = 0.0
        """When (monotonic) the next full resync is due: at the first refresh."""
        self._lock = threading.Lock()
        self._watched: dict[str, ServerConfig] = {}
        self._pending: list[concurrent.futures.Future[object]] = []
        self._held: set[str] = set()
        """Servers being learnt: their entries reach Redis whole, once learnt (`publish`)."""
        link.every(refresh, self._refresh)
        link.on_reconnect(self._catch_up)

    def _key(self, config: ServerConfig) -> str:
        """The Redis key of the shared entry of ``config``'s server."""
        return self.link.key("schema", self.entry_key(config))

    def _entries(self, config: ServerConfig) -> list[tuple[str, Path]]:
        """The Redis key and the file of each entry of ``config``'s server: the one private to
        its credentials, then the shared one."""
        paths = (self._context_path(config), self._path(config))
        return [(self.link.key("schema", path.stem), path) for path in paths]

    def watch(self, configs: Iterable[ServerConfig]) -> None:
        """Keep these servers' entries in step with Redis (the configured ones)."""
        with self._lock:
            for config in configs:
                self._watched[self.key(config)] = config

    # ---- reading -----------------------------------------------------------------------------

    def pull(self, configs: Iterable[ServerConfig], timeout: float) -> list[ServerConfig]:
        """Copy what Redis holds for ``configs`` into the folder, waiting at most ``timeout``
        (the caller's thread, at start); the configs that neither Redis nor the folder knows."""
        configs = list(configs)
        self.watch(configs)
        try:
            self.link.call(lambda client: self._copy_in(client, configs), timeout)
        except (redis.RedisError, concurrent.futures.TimeoutError) as exc:
            logger.warning("cluster: schema entries not read from Redis (%s): using the local cache", exc)
        return [config for config in configs if not self.stored(config)]

    def _write(self, client: redis.Redis, key: str, text: str) -> None:
        """Set entry ``key`` to ``text``, bumping the version (on the link's thread)."""
        client.eval(_WRITE, 3, key, self._version_key, self._changes_key, text)

    def _copy_in(self, client: redis.Redis, configs: list[ServerConfig], *, restore: bool = False) -> None:
        """Redis's entries into the folder; with ``restore``, ours into Redis where it has none."""
        if not configs:
            return
        entries = [(config, key, path) for config in configs for key, path in self._entries(config)]
        texts = client.mget([key for _, key, _ in entries])
        for (config, key, path), text in zip(entries, texts, strict=True):
            if isinstance(text, str):
                self._write_file(path, text)
            elif restore and self.key(config) not in self._held:
                self._restore(client, key, path)

    def _restore(self, client: redis.Redis, key: str, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return
        if not client.exists(key):
            self._write(client, key, text)

    def _refresh(self, client: redis.Redis) -> None:
        """Read what changed since the last refresh; everything, when a full resync is due."""
        version = _version(client.get(self._version_key))
        if version == self._seen and time.monotonic() < self._next_full:
            return
        if version < self._seen or time.monotonic() >= self._next_full:
            self._resync(client, version)
            return
        changed = cast(
            "list[tuple[str, float]]",
            client.zrangebyscore(self._changes_key, f"({self._seen}", "+inf", withscores=True),
        )
        with self._lock:
            watched = {key: config for config in self._watched.values() for key, _ in self._entries(config)}
        # A server's two entries may both have changed: read it once.
        configs = list(
            {self.key(watched[key]): watched[key] for key, _ in changed if key in watched}.values()
        )
        self._copy_in(client, configs)
        self._seen = max([version, *(int(score) for _, score in changed)])

    def _resync(self, client: redis.Redis, version: int) -> None:
        """Read every entry of the configured servers, and write ours where Redis has none (an
        outage too short for the link to notice may have emptied Redis)."""
        with self._lock:
            configs = list(self._watched.values())
        self._copy_in(client, configs, restore=True)
        self._seen = version
        self._next_full = time.monotonic() + self.full_resync

    def _write_file(self, path: Path, text: str) -> None:
        """Write ``text`` to ``path`` unless it holds it already (atomically)."""
        try:
            if path.is_file() and path.read_text(encoding="utf-8") == text:
                return
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", dir=self.folder, prefix=".tmp-", suffix=".json", delete=False
            ) as handle:
                handle.write(text)
            os.replace(handle.name, path)
        except OSError as exc:
            logger.warning("cluster: cannot write the schema cache file %s: %s", path, exc)

    # ---- writing -----------------------------------------------------------------------------

    def save(
        self,
        config: ServerConfig,
        tools: tuple[ToolSpec, ...],
        catalog: Catalog,
        lists: Mapping[ListKind, Received] | None = None,
    ) -> Path | None:
        """Write the entry to the folder (this thread: a host thread), then to Redis (the link's).
        An entry private to the credentials goes under their key: replicas with the same
        credentials share it, others never read it."""
        path = super().save(config, tools, catalog, lists)
        if path is None:
            return None  # the save above said why
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return path
        key = self.link.key("schema", path.stem)
        with self._lock:
            self._watched[self.key(config)] = config
            if self.key(config) in self._held:
                return path
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(self.link.submit(lambda client: self._write(client, key, text)))
        return path

    def hold(self, configs: Iterable[ServerConfig]) -> None:
        """Keep these servers' entries out of Redis until `publish`: while a server is learnt its
        lists are saved piece by piece, and other replicas take an entry in Redis as complete."""
        with self._lock:
            self._held.update(self.key(config) for config in configs)

    def publish(self, configs: Iterable[ServerConfig], timeout: float) -> None:
        """Write these servers' entries (held until now) to Redis, waiting at most ``timeout``."""
        configs = list(configs)
        with self._lock:
            self._held.difference_update(self.key(config) for config in configs)
        entries = {}
        for config in configs:
            for key, path in self._entries(config):
                try:
                    entries[key] = path.read_text(encoding="utf-8")
                except OSError:
                    continue  # never learnt: another replica (or the first list) will try
        if entries:
            try:
                self.link.call(lambda client: self._write_all(client, entries), timeout)
            except (redis.RedisError, concurrent.futures.TimeoutError) as exc:
                logger.warning(
                    "cluster: learnt lists not written to Redis (%s); written when it is back", exc
                )

    def _write_all(self, client: redis.Redis, entries: dict[str, str]) -> None:
        pipeline = client.pipeline(transaction=False)
        for key, text in entries.items():
            pipeline.eval(_WRITE, 3, key, self._version_key, self._changes_key, text)
        pipeline.execute()

    def flush(self, timeout: float) -> None:
        """Wait (at most ``timeout``) for the entries saved so far to reach Redis or fail."""
        with self._lock:
            pending = list(self._pending)
        concurrent.futures.wait(pending, timeout)

    def _catch_up(self, client: redis.Redis) -> None:
        """Redis is back (perhaps empty): write what it lacks of our entries, read the rest."""
        self._resync(client, _version(client.get(self._version_key)))

    # ---- learning a server nobody has seen ---------------------------------------------------

    def claim(self, config: ServerConfig, owner: str, timeout: float) -> bool:
        """Whether this replica (``owner``) is the one to start ``config``'s server to learn its
        lists. Without Redis, yes (each replica learns for itself)."""
        key = self.link.key("learning", self.key(config))
        try:
            won = self.link.call(
                lambda client: client.set(key, owner, nx=True, px=int(LEARNING_TTL * 1000)), timeout
            )
        except (redis.RedisError, concurrent.futures.TimeoutError):
            return True
        return bool(won)

    def release(self, config: ServerConfig, owner: str) -> None:
        """Give up the learning claim (once learnt, or failed)."""
        key = self.link.key("learning", self.key(config))

        def drop(client: redis.Redis) -> None:
            if client.get(key) == owner:
                client.delete(key)

        self.link.submit(drop)


def _version(value: object) -> int:
    """The global version as read (none yet: 0)."""
    try:
        return int(value) if isinstance(value, str | bytes | int) else 0
    except ValueError:
        return 0
