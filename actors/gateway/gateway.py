"""`Gateway`: the registry served as one MCP server, for any MCP host.

The gateway owns one `Runtime`: one server actor per configured server, however many clients
connect. Its handlers run on the gateway's own event loop (the one `mcp-actors serve` runs stdio
or HTTP on), send messages to the registry actor and await the reply futures: they never block,
and never touch the runtime's own loop.

What it forwards, per request, to the client that made it: progress, cancellation (a
cancelled client request cancels the call at the backend server), sampling, elicitation and
roots requests of the backend server that serves one of the client's calls. What it
broadcasts: list changes of any backend (handshake era: notifications to every session that
has talked to the gateway; 2026-07-28: ``subscriptions/listen`` streams) and resource updates.

The parts, one concept each: `actors.gateway.server` (building the SDK server),
`actors.gateway.routing` (which actor or replica serves a request), `actors.gateway.sessions`,
`actors.gateway.forwarding` (logs, progress, server requests), `actors.gateway.tools` (and
search), `actors.gateway.resources`, `actors.gateway.prompts`, `actors.gateway.broadcasts`,
`actors.gateway.conversion`; `actors.gateway.handoff` is how other threads reach the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, SubscriptionBus
from mcp.shared.subscriptions import ResourceUpdated, ServerEvent

from actors.config import RuntimeConfig, load_config
from actors.gateway.access.audit import Audit
from actors.gateway.access.audit_pins import PinAudit
from actors.gateway.access.audit_request import AuditMiddleware
from actors.gateway.access.gate import AccessGate
from actors.gateway.access.limits import RateLimits, SharedBuckets
from actors.gateway.access.per_user import PerUserServers, without_per_user
from actors.gateway.access.policy_file import load_policy
from actors.gateway.access.principal import caller_meta
from actors.gateway.broadcasts import KINDS, Broadcasts, kind_of
from actors.gateway.era_copies import EraCopies, era_meta
from actors.gateway.external import ExternalNames
from actors.gateway.forwarding import Forwarding, ServerLogs
from actors.gateway.handoff import LoopHandoff
from actors.gateway.held_tasks import HeldTasks
from actors.gateway.hints import CacheHints
from actors.gateway.input_rounds import InputRounds
from actors.gateway.prompts import Prompts
from actors.gateway.resources import Resources
from actors.gateway.rounds import HeldCalls, StateSeal
from actors.gateway.routing import AffinityRouter, RuntimeRequests, Serving
from actors.gateway.server import LIST_CHANGES, Handlers, build_server
from actors.gateway.sessions import Sessions
from actors.gateway.skills import GatewaySkills
from actors.gateway.task_records import MemoryTaskRecords, TaskRecords
from actors.gateway.tasks import Tasks
from actors.gateway.tools import Tools
from actors.mcp.config import ServerConfig
from actors.pins import PinStore
from actors.runtime import Runtime
from actors.runtime.messages import StartServer, StopServer
from actors.runtime.schema_cache import SchemaCache

if TYPE_CHECKING:
    from actors.gateway.access.policy import Policy

__all__ = ["AffinityRouter", "Gateway"]

logger = logging.getLogger(__name__)


class Gateway:
    """One MCP server in front of a `Runtime`'s registry.

    Wires the parts and is their one way in. Who owns what:

    - the gateway's event loop owns every piece of client state (`Sessions`,
      `Resources`' subscribers and watches); the request handlers run on it; requests go to
      their actors by the runtime's own routes (`actors.runtime.dispatch.Dispatch`);
    - the runtime's host thread (server logs, progress, server requests, list changes and
      resource updates), the subscription bus's thread
      (`announce`) and the cluster's lease thread never touch that state: they hand over to the
      loop (`LoopHandoff`);
    - what is served (`config`, `names`, `tool_search`) is one immutable `Serving` snapshot,
      replaced whole by `adopt` on the reloader's thread and read from any thread;
    - `in_flight` is an int the loop replaces, read by a replica's membership thread.

    ``request_state_key`` seals the ``requestState`` of 2026-07-28 clients' multi round-trip
    requests (`actors.gateway.rounds`): the replicas of a cluster share one, so that any of them
    can take a retry. None: ``MCP_ACTORS_REQUEST_STATE_KEY``, else a key of this process's own.
    ``authenticated``: its clients show a bearer token, so no answer of its own is ``public``
    (`actors.gateway.hints`).
    """

    def __init__(
        self,
        config: RuntimeConfig,
        *,
        schema_cache: SchemaCache | None = None,
        tool_search: bool | None = None,
        bus: SubscriptionBus | None = None,
        affinity: AffinityRouter | None = None,
        request_state_key: bytes | None = None,
        authenticated: bool = False,
        shared_limits: SharedBuckets | None = None,
        audit_secrets: Iterable[str] = (),
        task_records: TaskRecords | None = None,
        replica_alive: Callable[[str], bool] | None = None,
        pins: PinStore | None = None,
    ) -> None:
        self.limits = RateLimits(config.access.limits, shared=shared_limits)
        """Rates per principal and per tool (``access.limits``), the gate's and the HTTP layer's;
        ``shared_limits``: the buckets a cluster's replicas share."""
        # Read and checked first, off the loop: a policy that does not load starts nothing.
        self.gate = AccessGate(load_policy(config), self.limits)
        """Every request passes it: the policy (``access.policy``) decides who sees and uses what."""
        self._tool_search_option = tool_search
        """``tool_search`` given here overrides the config's ``toolSearch``, also across reloads."""
        self._serving = Serving(
            config,
            ExternalNames(config.gateway.unprefixed()),
            config.tool_search if tool_search is None else tool_search,
        )
        self._handoff = LoopHandoff()
        self._sessions = Sessions()
        # Where list changes and resource updates go to ``subscriptions/listen`` streams (a
        # cluster's bus fans them out to the other replicas too: `actors.cluster.bus`).
        bus = bus if bus is not None else InMemorySubscriptionBus()
        self._broadcasts = Broadcasts(self._sessions, self._handoff, bus)
        self._forwarding = Forwarding(self._sessions, self._handoff)
        replica_id = affinity.replica_id if affinity is not None else None
        self.audit = Audit.of_config(config, secrets=audit_secrets, replica=replica_id)
        """A record of every request (``access.audit``; ``audit_secrets``: values it withholds
        beyond the config's, the static token's), written off the loop."""
        self.runtime = Runtime.start(
            without_per_user(config),  # their copies are registered per caller (`PerUserServers`)
            sampling=self._forwarding.sampling,
            elicitation=self._forwarding.elicitation,
            roots=self._forwarding.roots,
            on_lists_changed=self._broadcasts.lists_changed,
            schema_cache=schema_cache,
            pins=pins,  # where tool definitions are pinned (`actors.pins`): a cluster's are in Redis
        )
        self.runtime.pins.listen(PinAudit(self.audit))
        try:
            self.audit.start()  # its file is opened here, before serving
            forget = self.runtime.dispatch.forget_route
            self.per_user = PerUserServers(self.runtime, self._config, self._handoff, forget)
            """The per-user servers' copies, one per caller (``"affinity": "user"``)."""
            self.eras = EraCopies(self.runtime, self._config, self._handoff, forget)
            """The dual-era servers' copies pinned to the handshake era, for its clients."""
            requests = RuntimeRequests(
                self.runtime, self._sessions, self._handoff, affinity, self.per_user, self.eras
            )
            replica = affinity.replica_id if affinity is not None else None
            seal = StateSeal(request_state_key) if request_state_key else None
            held = HeldCalls(self._handoff, seal, replica=replica)
            rounds = InputRounds(requests, self._handoff, held)
            # Per caller: behind a bearer token, or with per-user affinity (see `CacheHints`).
            cache_hints = CacheHints(per_caller=authenticated or affinity is not None)
            gate = self.gate
            records = task_records if task_records is not None else MemoryTaskRecords()
            held_tasks = HeldTasks(
                requests, self._handoff, records, replica, replica_alive, polices=lambda: gate.polices
            )
            self.tasks = Tasks(requests, held_tasks)
            """The tasks passed through to backends and those the gateway holds (``"tasks"``)."""
            self._tools = Tools(requests, self._forwarding, self._now, rounds, cache_hints, gate, self.tasks)
            self._resources = Resources(
                requests, self._handoff, bus, affinity, cache_hints, gate, self._namespaces
            )
            self._prompts = Prompts(requests, self._now, self._resources.served_by, rounds, cache_hints, gate)
            skills = GatewaySkills(requests, gate, cache_hints, self._namespaces, self.runtime)
            self.server: Server[Any] = build_server(
                Handlers(
                    list_tools=self._tools.list_tools,
                    call_tool=self._tools.call_tool,
                    list_resources=self._resources.list_resources,
                    list_resource_templates=self._resources.list_resource_templates,
                    read_resource=self._resources.read_resource,
                    subscribe_resource=self._resources.subscribe,
                    unsubscribe_resource=self._resources.unsubscribe,
                    subscriptions_listen=self._resources.listen,
                    list_prompts=self._prompts.list_prompts,
                    get_prompt=self._prompts.get_prompt,
                    completion=self._prompts.complete,
                    set_level=self._set_level(requests),
                    tasks_get=self.tasks.get,
                    tasks_update=self.tasks.update,
                    tasks_cancel=self.tasks.cancel,
                    list_skills=skills.list_skills,
                    get_skill=skills.get_skill,
                    read_directory=skills.read_directory,
                ),
                input_schema=self._tools.input_schema,
                direct=lambda: not gate.polices and not self._now().per_user,
            )
            # Inside the SDK's OpenTelemetry middleware: a record takes its span's trace id.
            self.server.middleware.append(AuditMiddleware(self.audit))
        except BaseException:
            self.runtime.shutdown()
            self.audit.close()
            raise
        if affinity is not None:
            affinity.attach(self)
        self._log_forwarder = ServerLogs(self._forwarding)
        self._log_forwarder.install()
        self._start_eager(config.servers.values())

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

    @staticmethod
    def _set_level(requests: RuntimeRequests) -> Any:
        async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
            # Accepted for the client's sake; what each backend logs is its own ``logLevel`` key.
            requests.seen(ctx)
            return types.EmptyResult()

        return set_level

    def _now(self) -> Serving:
        return self._serving

    def _config(self) -> RuntimeConfig:
        return self._serving.config

    def _namespaces(self) -> Collection[str]:
        """The servers configured now (never a per-user or per-era copy)."""
        return self._serving.config.servers.keys()

    def _start_eager(self, servers: Iterable[ServerConfig]) -> None:
        """Start the servers configured with ``lazyStart: false``: no call would start them."""
        for server in servers:
            if not server.lazy_start:
                self.runtime.registry.tell(StartServer(server.name))

    # ---- what is served (an immutable snapshot) -------------------------------------------

    @property
    def config(self) -> RuntimeConfig:
        """The configuration served now."""
        return self._serving.config

    @property
    def names(self) -> ExternalNames:
        """The names clients see for ``namespace/name`` tools and prompts."""
        return self._serving.names

    @property
    def tool_search(self) -> bool:
        """List only ``search_tools`` and ``call_tool`` (`actors.gateway.search`)."""
        return self._serving.tool_search

    def adopt(self, config: RuntimeConfig) -> None:
        """Serve ``config`` from now on, its servers already (un)registered in the runtime
        (`actors.gateway.reload`); clients are told the lists changed. On a host thread."""
        before = self._serving
        unprefixed = config.gateway.unprefixed()
        names = (
            before.names if unprefixed == before.config.gateway.unprefixed() else ExternalNames(unprefixed)
        )
        searching = config.tool_search if self._tool_search_option is None else self._tool_search_option
        self._serving = Serving(config, names, searching)
        self.limits.adopt(config.access.limits)
        self.audit.adopt(config)
        self.per_user.adopt()
        self.eras.adopt()
        self._start_eager(s for ns, s in config.servers.items() if before.config.servers.get(ns) != s)
        if before.config.servers != config.servers or before.config.gateway != config.gateway:
            for kind in KINDS:
                self._broadcasts.lists_changed("", kind)
        elif searching != before.tool_search:
            self._broadcasts.lists_changed("", "tools")

    def adopt_policy(self, policy: Policy | None) -> None:
        """Decide by ``policy`` from now on (a reload, before its servers change); clients are
        told the lists changed if what each may see did. On a host thread."""
        if self.gate.adopt(policy):
            logger.info("access: %s", f"the policy {policy.source} in force" if policy else "no policy")
            for kind in KINDS:
                self._broadcasts.lists_changed("", kind)

    # ---- serving ---------------------------------------------------------------------------

    def initialization_options(self) -> Any:
        """What the gateway declares: list changes of tools, resources and prompts."""
        return self.server.create_initialization_options(LIST_CHANGES)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop the gateway serves on (for what other threads send to clients)."""
        self._handoff.bind(loop)

    def close(self) -> None:
        """Stop every backend server and the runtime. Idempotent."""
        self._log_forwarder.uninstall()
        self.runtime.shutdown()
        self.audit.close()  # after the runtime: the last requests' records are written

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- what a cluster replica uses (`actors.cluster.served.ServedGateway`) ---------------

    def announce(self, event: ServerEvent) -> None:
        """An event another replica published, for this gateway's handshake-era clients (its
        bus hands it to ``subscriptions/listen`` streams itself). On any thread."""
        if isinstance(event, ResourceUpdated):
            self._resources.tell_subscribers(event.uri)
            return
        kind = kind_of(event)
        if kind is not None:
            self._broadcasts.notify_sessions(kind)

    @property
    def in_flight(self) -> int:
        """Client requests being served by a backend right now (a replica's load)."""
        return self._sessions.in_flight

    def stop_server(self, namespace: str) -> None:
        """Have ``namespace``'s server stopped here (a tell: returns at once)."""
        self.runtime.registry.tell(StopServer(namespace))

    def server_states(self, namespace: str, timeout: float) -> list[str]:
        """The states of ``namespace``'s server here (blocks: not on the loop)."""
        return [status.state for status in self.runtime.status(namespace, timeout=timeout)]

    def caller_meta(self, ctx: Any) -> dict[str, Any]:
        """The ``_meta`` entry that carries the caller of the request ``ctx`` answers to the
        replica it is forwarded to (`actors.gateway.access.principal.caller_meta`)."""
        return caller_meta(ctx) | era_meta(ctx)
