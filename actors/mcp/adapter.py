"""`MCPToolAdapter`: one MCP server's session, tools and requests, for the server actor.

The adapter connects through a `Transport`, discovers the server's tools, checks each call
(`actors.tools.check.check_call`) before anything is sent, and classifies every failure. Its
methods return `concurrent.futures.Future`s at once: the work runs on the event loop. A
blocking wrapper for scripts and tests is `actors.testing.BlockingAdapter`.

Threads: its state is written only by coroutines on the event-loop thread. What other threads
read (`connected`, `pid`, `server_info`, `capabilities`) comes from one immutable `_Session`
snapshot, replaced whole, so a reader sees one connection or none, never half of one.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from opentelemetry import context as otel_context

from actors.mcp.catalog import Catalog
from actors.mcp.classify import classify, connect_failure
from actors.mcp.config import ServerConfig, ToolFilter
from actors.mcp.freshness import Freshnesses, Listing
from actors.mcp.inputs import CALL_INPUTS, CallInputs
from actors.mcp.loop import EventLoop, offload
from actors.mcp.redaction import Redactor
from actors.mcp.relay import Relay
from actors.mcp.request_functions import completion_request, prompt_request
from actors.mcp.requests import RESOURCE_NOT_FOUND, AdapterRequests
from actors.mcp.tool_specs import HandlerFor, ToolSpecMaker
from actors.mcp.transport import (
    ClientTransport,
    JSONObject,
    Progress,
    RemoteTool,
    ServerInfo,
    StrayOutput,
    Transport,
    TransportEvents,
)
from actors.tools import ErrorType, ToolError, ToolResult, ToolSpec
from actors.tools.check import Refusal, check_call
from actors.tools.schema import quickly_valid

__all__ = ["MCPToolAdapter", "TransportSource", "classify"]

logger = logging.getLogger(__name__)

TransportSource = Transport | Callable[[], Transport]
"""A transport to reuse on every connect (test doubles), or a factory of single-use ones."""


@dataclass(frozen=True, slots=True)
class _Session:
    """One live connection: its transport and what the handshake said."""

    transport: Transport
    info: ServerInfo


_WHOLE = object()
"""`MCPToolAdapter._call`: check the call whole (`check_call`)."""


def _check_schema(spec: ToolSpec, arguments: dict[str, Any]) -> Refusal | None:
    return check_call(arguments, tool=spec.tool_name, offered={spec.tool_name: spec}, shape=False)


def _sdk_factory(config: ServerConfig) -> Callable[[], Transport]:
    # Deferred to the caller's thread: only an adapter made without a transport (a script
    # using the adapter alone) needs the SDK; the runtime always passes one (it imported the
    # SDK in Runtime.start), so this never runs on the loop or an actor thread.
    from actors.mcp.sdk_transport import SDKTransport  # noqa: PLC0415

    def make() -> Transport:
        return SDKTransport.for_server(config)

    return make


class MCPToolAdapter:
    """Connects to one MCP server and sends it requests, each a future that always completes.

    ``loop``: the event loop its coroutines run on (default: the process's shared one, taken
    on first use and given back by `release_loop`).
    """

    def __init__(
        self,
        config: ServerConfig,
        transport: TransportSource | None = None,
        *,
        loop: EventLoop | None = None,
    ) -> None:
        self.config = config
        self.redact = Redactor.for_server(config.env, config.headers)
        """Scrubs this server's secrets (env and header values) out of a message."""
        self._source: TransportSource = transport if transport is not None else _sdk_factory(config)
        self._own_loop = loop is None
        self._loop = loop
        self._requests = AdapterRequests(config.name, config.call_timeout, self.redact)
        self._specs = ToolSpecMaker(config, self.redact)
        # Written on the loop only.
        self._session: _Session | None = None
        self._offered: dict[str, ToolSpec] | None = None
        """The tools calls are checked against (by name without namespace); None: list again."""
        self._discovered: list[RemoteTool] = []
        self._discovered_once = False

    # ---- state (any thread: each reads one snapshot) -------------------------------------

    @property
    def server_name(self) -> str:
        return self.config.name

    @property
    def transport_name(self) -> str:
        return self.config.transport

    @property
    def connected(self) -> bool:
        return self._session is not None

    @property
    def server_info(self) -> ServerInfo | None:
        session = self._session
        return session.info if session is not None else None

    @property
    def pid(self) -> int | None:
        session = self._session
        return session.transport.pid if session is not None else None

    @property
    def capabilities(self) -> dict[str, Any]:
        """The server's capabilities as JSON; empty until connected."""
        session = self._session
        return dict(session.info.capabilities) if session is not None else {}

    @property
    def capability_metadata(self) -> dict[str, bool]:
        """Which MCP features the server offers: tools, resources, prompts, logging, completions."""
        caps = self.capabilities
        return {
            key: caps.get(key) is not None
            for key in ("tools", "resources", "prompts", "logging", "completions")
        }

    @property
    def discovered_tools(self) -> list[RemoteTool]:
        """The tools found by the last `discover_future` (filtered); empty after a reconnect."""
        return list(self._discovered)

    @property
    def discovered(self) -> bool:
        return self._discovered_once

    def tool_specs_for(
        self, namespace: str, tools: Sequence[RemoteTool], handler_for: HandlerFor | None = None
    ) -> list[ToolSpec]:
        """`ToolSpec`s for ``tools`` of this server under ``namespace`` (without handlers unless
        ``handler_for`` makes them).

        A tool the runtime cannot represent (an illegal name, a duplicate) is left out with a
        warning: one bad entry must not cost the server its other tools.
        """
        return self._specs.specs(namespace, tools, handler_for)

    # ---- requests: each returns a future at once -----------------------------------------

    def connect_future(
        self, timeout: float | None = None, events: TransportEvents | None = None
    ) -> concurrent.futures.Future[ServerInfo]:
        limit = timeout if timeout is not None else self.config.connect_timeout
        return self.ensure_loop().submit(self._connect, limit, events)

    def start_future(
        self, timeout: float | None = None, events: TransportEvents | None = None
    ) -> concurrent.futures.Future[tuple[ServerInfo, Listing[RemoteTool], Catalog, Freshnesses]]:
        """Connect and discover in one go: the server info and what it lists (with their hints)."""
        limit = timeout if timeout is not None else self.config.connect_timeout
        return self.ensure_loop().submit(self._start, limit, events)

    def catalog_future(self) -> concurrent.futures.Future[tuple[Catalog, Freshnesses]]:
        """List the server's resources, resource templates and prompts again (and their hints)."""
        return self.ensure_loop().submit(self._list_catalog)

    def disconnect_future(self) -> concurrent.futures.Future[None]:
        return self.ensure_loop().submit(self._disconnect)

    def discover_future(
        self, tool_filter: ToolFilter | None = None
    ) -> concurrent.futures.Future[Listing[RemoteTool]]:
        return self.ensure_loop().submit(self._discover, tool_filter)

    def invoke_future(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float | None = None,
        *,
        validated: bool = False,
        schema_of: ToolSpec | None = None,
        progress: Progress | None = None,
        context: otel_context.Context | None = None,
        inputs: CallInputs | None = None,
    ) -> concurrent.futures.Future[ToolResult]:
        """A future of the call's `ToolResult`; it always completes, within ``timeout`` + ~1 s.

        The call is checked (`check_call`, with the server's ``maxArgumentBytes``) unless
        ``validated`` says the caller checked it whole. ``schema_of`` says the caller checked all
        but the arguments against this spec's input schema (a server actor checks the cheap part
        on its mailbox): that is checked here, off the loop unless the schema is simple.
        ``progress`` asks the server for progress notifications (a coroutine run on the loop);
        ``context``: the OpenTelemetry context it runs in; ``inputs``: who answers its questions.
        """
        limit = timeout if timeout is not None else self.config.call_timeout
        check = None if validated else schema_of if schema_of is not None else _WHOLE
        return self.ensure_loop().submit(
            self._invoke, tool, arguments, limit, check, progress, context, inputs
        )

    def read_future(
        self, uri: str, timeout: float, *, context: otel_context.Context | None = None
    ) -> concurrent.futures.Future[ToolResult]:
        """Read a resource: output ``{"contents": [...]}``. Always completes, like `invoke_future`."""
        read = lambda t: t.read_resource(uri, timeout)  # noqa: E731
        return self.ask_future(context, f"resources/read {uri}", timeout, read, RESOURCE_NOT_FOUND)

    def prompt_future(
        self,
        name: str,
        arguments: dict[str, str],
        timeout: float,
        *,
        context: otel_context.Context | None = None,
        inputs: CallInputs | None = None,
    ) -> concurrent.futures.Future[ToolResult]:
        """Get a prompt: output ``{"messages": [...], ...}``; ``inputs`` as for `invoke_future`."""
        ask = prompt_request(name, arguments, timeout, inputs)
        return self.ask_future(context, f"prompts/get {name}", timeout, ask)

    def complete_future(
        self,
        ref: JSONObject,
        argument: dict[str, str],
        arguments_so_far: dict[str, str] | None,
        timeout: float,
        *,
        context: otel_context.Context | None = None,
    ) -> concurrent.futures.Future[ToolResult]:
        """Complete an argument: output ``{"values": [...], "total": ..., "hasMore": ...}``."""
        ask = completion_request(ref, argument, arguments_so_far, timeout)
        return self.ask_future(context, "completion/complete", timeout, ask)

    def subscribe_future(self, uri: str, *, subscribe: bool = True) -> concurrent.futures.Future[ToolResult]:
        """Start (or with ``subscribe=False`` end) following updates of ``uri``."""

        async def change(t: ClientTransport) -> JSONObject:
            await (t.subscribe_resource(uri) if subscribe else t.unsubscribe_resource(uri))
            return {}

        what = f"resources/{'subscribe' if subscribe else 'unsubscribe'} {uri}"
        return self.ask_future(None, what, self.config.call_timeout, change)

    def probe_future(self, timeout: float) -> concurrent.futures.Future[None]:
        """Completes when the server answered a probe; fails with a classified `ToolError`."""
        return self.ensure_loop().submit(self._probe, timeout)

    def ask_future(
        self,
        context: otel_context.Context | None,
        what: str,
        timeout: float,
        send: Callable[[ClientTransport], Any],
        missing: frozenset[int] = frozenset(),
    ) -> concurrent.futures.Future[ToolResult]:
        """Any request beyond tools (``send``, run on the loop): its answer as output."""
        return self.ensure_loop().submit(self._traced_ask, context, what, timeout, send, missing)

    # ---- coroutines on the loop ---------------------------------------------------------

    async def _connect(self, timeout: float, events: TransportEvents | None) -> ServerInfo:
        if self._session is not None:
            return self._session.info
        transport = (
            self._source()
            if callable(self._source) and not isinstance(self._source, Transport)
            else self._source
        )
        assert isinstance(transport, Transport)
        try:
            with anyio.fail_after(timeout):
                info = await transport.connect(Relay(self, events))
        except BaseException as exc:
            # A timeout quotes what the server printed instead of MCP (read here, on the loop).
            stray = transport.stray_output() if isinstance(transport, StrayOutput) else ()
            await self._close_quietly(transport)
            failure = connect_failure(exc, self.server_name, timeout, self.redact, stray)
            if failure is exc or not isinstance(exc, Exception):
                raise
            raise failure from None if isinstance(exc, TimeoutError) else exc
        self._session = _Session(transport, info)
        self._offered = None
        self._discovered, self._discovered_once = [], False
        logger.info(
            "%s: connected (%s, protocol %s)", self.server_name, transport.kind, info.protocol_version
        )
        return info

    async def _start(
        self, timeout: float, events: TransportEvents | None
    ) -> tuple[ServerInfo, Listing[RemoteTool], Catalog, Freshnesses]:
        # A start opens a new session: one left from an earlier connection is never reused.
        if self._session is not None:
            await self._disconnect()
        info = await self._connect(timeout, events)
        try:
            try:
                tools = await self._discover(None)
            except ToolError as exc:
                if exc.error_type != ErrorType.SERVER_ERROR:
                    raise
                # A server without tools answers tools/list with an error: it simply has none.
                logger.info("%s: no tools: %s", self.server_name, exc.details)
                tools = Listing()
            catalog, hints = await self._list_catalog()
        except BaseException:
            # Failed or cancelled after the handshake: close the session (shielded) on every path.
            await self._disconnect()
            raise
        return info, tools, catalog, hints

    async def _list_catalog(self) -> tuple[Catalog, Freshnesses]:
        version = self.server_info.protocol_version if self.server_info is not None else None
        return await self._requests.list_catalog(self._require_transport(), self.capabilities, version)

    async def _disconnect(self) -> None:
        session, self._session = self._session, None
        self._offered = None
        self._discovered, self._discovered_once = [], False
        if session is not None:
            await self._close_quietly(session.transport)

    async def _close_quietly(self, transport: Transport) -> None:
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await transport.close()
        except Exception:
            logger.warning("%s: error while closing the transport", self.server_name, exc_info=True)

    def lost(self, reason: str) -> None:
        """On the loop: the transport says the peer went away."""
        logger.warning("%s: connection lost: %s", self.server_name, reason)
        self._session = None
        self._offered = None

    def forget_tools(self) -> None:
        """On the loop: the server's tool list changed; the next checked call lists it again."""
        self._offered = None

    def _require_transport(self) -> Transport:
        session = self._session
        if session is None:
            raise ToolError(self.server_name, ErrorType.CONNECTION, "not connected")
        return session.transport

    async def _allowed_tools(self, tool_filter: ToolFilter | None) -> Listing[RemoteTool]:
        rules = tool_filter if tool_filter is not None else self.config.tools
        listed = await self._requests.list_tools(self._require_transport())
        return Listing(tuple(t for t in listed if rules.allows(t.name)), listed.freshness)

    async def _discover(self, tool_filter: ToolFilter | None) -> Listing[RemoteTool]:
        tools = await self._allowed_tools(tool_filter)
        self._discovered, self._discovered_once = list(tools), True
        self._offered = {s.tool_name: s for s in self._specs.specs(self.server_name, tools)}
        return tools

    async def _offered_tools(self) -> dict[str, ToolSpec]:
        if self._offered is None:
            specs = self._specs.specs(self.server_name, await self._allowed_tools(None))
            self._offered = {s.tool_name: s for s in specs}
        return self._offered

    async def _invoke(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        check: ToolSpec | object | None = None,
        progress: Progress | None = None,
        context: otel_context.Context | None = None,
        inputs: CallInputs | None = None,
    ) -> ToolResult:
        # The call's span is current, so the SDK's request span nests under it (inline rather
        # than a helper: a coroutine frame less on every call).
        token = otel_context.attach(context) if context is not None else None
        if inputs is not None:
            CALL_INPUTS.set(inputs)  # this task's own context: it ends with the call
        try:
            return await self._call(tool, arguments, timeout, check, progress)
        finally:
            if token is not None:
                otel_context.detach(token)

    async def _call(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        check: ToolSpec | object | None,
        progress: Progress | None,
    ) -> ToolResult:
        start = time.monotonic()
        try:
            transport = self._require_transport()
            refusal: Refusal | None = None
            if isinstance(check, ToolSpec):
                if not quickly_valid(check, arguments):
                    # Off the loop: a schema pattern may take up to its time limit. On the loop's
                    # own worker: a new thread's start would block the loop until it runs.
                    refusal = await offload(_check_schema, check, arguments)
            elif check is _WHOLE:
                # Off the loop: the size of big arguments too is work the loop must not do.
                offered = await self._offered_tools()
                refusal = await offload(self._check, tool, arguments, offered)
            if refusal is not None:
                result = refusal.result()
                return result.model_copy(update={"duration_ms": (time.monotonic() - start) * 1000.0})
        except Exception as exc:
            return self._requests.failed(exc, tool, timeout, (time.monotonic() - start) * 1000.0)
        return await self._requests.call_tool(transport, tool, arguments, timeout, progress, start)

    def _check(self, tool: str, arguments: dict[str, Any], offered: dict[str, ToolSpec]) -> Refusal | None:
        return check_call(
            arguments,
            max_argument_bytes=self.config.max_argument_bytes,
            tool=tool,
            offered=offered,
            server=self.server_name,
        )

    async def _traced_ask(
        self,
        context: otel_context.Context | None,
        what: str,
        timeout: float,
        send: Callable[[ClientTransport], Any],
        missing: frozenset[int],
    ) -> ToolResult:
        token = otel_context.attach(context) if context is not None else None
        try:
            session = self._session
            return await self._requests.ask(
                session.transport if session is not None else None, what, timeout, send, missing
            )
        finally:
            if token is not None:
                otel_context.detach(token)

    async def _probe(self, timeout: float) -> None:
        await self._requests.probe(self._require_transport(), timeout)

    # ---- the loop -----------------------------------------------------------------------

    def ensure_loop(self) -> EventLoop:
        """The loop the adapter's coroutines run on (the shared one, taken now, if none was given)."""
        if self._loop is None:
            self._loop = EventLoop.acquire_shared()
        return self._loop

    def release_loop(self) -> None:
        """Give the shared loop back, if this adapter took it."""
        if self._own_loop and self._loop is not None:
            self._loop = None
            EventLoop.release_shared()

    def __repr__(self) -> str:
        state = "connected" if self.connected else "disconnected"
        return f"<MCPToolAdapter {self.server_name} {self.transport_name} {state}>"
