"""`Gateway`: the registry served as one MCP server, for any MCP host.

Built on the SDK's low-level ``Server`` (its handlers run per request, so lists may change at
any time). The gateway owns one `Runtime`: one server actor per configured server, however
many clients connect. Its handlers run on the gateway's own event loop (the one `mcp-actors
serve` runs stdio or HTTP on), send messages to the registry actor and await the reply
futures: they never block, and never touch the runtime's own loop.

What it forwards, per request, to the client that made it: progress, cancellation (a
cancelled client request cancels the call at the backend server), sampling, elicitation and
roots requests of the backend server that serves one of the client's calls. What it
broadcasts: list changes of any backend (handshake era: notifications to every session that
has talked to the gateway; 2026-07-28: ``subscriptions/listen`` streams) and resource updates.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import json
import logging
import re
import threading
import warnings
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import mcp_types as types
import pykka
from mcp.server.connection import allowed_log_levels
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, SubscriptionBus
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

from actors.config import RuntimeConfig, load_config
from actors.gateway.external import ExternalNames
from actors.gateway.search import CALL_TOOL, DEFAULT_LIMIT, MAX_LIMIT, META_TOOLS, SEARCH_TOOLS, ToolIndex
from actors.gateway.watches import Followed, ResourceWatches
from actors.mcp.catalog import PromptSpec, ResourceSpec, ResourceTemplateSpec
from actors.mcp.config import ServerConfig
from actors.mcp.names import external_name
from actors.runtime import Runtime
from actors.runtime.messages import (
    CallTool,
    Complete,
    GetPrompt,
    ListPrompts,
    ListResources,
    ListResourceTemplates,
    ListTools,
    ReadResource,
    ResourceSubscription,
    ServerRequest,
    StartServer,
    SubscribeResource,
)
from actors.runtime.registry import Route
from actors.runtime.schema_cache import SchemaCache
from actors.tools import ErrorType, ToolResult, ToolSpec

__all__ = ["AffinityRouter", "Gateway"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

_LIST_TIMEOUT = 120.0
_FORWARD_TIMEOUT = 120.0
_FLUSH_TIMEOUT = 5.0
_DISCONNECT_POLL = 0.5
"""How often a call in flight checks that its HTTP client is still there."""

_INSTRUCTIONS = (
    "mcp-actors gateway: the tools, resources and prompts of several MCP servers in one. "
    "Tool and prompt names are 'server__name' unless a server is configured without a prefix."
)


_LIST_CHANGES = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)


class _GatewayServer(Server[Any]):
    """The SDK's low-level server, declaring list changes unless told otherwise: its Streamable
    HTTP session manager asks for the initialization options without saying (stdio passes them)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or _LIST_CHANGES, experimental_capabilities, extensions
        )


@dataclass
class _InFlight:
    """A client request being served by one backend namespace (for routing server requests)."""

    session: ServerSession
    request_id: Any
    sent: list[concurrent.futures.Future[Any]] = field(default_factory=list)
    """What was forwarded to the client for this request (its backend's log messages)."""


@dataclass
class _Sessions:
    """Sessions that have talked to the gateway, and which are waiting on which namespace."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)
    """The clients' connections (what outlives a request; each has ``send_tool_list_changed``...)."""
    busy: dict[str, dict[int, _InFlight]] = field(default_factory=dict)
    ids: itertools.count[int] = field(default_factory=itertools.count)


