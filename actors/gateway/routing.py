"""Routing: which actor (or replica) serves a client's request, and waiting for its answer.

`RuntimeRequests` sends a request to the server actor that serves it, through the runtime's own
routes (`actors.runtime.dispatch.Dispatch`: a request skips the registry), or hands it to the
cluster's affinity router; it waits for the answer without blocking the loop, cancels it at the
backend when the client cancels or goes away, and lets the backend's log messages reach the
client before the answer does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import mcp_types as types
from mcp.server.connection import allowed_log_levels
from mcp.shared.exceptions import MCPError

from actors.config import RuntimeConfig
from actors.gateway.access.per_user import PerUserServers, Routed
from actors.gateway.client_inputs import ClientInputs
from actors.gateway.era_copies import EraCopies
from actors.gateway.external import ExternalNames
from actors.gateway.handoff import LoopHandoff
from actors.gateway.relays import ClientRelay
from actors.gateway.sessions import Sessions
from actors.gateway.watches import Followed
from actors.mcp.catalog import PromptSpec
from actors.mcp.names import external_name
from actors.runtime import Runtime
from actors.runtime.messages import (
    CallTool,
    GetPrompt,
    ListPrompts,
    ListResources,
    ListResourceTemplates,
    ListTools,
    ResourceSubscription,
    ServerRequest,
)
from actors.tools import ToolResult, ToolSpec

if TYPE_CHECKING:
    from actors.cluster.forwarded_call import CallRelay
    from actors.cluster.served import ServedGateway

__all__ = ["AffinityRouter", "RuntimeRequests", "Serving"]

_LISTS = (ListTools, ListResources, ListResourceTemplates, ListPrompts)

_T = TypeVar("_T")

LIST_TIMEOUT = 120.0
_FLUSH_TIMEOUT = 5.0
_DISCONNECT_POLL = 0.5
"""How often a call in flight checks that its HTTP client is still there."""


@dataclass(frozen=True)
class Serving:
    """What the gateway serves right now: replaced whole on a reload (on the reloader's
    thread), read from any thread; never changed in place."""

    config: RuntimeConfig
    names: ExternalNames
    """Thread-safe on its own (its lock covers all of its state)."""
    tool_search: bool
    per_user: bool = field(init=False)
    """Whether a server runs a copy per caller (``"affinity": "user"``)."""

    def __post_init__(self) -> None:
        per_user = any(self.config.cluster.per_user(ns) for ns in self.config.servers)
        object.__setattr__(self, "per_user", per_user)


class AffinityRouter(Protocol):
    """Decides where requests of some servers are served across replicas (`actors.cluster.affinity`)."""

    @property
    def replica_id(self) -> str: ...

    def attach(self, gateway: ServedGateway) -> None: ...

    def routes(self, namespace: str) -> bool: ...

    async def request(
        self,
        ctx: Any,
        namespace: str,
        message: ServerRequest,
        local: Callable[[], Awaitable[ToolResult]],
        relay: CallRelay | None = None,
    ) -> ToolResult: ...

    async def resume(
        self, ctx: Any, holder: str, method: str, params: Any, relay: CallRelay | None
    ) -> Any: ...

    async def watch(
        self, namespace: str, uri: str, local: Callable[[], Awaitable[ResourceSubscription]]
    ) -> Followed: ...


class RuntimeRequests:
    """Sends clients' requests to the runtime and waits for the answers, on the gateway's loop.

    Holds no state of its own: the requests in flight are in `Sessions` (owned by the loop), the
    routes in the runtime's `Dispatch`, the per-user servers' copies in `PerUserServers` and the
    handshake-era copies in `EraCopies` (the loop's too): a request for a per-user server goes to
    its caller's copy, a handshake-era client's to its era's, and a list shows each caller theirs.
    """

    def __init__(
        self,
        runtime: Runtime,
        sessions: Sessions,
        handoff: LoopHandoff,
        affinity: AffinityRouter | None,
        per_user: PerUserServers | None = None,
        eras: EraCopies | None = None,
    ) -> None:
        self._runtime = runtime
        self._sessions = sessions
        self._handoff = handoff
        self._affinity = affinity
        self._per_user = per_user
        self._eras = eras

    def offered(self, name: str) -> ToolSpec | None:
        """The tool ``namespace/name`` as the runtime offers it now (none held until approved,
        none of a per-user server): a read of its thread-safe table, no request."""
        return self._runtime.tools.get(name)

    def inputs(self, ctx: Any) -> ClientInputs:
        """What answers a backend's questions during the request of ``ctx``: its client."""
        return ClientInputs(ctx, self._handoff)

    def seen(self, ctx: Any) -> None:
        """A request of a client arrived (on the loop)."""
        self._handoff.on_loop()
        self._sessions.seen(ctx)

    async def ask(self, message: Any, ctx: Any | None = None) -> Any:
        """Send ``message`` to the registry and await its reply. A list is as the caller of
        ``ctx`` sees it (each per-user server from their copy, each dual-era server from the
        copy of their era); without ``ctx``, a look-up's."""
        listing = isinstance(message, _LISTS)
        per_user = self._per_user if listing else None
        if per_user is not None and ctx is not None:
            await per_user.prepare(ctx)
        self._runtime.registry.tell(message)
        answer = await asyncio.wait_for(asyncio.wrap_future(message.reply), LIST_TIMEOUT)
        if listing and self._eras is not None:
            answer = self._eras.view(answer)
        return per_user.view(ctx, answer) if per_user is not None else answer

    async def _routed(self, ctx: Any, namespace: str, message: ServerRequest) -> Routed | ToolResult:
        """``message`` as it is sent here: to its caller's copy of a per-user server, or to the
        copy of a dual-era server in its caller's era."""
        if self._per_user is not None:
            routed = await self._per_user.route(ctx, namespace, message)
            if not isinstance(routed, Routed) or routed.copy is not None:
                return routed
        if self._eras is not None:
            return await self._eras.route(ctx, namespace, message)
        return Routed(namespace, message)

    def _answered(self, routed: Routed) -> None:
        if self._per_user is not None:
            self._per_user.done(routed.copy)
        if routed.release is not None:
            routed.release()

    async def request(self, ctx: Any, namespace: str, message: ServerRequest) -> ToolResult:
        """Send ``message``, or have the affinity router serve it here or on another replica
        (what the backend asks is asked of the client of ``ctx`` either way)."""
        if self._affinity is not None and self._affinity.routes(namespace):
            self.seen(ctx)
            if isinstance(message, CallTool | GetPrompt) and message.inputs is None:
                message = message.with_inputs(self.inputs(ctx))
            routed = message
            return await self._affinity.request(
                ctx, namespace, routed, lambda: self.served(ctx, namespace, routed), ClientRelay(ctx)
            )
        return await self.served(ctx, namespace, message)

    def routed(self, namespace: str) -> bool:
        """Whether the affinity router decides where ``namespace``'s requests are served."""
        return self._affinity is not None and self._affinity.routes(namespace)

    @property
    def clustered(self) -> bool:
        """Whether this gateway is a replica of a cluster (another replica may hold a request)."""
        return self._affinity is not None

    async def resume_at(self, ctx: Any, replica: str, method: str, params: Any, relay: CallRelay) -> Any:
        """The retry ``params`` of a request held by ``replica``, sent there; its answer."""
        assert self._affinity is not None
        return await self._affinity.resume(ctx, replica, method, params, relay)

    async def serving(self, ctx: Any, namespace: str, wait: Awaitable[_T]) -> _T:
        """Await ``wait`` (a held request's next round, `actors.gateway.input_rounds`) as the
        request ``ctx`` served by ``namespace``: what the backend logs meanwhile goes to its
        client, before the answer. Its questions do not: they come as rounds."""
        if self._per_user is not None:
            namespace = self._per_user.current(ctx, namespace)  # a per-user server's: the caller's copy
        if self._eras is not None:
            namespace = self._eras.current(ctx, namespace)  # a dual-era server's: the caller's era's
        ticket = self._sessions.busy(namespace, ctx, asks=False)
        told = self._runtime.host.told
        try:
            answer = await wait
            if self._runtime.host.told != told and (asks_progress(ctx) or may_log(ctx)):
                await self._forwarded(namespace, ticket)
            return answer
        finally:
            self._sessions.idle(namespace, ticket)

    async def held(self, ctx: Any, namespace: str, message: ServerRequest, relay: CallRelay) -> ToolResult:
        """Send ``message`` for a request held across its client's rounds
        (`actors.gateway.input_rounds`), here or to the replica that runs its server: no one
        request of the client waits on it."""
        if self._affinity is not None and self._affinity.routes(namespace):
            here = lambda: self._held_here(ctx, namespace, message)  # noqa: E731
            return await self._affinity.request(ctx, namespace, message, here, relay)
        return await self._held_here(ctx, namespace, message)

    async def _held_here(self, ctx: Any, namespace: str, message: ServerRequest) -> ToolResult:
        routed = await self._routed(ctx, namespace, message)
        if isinstance(routed, ToolResult):
            return routed
        message = routed.message
        self._runtime.dispatch.tell(message)
        try:
            return await asyncio.wrap_future(message.reply)
        except asyncio.CancelledError:
            message.reply.cancel()
            raise
        finally:
            self._answered(routed)

    async def served(self, ctx: Any, namespace: str, message: ServerRequest) -> ToolResult:
        """Send ``message`` here; a client that cancels its request cancels it at the backend.
        What its backend asks meanwhile is asked of the client of ``ctx`` (`ClientInputs`)."""
        self.seen(ctx)
        routed = await self._routed(ctx, namespace, message)
        if isinstance(routed, ToolResult):
            return routed  # a per-user server this caller cannot have an instance of
        namespace, message = routed.namespace, routed.message
        if isinstance(message, CallTool | GetPrompt) and message.inputs is None:
            message = message.with_inputs(self.inputs(ctx))
        ticket = self._sessions.busy(namespace, ctx)
        told = self._runtime.host.told
        try:
            self._runtime.dispatch.tell(message)
            result = await while_connected(ctx, asyncio.wrap_future(message.reply))
            # No news told since the call went out: none of it can be on its way to the client.
            if self._runtime.host.told != told and (asks_progress(ctx) or may_log(ctx)):
                await self._forwarded(namespace, ticket)
            return result
        except asyncio.CancelledError:
            message.reply.cancel()
            raise
        except ClientGone:
            message.reply.cancel()
            raise MCPError(types.INTERNAL_ERROR, "the client went away before the answer") from None
        finally:
            self._sessions.idle(namespace, ticket)
            self._answered(routed)

    async def _forwarded(self, namespace: str, ticket: int) -> None:
        """Let what the backend said during the request (its log messages and progress, which
        reach us on a host thread) go out before the answer does: a client drops the progress of
        a request it has the answer of."""
        # Bounded: a stuck host handler must not hold every answer (the logs would be lost only).
        # Once delivered, the host thread has handed each log message to this loop, before the
        # future's own completion reaches it. Most calls find nothing queued: no wait then.
        delivered = self._runtime.host.delivered()
        if not delivered.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.wrap_future(delivered), _FLUSH_TIMEOUT)
        # What the host thread handed over is queued on this loop ahead of the delivered
        # future's wake-up, but may be queued still when it had nothing left: one turn runs it,
        # and each hand-over notes its send on the request.
        await asyncio.sleep(0)
        client = self._sessions.request(namespace, ticket)
        sent = list(client.sent) if client is not None else []
        if sent:
            await asyncio.wait(sent, timeout=_FLUSH_TIMEOUT)

    async def internal(
        self, serving: Serving, external: str, listing: Callable[[], ListTools | ListPrompts]
    ) -> str | None:
        """The ``namespace/name`` behind ``external``, even if this process never handed it out.

        A client may call a name it learned from an earlier gateway process or session without
        listing first. A configured server's plain ``ns__name`` is read as it is (no server
        starts); other names (of servers without a prefix, or shortened) are learned from the
        registry's list (``listing()``: the request that lists them).
        """
        names = serving.names
        name = names.internal(external) or plain_name(serving.config, external)
        if name is None:
            specs: list[ToolSpec] | list[PromptSpec] = await self.ask(listing())
            for spec in specs:
                names.external(spec.name)
            name = names.internal(external)
        return name


