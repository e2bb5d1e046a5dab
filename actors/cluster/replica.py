"""`ClusterReplica`: one gateway replica's part in a cluster on Redis, wired for ``serve``.

    with ClusterReplica.start("redis://127.0.0.1:6379/0", "http://10.0.0.5:8080/mcp") as replica:
        replica.prepare(config)                       # servers nobody has seen: learnt once
        with Gateway(config, schema_cache=replica.store, bus=replica.bus) as gateway:
            replica.attach(gateway)                   # remote events, membership with its load
            ...serve...

Each replica keeps its own runtime and server processes; Redis holds only what they share
(`actors.cluster.schema_store`, `actors.cluster.bus`, `actors.cluster.members`).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from pathlib import Path
from types import TracebackType

import redis

from actors.cluster.affinity import lease_name
from actors.cluster.bus import RedisSubscriptionBus
from actors.cluster.lease import DEFAULT_TTL, Leases, redis_client
from actors.cluster.link import RedisLink
from actors.cluster.members import Membership
from actors.cluster.pin_store import RedisPinStore
from actors.cluster.schema_store import LEARNING_TTL, RedisSchemaStore
from actors.cluster.served import ServedGateway
from actors.config import BuiltinConfig, RuntimeConfig
from actors.mcp.config import ServerConfig
from actors.runtime import Runtime
from actors.runtime.handlers import HostHandlers

__all__ = ["ClusterReplica", "new_replica_id"]

logger = logging.getLogger(__name__)

_PULL_TIMEOUT = 3.0
_LEARN_TIMEOUT = 60.0
"""How long ``prepare`` waits, at most, for servers to be learnt (here or elsewhere)."""
_POLL = 0.2


def _refused(namespace: str, params: dict[str, object]) -> dict[str, object]:
    raise RuntimeError("a replica learning a server's lists has no client to ask")


AS_A_GATEWAY = HostHandlers(sampling=_refused, elicitation=_refused, roots=())
"""What a replica learns lists with: a gateway answers sampling, elicitation and roots (for its
clients), and a server may list differently for a client that declares them, so the lists
are learnt, and shared, as the gateway's runtime will ask for them."""


