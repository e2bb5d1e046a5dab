"""`Runtime`: the facade an agent host holds: start, call, list, status, shut down."""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import pykka

from actors.config import RuntimeConfig, load_config
from actors.mcp.adapter import TransportSource
from actors.mcp.catalog import Catalog, PromptSpec, ResourceSpec, ResourceTemplateSpec
from actors.mcp.config import ServerConfig
from actors.mcp.loop import EventLoop
from actors.pins import Drift, PinBook, PinStore
from actors.runtime.builtin_actor import BuiltinActor
from actors.runtime.clock import Clock
from actors.runtime.dispatch import REQUEST_TIMEOUT, Dispatch, start_limit
from actors.runtime.handlers import HostHandlers, LoginHandlers, Roots
from actors.runtime.host import HostCalls
from actors.runtime.messages import (
    GetStatus,
    ListPrompts,
    ListResources,
    ListResourceTemplates,
    ListTools,
    OnProgress,
    OnUpdate,
    ReadResource,
    RegisterServer,
    ResourceSubscription,
    ServerRequest,
    ServerStatus,
    ShutdownAll,
    StartServer,
    StopServer,
    SubscribeResource,
    UnregisterServer,
)
from actors.runtime.pinning import pin_book, wire_pins
from actors.runtime.registry import BUILTIN_NAMESPACE, RegistryActor, ServerRefs
from actors.runtime.requests_of import completion, prompt_request, tool_call
from actors.runtime.running_runtimes import live
from actors.runtime.schema_cache import CachedLists, SchemaCache
from actors.runtime.skills import Skills
from actors.runtime.supervisor import SupervisorActor
from actors.runtime.task_handles import TaskHandle, find_request, start_request, state_of
from actors.runtime.timers import TimerService
from actors.runtime.transports import sdk_transports
from actors.tools import ErrorType, ToolError, ToolRegistry, ToolResult, ToolSpec, duration_text

__all__ = ["Runtime"]

logger = logging.getLogger(__name__)


