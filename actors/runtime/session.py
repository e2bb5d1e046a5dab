"""`Session`: a server's current connection, what it taught, and what the actor asks of it.

Owned by the server actor's thread. It numbers connections (news of an earlier one is stale),
opens and closes them through the adapter, keeps what the start and relists found (server
info, tools, catalog) and tells the registry (with when each list came and its caching hint,
on the runtime's clock), and runs the health probe and the two coalesced relists: after a
``list_changed``, and when the registry finds a list stale (`Freshen`). Every answer comes back
to the actor as a message (`from_loop`): nothing here waits. Each list learnt is judged against the
server's pins first (`actors.pins.PinBook.judge`: no I/O); calls of what it holds are refused.
"""

from __future__ import annotations

import concurrent.futures
import logging
from typing import Any

import pykka

from actors.mcp.adapter import MCPToolAdapter
from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.mcp.freshness import Freshnesses, ListFreshness, ListKind, Received
from actors.mcp.transport import RemoteTool, ServerInfo
from actors.pins.book import PinBook
from actors.pins.definitions import prompt_definitions, template_definitions, tool_definitions
from actors.runtime import from_loop
from actors.runtime.admission import refusal
from actors.runtime.clock import Clock
from actors.runtime.health import HealthProbe, ProbeVerdict
from actors.runtime.host import HostCalls
from actors.runtime.lifecycle import Link
from actors.runtime.messages import (
    CatalogRelisted,
    CatalogUpdated,
    Closed,
    Freshen,
    ListsChanged,
    ServerRequest,
    Started,
    ToolsRelisted,
    ToolsUpdated,
)
from actors.runtime.owner import OwnerCheck
from actors.runtime.relisting import Coalescer
from actors.runtime.reply import pipe, settle, tell
from actors.runtime.schema_cache import CachedLists
from actors.runtime.telemetry import instruments
from actors.tools import ToolSpec
from actors.tools.check import Refusal
from actors.tools.schema import compile_input_check

__all__ = ["Session"]

logger = logging.getLogger("actors.runtime.server")  # the server's story, in one logger

_CATALOG_KINDS: tuple[ListKind, ...] = ("resources", "templates", "prompts")
# The capability whose ``listChanged`` says a list's changes are told (templates: resources').
_CAPABILITY: dict[ListKind, str] = {"resources": "resources", "templates": "resources", "prompts": "prompts"}