def plain_name(config: RuntimeConfig, external: str) -> str | None:
    """``ns/name`` for ``ns__name`` when ``ns`` is a configured server with a prefix."""
    namespace, separator, bare = external.partition("__")
    if (
        separator
        and namespace in config.servers
        and config.gateway.prefixed(namespace)
        and external_name(f"{namespace}/{bare}") == external
    ):
        return f"{namespace}/{bare}"
    return None


class ClientGone(Exception):
    """The HTTP request of the client waiting for an answer has ended."""


async def while_connected(ctx: Any, reply: asyncio.Future[_T]) -> _T:
    """``reply`` once it comes; `ClientGone` if the client's HTTP request ends before.

    A Streamable HTTP client whose POST stream closed can never get this answer (the gateway
    keeps no event store to resume streams from), so its backend call must not run on for
    nobody. Over stdio a client that goes away ends the gateway, and its servers with it.
    """
    is_disconnected = getattr(ctx.request, "is_disconnected", None)
    if is_disconnected is None:
        return await reply
    while True:
        # asyncio.wait leaves ``reply`` running when the wait times out or is cancelled.
        done, _ = await asyncio.wait({reply}, timeout=_DISCONNECT_POLL)
        if done:
            return reply.result()
        if await is_disconnected():
            raise ClientGone


def may_log(ctx: Any) -> bool:
    """Whether the SDK would send the client log messages on this request: always in the
    handshake era; in 2026-07-28 only when the request opted in (``_meta`` log level)."""
    version = getattr(ctx, "protocol_version", None)
    if not isinstance(version, str):
        return True
    return bool(allowed_log_levels(version, ctx.meta if ctx.request_id is not None else None))


def asks_progress(ctx: Any) -> bool:
    """Whether the request ``ctx`` asked for progress notifications (a progress token)."""
    meta = ctx.meta
    return isinstance(meta, Mapping) and meta.get("progress_token") is not None
