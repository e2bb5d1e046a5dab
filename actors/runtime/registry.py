"""`RegistryActor`: routes namespaced calls to server actors and never waits on one."""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pykka

from actors.mcp.adapter import MCPToolAdapter, TransportSource
from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.mcp.freshness import ListKind, Received
from actors.mcp.loop import EventLoop
from actors.pins import PinBook, Shown
from actors.runtime.answering import AnsweringActor
from actors.runtime.clock import Clock
from actors.runtime.host import HostCalls
from actors.runtime.list_ages import ListAges
from actors.runtime.messages import (
    SERVER_REQUESTS,
    CallTool,
    CatalogUpdated,
    DescribeTools,
    Freshen,
    GetStatus,
    ListPrompts,
    ListResources,
    ListResourceTemplates,
    ListsChanged,
    ListTools,
    RegisterServer,
    Retire,
    ServerRequest,
    ServerStatus,
    Shutdown,
    ShutdownAll,
    StartServer,
    StopServer,
    SubscribeResource,
    Supervise,
    ToolsUpdated,
    UnregisterServer,
    Unsupervise,
    refuse,
)
from actors.runtime.pinning import PinsChanged
from actors.runtime.registry_entry import RegistryEntry, live_server, retry_gap
from actors.runtime.registry_requests import Route, ServerRefs
from actors.runtime.reply import gather, gather_within, settle, settle_exception, tell
from actors.runtime.routed_tools import RoutedTools
from actors.runtime.schema_cache import CachedLists, SchemaCache
from actors.runtime.server import ServerActor
from actors.runtime.state import ServerState
from actors.runtime.timers import TimerService
from actors.tools import ErrorType, ToolError, ToolRegistry, ToolSpec

__all__ = ["BUILTIN_NAMESPACE", "RegistryActor", "Route", "ServerRefs", "TransportFactory"]

logger = logging.getLogger(__name__)

_ROUTED = (*SERVER_REQUESTS, SubscribeResource)
"""What goes on to the server actor of its namespace."""

BUILTIN_NAMESPACE = "builtin"

FRESHEN_WITHIN = 10.0
"""Seconds (of the runtime's clock) a list waits for the servers whose lists went stale to list
them again; past that it is answered from what is known."""

_Listing = ListTools | ListResources | ListResourceTemplates | ListPrompts
_KIND: Mapping[type[_Listing], ListKind] = {
    ListTools: "tools",
    ListResources: "resources",
    ListResourceTemplates: "templates",
    ListPrompts: "prompts",
}
_CATALOG_KINDS: tuple[ListKind, ...] = ("resources", "templates", "prompts")

TransportFactory = Callable[[ServerConfig], TransportSource]
"""Makes the transport source of a server the registry spawns (the `Runtime` passes the SDK's)."""


@dataclass(frozen=True, eq=False)
class _ListReady:
    """Every server asked has described itself: answer ``request`` from what is known."""

    request: _Listing
    bound: tuple[str, int]
    """The key of the timer that bounds the wait for stale lists (cancelled once answered)."""
    described: tuple[str, ...] = ()
    """The servers never seen that were asked to describe themselves for it."""


@dataclass(frozen=True, eq=False)
class _Removed:
    namespace: str
    reply: concurrent.futures.Future[Any]


def _settle_none(reply: concurrent.futures.Future[Any]) -> None:
    settle(reply, None)


def _name(spec: ToolSpec) -> str:
    return spec.name


