"""`RedisSchemaStore`: the schema cache shared by every replica through Redis.

A `SchemaCache` (the runtime takes it as one) whose local folder is both the mirror of Redis
and the fallback when Redis is away. Redis holds ``mcp-actors:schema:<SchemaCache.key>``: the
same JSON as a cache file. What the runtime saves (on a host thread) is written to the folder,
then handed to the link's thread for Redis; entries of the configured servers are read from
Redis into the folder at start (on the caller's thread, `pull`) and every few seconds after
(on the link's thread), so the runtime's reads stay local file reads.

``mcp-actors:learning:<key>`` (SET NX PX) makes a server nobody has seen start once in the
whole cluster to learn its lists: `claim` it, or wait for the replica that did.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

import redis

from actors.cluster.link import RedisLink
from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.runtime.schema_cache import SchemaCache
from actors.tools import ToolSpec

__all__ = ["RedisSchemaStore"]

logger = logging.getLogger(__name__)

_REFRESH = 2.0
"""Seconds between reads of the shared entries (the link's thread)."""
LEARNING_TTL = 30.0
"""How long a replica may take to learn a server before another one may try."""


class RedisSchemaStore(SchemaCache):
    """A schema cache in ``folder`` (default: the usual one) kept in step with Redis."""

    def __init__(self, link: RedisLink, folder: str | os.PathLike[str] | None = None) -> None:
        super().__init__(folder)
        self.link = link
        self._lock = threading.Lock()
        self._watched: dict[str, ServerConfig] = {}
        self._pending: list[concurrent.futures.Future[object]] = []
        self._held: set[str] = set()
        """Servers being learnt: their entries reach Redis whole, once learnt (`publish`)."""
        link.every(_REFRESH, self._refresh)
        link.on_reconnect(self._catch_up)

    def _key(self, config: ServerConfig) -> str:
        return self.link.key("schema", self.key(config))

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
        return [config for config in configs if not self._path(config).is_file()]

    def _copy_in(self, client: redis.Redis, configs: list[ServerConfig], *, restore: bool = False) -> None:
        """Redis's entries into the folder; with ``restore``, ours into Redis where it has none."""
        if not configs:
            return
        texts = client.mget([self._key(config) for config in configs])
        for config, text in zip(configs, texts, strict=True):
            if isinstance(text, str):
                self._write_file(self._path(config), text)
            elif restore and self.key(config) not in self._held:
                self._restore(client, config)

    def _restore(self, client: redis.Redis, config: ServerConfig) -> None:
        try:
            text = self._path(config).read_text(encoding="utf-8")
        except OSError:
            return
        client.set(self._key(config), text, nx=True)

    def _refresh(self, client: redis.Redis) -> None:
        # Restoring too: an outage too short for the link to notice may have emptied Redis.
        with self._lock:
            configs = list(self._watched.values())
        self._copy_in(client, configs, restore=True)

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

    def save(self, config: ServerConfig, tools: tuple[ToolSpec, ...], catalog: Catalog) -> None:
        """Write the entry to the folder (this thread: a host thread), then to Redis (the link's)."""
        super().save(config, tools, catalog)
        try:
            text = self._path(config).read_text(encoding="utf-8")
        except OSError:
            return  # the save above said why
        key = self._key(config)
        with self._lock:
            self._watched[self.key(config)] = config
            if self.key(config) in self._held:
                return
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(self.link.submit(lambda client: client.set(key, text)))

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
            try:
                entries[self._key(config)] = self._path(config).read_text(encoding="utf-8")
            except OSError:
                continue  # never learnt: another replica (or the first list) will try
        if entries:
            try:
                self.link.call(lambda client: client.mset(entries), timeout)
            except (redis.RedisError, concurrent.futures.TimeoutError) as exc:
                logger.warning(
                    "cluster: learnt lists not written to Redis (%s); written when it is back", exc
                )

    def flush(self, timeout: float) -> None:
        """Wait (at most ``timeout``) for the entries saved so far to reach Redis or fail."""
        with self._lock:
            pending = list(self._pending)
        concurrent.futures.wait(pending, timeout)

    def _catch_up(self, client: redis.Redis) -> None:
        """Redis is back (perhaps empty): write what it lacks of our entries, read the rest."""
        self._refresh(client)

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