class Session:
    """One server's connections and what they taught; owned by its server actor's thread."""

    def __init__(
        self,
        config: ServerConfig,
        adapter: MCPToolAdapter,
        ref: pykka.ActorRef[Any],
        clock: Clock,
        host: HostCalls | None = None,
        registry: pykka.ActorRef[Any] | None = None,
        known: CachedLists | None = None,
        pins: PinBook | None = None,
    ) -> None:
        self.namespace, self.adapter, self.ref, self.clock = config.name, adapter, ref, clock
        self.config, self.host, self.registry, self.pins = config, host, registry, pins
        self.connection = 0
        self.start_future: concurrent.futures.Future[Any] | None = None
        self.started_at = 0.0
        self.info: ServerInfo | None = None
        self.tools: dict[str, ToolSpec] | None = None
        """The tools it offers, once known (it ran, or the schema cache knew): calls are checked
        against them before the server is woken."""
        self.catalog = known.catalog if known is not None else Catalog()
        if known is not None:
            self.tools = {spec.tool_name: spec for spec in known.tools}
        self.health = HealthProbe(config.health_check_interval)
        self.relist_tools = Coalescer("a tools relist")
        self.relist_catalog = Coalescer("a catalog relist")
        self.told = {"tools": 0, "catalog": 0}
        """How many lists of tools and catalogs this actor told the registry (never reset)."""
        self._owner = OwnerCheck(f"{config.name}'s session")

    def current(self, message: Any) -> bool:
        """Whether ``message`` is news of the current connection (else it is stale)."""
        return bool(getattr(message, "connection", None) == self.connection)

    def tool_list(self) -> list[ToolSpec]:
        return list(self.tools.values()) if self.tools is not None else []

    def refusal(self, call: ServerRequest, *, schema: bool) -> Refusal | None:
        """Why ``call`` must be refused before it is sent (`actors.runtime.admission.refusal`):
        a definition held until approved first, then what the server is known to offer."""
        hidden = self.pins.hidden(self.config) if self.pins is not None else frozenset()
        return refusal(call, self.config, self.tools, self.catalog, schema=schema, hidden=hidden)

    # ---- opening and closing ----------------------------------------------------------

    def open(self, connect_timeout: float, transport: str) -> None:
        """A new connection: start it; `Started` (or a failure) comes back."""
        self._owner.touch()
        self.connection += 1
        self.started_at = self.clock.monotonic()
        self.relist_tools.reset()  # a relist on the old connection will never answer
        self.relist_catalog.reset()
        logger.info("%s: starting (%s)", self.namespace, transport)
        events = from_loop.Events(self.ref, self.connection, self.namespace, self.host)
        self.start_future = self.adapter.start_future(connect_timeout, events)
        pipe(self.start_future, self.ref, from_loop.start_outcome(self.connection))

    def start_ended(self) -> None:
        self.start_future = None

    def cancel_start(self) -> None:
        if self.start_future is not None:
            self.start_future.cancel()

    def release(self, link: Link) -> None:
        """The actor ends: whatever is opening or open is closed (a start in progress closes
        what it opened when cancelled; an open session is closed here, never left to the loop's
        end). ``link`` is what the lifecycle said the connection was doing."""
        self.cancel_start()
        self.relist_tools.reset()  # whoever waits for a fresh list gets what is known
        self.relist_catalog.reset()
        if link in (Link.UP, Link.OPENING) or self.adapter.connected:
            try:
                self.adapter.disconnect_future()
            except Exception:
                logger.debug("%s: could not close on stop", self.namespace, exc_info=True)

    def close(self) -> None:
        """Close the connection; `Closed` comes back."""
        self._owner.touch()
        connection = self.connection
        pipe(self.adapter.disconnect_future(), self.ref, lambda _: Closed(connection))

    def learn(self, started: Started) -> None:
        self.info = started.info
        self._learn_tools(started.tools, started.freshness.get("tools"))
        self._learn_catalog(started.catalog, started.freshness)

    def went_up(self, now: float) -> None:
        instruments().start_time.record((now - self.started_at) * 1000.0, {"namespace": self.namespace})
        logger.info("%s: running (pid %s, %d tools)", self.namespace, self.adapter.pid, len(self.tools or {}))

    def compile_checks(self) -> None:
        """Compile every tool's argument check now, not on each tool's first call."""
        for spec in (self.tools or {}).values():
            compile_input_check(spec)

    # ---- asked of a running session ---------------------------------------------------

    def subscribe(self, uri: str, *, subscribe: bool = True) -> None:
        future = self.adapter.subscribe_future(uri, subscribe=subscribe)
        pipe(future, self.ref, from_loop.subscribe_outcome(self.connection, uri))

    def probe(self) -> None:
        """A health tick: send a probe unless one is in flight; `ProbeDone` comes back."""
        self._owner.touch()
        if self.health.begin():
            probe = self.adapter.probe_future(self.health.timeout)
            pipe(probe, self.ref, from_loop.probe_outcome(self.connection))

    def probe_answered(self, error: str | None, error_type: str | None, *, running: bool) -> bool:
        """The probe answered: True if the server failed its health check for good."""
        verdict = self.health.answered(error, error_type, running=running)
        if verdict != ProbeVerdict.HEALTHY:
            instruments().health_failures.add(1, {"namespace": self.namespace})
        if verdict == ProbeVerdict.AGAIN:
            logger.warning("%s: health probe timed out (%s); probing again", self.namespace, error)
        elif verdict == ProbeVerdict.FAILED:
            extra = {"mcp_event": "health_failure", "namespace": self.namespace, "error": error}
            logger.warning("%s: health check failed: %s", self.namespace, error, extra=extra)
        return verdict == ProbeVerdict.FAILED

    def changed(self, *, tools: bool) -> None:
        """The server said its tools (or resources or prompts) changed: list them again, at
        most one list in flight and one owed. Until the new list comes, the registry holds the
        old one stale, whatever its TTL."""
        if self.registry is not None:
            tell(self.registry, ListsChanged(self.namespace, ("tools",) if tools else _CATALOG_KINDS))
        if (self.relist_tools if tools else self.relist_catalog).changed():
            self._relist(tools=tools)

    def freshen(self, asked: Freshen, *, running: bool) -> None:
        """The registry found a list stale: list it again (or join the list in flight) and answer
        once the new one was told; a server that is not running answers at once (lazy start is
        the point of the cached lists: it lists anew whenever it starts)."""
        if not running:
            settle(asked.reply, False)
            return
        tools = asked.kind == "tools"
        if self.told["tools" if tools else "catalog"] > asked.told:
            settle(asked.reply, True)  # a newer list is ahead of this answer in its mailbox
            return
        if (self.relist_tools if tools else self.relist_catalog).wait(asked.reply):
            self._relist(tools=tools)

    def relisted(self, message: ToolsRelisted | CatalogRelisted, *, running: bool) -> None:
        self._owner.touch()
        if isinstance(message, ToolsRelisted):
            coalescer, what, error = self.relist_tools, "tools", message.error
            if message.tools is not None:
                self._learn_tools(message.tools, message.freshness)
                self.compile_checks()
                what = ""
        else:
            coalescer, what, error = self.relist_catalog, "resources and prompts", message.error
            if message.catalog is not None:
                self._learn_catalog(message.catalog, message.freshness)
                what = ""
        if what:
            logger.warning("%s: could not list %s again: %s", self.namespace, what, error)
        if coalescer.done(listed=not what):
            if running:
                self._relist(tools=isinstance(message, ToolsRelisted))
            else:
                coalescer.reset()

    def _relist(self, *, tools: bool) -> None:
        if tools:
            pipe(self.adapter.discover_future(), self.ref, from_loop.tools_outcome(self.connection))
        else:
            pipe(self.adapter.catalog_future(), self.ref, from_loop.catalog_outcome(self.connection))

    def _learn_tools(self, tools: tuple[RemoteTool, ...], freshness: ListFreshness | None) -> None:
        specs = self.adapter.tool_specs_for(self.namespace, tools)
        self.tools = {s.tool_name: s for s in specs}
        if self.pins is not None:  # the tools it offers (a filter, a bad name leave some out)
            self.pins.judge(self.config, "tools", tool_definitions(t for t in tools if t.name in self.tools))
        if self.registry is not None:
            received = Received(self.clock.monotonic(), freshness, notified=self._notifies("tools"))
            self.told["tools"] += 1
            tell(self.registry, ToolsUpdated(self.namespace, tuple(specs), received, self.told["tools"]))

    def _notifies(self, capability: str) -> bool:
        """Whether the server declared ``listChanged`` for the list of ``capability``."""
        declared = self.adapter.capabilities.get(capability)
        return isinstance(declared, dict) and declared.get("listChanged") is True

    def _learn_catalog(self, catalog: Catalog, hints: Freshnesses) -> None:
        self.catalog = catalog
        if self.pins is not None:
            self.pins.judge(self.config, "prompts", prompt_definitions(catalog.prompts))
            self.pins.judge(self.config, "templates", template_definitions(catalog.templates))
        if self.registry is not None:
            now = self.clock.monotonic()
            received = {
                kind: Received(now, hints[kind], notified=self._notifies(_CAPABILITY[kind]))
                for kind in _CATALOG_KINDS
                if kind in hints
            }
            self.told["catalog"] += 1
            tell(self.registry, CatalogUpdated(self.namespace, catalog, received, self.told["catalog"]))