class Runtime:
    """A running actor system: a registry actor, a supervisor actor, a server actor per
    configured MCP server (spawned on first use), the built-in tools, and one event loop.

    Leaving a ``with`` block, `shutdown`, interpreter exit and SIGTERM all shut every server
    down. Stdio servers also die if the host is killed outright (parent-death signal).
    """

    def __init__(
        self,
        config: RuntimeConfig,
        *,
        loop: EventLoop,
        timers: TimerService,
        supervisor: pykka.ActorRef[SupervisorActor],
        registry: pykka.ActorRef[RegistryActor],
        builtin: pykka.ActorRef[BuiltinActor] | None,
        tools: ToolRegistry,
        host: HostCalls,
        cache: SchemaCache | None = None,
        pins: PinBook | None = None,
    ) -> None:
        self.config = config
        self._cache = cache
        self.pins = pins if pins is not None else PinBook()  # what servers hold since they changed
        self._host = host
        self._loop = loop
        self._timers = timers
        self._supervisor = supervisor
        self._registry = registry
        self._builtin = builtin
        self.tools = tools
        """Every known tool (built-in and MCP), each with a handler that routes through the registry actor."""
        self.dispatch = Dispatch(registry, dict(config.servers))  # shared with `AsyncRuntime`
        self.skills = Skills(self._request, self.dispatch.namespaces, self.dispatch.config, self.pins)
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def start(
        cls,
        config: RuntimeConfig | Mapping[str, Any] | str | Path | None = None,
        *,
        transports: Mapping[str, TransportSource] | None = None,
        handle_signals: bool = False,
        sampling: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
        elicitation: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
        roots: Roots | None = None,
        handler_timeout: float = 120.0,
        schema_cache: SchemaCache | str | Path | None = None,
        on_lists_changed: Callable[[str, str], None] | None = None,
        login: LoginHandlers | None = None,
        clock: Clock | None = None,
        pins: PinStore | None = None,
    ) -> Runtime:
        """Start the actors for ``config`` (a `RuntimeConfig`, a dict in ``mcpServers`` form,
        or a JSON file path). No server process starts until its first call.

        ``transports`` replaces the transport of named servers (for test doubles).
        ``handle_signals``: turn SIGTERM into ``SystemExit`` so that ``with`` blocks unwind and
        servers shut down; for programs that own the process (the command does), not for a
        library embedded in a host, which keeps its own handlers.

        Server requests are answered by the host's functions, each run on a host thread within
        ``handler_timeout`` seconds: ``sampling(namespace, params)`` for servers configured with
        ``"sampling": "allow"``, ``elicitation(namespace, params)`` for servers whose
        ``elicitation`` key is unset or ``"ask"``, and ``roots`` (URIs, ``{"uri", "name"}``
        objects, or a function of the namespace returning them) for every server.

        ``schema_cache`` (a `SchemaCache` or its folder): lists and argument checks of servers
        that have run before, in any process, are answered without starting them.
        ``on_lists_changed(namespace, kind)`` (``kind``: ``tools``, ``resources`` or ``prompts``)
        is called on a host thread whenever a server's list changes (or it is unregistered).
        ``login`` (`LoginHandlers`): how the host takes part in a remote server's OAuth login;
        without it a server that needs a login fails at once as ``auth``.
        ``clock`` (`Clock`, the system's by default): what idle stops, health checks, restart
        backoff, the restart window and call deadlines read the time from; tests pass a
        `ManualClock` and advance it instead of waiting.
        ``pins`` (`actors.pins.PinStore`): where definitions are pinned (`actors.runtime.pinning`).
        """
        resolved = RuntimeConfig() if config is None else load_config(config)
        handlers = HostHandlers(sampling, elicitation, roots, handler_timeout)
        cache = _declared_to(schema_cache, handlers)
        book = pin_book(pins, cache)
        host = HostCalls()
        try:
            # Before the loop starts: importing the SDK holds the GIL, which a running loop
            # (another runtime's, too) would wait on.
            factory = sdk_transports(list(resolved.servers.values()), handlers, host, login)
        except BaseException:
            host.stop()
            raise
        loop = EventLoop.start()
        timers = TimerService(clock=clock)
        tools = ToolRegistry()
        builtin_ref = None
        try:
            if resolved.builtin.enabled:
                # Deferred to the caller's thread: a host without built-in tools does not pay for them.
                from actors.builtin import BuiltinAdapter  # noqa: PLC0415

                BuiltinAdapter(resolved.builtin.workspace).register(tools)
                builtin_ref = BuiltinActor.start(tools, BUILTIN_NAMESPACE, timers=timers)
            supervisor = SupervisorActor.start(timers)
            registry = RegistryActor.start(
                loop=loop,
                timers=timers,
                supervisor=supervisor,
                tools=tools,
                builtin=builtin_ref,
                transports=factory,
                host=host,
                cache=cache,
                on_change=on_lists_changed,
                clock=timers.clock,
                pins=book,
            )
            wire_pins(book, host, timers, registry)
        except BaseException:
            timers.stop()
            loop.stop()
            host.stop()
            raise
        runtime = cls(
            resolved,
            loop=loop,
            timers=timers,
            supervisor=supervisor,
            registry=registry,
            builtin=builtin_ref,
            tools=tools,
            host=host,
            cache=cache,
            pins=book,
        )
        for server in resolved.servers.values():
            transport = (transports or {}).get(server.name)
            registry.tell(RegisterServer(server, transport, runtime._known(server)))
        live.add(runtime, handle_signals=handle_signals)
        return runtime

    # ---- the actor system ---------------------------------------------------------------

    @property
    def registry(self) -> pykka.ActorRef[RegistryActor]:
        """The registry actor: ``tell`` it the request messages (`actors.CallTool` ...)."""
        return self._registry

    @property
    def loop(self) -> EventLoop:
        return self._loop

    @property
    def host(self) -> HostCalls:
        """The threads that run the host's code (callbacks, handlers, server log records)."""
        return self._host

    # ---- calls --------------------------------------------------------------------------

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        *,
        progress: OnProgress | None = None,
    ) -> ToolResult:
        """Call ``namespace/tool``. Always a `ToolResult`: failures are classified, never raised.

        ``progress(progress, total, message)`` receives the server's progress notifications for
        this call, in order, on a host thread.
        """
        # The actor that answers the call checks it (`CallTool.refusal`, the one check): whatever
        # the caller passed goes along as it is, to be refused there the one way.
        call = tool_call(name, arguments, timeout, progress)
        return call if isinstance(call, ToolResult) else self._request(call, name)

    def start_task(
        self, name: str, arguments: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> TaskHandle:
        """Call ``"namespace/tool"`` as a task where its server offers tasks (SEP-2663): a
        handle at once while the call runs on (`actors.runtime.task_handles.TaskHandle`: its
        ``id``, ``status()``, ``result()``, ``cancel()``). A server without tasks answers the
        call itself, and the handle holds its result. Raises `ToolError` when nothing started
        (a call refused, a server that cannot start)."""
        request = start_request(name, arguments, timeout)
        state = state_of(self._request(request, name), request.namespace)
        return TaskHandle(request.namespace, state, self._request, timeout)

    def task(self, task_id: str, timeout: float | None = None) -> TaskHandle:
        """The task of ``task_id`` (a handle's ``id``, ``"namespace/taskId"``) found again,
        from any process: its server is asked after it. `ToolError` ``not_found`` when the
        server knows no such task (never, or expired)."""
        request = find_request(task_id, timeout)
        state = state_of(self._request(request, "tasks/get"), request.namespace)
        return TaskHandle(request.namespace, state, self._request, timeout)

    def read_resource(self, namespace: str, uri: str, timeout: float | None = None) -> ToolResult:
        """Read a resource; ``output["contents"]`` holds its MCP contents (``uri``, ``mimeType``,
        ``text`` or ``blob``). Starts the server if need be, like a tool call."""
        return self._request(ReadResource(namespace, uri, timeout), f"{namespace} {uri}")

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, timeout: float | None = None
    ) -> ToolResult:
        """Get ``namespace/prompt`` filled in; ``output["messages"]`` and ``output["description"]``."""
        request = prompt_request(name, arguments, timeout)
        return request if isinstance(request, ToolResult) else self._request(request, name)

    def complete(
        self,
        namespace: str,
        ref: str | Mapping[str, Any],
        argument: Mapping[str, str] | tuple[str, str],
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> ToolResult:
        """Ask for completions of an argument; ``output["values"]`` (and ``total``, ``hasMore``).

        ``ref``: a prompt name, a resource template URI, or the MCP reference object;
        ``argument``: ``(name, value so far)`` or ``{"name": ..., "value": ...}``.
        """
        return self._request(
            completion(namespace, ref, argument, context, timeout), f"{namespace} completion"
        )

    def subscribe_resource(
        self, namespace: str, uri: str, on_update: OnUpdate, timeout: float = REQUEST_TIMEOUT
    ) -> ResourceSubscription:
        """Call ``on_update(uri)`` (on a host thread) whenever the resource changes, until the
        returned handle's ``cancel()``. Starts the server and keeps it up meanwhile."""
        subscription: ResourceSubscription = self._ask(SubscribeResource(namespace, uri, on_update), timeout)
        return subscription

    def _request(self, message: ServerRequest, name: str) -> ToolResult:
        if self._closed:
            return ToolResult.fail(ErrorType.CANCELLED, "the runtime is shut down")
        deadline = self.dispatch.deadline(message)
        if isinstance(deadline, ToolResult):
            return deadline
        try:
            route = self.dispatch.route(message.namespace)
            if route is None:
                with contextlib.suppress(concurrent.futures.TimeoutError):
                    route = self.dispatch.ask_route(message.namespace).reply.result(timeout=REQUEST_TIMEOUT)
            self.dispatch.send(message, route)
        except Exception as exc:  # the registry could not route it (an actor failed to start)
            logger.exception("runtime: could not send %s", name)
            return ToolResult.fail(ErrorType.EXECUTION, f"{name} could not be sent: {exc}")
        try:
            result: ToolResult = message.reply.result(timeout=deadline.wait)
        except concurrent.futures.TimeoutError:
            message.reply.cancel()
            return ToolResult.fail(
                ErrorType.TIMEOUT, f"{name} gave no answer within {duration_text(deadline.limit)}"
            )
        except concurrent.futures.CancelledError:
            return ToolResult.fail(ErrorType.CANCELLED, f"{name} was cancelled")
        return result

    # ---- lists, status, servers ---------------------------------------------------------

    def list_tools(self, namespace: str | None = None, timeout: float = 60.0) -> list[ToolSpec]:
        """The tools of every namespace (or one), sorted; starts only servers never seen before."""
        tools: list[ToolSpec] = self._ask(ListTools(namespace), timeout)
        return tools

    def list_resources(self, namespace: str | None = None, timeout: float = 60.0) -> list[ResourceSpec]:
        """The resources of every namespace (or one); starts only servers never seen before."""
        resources: list[ResourceSpec] = self._ask(ListResources(namespace), timeout)
        return resources

    def list_resource_templates(
        self, namespace: str | None = None, timeout: float = 60.0
    ) -> list[ResourceTemplateSpec]:
        """The resource templates of every namespace (or one); starts only servers never seen."""
        templates: list[ResourceTemplateSpec] = self._ask(ListResourceTemplates(namespace), timeout)
        return templates

    def list_prompts(self, namespace: str | None = None, timeout: float = 60.0) -> list[PromptSpec]:
        """The prompts (``namespace/prompt``) of every namespace (or one), sorted by name."""
        prompts: list[PromptSpec] = self._ask(ListPrompts(namespace), timeout)
        return prompts

    def status(self, namespace: str | None = None, timeout: float = REQUEST_TIMEOUT) -> list[ServerStatus]:
        """A `ServerStatus` per server (or for one), sorted by namespace."""
        statuses: list[ServerStatus] = self._ask(GetStatus(namespace), timeout)
        return statuses

    def start_server(self, namespace: str, timeout: float | None = None) -> ServerStatus:
        """Start a server now and wait until it runs. Raises `ToolError` if it cannot start."""
        status: ServerStatus = self._ask(
            StartServer(namespace), timeout or start_limit(self.dispatch, namespace)
        )
        return status

    def stop_server(self, namespace: str, timeout: float = REQUEST_TIMEOUT) -> ServerStatus:
        """Stop a server and wait until it has stopped."""
        status: ServerStatus = self._ask(StopServer(namespace), timeout)
        return status

    def register_server(
        self,
        config: ServerConfig | Mapping[str, Any],
        transport: TransportSource | None = None,
        *,
        name: str | None = None,
    ) -> ServerConfig:
        """Add a server (a `ServerConfig`, or one ``mcpServers`` entry with ``name``)."""
        if not isinstance(config, ServerConfig):
            if name is None:
                raise ValueError("name= is required with a config entry")
            config = load_config({"mcpServers": {name: dict(config)}, "builtin": {"enabled": False}}).servers[
                name
            ]
        self._ask(RegisterServer(config, transport, self._known(config)), REQUEST_TIMEOUT)
        self.dispatch.remember(config)
        return config

    def _known(self, config: ServerConfig) -> CachedLists | None:
        # Read here, on the caller's thread: the registry actor does no file I/O.
        self.pins.load(config)
        if self._cache is None:
            return None
        known = self._cache.load(config)
        if known is None and self._cache.unstartable(config):  # lists do not wait on it
            return CachedLists((), Catalog(), unstartable=True)
        return known

    def approve(self, namespace: str, names: Iterable[str] = ()) -> list[Drift]:
        """Pin and offer again what ``namespace`` holds (``names``, else all; see docs/pins.md)."""
        if (config := self.dispatch.config(namespace)) is None:
            raise ToolError(namespace, ErrorType.NOT_FOUND, "no such server")
        return self.pins.approve(config, names)

    def unregister_server(self, namespace: str, timeout: float = REQUEST_TIMEOUT) -> bool:
        """Stop a server and forget it and its tools."""
        removed: bool = self._ask(UnregisterServer(namespace), timeout)
        self.dispatch.forget(namespace)
        return removed

    @property
    def closed(self) -> bool:
        """Whether the runtime was shut down."""
        return self._closed

    def _ask(self, message: Any, timeout: float) -> Any:
        if self._closed:
            raise ToolError("runtime", ErrorType.CANCELLED, "the runtime is shut down")
        self._registry.tell(message)
        try:
            return message.reply.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            raise ToolError(
                "runtime", ErrorType.TIMEOUT, f"{type(message).__name__} got no answer within {timeout}s"
            ) from None

    # ---- the end ------------------------------------------------------------------------

    def shutdown(self, timeout: float = 15.0) -> None:
        """Stop every server (in parallel) and every actor and thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        servers: list[pykka.ActorRef[Any]] = []
        try:
            everything = ShutdownAll()
            self._registry.tell(everything)
            everything.reply.result(timeout=timeout)
        except (concurrent.futures.TimeoutError, pykka.ActorDeadError):
            logger.warning("runtime: servers did not all stop within %.1fs", timeout)
        try:
            refs = ServerRefs()
            self._registry.tell(refs)
            servers = refs.reply.result(timeout=REQUEST_TIMEOUT)
        except (concurrent.futures.TimeoutError, pykka.ActorDeadError):
            logger.warning("runtime: the registry did not list its servers")
        for ref in [*servers, self._registry, self._supervisor, *([self._builtin] if self._builtin else [])]:
            with contextlib.suppress(pykka.ActorDeadError, pykka.Timeout):
                ref.stop(block=True, timeout=5.0)
        self._timers.stop()
        self._loop.stop()
        self.pins.flush()  # what the host threads had not written yet
        self._host.stop()
        live.discard(self)

    def __enter__(self) -> Runtime:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"<Runtime {len(self.dispatch.namespaces())} servers{' (shut down)' if self._closed else ''}>"


def _declared_to(given: SchemaCache | str | Path | None, handlers: HostHandlers) -> SchemaCache | None:
    """The schema cache ``given`` (a folder: one there), told what this runtime declares to
    servers before anything is read: the entries it reads and writes are this runtime's."""
    cache = given if isinstance(given, SchemaCache | None) else SchemaCache(given)
    if cache is not None:
        cache.declare(handlers)
    return cache
