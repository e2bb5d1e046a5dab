"""`Affinity`: where a request for a single-affinity server is served, across replicas.

A server configured ``"affinity": "single"`` (it keeps state: a memory, a browser) runs on one
replica at a time: the one holding its lease (`actors.cluster.lease`). The gateway hands every
``tools/call``, ``resources/read``, ``prompts/get`` and ``completion/complete`` of such a server
to `Affinity.request`: served here when this replica holds the lease or can take it, else
forwarded to the owner's address (`actors.cluster.forward`). An owner that cannot be reached (it
died: its member key expired, or nothing answers) keeps its lease until the TTL runs out; the
request waits for that, within the server's call timeout, then takes the lease and serves here.

A forwarded request's rounds of input, log messages and progress reach its client here as they
would from a server here (`actors.cluster.forwarded_call`). A 2026-07-28 client's request held
across its rounds is held by one replica; the client's retry may come to another, which sends it
to the holder (`Affinity.resume`), named in the sealed ``requestState``.

A resource followed for clients (a ``resources/subscribe``, a listen stream naming it) is
followed where the server runs (`Affinity.watch`): here under the lease, else by a listen stream
held at the owner. That stream only makes the owner follow it at its backend: the owner publishes
each update on the bus, which reaches this replica's clients as any other replica's event does,
so nothing is relayed twice and no second copy of the server starts here.

A lease is released when its server has stopped here (idle stop, a failure) with no request of
it in flight; when it is lost, the local server is stopped, so two never run at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
import redis
from mcp.shared.exceptions import MCPError

from actors.cluster.following import Following, listen_at
from actors.cluster.forward import FORWARDED_HEADER, Forwarder, is_unreachable
from actors.cluster.forwarded_call import CallRelay
from actors.cluster.lease import DEFAULT_TTL, Claim, Leases, redis_client
from actors.cluster.owners import KnownOwner, KnownOwners
from actors.cluster.served import ServedGateway
from actors.mcp.config import ServerConfig
from actors.runtime.messages import (
    CallTool,
    Complete,
    GetPrompt,
    ReadResource,
    ResourceSubscription,
    ServerRequest,
)
from actors.runtime.schema_cache import SchemaCache
from actors.tools import ErrorType, ToolResult

__all__ = ["DEFAULT_TTL", "Affinity", "Following", "lease_name"]

logger = logging.getLogger(__name__)

_STOPPED = frozenset({"idle", "stopped", "failed"})
_STATUS_TIMEOUT = 5.0
_WATCH_READY = 10.0
"""Seconds `Affinity.watch` waits for the resource to be followed before it returns anyway."""
_SERVE_MARGIN = 0.5
"""Seconds a lease's belief must still last for a call to be sent to the local server: the call
reaches it before the belief ends, and so before the loss stops it (a bet: no longer pause)."""
_SLACK = 5.0
"""Seconds beyond a server's call timeout that a forwarded request may take (the hop itself)."""


def lease_name(config: ServerConfig) -> str:
    """The lease of ``config``'s server: its namespace and what makes it the same server."""
    return f"{config.name}:{SchemaCache.key(config)}"


