"""`MCPToolAdapter`: one MCP server's tools, usable like any registered tool.

The adapter connects through a `Transport`, discovers the server's tools, validates arguments
against their JSON Schemas before anything is sent, classifies every failure, and registers
the tools in a `ToolRegistry` under a namespace.

Its state is written only by coroutines on the event-loop thread; other threads read it.
Blocking methods (``connect``, ``invoke`` ...) are for synchronous callers; actors use the
``*_future`` methods, which return at once.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import pydantic
from opentelemetry import context as otel_context

from actors.loop import EventLoop
from actors.mcp.catalog import Catalog, PromptSpec, ResourceSpec, ResourceTemplateSpec
from actors.mcp.config import ServerConfig, ToolFilter
from actors.mcp.inference import infer_capabilities
from actors.mcp.redaction import Redactor
from actors.mcp.slots import infer_resource_slots
from actors.mcp.transport import (
    CallOutcome,
    ClientTransport,
    JSONObject,
    Progress,
    RemoteTool,
    ServerInfo,
    ServerReplyError,
    Transport,
    TransportEvents,
)
from actors.tools import (
    ErrorType,
    ToolError,
    ToolRegistry,
    ToolResult,
    ToolSpec,
    check_json,
    duration_text,
    error_label,
    validate_inputs,
)

__all__ = ["MCPToolAdapter", "TransportSource", "classify"]

logger = logging.getLogger(__name__)

_L = TypeVar("_L")

TransportSource = Transport | Callable[[], Transport]
"""A transport to reuse on every connect (test doubles), or a factory of single-use ones."""

# How servers say a resource does not exist: -32002 (the 2025 revisions), -32602 (invalid params:
# 2026-07-28, and most servers).
_RESOURCE_NOT_FOUND = frozenset({-32002, -32602})

# Spare time for a transport to report its own timeout before the adapter's guard fires.
_GUARD_SLACK = 1.0


def classify(exc: BaseException) -> tuple[ErrorType, str]:
    """The `ErrorType` of an exception from a transport, and a message that starts with its label."""
    kind: ErrorType
    if isinstance(exc, ToolError):
        known = {member.value for member in ErrorType}
        kind = ErrorType(exc.error_type) if exc.error_type in known else ErrorType.SERVER_ERROR
        text = exc.details or str(exc)
    elif isinstance(exc, TimeoutError):
        kind, text = ErrorType.TIMEOUT, str(exc)
    elif isinstance(exc, ServerReplyError):
        kind, text = ErrorType.SERVER_ERROR, str(exc)
    elif isinstance(
        exc,
        ConnectionError | OSError | anyio.BrokenResourceError | anyio.ClosedResourceError | anyio.EndOfStream,
    ):
        kind, text = ErrorType.CONNECTION, str(exc) or type(exc).__name__
    else:
        kind, text = ErrorType.SERVER_ERROR, f"{type(exc).__name__}: {exc}"
    return kind, _labelled(kind, text)


def _labelled(kind: ErrorType, text: str) -> str:
    """``text`` led by ``kind``'s label, once."""
    label = error_label(kind)
    if not text or text == label:
        return label
    return text if text.startswith(f"{label}:") else f"{label}: {text}"


async def _traced(context: otel_context.Context | None, fn: Callable[..., Awaitable[_L]], *args: Any) -> _L:
    """``fn(*args)`` with ``context`` current, so the SDK's request span nests under the caller's."""
    if context is None:
        return await fn(*args)
    token = otel_context.attach(context)
    try:
        return await fn(*args)
    finally:
        otel_context.detach(token)


def _outcome_output(outcome: CallOutcome) -> dict[str, Any]:
    output: dict[str, Any] = {"content": outcome.content}
    if outcome.structured_content is not None:
        output["structuredContent"] = outcome.structured_content
    return output


def _outcome_error_text(outcome: CallOutcome) -> str:
    texts = [str(b.get("text", "")) for b in outcome.content if b.get("type") == "text"]
    return "; ".join(t for t in texts if t) or "the tool reported an error"