def new_replica_id() -> str:
    """``<hostname>:<pid>:<random>``: unique even when a pid is reused in another container."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class _NoLeases:
    """No leases needed (no single-affinity server to learn)."""

    def __enter__(self) -> _NoLeases:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


class ClusterReplica:
    """This process's link to Redis, shared schema cache, event bus and membership entry."""

    def __init__(
        self,
        url: str,
        address: str,
        *,
        cache_folder: str | os.PathLike[str] | None = None,
        replica_id: str | None = None,
        timeout: float = 1.0,
    ) -> None:
        self.id = replica_id or new_replica_id()
        self.url = url
        self.address = address
        """Where other replicas reach this one (``--advertise``)."""
        self.link = RedisLink(url, timeout=timeout)
        self.store = RedisSchemaStore(self.link, cache_folder)
        self.pins = RedisPinStore(self.link)
        """The pinned tool definitions every replica shares (`actors.pins`), mirrored locally."""
        self.bus = RedisSubscriptionBus(self.link, self.id)
        self.members: Membership | None = None
        self._stop = threading.Event()

    @classmethod
    def start(
        cls, url: str, address: str, *, cache_folder: str | Path | None = None, timeout: float = 1.0
    ) -> ClusterReplica:
        """Connect (the link's and the bus's threads start; Redis may still be away)."""
        replica = cls(url, address, cache_folder=cache_folder, timeout=timeout)
        replica.link.start()
        replica.bus.start()
        return replica

    def prepare(
        self, config: RuntimeConfig, timeout: float = _LEARN_TIMEOUT, *, lease_ttl: float | None = None
    ) -> None:
        """Before serving, on the caller's thread: read the shared schema entries of
        ``config``'s servers, and have each server nobody has listed yet started once in the
        whole cluster to learn its lists (by this replica if it claims it first, else wait,
        at most ``timeout``, for the one that did). Without Redis every replica learns its own.
        A single-affinity server is learnt only under its lease (it runs on one replica at a
        time); one that runs on another replica is not started here, nor waited for. Its lease
        has the cluster's ``lease_ttl`` (a new Redis epoch's quiet period is counted from it)."""
        self.pins.pull(_PULL_TIMEOUT)
        self.store.declare(AS_A_GATEWAY)
        unknown = self.store.pull(config.servers.values(), _PULL_TIMEOUT)
        deadline = time.monotonic() + timeout
        while unknown:
            claimed = [server for server in unknown if self.store.claim(server, self.id, _PULL_TIMEOUT)]
            mine = self._unlearnt(claimed)
            single = [server for server in mine if config.cluster.single(server.name)]
            with self._leases(single, lease_ttl or DEFAULT_TTL) as leases:
                owned = self._owned_elsewhere(single, leases, deadline)
                learn = [server for server in mine if server not in owned]
                if learn:
                    # Within the claim's lifetime: a claim that expired lets another replica learn too.
                    self._learn(config, learn, min(LEARNING_TTL * 0.8, max(1.0, deadline - time.monotonic())))
            for server in owned:
                self.store.release(server, self.id)
            others = [server for server in unknown if server not in claimed]
            if not others or time.monotonic() >= deadline or self._stop.wait(_POLL):
                if others:
                    logger.warning(
                        "cluster: no replica learnt %s in time: the first list here will start them",
                        ", ".join(server.name for server in others),
                    )
                return
            unknown = self.store.pull(others, _PULL_TIMEOUT)

    def _unlearnt(self, claimed: list[ServerConfig]) -> list[ServerConfig]:
        """The ``claimed`` servers still unknown once claimed; the others' claims given back.

        The pull that found a server unknown came before the claim: meanwhile the replica that
        held the claim may have published the server's entry and then released it (in that
        order, on its link's one thread), and a claim won then finds the entry in Redis."""
        if not claimed:
            return []
        unknown = self.store.pull(claimed, _PULL_TIMEOUT)
        for server in claimed:
            if server not in unknown:
                self.store.release(server, self.id)
        return unknown

    def _leases(self, single: list[ServerConfig], ttl: float) -> Leases | _NoLeases:
        """Leases to learn the ``single``-affinity servers under, if any (released on exit)."""
        if not single:
            return _NoLeases()
        return Leases(redis_client(self.url), self.id, ttl)

    def _owned_elsewhere(
        self, single: list[ServerConfig], leases: Leases | _NoLeases, deadline: float
    ) -> list[ServerConfig]:
        """The ``single``-affinity servers whose lease this replica could not take (held by
        another replica, which runs them, or Redis away): not started here to learn them. A
        lease free but in a quiet period (Redis changed epoch) is waited for, until ``deadline``."""
        owned: list[ServerConfig] = []
        if not isinstance(leases, Leases):
            return owned
        for server in single:
            try:
                claim = leases.claim(lease_name(server)).result(_PULL_TIMEOUT)
                while not claim.mine and not claim.owner and time.monotonic() < deadline:
                    if self._stop.wait(min(max(claim.quiet, _POLL), max(0.0, deadline - time.monotonic()))):
                        break
                    claim = leases.claim(lease_name(server)).result(_PULL_TIMEOUT)
            except (redis.RedisError, RuntimeError, TimeoutError) as exc:
                logger.warning("cluster: cannot take the lease of %s to learn it: %s", server.name, exc)
                owned.append(server)
                continue
            if not claim.mine:
                where = f"runs on replica {claim.owner}" if claim.owner else "cannot be taken yet (quiet)"
                logger.info("cluster: %s %s: not learnt here", server.name, where)
                owned.append(server)
        return owned

    def _learn(self, config: RuntimeConfig, servers: list[ServerConfig], timeout: float) -> None:
        names = ", ".join(server.name for server in servers)
        logger.info("cluster: learning the lists of %s", names)
        only = config.model_copy(
            update={"servers": {server.name: server for server in servers}, "builtin": BuiltinConfig()}
        )
        self.store.hold(servers)
        try:
            with Runtime.start(
                only,
                schema_cache=self.store,
                pins=self.pins,
                sampling=AS_A_GATEWAY.sampling,
                elicitation=AS_A_GATEWAY.elicitation,
                roots=AS_A_GATEWAY.roots,
            ) as runtime:
                runtime.list_tools(timeout=timeout)
                runtime.list_resources(timeout=timeout)
                runtime.list_prompts(timeout=timeout)
                # The runtime saves on its host thread: let those saves happen before it stops.
                runtime.host.delivered().result(timeout)
        except Exception as exc:
            logger.warning("cluster: learning the lists of %s failed: %s", names, exc)
        finally:
            self.store.publish(servers, _PULL_TIMEOUT)
            for server in servers:
                self.store.release(server, self.id)

    def shared_secret(self, name: str, timeout: float = _PULL_TIMEOUT) -> bytes | None:
        """A random secret every replica of the cluster shares, under ``name`` in Redis: made
        by the first replica that asks, read by the others. None (logged) when Redis cannot be
        reached in ``timeout`` seconds."""
        key = self.link.key("secret", name)
        made = secrets.token_urlsafe(32)

        def shared(client: redis.Redis) -> bytes | None:
            client.set(key, made, nx=True)
            value = client.get(key)
            return value.encode() if isinstance(value, str) else value

        try:
            return self.link.call(shared, timeout)
        except (redis.RedisError, RuntimeError, TimeoutError) as exc:
            logger.warning("cluster: cannot read the shared secret %s from Redis: %s", name, exc)
            return None

    def attach(self, gateway: ServedGateway) -> None:
        """Serve ``gateway``: other replicas' events reach its clients, and this replica is a
        member with its load (the calls in flight)."""
        self.bus.on_remote = gateway.announce
        self.members = Membership(self.link, self.id, self.address, lambda: gateway.in_flight)

    def close(self) -> None:
        """Leave the cluster (this replica's entry goes), stop the threads. Idempotent."""
        self._stop.set()
        if self.members is not None:
            self.members.leave()
            self.members = None
        self.bus.close()
        self.link.close()

    def __enter__(self) -> ClusterReplica:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