class RegistryActor(AnsweringActor):
    """namespace → `ServerActor`.

    Every request is answered through its reply slot. Calls are forwarded with the caller's
    slot (``tell``), so this actor never blocks on a server; requests that need several
    answers gather them with callbacks. Server actors are spawned on first use.
    """

    stopped_reason = "the runtime is shut down"

    def __init__(
        self,
        *,
        loop: EventLoop,
        timers: TimerService,
        supervisor: pykka.ActorRef[Any],
        tools: ToolRegistry,
        builtin: pykka.ActorRef[Any] | None = None,
        transports: TransportFactory | None = None,
        host: HostCalls | None = None,
        cache: SchemaCache | None = None,
        on_change: Callable[[str, str], None] | None = None,
        clock: Clock | None = None,
        pins: PinBook | None = None,
    ) -> None:
        super().__init__()
        self.clock: Clock = clock or timers.clock
        """What its server actors read the time from (idle, deadlines): the timers' clock unless given."""
        self.cache, self.pins = cache, pins  # the pins: what a server holds is never listed
        self.on_change = on_change
        self.transports = transports
        self.host = host
        self.loop = loop
        self.timers = timers
        self.supervisor = supervisor
        self.tools = tools
        self.routed = RoutedTools(tools, self.actor_ref, pins)
        self.builtin = builtin
        self.entries: dict[str, RegistryEntry] = {}
        self.catalogs: dict[str, Catalog] = {}
        self.ages = ListAges()
        self._lists_asked = itertools.count()

    def on_receive(self, message: Any) -> Any:
        try:
            return self._handle(message)
        except Exception as exc:
            logger.exception("registry: error handling %r", type(message).__name__)
            # Whoever waits on this message still gets an answer (a call: a result).
            refuse(message, ErrorType.EXECUTION, f"the registry could not handle it: {exc!r}")
            return getattr(message, "reply", None)

    def _handle(self, message: Any) -> Any:
        match message:
            case _ if isinstance(message, _ROUTED):
                self._route(message)
            case ListTools() | ListResources() | ListResourceTemplates() | ListPrompts():
                self._list(message)
            case GetStatus():
                self._status(message)
            case StartServer(namespace=ns) | StopServer(namespace=ns):
                self._forward(ns, message, spawn=isinstance(message, StartServer))
            case RegisterServer(config=config, transport=transport, known=known, reply=reply):
                self._register(config, transport, known, reply)
            case UnregisterServer(namespace=ns, reply=reply):
                self._unregister(ns, reply)
            case ShutdownAll(reply=reply):
                self._shutdown_all(reply)
            case ToolsUpdated(namespace=ns, tools=specs, received=received, told=told):
                self._tools_updated(ns, specs, received, told)
            case CatalogUpdated(namespace=ns, catalog=catalog, received=received, told=told) if (
                ns in self.entries
            ):
                self.ages.count(ns, _CATALOG_KINDS, told)
                self._catalog_updated(ns, catalog, self.ages.learnt(ns, received, _CATALOG_KINDS))
            case PinsChanged(namespace=ns, kind=kind):
                if kind == "tools" and ns in self.entries:
                    self.routed.offer(self.entries[ns].config)
                self._changed(ns, kind)
            case ListsChanged(namespace=ns, kinds=kinds):
                self.ages.changed(ns, kinds)
            case _ListReady(request=request, bound=bound, described=described):
                self.timers.cancel(bound)
                self._unlisted(described)
                self._answer_list(request)
            case _Removed(namespace=ns, reply=reply):
                self._remove(ns, reply)
            case Route(namespace=ns, reply=reply):
                settle(reply, self._route_of(ns))
            case ServerRefs(reply=reply):
                settle(reply, [e.server for e in self.entries.values() if e.server is not None])
            case _:
                logger.debug("registry: ignored %r", message)
                return None
        # `ask` gives the caller the reply slot itself, at once.
        return getattr(message, "reply", None)

    # ---- routing ------------------------------------------------------------------------

    def _route(self, request: ServerRequest | SubscribeResource) -> None:
        ns = request.namespace
        if not isinstance(ns, str):
            refuse(request, ErrorType.VALIDATION, f"the namespace {ns!r} is not text")
            return
        if ns == BUILTIN_NAMESPACE and self.builtin is not None:
            if isinstance(request, CallTool):
                self.builtin.tell(request)
            else:
                refuse(request, ErrorType.NOT_FOUND, "the built-in tools offer no resources or prompts")
            return
        entry = self.entries.get(ns)
        if entry is None:
            known = ", ".join(sorted(self._namespaces())) or "none"
            refuse(request, ErrorType.NOT_FOUND, f"no server for namespace {ns!r} (known: {known})")
            return
        self._server(ns, entry).tell(request)

    def _route_of(self, ns: str) -> pykka.ActorRef[Any] | None:
        if ns == BUILTIN_NAMESPACE and self.builtin is not None:
            return self.builtin
        entry = self.entries.get(ns)
        return self._server(ns, entry) if entry is not None else None

    def _forward(self, ns: str, message: StartServer | StopServer, *, spawn: bool) -> None:
        entry = self.entries.get(ns)
        if entry is None:
            settle_exception(message.reply, ToolError(ns, ErrorType.NOT_FOUND, "no such server"))
        elif entry.server is None and not spawn:
            settle(message.reply, self._unspawned_status(ns, entry))
        else:
            self._server(ns, entry).tell(message)

    def _server(self, ns: str, entry: RegistryEntry) -> pykka.ActorRef[Any]:
        if entry.server is None or not entry.server.is_alive():
            source = entry.transport
            if source is None and self.transports is not None:
                source = self.transports(entry.config)
            adapter = MCPToolAdapter(entry.config, source, loop=self.loop)
            entry.server = ServerActor.start(
                entry.config,
                adapter,
                timers=self.timers,
                supervisor=self.supervisor,
                registry=self.actor_ref,
                host=self.host,
                known=entry.known,
                clock=self.clock,
                pins=self.pins,
            )
            self.supervisor.tell(Supervise(ns, entry.server, entry.config))
        return entry.server

    def _namespaces(self) -> list[str]:
        names = list(self.entries)
        if self.builtin is not None:
            names.append(BUILTIN_NAMESPACE)
        return names

    # ---- tools --------------------------------------------------------------------------

    def _tools_updated(
        self, ns: str, specs: tuple[ToolSpec, ...], received: Received | None, told: int
    ) -> None:
        if ns not in self.entries:
            return
        self.ages.count(ns, ("tools",), told)
        hinted = received is not None and self.ages.learnt(ns, {"tools": received}, ("tools",))
        # Learning a server's tools for the first time changes no list anyone has seen (unless
        # lists were answered without it).
        known = self.entries[ns].seen or self.entries[ns].unlisted is not None
        kept = self.routed.listed(ns)
        before = [(s.name, s.description, s.input_schema) for s in kept]
        self._route_tools(ns, specs)
        # A list re-listed only because it went stale is usually the same: no write for that.
        if not known or hinted or sorted(kept, key=_name) != sorted(specs, key=_name):
            self._remember(ns)
        if known and sorted(before) != sorted((s.name, s.description, s.input_schema) for s in specs):
            self._changed(ns, "tools")

    def _catalog_updated(self, ns: str, catalog: Catalog, hinted: bool) -> None:
        before = self.catalogs.get(ns)
        self.catalogs[ns] = catalog
        if hinted or before != catalog:
            self._remember(ns)
        if before is None:
            if self.entries[ns].unlisted is None:
                return  # learnt for the first time: no list anyone has seen changed
            before = Catalog()  # lists were answered without it
        if catalog.resources != before.resources or catalog.templates != before.templates:
            self._changed(ns, "resources")
        if catalog.prompts != before.prompts:
            self._changed(ns, "prompts")

    def _changed(self, ns: str, kind: str) -> None:
        """Tell the host a server's list of ``kind`` changed (on a host thread)."""
        if self.on_change is not None and self.host is not None:
            self.host.notify(self.on_change, ns, kind)

    def _route_tools(self, ns: str, specs: tuple[ToolSpec, ...]) -> None:
        entry = self.entries[ns]
        entry.seen = True
        self.routed.route(entry.config, specs)
        logger.debug("registry: %s has %d tools", ns, len(specs))

    def _list(self, request: _Listing) -> None:
        """Answer once every server never seen has described itself (started to learn its
        lists), and every running one whose list went stale has listed it again (within
        `FRESHEN_WITHIN`): each tells us its lists before it answers, so they are in our
        mailbox before `_ListReady`."""
        kind, now = _KIND[type(request)], self.clock.monotonic()
        describes, freshens, described = [], [], []
        for ns in [request.namespace] if request.namespace else list(self.entries):
            entry = self.entries.get(ns)
            if entry is None:
                continue
            if not entry.seen and entry.unlisted is not None:
                # It could not start for an earlier list: not waited on; asked to start again (in
                # the background, one start at a time) only once its gap has passed.
                if now - entry.unlisted >= retry_gap(entry.config):
                    entry.unlisted = now
                    tell(self._server(ns, entry), DescribeTools())
            elif not entry.seen:
                describe = DescribeTools()
                self._server(ns, entry).tell(describe)
                describes.append(describe.reply)
                described.append(ns)
            elif request.refresh and self.ages.stale(ns, kind, now) and (server := live_server(entry)):
                freshen = Freshen(kind, self.ages.told(ns, kind))
                tell(server, freshen)
                freshens.append(freshen.reply)
        ref, bound = self.actor_ref, ("lists", next(self._lists_asked))

        def freshened(done: list[concurrent.futures.Future[Any]]) -> None:
            if any(not future.done() or future.cancelled() or future.exception() for future in done):
                logger.debug("registry: a stale %s list was not listed again in time: answering it", kind)
            gather(describes, lambda _: tell(ref, _ListReady(request, bound, tuple(described))))

        gather_within(freshens, freshened, lambda fire: self._bound(bound, fire))

    def _unlisted(self, described: tuple[str, ...]) -> None:
        """The servers described for a list that still could not say their lists."""
        now = self.clock.monotonic()
        for ns in described:
            entry = self.entries.get(ns)
            if entry is not None and not entry.seen and entry.unlisted is None:
                entry.unlisted = now
                if self.cache is not None and self.host is not None:  # file I/O: on a host thread
                    self.host.notify(self.cache.note_unstartable, entry.config)

    def _bound(self, key: tuple[str, int], fire: Callable[[], None]) -> None:
        self.timers.schedule(key, FRESHEN_WITHIN, fire)

    def _answer_list(self, request: _Listing) -> None:
        ns = request.namespace
        catalogs = [c for name, c in sorted(self.catalogs.items()) if ns is None or name == ns]
        answered = [name for name in self.entries if ns is None or name == ns]
        # Before the reply: whoever holds the reply finds the freshness settled.
        settle(request.freshness, self.ages.remaining(answered, _KIND[type(request)], self.clock.monotonic()))
        shown = Shown(self.pins, {name: self.entries[name].config for name in answered})
        match request:
            case ListTools(reply=reply):
                # From what the servers listed, not the offered table: an approval just made is
                # in the pins before its `PinsChanged` reaches this mailbox.
                builtin = (
                    self.tools.list(namespace=BUILTIN_NAMESPACE) if ns in (None, BUILTIN_NAMESPACE) else []
                )
                settle(reply, shown.tools(sorted([*builtin, *self.routed.routed(ns)], key=_name)))
            case ListResources(reply=reply):
                settle(reply, [r for c in catalogs for r in c.resources])
            case ListResourceTemplates(reply=reply):
                settle(reply, shown.templates(t for c in catalogs for t in c.templates))
            case ListPrompts(reply=reply):
                settle(reply, shown.prompts(p for c in catalogs for p in c.prompts))

    # ---- status -------------------------------------------------------------------------

    def _unspawned_status(self, ns: str, entry: RegistryEntry) -> ServerStatus:
        return ServerStatus(namespace=ns, state=ServerState.IDLE, transport=entry.config.transport)

    def _status(self, request: GetStatus) -> None:
        wanted = [request.namespace] if request.namespace else sorted(self.entries)
        asks: list[concurrent.futures.Future[Any]] = []
        fixed: list[ServerStatus] = []
        for ns in wanted:
            entry = self.entries.get(ns)
            if entry is None:
                continue
            if entry.server is None or not entry.server.is_alive():
                fixed.append(self._unspawned_status(ns, entry))
                continue
            ask = GetStatus(ns)
            entry.server.tell(ask)
            asks.append(ask.reply)

        def answer(done: list[concurrent.futures.Future[Any]]) -> None:
            statuses = list(fixed)
            for future in done:
                if future.exception() is None:
                    statuses.extend(future.result())
            settle(request.reply, sorted(statuses, key=lambda s: s.namespace))

        gather(asks, answer)

    # ---- registration -------------------------------------------------------------------

    def _register(
        self,
        config: ServerConfig,
        transport: TransportSource | None,
        known: CachedLists | None,
        reply: concurrent.futures.Future[Any],
    ) -> None:
        if config.name in self.entries or (config.name == BUILTIN_NAMESPACE and self.builtin is not None):
            settle_exception(reply, ToolError(config.name, "RegistrationError", "the namespace is taken"))
            return
        unlisted = None
        if known is not None and known.unstartable:  # it could not start when last listed
            known, unlisted = None, self.clock.monotonic() - retry_gap(config)
        self.entries[config.name] = RegistryEntry(config, transport, known=known, unlisted=unlisted)
        if known is not None:
            # Listed from what it said when it last ran; a start lists again and replaces this.
            self._route_tools(config.name, known.tools)
            self.catalogs[config.name] = known.catalog
            self.ages.restored(config.name, known.lists, self.clock.wall(), self.clock.monotonic())
        settle(reply, None)

    def _remember(self, ns: str) -> None:
        """Write a server's current lists to the schema cache, on a host thread (file I/O)."""
        entry = self.entries.get(ns)
        if self.cache is None or self.host is None or entry is None:
            return
        tools = tuple(self.routed.listed(ns))
        lists = self.ages.stored(ns, self.clock.wall(), self.clock.monotonic())
        self.host.notify(self.cache.save, entry.config, tools, self.catalogs.get(ns, Catalog()), lists)

    def _unregister(self, ns: str, reply: concurrent.futures.Future[Any]) -> None:
        entry = self.entries.get(ns)
        if entry is None:
            settle(reply, False)
            return
        if entry.server is None:
            self._remove(ns, reply)
            return
        retire = Retire(f"server {ns!r} was unregistered")
        entry.server.tell(retire)
        ref = self.actor_ref
        gather([retire.reply], lambda _: tell(ref, _Removed(ns, reply)))

    def _remove(self, ns: str, reply: concurrent.futures.Future[Any]) -> None:
        entry = self.entries.pop(ns, None)
        if entry is not None and entry.server is not None:
            self.supervisor.tell(Unsupervise(ns))
            entry.server.stop(block=False)
        self.routed.forget(ns)
        self.catalogs.pop(ns, None)
        self.ages.forget(ns)
        settle(reply, entry is not None)
        if entry is not None:
            for kind in ("tools", "resources", "prompts"):
                self._changed(ns, kind)

    def _shutdown_all(self, reply: concurrent.futures.Future[Any]) -> None:
        slots = []
        for entry in self.entries.values():
            if entry.server is not None and entry.server.is_alive():
                shutdown = Shutdown()
                entry.server.tell(shutdown)
                slots.append(shutdown.reply)
        # Every server closes at once: the slow part (a stdio child's exit) overlaps.
        gather(slots, lambda _: _settle_none(reply))