class Affinity:
    """The routing of single-affinity servers' requests for one replica's gateway.

    Its requests run on the gateway's loop; the lease thread renews, loses and releases leases
    (`_lost`, `_release_idle`). The counts both read (requests in flight and begun, the
    namespace of each lease, the owners forwarded to) are all under ``_lock``, which covers
    every one of them and is never held across a wait. The gateway is seen only through
    `ServedGateway`: its configuration as an immutable snapshot, its server stopped by a tell.
    """

    def __init__(self, leases: Leases, forwarder: Forwarder) -> None:
        self.leases = leases
        self.forwarder = forwarder
        self._gateway: ServedGateway | None = None
        self._lock = threading.Lock()
        self._in_flight: Counter[str] = Counter()
        self._served: Counter[str] = Counter()
        """Per namespace, how many requests began here: an idle check that saw a count
        change while it looked does not release."""
        self._namespaces: dict[str, str] = {}
        """Lease name -> namespace, for leases taken here."""
        self._owners = KnownOwners()
        """Per namespace, the owner its requests were last forwarded to, and when."""
        leases.on_lost = self._lost
        leases.on_tick = self._release_idle

    @classmethod
    def start(
        cls, url: str, replica_id: str, *, token: str | None = None, ttl: float = DEFAULT_TTL
    ) -> Affinity:
        """The routing of replica ``replica_id`` on Redis at ``url``, forwarding with ``token``.
        Close it after the gateway (its servers stopped, the leases are released)."""
        return cls(Leases(redis_client(url), replica_id, ttl), Forwarder(replica_id, token))

    def close(self) -> None:
        """Release the leases held here (their servers must be stopped by now) and close the
        clients to other replicas. Idempotent."""
        self.forwarder.close()
        self.leases.close()

    def __enter__(self) -> Affinity:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def attach(self, gateway: ServedGateway) -> None:
        """The gateway whose requests this routes (it calls this when it is built)."""
        self._gateway = gateway

    def routes(self, namespace: str) -> bool:
        """Whether requests of ``namespace`` go through `request` (its affinity is single)."""
        gateway = self._gateway
        return gateway is not None and gateway.config.cluster.single(namespace)

    @property
    def replica_id(self) -> str:
        """This replica's id in the cluster."""
        return self.leases.replica_id

    async def request(
        self,
        ctx: Any,
        namespace: str,
        message: ServerRequest,
        local: Callable[[], Awaitable[ToolResult]],
        relay: CallRelay | None = None,
    ) -> ToolResult:
        """Serve ``message`` here (``local()``) if this replica holds the lease or takes it;
        else forward it to the owner, what it asks and says going to the client through
        ``message``'s inputs and ``relay``. Failures are classified results, never hangs."""
        server = self._config(namespace)
        if server is None:
            return await local()  # unknown here: the runtime says so, as for any server
        name = lease_name(server)
        forwarded_by = _forwarded_by(ctx)
        caller = self._gateway_now().caller_meta(ctx)
        loop = asyncio.get_running_loop()
        timeout = _timeout_of(message, server)
        deadline = loop.time() + timeout
        with self._lock:
            self._in_flight[namespace] += 1
            self._served[namespace] += 1
            self._namespaces[name] = namespace
        margin = self._margin()
        try:
            while True:
                if self.leases.holds(name, margin):
                    return await self._here(namespace, name, local)
                try:
                    claim: Claim = await asyncio.wrap_future(self.leases.claim(name))
                except (redis.RedisError, RuntimeError) as exc:
                    return await self._without_redis(namespace, message, timeout, relay, caller, ctx, exc)
                if claim.mine and self.leases.holds(name, margin):
                    return await self._here(namespace, name, local)
                if claim.mine or not claim.owner:
                    # Granted too late to serve under; or free, but Redis lost its leases: none is
                    # taken until any belief from before has ended. Asked again, within the timeout.
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        return ToolResult.fail(
                            ErrorType.CONNECTION,
                            f"{namespace} runs on one replica at a time, and after Redis lost its leases "
                            f"none may be taken for {claim.quiet:.1f} s more: past the call's timeout",
                        )
                    await asyncio.sleep(min(max(claim.quiet, 0.05), remaining, self.leases.ttl / 4))
                    continue
                if forwarded_by is not None:
                    # Sent here as the owner, and it is not: no second hop (no loops).
                    return ToolResult.fail(
                        ErrorType.CONNECTION,
                        f"{namespace} moved to replica {claim.owner} while {forwarded_by} forwarded here",
                    )
                result = await self._forward(namespace, message, claim.owner, timeout, relay, caller)
                if result is not None and not is_unreachable(result):
                    return result
                # The owner is gone (or unknown): its lease lapses within the TTL; then take it.
                remaining = deadline - loop.time()
                if remaining <= 0:
                    why = result.error if result is not None else "it has no address in Redis"
                    return ToolResult.fail(
                        ErrorType.CONNECTION,
                        f"{namespace} runs on replica {claim.owner}, which is unreachable ({why}), "
                        f"and its lease did not lapse within {timeout:g} s",
                    )
                await asyncio.sleep(min(self.leases.ttl / 4, remaining))
        finally:
            with self._lock:
                self._in_flight[namespace] -= 1

    async def _here(
        self, namespace: str, name: str, local: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult:
        """``local()`` under the lease. Lost meanwhile, the copy is stopped once more: this call
        may have reached the runtime after the loss's stop, and started the server again."""
        try:
            return await local()
        finally:
            if not self.leases.believes(name):
                self._gateway_now().stop_server(namespace)

    async def watch(
        self, namespace: str, uri: str, local: Callable[[], Awaitable[ResourceSubscription]]
    ) -> Following:
        """Follow ``uri`` of ``namespace`` where its server runs: ``local()`` here while this
        replica holds the lease, else a listen stream at the owner; re-routed when the owner
        changes, until the result is cancelled. Returns once it is followed (or after a bound)."""
        loop = asyncio.get_running_loop()
        ready = asyncio.Event()
        task = loop.create_task(self._follow(namespace, uri, local, ready), name=f"follow {uri}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ready.wait(), _WATCH_READY)
        return Following(loop, task)

    async def _follow(
        self,
        namespace: str,
        uri: str,
        local: Callable[[], Awaitable[ResourceSubscription]],
        ready: asyncio.Event,
    ) -> None:
        server = self._config(namespace)
        if server is None:
            ready.set()
            return
        name = lease_name(server)
        loop = asyncio.get_running_loop()
        here: ResourceSubscription | None = None
        try:
            while True:
                try:
                    mine = self.leases.holds(name, self._margin())
                    owner = self.leases.replica_id
                    if not mine:
                        claim: Claim = await asyncio.wrap_future(self.leases.claim(name))
                        mine, owner = claim.mine, claim.owner
                    if mine:
                        with self._lock:
                            self._namespaces[name] = namespace
                        here = await local()
                        ready.set()
                        # Followed here while the lease is; once lost, the server stopped here.
                        while self.leases.holds(name):
                            await asyncio.sleep(self.leases.ttl / 4)
                        loop.run_in_executor(None, here.cancel)
                        here = None
                        continue
                    address = await asyncio.wrap_future(self.leases.address_of(owner)) if owner else None
                    if address:
                        self._owner_is(namespace, owner, address)
                        await listen_at(self.forwarder, address, uri, ready)
                except (redis.RedisError, RuntimeError) as exc:
                    logger.debug("cannot route the following of %s now: %s", uri, exc)
                except Exception:
                    logger.exception("following %s failed; retrying", uri)
                ready.set()  # followed or not, the subscriber is not kept waiting
                await asyncio.sleep(self.leases.ttl / 4)
        finally:
            if here is not None:
                loop.run_in_executor(None, here.cancel)

    async def resume(self, ctx: Any, holder: str, method: str, params: Any, relay: CallRelay | None) -> Any:
        """The retry ``params`` of a ``method`` request held by replica ``holder``, sent there;
        its answer as it is. Raises `MCPError` (-32602 when the holder is gone)."""
        if _forwarded_by(ctx) is not None:
            # Sent here as the holder, and it is not: no second hop.
            raise MCPError(types.INVALID_PARAMS, "requestState names another replica than this one")
        try:
            address = await asyncio.wrap_future(self.leases.address_of(holder))
        except (redis.RedisError, RuntimeError) as exc:
            raise MCPError(types.INTERNAL_ERROR, f"cannot look up replica {holder} in Redis: {exc}") from None
        if not address:
            raise MCPError(
                types.INVALID_PARAMS,
                f"requestState belongs to replica {holder}, which is gone; send the request again without it",
            )
        config = self._gateway_now().config
        limit = max((server.call_timeout for server in config.servers.values()), default=60.0) + _SLACK
        caller = self._gateway_now().caller_meta(ctx)
        return await self.forwarder.resume(address, params, method, limit, relay, caller)

    async def _forward(
        self,
        namespace: str,
        message: ServerRequest,
        owner: str,
        timeout: float,
        relay: CallRelay | None,
        caller: Mapping[str, Any],
    ) -> ToolResult | None:
        """``message`` sent to ``owner``; None when the owner has no address (its member key expired)."""
        try:
            address = await asyncio.wrap_future(self.leases.address_of(owner))
        except (redis.RedisError, RuntimeError) as exc:
            address = self._owners.address_of(owner)  # Redis went away after it named the owner
            if address is None:
                return ToolResult.fail(
                    ErrorType.CONNECTION, f"cannot look up replica {owner} in Redis: {exc}"
                )
        if not address:
            return None
        self._owner_is(namespace, owner, address)
        return await self._send(namespace, message, address, timeout, relay, caller)

    async def _without_redis(
        self,
        namespace: str,
        message: ServerRequest,
        timeout: float,
        relay: CallRelay | None,
        caller: Mapping[str, Any],
        ctx: Any,
        exc: BaseException,
    ) -> ToolResult:
        """Redis cannot say who owns ``namespace``: sent to the owner it last named, while that one
        may still believe its lease (it serves only if it does: never a second copy here)."""
        known = self._owners.recent(namespace, self.leases.clock.monotonic(), self.leases.ttl)
        if known is None or known.replica_id == self.replica_id or _forwarded_by(ctx) is not None:
            return ToolResult.fail(
                ErrorType.CONNECTION,
                f"{namespace} runs on one replica at a time, and Redis, which says which, "
                f"is unreachable: {exc}",
            )
        return await self._send(namespace, message, known.address, timeout, relay, caller)

    async def _send(
        self,
        namespace: str,
        message: ServerRequest,
        address: str,
        timeout: float,
        relay: CallRelay | None,
        caller: Mapping[str, Any],
    ) -> ToolResult:
        """``message`` sent to the replica at ``address``."""
        names = self._gateway_now().names
        limit = timeout + _SLACK
        match message:
            case CallTool(tool=tool, arguments=arguments, inputs=inputs):
                external = names.external(f"{namespace}/{tool}")
                return await self.forwarder.call_tool(
                    address, external, dict(arguments), limit, inputs=inputs, relay=relay, caller=caller
                )
            case ReadResource(uri=uri):
                return await self.forwarder.read_resource(address, uri, limit, caller)
            case GetPrompt(prompt=prompt, arguments=arguments, inputs=inputs):
                external = names.external(f"{namespace}/{prompt}")
                return await self.forwarder.get_prompt(
                    address, external, dict(arguments), limit, inputs=inputs, relay=relay, caller=caller
                )
            case Complete():
                # Completions are hints: not worth a hop to another replica.
                return ToolResult.ok({"values": []})
            case _:
                return ToolResult.fail(ErrorType.VALIDATION, f"{type(message).__name__} cannot be forwarded")

    def _owner_is(self, namespace: str, owner: str, address: str) -> None:
        """Note where ``namespace`` is forwarded; the client to a former owner that no other
        namespace is forwarded to is closed (it moved, or died)."""
        unused = self._owners.seen(namespace, KnownOwner(owner, address, self.leases.clock.monotonic()))
        if unused is not None:
            self.forwarder.close_address(unused)

    # ---- on the leases' thread -------------------------------------------------------------

    def _lost(self, name: str) -> None:
        with self._lock:
            namespace = self._namespaces.get(name)
        gateway = self._gateway
        if namespace is not None and gateway is not None:
            # A tell: the leases' thread goes on renewing the others.
            gateway.stop_server(namespace)

    def _release_idle(self) -> None:
        """Release the leases of servers that stopped here (idle stop, failure, removal)."""
        gateway = self._gateway
        if gateway is None:
            return
        for name in self.leases.held():
            with self._lock:
                namespace = self._namespaces.get(name)
                if namespace is None or self._in_flight[namespace]:
                    continue
                served = self._served[namespace]
            server = self._config(namespace)
            if server is not None and lease_name(server) == name:
                states = gateway.server_states(namespace, _STATUS_TIMEOUT)
                if any(state not in _STOPPED for state in states):
                    continue
            with self._lock:
                # Nothing began meanwhile: forget it before a new request could serve under it.
                if self._in_flight[namespace] or self._served[namespace] != served:
                    continue
                if not self.leases.forget(name):
                    continue
            self.leases.drop_now(name)

    # ---- helpers ---------------------------------------------------------------------------

    def _margin(self) -> float:
        """How long a lease's belief must still last for a request to start on the local server."""
        return min(_SERVE_MARGIN, self.leases.timing.belief / 4)

    def _gateway_now(self) -> ServedGateway:
        if self._gateway is None:
            raise RuntimeError("Affinity.attach was not called")
        return self._gateway

    def _config(self, namespace: str) -> ServerConfig | None:
        gateway = self._gateway
        return gateway.config.servers.get(namespace) if gateway is not None else None


def _timeout_of(message: ServerRequest, server: ServerConfig) -> float:
    given = getattr(message, "timeout", None)
    return float(given) if isinstance(given, int | float) and given > 0 else server.call_timeout


def _forwarded_by(ctx: Any) -> str | None:
    """The replica that forwarded this request here, if one did (its header)."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    if headers is None:
        return None
    value = headers.get(FORWARDED_HEADER)
    return str(value) if value else None