class _Relay:
    """The adapter's own transport listener: keeps its state true, then tells the owner.

    An owner may listen to only part of the news (a test's listener, say): what it has no
    method for is dropped.
    """

    def __init__(self, adapter: MCPToolAdapter, owner: Any) -> None:
        self._adapter = adapter
        self._owner = owner

    def _tell(self, method: str, *args: Any) -> None:
        handler = getattr(self._owner, method, None)
        if handler is not None:
            handler(*args)

    def on_closed(self, reason: str) -> None:
        reason = self._adapter.redact(reason)
        self._adapter._lost(reason)
        self._tell("on_closed", reason)

    def on_tools_changed(self) -> None:
        self._adapter._catalog = None
        self._tell("on_tools_changed")

    def on_resources_changed(self) -> None:
        self._tell("on_resources_changed")

    def on_prompts_changed(self) -> None:
        self._tell("on_prompts_changed")

    def on_resource_updated(self, uri: str) -> None:
        self._tell("on_resource_updated", uri)

    def on_log(self, level: str, logger: str | None, data: Any) -> None:
        self._tell("on_log", level, logger, data)


class MCPToolAdapter:
    """Connects to one MCP server and makes its tools callable and registrable."""

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
        self._source: TransportSource = transport if transport is not None else self._sdk_factory()
        self._own_loop = loop is None
        self._loop = loop
        self._transport: Transport | None = None
        self._info: ServerInfo | None = None
        self._catalog: dict[str, ToolSpec] | None = None
        self._discovered: list[RemoteTool] = []
        self._discovered_once = False
        self._left_out: set[str] = set()

    # ---- state ------------------------------------------------------------------------

    @property
    def server_name(self) -> str:
        return self.config.name

    @property
    def transport_name(self) -> str:
        return self.config.transport

    @property
    def connected(self) -> bool:
        return self._transport is not None

    @property
    def server_info(self) -> ServerInfo | None:
        return self._info

    @property
    def pid(self) -> int | None:
        transport = self._transport
        return transport.pid if transport is not None else None

    @property
    def capabilities(self) -> dict[str, Any]:
        """The server's capabilities as JSON; empty until connected."""
        return dict(self._info.capabilities) if self._info else {}

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
        """The tools found by the last `discover` (filtered); empty after a reconnect."""
        return list(self._discovered)

    @property
    def discovered(self) -> bool:
        return self._discovered_once

    # ---- blocking API -----------------------------------------------------------------

    def connect(self, timeout: float | None = None, events: TransportEvents | None = None) -> ServerInfo:
        """Connect and handshake; idempotent. Raises `ToolError` of type ``connection``."""
        info: ServerInfo = self._wait(
            self.connect_future(timeout, events), timeout or self.config.connect_timeout
        )
        return info

    def disconnect(self, timeout: float = 5.0) -> None:
        """Close the connection; idempotent, never raises."""
        if self._loop is None:
            return
        try:
            self._wait(self.disconnect_future(), timeout)
        except ToolError:
            logger.warning("%s: disconnect did not finish within %.1fs", self.server_name, timeout)
        finally:
            self._release_loop()

    def reconnect(self, timeout: float | None = None, events: TransportEvents | None = None) -> ServerInfo:
        """Disconnect, forget discovered tools, connect again."""
        self.disconnect()
        return self.connect(timeout, events)

    def discover(self, tool_filter: ToolFilter | None = None) -> list[RemoteTool]:
        """List the server's tools (every page), keep those the filter allows."""
        tools: list[RemoteTool] = self._wait(self.discover_future(tool_filter), self.config.call_timeout)
        return tools

    def invoke(self, tool: str, arguments: dict[str, Any], timeout: float | None = None) -> ToolResult:
        """Call a tool; every failure is a failed `ToolResult`, never an exception."""
        limit = timeout if timeout is not None else self.config.call_timeout
        future = self.invoke_future(tool, arguments, limit)
        try:
            return future.result(timeout=limit + 2 * _GUARD_SLACK)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return ToolResult.fail(ErrorType.TIMEOUT, f"{tool} got no answer within {duration_text(limit)}")

    def register(self, registry: ToolRegistry, namespace: str | None = None) -> list[ToolSpec]:
        """Register the discovered tools as ``namespace/tool`` (replacing that namespace whole)."""
        if not self._discovered_once:
            self.discover()
        specs = self.tool_specs(namespace)
        registry.replace_namespace(namespace or self.server_name, specs)
        return specs

    def reregister(self, registry: ToolRegistry, namespace: str | None = None) -> list[ToolSpec]:
        """Discover again and swap the namespace's tools: added appear, removed disappear."""
        self.discover()
        return self.register(registry, namespace)

    def tool_specs_for(self, namespace: str, tools: Sequence[RemoteTool]) -> list[ToolSpec]:
        """`ToolSpec`s (without handlers) for ``tools`` of this server under ``namespace``.

        A tool the runtime cannot represent (an illegal name, a duplicate) is left out with a
        warning: one bad entry must not cost the server its other tools.
        """
        return self._specs(namespace, tools, with_handler=False)

    def tool_specs(self, namespace: str | None = None) -> list[ToolSpec]:
        """`ToolSpec`s for the discovered tools, each calling `invoke`."""
        return self._specs(namespace or self.server_name, self._discovered, with_handler=True)

    # ---- non-blocking API (for actors) --------------------------------------------------

    def connect_future(
        self, timeout: float | None = None, events: TransportEvents | None = None
    ) -> concurrent.futures.Future[ServerInfo]:
        limit = timeout if timeout is not None else self.config.connect_timeout
        return self._ensure_loop().submit(self._connect, limit, events)

    def start_future(
        self, timeout: float | None = None, events: TransportEvents | None = None
    ) -> concurrent.futures.Future[tuple[ServerInfo, list[RemoteTool], Catalog]]:
        """Connect and discover in one go: the server info, its tools and the rest it lists."""
        limit = timeout if timeout is not None else self.config.connect_timeout
        return self._ensure_loop().submit(self._start, limit, events)

    def catalog_future(self) -> concurrent.futures.Future[Catalog]:
        """List the server's resources, resource templates and prompts again."""
        return self._ensure_loop().submit(self._list_catalog)

    def disconnect_future(self) -> concurrent.futures.Future[None]:
        return self._ensure_loop().submit(self._disconnect)

    def discover_future(
        self, tool_filter: ToolFilter | None = None
    ) -> concurrent.futures.Future[list[RemoteTool]]:
        return self._ensure_loop().submit(self._discover, tool_filter)

    def invoke_future(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float | None = None,
        *,
        validated: bool = False,
        progress: Progress | None = None,
        context: otel_context.Context | None = None,
    ) -> concurrent.futures.Future[ToolResult]:
        """A future of the call's `ToolResult`; it always completes, within ``timeout`` + ~1 s.

        ``validated`` says the caller already checked the arguments against the tool's schema;
        ``progress`` asks the server for progress notifications (a coroutine run on the loop);
        ``context`` is the OpenTelemetry context the request runs in (its span's).
        """
        limit = timeout if timeout is not None else self.config.call_timeout
        return self._ensure_loop().submit(self._invoke, tool, arguments, limit, validated, progress, context)

    def read_future(
        self, uri: str, timeout: float, *, context: otel_context.Context | None = None
    ) -> concurrent.futures.Future[ToolResult]:
        """Read a resource: output ``{"contents": [...]}``. Always completes, like `invoke_future`."""
        return self._ensure_loop().submit(
            _traced,
            context,
            self._ask,
            f"resources/read {uri}",
            timeout,
            lambda t: t.read_resource(uri, timeout),
            _RESOURCE_NOT_FOUND,
        )

    def prompt_future(
        self,
        name: str,
        arguments: dict[str, str],
        timeout: float,
        *,
        context: otel_context.Context | None = None,
    ) -> concurrent.futures.Future[ToolResult]:
        """Get a prompt: output ``{"messages": [...], "description": ...}``."""
        return self._ensure_loop().submit(
            _traced,
            context,
            self._ask,
            f"prompts/get {name}",
            timeout,
            lambda t: t.get_prompt(name, arguments, timeout),
        )

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

        async def complete(t: ClientTransport) -> JSONObject:
            answer = await t.complete(ref, argument, arguments_so_far, timeout)
            completion = answer.get("completion")
            return dict(completion) if isinstance(completion, dict) else {"values": []}

        return self._ensure_loop().submit(
            _traced, context, self._ask, "completion/complete", timeout, complete
        )

    def subscribe_future(self, uri: str, *, subscribe: bool = True) -> concurrent.futures.Future[ToolResult]:
        """Start (or with ``subscribe=False`` end) following updates of ``uri``."""

        async def change(t: ClientTransport) -> JSONObject:
            await (t.subscribe_resource(uri) if subscribe else t.unsubscribe_resource(uri))
            return {}

        what = f"resources/{'subscribe' if subscribe else 'unsubscribe'} {uri}"
        return self._ensure_loop().submit(self._ask, what, self.config.call_timeout, change)

    def probe_future(self, timeout: float) -> concurrent.futures.Future[None]:
        """Completes when the server answered a probe; fails with a classified `ToolError`."""
        return self._ensure_loop().submit(self._probe, timeout)

    # ---- coroutines on the loop ---------------------------------------------------------

    async def _connect(self, timeout: float, events: TransportEvents | None) -> ServerInfo:
        if self._transport is not None and self._info is not None:
            return self._info
        transport = (
            self._source()
            if callable(self._source) and not isinstance(self._source, Transport)
            else self._source
        )
        assert isinstance(transport, Transport)
        try:
            with anyio.fail_after(timeout):
                info = await transport.connect(_Relay(self, events))
        except BaseException as exc:
            await self._close_quietly(transport)
            if isinstance(exc, TimeoutError):
                raise ToolError(
                    self.server_name, ErrorType.CONNECTION, f"connection timed out after {timeout}s"
                ) from None
            if isinstance(exc, ToolError) and exc.error_type == ErrorType.AUTH:
                raise  # a login is needed, or was refused: not a connection failure
            if isinstance(exc, Exception):
                reason = self.redact(str(exc) or type(exc).__name__)
                raise ToolError(
                    self.server_name, ErrorType.CONNECTION, f"connection failed: {reason}"
                ) from exc
            raise
        self._transport, self._info = transport, info
        self._catalog = None
        self._discovered, self._discovered_once = [], False
        logger.info(
            "%s: connected (%s, protocol %s)", self.server_name, transport.kind, info.protocol_version
        )
        return info

    async def _start(
        self, timeout: float, events: TransportEvents | None
    ) -> tuple[ServerInfo, list[RemoteTool], Catalog]:
        # A start opens a new session: one left from an earlier connection is never reused.
        if self._transport is not None:
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
                tools = []
            catalog = await self._list_catalog()
        except BaseException:
            # Failed or cancelled after the handshake: close the session (shielded) on every path.
            await self._disconnect()
            raise
        return info, tools, catalog

    async def _list_catalog(self) -> Catalog:
        """The resources, templates and prompts the server says it has (capabilities), listed.

        A server that fails one of these lists (an error answer) keeps the others; a lost
        connection or a timeout fails the whole listing, as for tools.
        """
        transport = self._require_transport()
        if not isinstance(transport, ClientTransport):
            return Catalog()
        caps = self.capabilities
        ns = self.server_name
        resources: list[ResourceSpec] = []
        templates: list[ResourceTemplateSpec] = []
        prompts: list[PromptSpec] = []
        if caps.get("resources") is not None:
            resources = [
                ResourceSpec.of(ns, r) for r in await self._listing("resources", transport.list_resources)
            ]
            templates = [
                ResourceTemplateSpec.of(ns, r)
                for r in await self._listing("resource templates", transport.list_resource_templates)
            ]
        if caps.get("prompts") is not None:
            prompts = [PromptSpec.of(ns, p) for p in await self._listing("prompts", transport.list_prompts)]
        return Catalog(resources=tuple(resources), templates=tuple(templates), prompts=tuple(prompts))

    async def _listing(self, what: str, fetch: Callable[[], Awaitable[list[_L]]]) -> list[_L]:
        try:
            with anyio.fail_after(self.config.call_timeout):
                return await fetch()
        except Exception as exc:
            kind, message = classify(exc)
            if kind == ErrorType.SERVER_ERROR:
                logger.warning("%s: listing %s failed: %s", self.server_name, what, self.redact(message))
                return []
            raise ToolError(self.server_name, kind, f"listing {what} failed: {self.redact(message)}") from exc

    async def _disconnect(self) -> None:
        transport, self._transport = self._transport, None
        self._catalog = None
        self._discovered, self._discovered_once = [], False
        if transport is not None:
            await self._close_quietly(transport)

    async def _close_quietly(self, transport: Transport) -> None:
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await transport.close()
        except Exception:
            logger.warning("%s: error while closing the transport", self.server_name, exc_info=True)

    def _lost(self, reason: str) -> None:
        logger.warning("%s: connection lost: %s", self.server_name, reason)
        self._transport = None
        self._catalog = None

    def _require_transport(self) -> Transport:
        if self._transport is None:
            raise ToolError(self.server_name, ErrorType.CONNECTION, "not connected")
        return self._transport

    async def _list(self) -> list[RemoteTool]:
        transport = self._require_transport()
        try:
            with anyio.fail_after(self.config.call_timeout):
                return await transport.list_tools()
        except ToolError:
            raise
        except Exception as exc:
            kind, message = classify(exc)
            raise ToolError(self.server_name, kind, f"listing tools failed: {self.redact(message)}") from exc

    async def _discover(self, tool_filter: ToolFilter | None) -> list[RemoteTool]:
        rules = tool_filter if tool_filter is not None else self.config.tools
        tools = [t for t in await self._list() if rules.allows(t.name)]
        self._discovered, self._discovered_once = tools, True
        self._catalog = {s.tool_name: s for s in self._specs(self.server_name, tools, with_handler=False)}
        return tools

    async def _known_tool(self, tool: str) -> ToolSpec | None:
        if self._catalog is None:
            tools = [t for t in await self._list() if self.config.tools.allows(t.name)]
            specs = self._specs(self.server_name, tools, with_handler=False)
            self._catalog = {s.tool_name: s for s in specs}
        return self._catalog.get(tool)

    async def _invoke(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        validated: bool = False,
        progress: Progress | None = None,
        context: otel_context.Context | None = None,
    ) -> ToolResult:
        # The call's span is current, so the SDK's request span nests under it (`_traced`, inline:
        # a coroutine frame less on every call).
        token = otel_context.attach(context) if context is not None else None
        try:
            return await self._call(tool, arguments, timeout, validated, progress)
        finally:
            if token is not None:
                otel_context.detach(token)

    async def _call(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        validated: bool,
        progress: Progress | None,
    ) -> ToolResult:
        start = time.monotonic()

        def elapsed() -> float:
            return (time.monotonic() - start) * 1000.0

        try:
            transport = self._require_transport()
            if not validated:
                if (problem := check_json(arguments, "arguments")) is not None:
                    return ToolResult.fail(ErrorType.VALIDATION, f"{problem}", duration_ms=elapsed())
                spec = await self._known_tool(tool)
                if spec is None:
                    return ToolResult.fail(
                        ErrorType.NOT_FOUND,
                        f"tool {tool!r} is not offered by server {self.server_name!r}",
                        duration_ms=elapsed(),
                    )
                # Off the loop: a schema pattern may take up to its time limit to check.
                problem = await anyio.to_thread.run_sync(validate_inputs, spec, arguments)
                if problem is not None:
                    return ToolResult.fail(ErrorType.VALIDATION, problem, duration_ms=elapsed())
            if getattr(transport, "bounds_requests", False):
                # It ends every request within its timeout itself: a guard scope would only
                # cost its ~14 us.
                outcome = await self._send_call(transport, tool, arguments, timeout, progress)
            else:
                with anyio.fail_after(timeout + _GUARD_SLACK):
                    outcome = await self._send_call(transport, tool, arguments, timeout, progress)
        except Exception as exc:
            kind, message = classify(exc)
            if kind == ErrorType.TIMEOUT:
                message = (
                    f"{tool} got no answer within {duration_text(timeout)}; the server was told to cancel it"
                )
            return ToolResult.fail(kind, self.redact(message), duration_ms=elapsed(), server=self.server_name)
        if outcome.is_error:
            return ToolResult.fail(
                ErrorType.SERVER_ERROR,
                self.redact(f"{_outcome_error_text(outcome)}"),
                duration_ms=elapsed(),
                server=self.server_name,
                content=outcome.content,
            )
        return ToolResult.ok(_outcome_output(outcome), duration_ms=elapsed(), server=self.server_name)

    @staticmethod
    async def _send_call(
        transport: Transport, tool: str, arguments: dict[str, Any], timeout: float, progress: Progress | None
    ) -> CallOutcome:
        if progress is not None and isinstance(transport, ClientTransport):
            return await transport.call_tool_with_progress(tool, arguments, timeout, progress)
        return await transport.call_tool(tool, arguments, timeout)

    async def _ask(
        self,
        what: str,
        timeout: float,
        send: Callable[[ClientTransport], Awaitable[JSONObject]],
        missing: frozenset[int] = frozenset(),
    ) -> ToolResult:
        """One request beyond tools, as a classified `ToolResult` whose output is the answer.

        ``missing``: the JSON-RPC error codes by which the server says the thing asked for does
        not exist (classified ``not_found``, not ``server_error``).
        """
        start = time.monotonic()

        def elapsed() -> float:
            return (time.monotonic() - start) * 1000.0

        try:
            transport = self._require_transport()
            if not isinstance(transport, ClientTransport):
                return ToolResult.fail(
                    ErrorType.SERVER_ERROR,
                    f"{what}: the {transport.kind} transport of {self.server_name!r} speaks tools only",
                    duration_ms=elapsed(),
                )
            with anyio.fail_after(timeout + _GUARD_SLACK):
                answer = await send(transport)
        except Exception as exc:
            kind, message = classify(exc)
            if kind == ErrorType.TIMEOUT:
                message = (
                    f"{what} got no answer within {duration_text(timeout)}; the server was told to cancel it"
                )
            elif isinstance(exc, ServerReplyError) and exc.code in missing:
                kind, message = ErrorType.NOT_FOUND, f"{what}: {exc.message}"
            return ToolResult.fail(kind, self.redact(message), duration_ms=elapsed(), server=self.server_name)
        return ToolResult.ok(answer, duration_ms=elapsed(), server=self.server_name)

    async def _probe(self, timeout: float) -> None:
        transport = self._require_transport()
        try:
            with anyio.fail_after(timeout):
                await transport.probe()
        except Exception as exc:
            kind, message = classify(exc)
            raise ToolError(self.server_name, kind, f"health probe failed: {self.redact(message)}") from exc

    # ---- helpers ------------------------------------------------------------------------

    def _specs(self, namespace: str, tools: Sequence[RemoteTool], *, with_handler: bool) -> list[ToolSpec]:
        specs: dict[str, ToolSpec] = {}
        for remote in tools:
            try:
                spec = self._spec(namespace, remote, with_handler=with_handler)
            except pydantic.ValidationError as exc:
                self._leave_out(remote.name, exc.errors()[0]["msg"] if exc.errors() else str(exc))
                continue
            if spec.name in specs:
                self._leave_out(remote.name, "a second tool of that name")
                continue
            specs[spec.name] = spec
        return list(specs.values())

    def _leave_out(self, name: str, why: str) -> None:
        # Once per name: the same list comes back on every start and every list_changed.
        if name not in self._left_out:
            self._left_out.add(name)
            logger.warning("%s: left out tool %r: %s", self.server_name, name, self.redact(why))

    def _spec(self, namespace: str, remote: RemoteTool, *, with_handler: bool) -> ToolSpec:
        def handler(inputs: dict[str, Any]) -> ToolResult:
            return self.invoke(remote.name, inputs)

        return ToolSpec(
            name=f"{namespace}/{remote.name}",
            description=remote.description,
            input_schema=remote.input_schema,
            output_schema=remote.output_schema,
            capabilities=infer_capabilities(
                remote.name, remote.annotations, trusted=self.config.trust_annotations
            ),
            source="mcp",
            resource_slots=tuple(infer_resource_slots(remote.input_schema)),
            handler=handler if with_handler else None,
            metadata={
                "server": self.server_name,
                "annotations": remote.annotations or {},
                **({"taskSupport": remote.task_support} if remote.task_support else {}),
            },
        )

    def _sdk_factory(self) -> Callable[[], Transport]:
        # Deferred to the caller's thread: only an adapter made without a transport (a script
        # using the adapter alone) needs the SDK; the runtime always passes one (it imported the
        # SDK in Runtime.start), so this never runs on the loop or an actor thread.
        from actors.mcp.sdk_transport import SDKTransport  # noqa: PLC0415

        config = self.config

        def make() -> Transport:
            return SDKTransport.for_server(config)

        return make

    def _ensure_loop(self) -> EventLoop:
        if self._loop is None:
            self._loop = EventLoop.acquire_shared()
        return self._loop

    def _release_loop(self) -> None:
        if self._own_loop and self._loop is not None:
            self._loop = None
            EventLoop.release_shared()

    def _wait(self, future: concurrent.futures.Future[Any], timeout: float) -> Any:
        try:
            return future.result(timeout=timeout + 2 * _GUARD_SLACK)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ToolError(self.server_name, ErrorType.TIMEOUT, f"no answer within {timeout}s") from None

    def __repr__(self) -> str:
        state = "connected" if self.connected else "disconnected"
        return f"<MCPToolAdapter {self.server_name} {self.transport_name} {state}>"
