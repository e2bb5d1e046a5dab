"""`RedisSchemaStore`: the schema cache shared by every replica through Redis.

A `SchemaCache` (the runtime takes it as one) whose local folder is both the mirror of Redis
and the fallback when Redis is away. Redis holds ``mcp-actors:schema:<SchemaCache.key>``: the
same JSON as a cache file (and ``...:<SchemaCache.context_key>`` for an entry private to the
credentials the replicas share: a replica with other credentials reads another key). What the
runtime saves (on a host thread) is written to the folder, then handed to the link's thread for
Redis; entries of the configured servers are read from
Redis into the folder at start (on the caller's thread, `pull`) and, after that, as they change
(on the link's thread), so the runtime's reads stay local file reads.

Reading is proportional to change: every write of an entry is numbered in the ``schema``
`actors.cluster.change_log.ChangeLog`, and every couple of seconds a replica reads only the
entries that changed since it last looked. A full resync (every entry of the configured
servers, ours written back where Redis has none) runs at start, after a reconnect, when the
version went back or vanished (Redis lost its data), and once a minute in case anything was
missed.

``mcp-actors:learning:<key>`` (SET NX PX) makes a server nobody has seen start once in the
whole cluster to learn its lists: `claim` it, or wait for the replica that did.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

import redis

from actors.cluster.change_log import ChangeLog
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
        self.changes = ChangeLog(link, "schema", full_resync)
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
        self.changes.write(client, key, text)

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
        self.changes.refresh(client, lambda keys: self._read(client, keys), lambda v: self._resync(client, v))

    def _read(self, client: redis.Redis, keys: list[str]) -> None:
        """The changed entries ``keys`` of the configured servers into the folder."""
        with self._lock:
            watched = {key: config for config in self._watched.values() for key, _ in self._entries(config)}
        # A server's two entries may both have changed: read it once.
        configs = list({self.key(watched[key]): watched[key] for key in keys if key in watched}.values())
        self._copy_in(client, configs)

    def _resync(self, client: redis.Redis, version: int) -> None:
        """Read every entry of the configured servers, and write ours where Redis has none (an
        outage too short for the link to notice may have emptied Redis)."""
        with self._lock:
            configs = list(self._watched.values())
        self._copy_in(client, configs, restore=True)
        self.changes.resynced(version)

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
            self.changes.write(pipeline, key, text)
        pipeline.execute()

    def flush(self, timeout: float) -> None:
        """Wait (at most ``timeout``) for the entries saved so far to reach Redis or fail."""
        with self._lock:
            pending = list(self._pending)
        concurrent.futures.wait(pending, timeout)

    def _catch_up(self, client: redis.Redis) -> None:
        """Redis is back (perhaps empty): write what it lacks of our entries, read the rest."""
        self._resync(client, self.changes.version(client))

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