class AffinityRouter(Protocol):
    """Decides where requests of some servers are served across replicas (`actors.cluster.affinity`)."""

    def attach(self, gateway: Gateway) -> None: ...

    def routes(self, namespace: str) -> bool: ...

    async def request(
        self, ctx: Any, namespace: str, message: ServerRequest, local: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult: ...

    async def watch(
        self, namespace: str, uri: str, local: Callable[[], Awaitable[ResourceSubscription]]
    ) -> Followed: ...


class Gateway:
    """One MCP server in front of a `Runtime`'s registry."""

    def __init__(
        self,
        config: RuntimeConfig,
        *,
        schema_cache: SchemaCache | None = None,
        tool_search: bool | None = None,
        bus: SubscriptionBus | None = None,
        affinity: AffinityRouter | None = None,
    ) -> None:
        self.config = config
        self._affinity = affinity
        """Routes a single-affinity server's requests: here, or to the replica running it."""
        self._tool_search_option = tool_search
        self.tool_search = config.tool_search if tool_search is None else tool_search
        """List only ``search_tools`` and ``call_tool`` (`actors.gateway.search`); ``tool_search``
        given here overrides the config's ``toolSearch``, also across reloads."""
        self.names = ExternalNames(ns for ns, server in config.servers.items() if not server.prefix)
        self._sessions = _Sessions()
        self._bus: SubscriptionBus = bus if bus is not None else InMemorySubscriptionBus()
        """Where list changes and resource updates go to ``subscriptions/listen`` streams (a
        cluster's bus fans them out to the other replicas too: `actors.cluster.bus`)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._routes: dict[str, pykka.ActorRef[Any]] = {}
        """namespace → the actor serving its calls, as the registry said (`_send`)."""
        self._subscribers: dict[tuple[int, str], ServerSession] = {}
        self._listen = ListenHandler(self._bus)
        self._watches = ResourceWatches(self._watch)
        self.runtime = Runtime.start(
            config,
            sampling=self._sampling,
            elicitation=self._elicitation,
            roots=self._roots,
            on_lists_changed=self._lists_changed,
            schema_cache=schema_cache,
        )
        try:
            self.server = self._build_server()
        except BaseException:
            self.runtime.shutdown()
            raise
        if affinity is not None:
            affinity.attach(self)
        self._log_forwarder = _ServerLogs(self)
        _SERVER_LOGS.addHandler(self._log_forwarder)
        if _SERVER_LOGS.level == logging.NOTSET:
            # Server log messages reach the forwarder at every level; the host's own handlers
            # keep filtering by theirs.
            _SERVER_LOGS.setLevel(logging.DEBUG)
        self._start_eager(config.servers.values())

    def _start_eager(self, servers: Iterable[ServerConfig]) -> None:
        """Start the servers configured with ``lazyStart: false``: no call would start them."""
        for server in servers:
            if not server.lazy_start:
                self.runtime.registry.tell(StartServer(server.name))

    @classmethod
    def start(
        cls,
        config: RuntimeConfig | Mapping[str, Any] | str | Path,
        *,
        schema_cache: SchemaCache | None = None,
        tool_search: bool | None = None,
    ) -> Gateway:
        """A gateway for ``config`` (a `RuntimeConfig`, a dict in ``mcpServers`` form, or a file)."""
        return cls(load_config(config), schema_cache=schema_cache, tool_search=tool_search)

    def _build_server(self) -> Server[Any]:
        server = _GatewayServer(
            "mcp-actors",
            version=version("mcp-actors"),
            instructions=_INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_subscriptions_listen=self._listen_stream,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_completion=self._complete,
        )
        # Registered apart from the constructor, which warns that logging is deprecated in
        # 2026-07-28: handshake-era clients (and the conformance suite) still set a level.
        server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self._set_level)
        return server

    def initialization_options(self) -> Any:
        """What the gateway declares: list changes of tools, resources and prompts."""
        return self.server.create_initialization_options(_LIST_CHANGES)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop the gateway serves on (for what host threads send to clients)."""
        self._loop = loop

    def close(self) -> None:
        """Stop every backend server and the runtime. Idempotent."""
        _SERVER_LOGS.removeHandler(self._log_forwarder)
        self.runtime.shutdown()

    def _forward_log(self, namespace: str, level: str, source: str | None, data: Any) -> None:
        """A backend's log message, to each client whose request that backend is serving."""
        if level not in _LOG_LEVELS:
            return
        with self._sessions.lock:
            waiting = list(self._sessions.busy.get(namespace, {}).values())
        for client in waiting:
            send = client.session.send_log_message
            with warnings.catch_warnings():
                # Deprecated on 2026-07-28 sessions, where the SDK sends it only if the client
                # asked for logs on that request: still the way to pass a server's log on.
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                message = send(cast(Any, level), data, logger=source, related_request_id=client.request_id)
            if (sending := self._send_soon(message)) is not None:
                client.sent.append(sending)

    # ---- talking to the runtime (never blocking the gateway's loop) ------------------------

    async def _ask(self, message: Any) -> Any:
        self.runtime.registry.tell(message)
        return await asyncio.wait_for(asyncio.wrap_future(message.reply), _LIST_TIMEOUT)

    async def _request(self, ctx: Any, namespace: str, message: ServerRequest) -> ToolResult:
        """Send ``message``, or have the affinity router serve it here or on another replica."""
        if self._affinity is not None and self._affinity.routes(namespace):
            self._seen(ctx)
            return await self._affinity.request(
                ctx, namespace, message, lambda: self._served(ctx, namespace, message)
            )
        return await self._served(ctx, namespace, message)

    async def _served(self, ctx: Any, namespace: str, message: ServerRequest) -> ToolResult:
        """Send ``message`` here; a client that cancels its request cancels it at the backend."""
        self._seen(ctx)
        ticket = self._busy(namespace, ctx)
        try:
            self._send(message)
            result = await _while_connected(ctx, asyncio.wrap_future(message.reply))
            if _may_log(ctx):
                await self._forwarded(namespace, ticket)
            return result
        except asyncio.CancelledError:
            message.reply.cancel()
            raise
        except _ClientGone:
            message.reply.cancel()
            raise MCPError(types.INTERNAL_ERROR, "the client went away before the answer") from None
        finally:
            self._idle(namespace, ticket)

    def _send(self, message: ServerRequest) -> None:
        """Tell ``message`` to the actor serving its namespace, skipping the registry when its
        route is known (a dead route sends it, and later calls, back through the registry)."""
        if isinstance(message, CallTool):
            route = self._routes.get(message.namespace)
            if route is not None:
                try:
                    route.tell(message)
                    return
                except pykka.ActorDeadError:
                    self._routes.pop(message.namespace, None)
            self._learn_route(message.namespace)
        self.runtime.registry.tell(message)

    def _learn_route(self, namespace: str) -> None:
        """Ask the registry which actor serves ``namespace``, for the calls after this one."""
        asked = Route(namespace)
        routes = self._routes

        def learnt(answer: concurrent.futures.Future[Any]) -> None:
            # On the registry's thread; a reload that replaced ``routes`` meanwhile drops it.
            if not answer.cancelled() and answer.exception() is None and answer.result() is not None:
                routes[namespace] = answer.result()

        asked.reply.add_done_callback(learnt)
        self.runtime.registry.tell(asked)

    async def _forwarded(self, namespace: str, ticket: int) -> None:
        """Let what the backend said during the request (its log messages, which reach us on a
        host thread) go out before the answer does."""
        # Bounded: a stuck host handler must not hold every answer (the logs would be lost only).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.wrap_future(self.runtime.host.delivered()), _FLUSH_TIMEOUT)
        with self._sessions.lock:
            client = self._sessions.busy.get(namespace, {}).get(ticket)
            sent = list(client.sent) if client is not None else []
        if sent:
            await asyncio.wait([asyncio.wrap_future(f) for f in sent], timeout=_FLUSH_TIMEOUT)

    def _seen(self, ctx: Any) -> None:
        self._loop = self._loop or asyncio.get_running_loop()
        # The SDK builds a ServerSession per request, gone once it is answered: keep the
        # client's connection, which lasts as long as the client (and can notify it).
        connection = getattr(ctx.session, "_connection", ctx.session)
        if connection in self._sessions.seen:  # every request after a client's first
            return
        with self._sessions.lock:
            self._sessions.seen.add(connection)

    def _busy(self, namespace: str, ctx: Any) -> int:
        with self._sessions.lock:
            ticket = next(self._sessions.ids)
            self._sessions.busy.setdefault(namespace, {})[ticket] = _InFlight(ctx.session, ctx.request_id)
            return ticket

    def _idle(self, namespace: str, ticket: int) -> None:
        with self._sessions.lock:
            self._sessions.busy.get(namespace, {}).pop(ticket, None)

    async def _internal(self, external: str, listing: ListTools | ListPrompts) -> str | None:
        """The ``namespace/name`` behind ``external``, even if this process never handed it out.

        A client may call a name it learned from an earlier gateway process or session without
        listing first. A configured server's plain ``ns__name`` is read as it is (no server
        starts); other names (of servers without a prefix, or shortened) are learned from the
        registry's list.
        """
        name = self.names.internal(external) or self._plain_name(external)
        if name is None:
            specs: list[ToolSpec] | list[PromptSpec] = await self._ask(listing)
            for spec in specs:
                self.names.external(spec.name)
            name = self.names.internal(external)
        return name

    def _plain_name(self, external: str) -> str | None:
        namespace, separator, bare = external.partition("__")
        server = self.config.servers.get(namespace)
        if (
            separator
            and server is not None
            and server.prefix
            and external_name(f"{namespace}/{bare}") == external
        ):
            return f"{namespace}/{bare}"
        return None

    async def _set_level(self, ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        # Accepted for the client's sake; what each backend logs is its own ``logLevel`` key.
        self._seen(ctx)
        return types.EmptyResult()

    # ---- tools ---------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        self._seen(ctx)
        if self.tool_search:
            return types.ListToolsResult(tools=list(META_TOOLS))
        specs: list[ToolSpec] = await self._ask(ListTools())
        return types.ListToolsResult(tools=[self._tool(spec) for spec in specs])

    def _tool(self, spec: ToolSpec) -> types.Tool:
        annotations = spec.metadata.get("annotations") or None
        return types.Tool(
            name=self.names.external(spec.name),
            description=spec.description or None,
            input_schema=spec.input_schema,
            output_schema=spec.output_schema,
            annotations=types.ToolAnnotations.model_validate(annotations) if annotations else None,
        )

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if self.tool_search and params.name in (SEARCH_TOOLS, CALL_TOOL):
            return await self._meta_tool(ctx, params)
        name = await self._internal(params.name, ListTools())
        if name is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        namespace, _, tool = name.partition("/")
        token = (ctx.meta or {}).get("progress_token") if isinstance(ctx.meta, Mapping) else None
        progress = self._progress_sender(ctx, token) if token is not None else None
        call = CallTool(namespace, tool, dict(params.arguments or {}), progress=progress)
        result = await self._request(ctx, namespace, call)
        if result.error_type == ErrorType.NOT_FOUND and "is not offered by" in (result.error or ""):
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name} ({result.error})")
        return _call_result(result)

    def _progress_sender(self, ctx: Any, token: Any) -> Callable[[float, float | None, str | None], None]:
        session, request_id = ctx.session, ctx.request_id

        def progress(done: float, total: float | None, message: str | None) -> None:
            # On a host thread: hand the notification to the gateway's loop, in order.
            self._send_soon(
                session.send_progress_notification(
                    token, done, total, message, related_request_id=str(request_id)
                )
            )

        return progress

    def _send_soon(self, coroutine: Awaitable[Any]) -> concurrent.futures.Future[Any] | None:
        loop = self._loop
        if loop is None or loop.is_closed():
            with contextlib.suppress(AttributeError):
                coroutine.close()  # type: ignore[attr-defined]
            return None
        return asyncio.run_coroutine_threadsafe(_quietly(coroutine), loop)

    # ---- tool search (large catalogs) --------------------------------------------------------

    async def _meta_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if params.name == SEARCH_TOOLS:
            return await self._search_tools(ctx, arguments)
        name, given = arguments.get("name"), arguments.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(given, Mapping):
            return _refused(
                ErrorType.VALIDATION, "call_tool takes 'name' (a tool's name) and 'arguments' (an object)"
            )
        if name in (SEARCH_TOOLS, CALL_TOOL):
            return _refused(ErrorType.VALIDATION, f"call {name} itself, not through call_tool")
        try:
            # The same call as a direct one, within this request: its progress token, its cancellation.
            return await self._call_tool(ctx, types.CallToolRequestParams(name=name, arguments=dict(given)))
        except MCPError as exc:
            return _refused(ErrorType.NOT_FOUND, f"{exc.error.message}; search_tools finds tools by keyword")

    async def _search_tools(self, ctx: Any, arguments: dict[str, Any]) -> types.CallToolResult:
        self._seen(ctx)
        query, limit = arguments.get("query"), arguments.get("limit", DEFAULT_LIMIT)
        if not isinstance(query, str) or not query.strip():
            return _refused(ErrorType.VALIDATION, "search_tools needs a 'query': keywords, as text")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            return _refused(ErrorType.VALIDATION, f"'limit' must be a whole number from 1, got {limit!r}")
        specs: list[ToolSpec] = await self._ask(ListTools())
        entries = [(self.names.external(spec.name), spec) for spec in specs]
        # Indexing a large catalog is CPU work: not on the loop every client is served on.
        matches = await asyncio.to_thread(lambda: ToolIndex(entries).search(query, min(limit, MAX_LIMIT)))
        found = {"tools": [match.to_json() for match in matches]}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(found, ensure_ascii=False))],
            structured_content=found,
        )

    # ---- config reload ---------------------------------------------------------------------

    def adopt(self, config: RuntimeConfig) -> None:
        """Serve ``config`` from now on, its servers already (un)registered in the runtime
        (`actors.gateway.reload`); clients are told the lists changed. On a host thread."""
        before = self.config
        unprefixed = frozenset(ns for ns, server in config.servers.items() if not server.prefix)
        if unprefixed != frozenset(ns for ns, server in before.servers.items() if not server.prefix):
            self.names = ExternalNames(unprefixed)
        self.config = config
        # A new dict: a route the registry names for the old config after this lands in the old one.
        self._routes = {}
        self._start_eager(s for ns, s in config.servers.items() if before.servers.get(ns) != s)
        searching = config.tool_search if self._tool_search_option is None else self._tool_search_option
        toggled, self.tool_search = searching != self.tool_search, searching
        if before.servers != config.servers:
            for kind in ("tools", "resources", "prompts"):
                self._lists_changed("", kind)
        elif toggled:
            self._lists_changed("", "tools")

    # ---- resources -------------------------------------------------------------------------

    async def _list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        self._seen(ctx)
        resources: list[ResourceSpec] = await self._ask(ListResources())
        return types.ListResourcesResult(resources=[_resource(r) for r in resources])

    async def _list_resource_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        self._seen(ctx)
        templates: list[ResourceTemplateSpec] = await self._ask(ListResourceTemplates())
        return types.ListResourceTemplatesResult(resource_templates=[_template(t) for t in templates])

    async def _owner_of(self, uri: str) -> str:
        """The namespace serving ``uri``: one that lists it, else one whose template matches it."""
        resources: list[ResourceSpec] = await self._ask(ListResources())
        for resource in resources:
            if resource.uri == uri:
                return resource.namespace
        templates: list[ResourceTemplateSpec] = await self._ask(ListResourceTemplates())
        for template in templates:
            if _template_pattern(template.uri_template).fullmatch(uri):
                return template.namespace
        raise MCPError(types.INVALID_PARAMS, f"Resource not found: {uri}")

    async def _read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        namespace = await self._owner_of(uri)
        result = await self._request(ctx, namespace, ReadResource(namespace, uri))
        if not result.success:
            raise _protocol_error(result)
        return types.ReadResourceResult.model_validate(result.output or {"contents": []})

    async def _subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self._seen(ctx)
        uri = str(params.uri)
        await self._owner_of(uri)  # a URI nobody serves is the client's error
        key = (id(ctx.session), uri)
        if key in self._subscribers:
            return types.EmptyResult()
        # One backend subscription per URI, shared with listen streams (`_watch`).
        self._subscribers[key] = ctx.session
        try:
            await self._watches.hold([uri])
        except BaseException:
            self._subscribers.pop(key, None)
            self._watches.release([uri])
            raise
        return types.EmptyResult()

    async def _listen_stream(
        self, ctx: Any, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        # 2026-07-28: the resources a stream names are followed at their backends while it lasts.
        uris = list(dict.fromkeys(params.notifications.resource_subscriptions or ()))
        try:
            await self._watches.hold(uris)
            return await self._listen(ctx, params)
        finally:
            self._watches.release(uris)

    async def _watch(self, uri: str) -> Followed | None:
        try:
            namespace = await self._owner_of(uri)
        except MCPError:
            return None  # a URI nobody serves is honoured and never fires, as for any server

        def updated(changed: str) -> None:
            # One publish per backend update: the bus tells this replica's listen streams and
            # the other replicas; this replica's handshake-era subscribers are told here.
            self._send_soon(self._bus.publish(ResourceUpdated(changed)))
            self._tell_subscribers(changed)

        def subscribe() -> Awaitable[ResourceSubscription]:
            return self._ask(SubscribeResource(namespace, uri, updated))

        try:
            if self._affinity is not None and self._affinity.routes(namespace):
                return await self._affinity.watch(namespace, uri, subscribe)
            subscription: ResourceSubscription = await subscribe()
        except Exception as exc:
            logger.warning("gateway: cannot follow %s at %s: %s", uri, namespace, exc)
            return None
        return subscription

    def _tell_subscribers(self, uri: str) -> None:
        for (_, subscribed), session in list(self._subscribers.items()):
            if subscribed == uri:
                self._send_soon(session.send_resource_updated(uri))

    async def _unsubscribe(self, ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        if self._subscribers.pop((id(ctx.session), uri), None) is not None:
            self._watches.release([uri])
        return types.EmptyResult()

    # ---- prompts and completion ------------------------------------------------------------

    async def _list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        self._seen(ctx)
        prompts: list[PromptSpec] = await self._ask(ListPrompts())
        return types.ListPromptsResult(prompts=[self._prompt(p) for p in prompts])

    def _prompt(self, spec: PromptSpec) -> types.Prompt:
        return types.Prompt(
            name=self.names.external(spec.name),
            title=spec.title,
            description=spec.description,
            arguments=[
                types.PromptArgument(name=a.name, description=a.description, required=a.required)
                for a in spec.arguments
            ],
        )

    async def _get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        name = await self._internal(params.name, ListPrompts())
        if name is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        namespace, _, prompt = name.partition("/")
        result = await self._request(
            ctx, namespace, GetPrompt(namespace, prompt, dict(params.arguments or {}))
        )
        if not result.success:
            raise _protocol_error(result)
        return types.GetPromptResult.model_validate(result.output or {"messages": []})

    async def _complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            name = await self._internal(ref.name, ListPrompts())
            if name is None:
                raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {ref.name}")
            namespace, _, prompt = name.partition("/")
            backend_ref: dict[str, Any] = {"type": "ref/prompt", "name": prompt}
        else:
            namespace = await self._owner_of(ref.uri)
            backend_ref = {"type": "ref/resource", "uri": ref.uri}
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = dict(params.context.arguments or {}) if params.context is not None else None
        result = await self._request(ctx, namespace, Complete(namespace, backend_ref, argument, context))
        if not result.success:
            raise _protocol_error(result)
        return types.CompleteResult(
            completion=types.Completion.model_validate(result.output or {"values": []})
        )

    # ---- what backends ask for, forwarded to the client being served ----------------------

    def _client_for(self, namespace: str) -> _InFlight:
        with self._sessions.lock:
            waiting = list(self._sessions.busy.get(namespace, {}).values())
        if not waiting:
            raise RuntimeError(f"no client request of the gateway is being served by {namespace!r}")
        # The oldest request still in flight on that server is the one its server request is for.
        return waiting[0]

    def _forward(self, make: Callable[[ServerSession], Awaitable[_T]]) -> Callable[[str], _T]:
        def ask(namespace: str) -> _T:
            # On a host thread: the request goes out on the gateway's loop; we wait here.
            client = self._client_for(namespace)
            future = self._send_soon(make(client.session))
            if future is None:
                raise RuntimeError("the gateway is not serving")
            return future.result(timeout=_FORWARD_TIMEOUT)  # type: ignore[no-any-return]

        return ask

    def _sampling(self, namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        request = types.CreateMessageRequestParams.model_validate(params)

        async def send(session: ServerSession) -> dict[str, Any]:
            result = await session.send_request(
                types.CreateMessageRequest(params=request), types.CreateMessageResult
            )
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)

        return self._forward(send)(namespace)

    def _elicitation(self, namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        async def send(session: ServerSession) -> dict[str, Any]:
            request = types.ElicitRequest.model_validate({"method": "elicitation/create", "params": params})
            result = await session.send_request(request, types.ElicitResult)
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)

        return self._forward(send)(namespace)

    def _roots(self, namespace: str) -> list[dict[str, Any]]:
        async def send(session: ServerSession) -> list[dict[str, Any]]:
            result = await session.list_roots()
            return [root.model_dump(mode="json", by_alias=True, exclude_none=True) for root in result.roots]

        try:
            return self._forward(send)(namespace)
        except RuntimeError:
            return []  # no client request in flight: no roots to offer

    # ---- list changes and updates, to every client -----------------------------------------

    def _lists_changed(self, namespace: str, kind: str) -> None:
        # On a host thread. Handshake-era sessions get notifications; listen streams events.
        self._notify_sessions(kind)
        self._send_soon(self._bus.publish(_EVENTS[kind]))

    def _notify_sessions(self, kind: str) -> None:
        with self._sessions.lock:
            sessions = list(self._sessions.seen)
        for session in sessions:
            send = {
                "tools": session.send_tool_list_changed,
                "resources": session.send_resource_list_changed,
                "prompts": session.send_prompt_list_changed,
            }[kind]
            self._send_soon(send())

    def announce(self, event: ServerEvent) -> None:
        """An event another replica published, for this gateway's handshake-era clients (its
        bus hands it to ``subscriptions/listen`` streams itself). On any thread."""
        if isinstance(event, ResourceUpdated):
            self._tell_subscribers(event.uri)
            return
        self._notify_sessions(next(kind for kind, known in _EVENTS.items() if known == event))

    @property
    def in_flight(self) -> int:
        """Client requests being served by a backend right now (a replica's load)."""
        with self._sessions.lock:
            return sum(len(requests) for requests in self._sessions.busy.values())

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_EVENTS: dict[str, ServerEvent] = {
    "tools": ToolsListChanged(),
    "resources": ResourcesListChanged(),
    "prompts": PromptsListChanged(),
}


class _ClientGone(Exception):
    """The HTTP request of the client waiting for an answer has ended."""


async def _while_connected(ctx: Any, reply: asyncio.Future[_T]) -> _T:
    """``reply`` once it comes; `_ClientGone` if the client's HTTP request ends before.

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
            raise _ClientGone


def _may_log(ctx: Any) -> bool:
    """Whether the SDK would send the client log messages on this request: always in the
    handshake era; in 2026-07-28 only when the request opted in (``_meta`` log level)."""
    version = getattr(ctx, "protocol_version", None)
    if not isinstance(version, str):
        return True
    return bool(allowed_log_levels(version, ctx.meta if ctx.request_id is not None else None))


_LOG_LEVELS = frozenset(("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"))

_SERVER_LOGS = logging.getLogger("actors.server")
"""Where the runtime logs the servers' own log messages (``actors.server.<namespace>``)."""


class _ServerLogs(logging.Handler):
    """Forwards server log records to the gateway's clients (emitted on a host thread)."""

    def __init__(self, gateway: Gateway) -> None:
        super().__init__(logging.DEBUG)
        self._gateway = gateway

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "mcp_event", None) != "server_log":
            return
        level = getattr(record, "level", None)
        namespace = getattr(record, "namespace", None)
        if isinstance(level, str) and isinstance(namespace, str):
            data = getattr(record, "data", record.getMessage())
            self._gateway._forward_log(namespace, level, getattr(record, "source", None), data)


async def _quietly(coroutine: Awaitable[_T]) -> _T | None:
    """Await what a host thread handed over; a client that went away is not an error here."""
    try:
        return await coroutine
    except Exception as exc:
        logger.debug("gateway: could not send to a client: %r", exc)
        raise


def _call_result(result: ToolResult) -> types.CallToolResult:
    if result.success:
        output = result.output or {}
        if "content" in output:
            return types.CallToolResult.model_validate(
                {"content": output["content"], "structuredContent": output.get("structuredContent")}
            )
        # A built-in tool: its output as JSON text and as structured content.
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text)], structured_content=output
        )
    content = result.metadata.get("content")
    if isinstance(content, list) and content:
        return types.CallToolResult.model_validate({"content": content, "isError": True})
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.error or "")], is_error=True
    )


def _refused(error_type: ErrorType, message: str) -> types.CallToolResult:
    """A tool error the model can read and correct (not a protocol error)."""
    return _call_result(ToolResult.fail(error_type, message))


def _protocol_error(result: ToolResult) -> MCPError:
    # An unknown resource or prompt, or bad arguments, is the client's mistake: invalid params.
    caller = result.error_type in (ErrorType.NOT_FOUND, ErrorType.VALIDATION)
    return MCPError(types.INVALID_PARAMS if caller else types.INTERNAL_ERROR, result.error or "")


def _resource(spec: ResourceSpec) -> types.Resource:
    return types.Resource(
        uri=spec.uri,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        mime_type=spec.mime_type,
        size=spec.size,
    )


def _template(spec: ResourceTemplateSpec) -> types.ResourceTemplate:
    return types.ResourceTemplate(
        uri_template=spec.uri_template,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        mime_type=spec.mime_type,
    )


def _template_pattern(template: str) -> re.Pattern[str]:
    """An RFC 6570 template as a pattern: ``{x}`` one path segment, ``{+x}``/``{/x*}`` more."""
    parts = re.split(r"(\{[^}]*\})", template)
    pattern = []
    for part in parts:
        if part.startswith("{") and part.endswith("}"):
            expression = part[1:-1]
            pattern.append(".*" if expression[:1] in "+#/?&" or expression.endswith("*") else "[^/]*")
        else:
            pattern.append(re.escape(part))
    return re.compile("".join(pattern))
