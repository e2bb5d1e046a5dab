"""`PerUserServers`: one instance of a per-user server (``"affinity": "user"``) for each caller.

A per-user server is never registered in the runtime under its own name. Each caller (a
`Principal`, by its `Principal.key`) gets a copy of its entry, filled in for them
(`actors.gateway.access.claims`: their claims in its environment, their token, or the one the
issuer exchanged it for, in its headers), registered as ``<server>@<caller key>``: a name no
config file can hold. A copy is registered on its caller's first request and started by it, like
any server; its process stops after the server's ``idleTimeout`` like any other; the copy itself
is unregistered after ``access.perUserServers.unregisterAfter`` seconds without a request, or,
past ``access.perUserServers.maxCopies`` copies, when it is the least recently used idle one. One
caller's requests only ever reach their own copy: one user's session state never reaches another's.

What a caller's request becomes (`route`): the same request, for the namespace of their copy.
When what their copy would be filled in with changes (a new token, a reloaded entry), a new copy
takes the requests from then on, and the old one is unregistered once its requests are answered.
A caller who cannot fill the entry in (no token of their own, a claim their token lacks, an
exchange the issuer refuses) gets an ``auth`` error, never the gateway's own credentials.

Lists (`view`): the runtime's lists hold every copy's items; a caller sees the server once, under
its own name: their own copy's items, else those of the copy used last (a server lists the same
for everyone unless its backend tells callers apart). `prepare` registers the caller's copy when
the server has none yet on this replica, so that a list may learn what it offers.

Across replicas, copies are per replica, as for ``"affinity": "any"``: a caller whose requests
land on two replicas has a copy on each (a stateful server should be reached through a load
balancer that keeps a caller on one replica).

Owned by the gateway's loop: every method but `adopt` runs there. Registering and unregistering
wait on the runtime: on a worker thread (`anyio.to_thread`), whose answer comes back to the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio.to_thread

from actors.config import RuntimeConfig
from actors.gateway.access.claims import Unfilled, copy_of, needs_token
from actors.gateway.access.exchange import ExchangeFailed, TokenExchange
from actors.gateway.access.principal import AuthMode, Principal, principal_of
from actors.gateway.access.upkeep import CopyUpkeep
from actors.gateway.handoff import LoopHandoff
from actors.mcp.catalog import PromptSpec
from actors.mcp.config import ServerConfig
from actors.runtime import Runtime
from actors.runtime.messages import ServerRequest
from actors.tools import ErrorType, ToolError, ToolResult, ToolSpec

__all__ = [
    "SEPARATOR",
    "PerUserServers",
    "Routed",
    "namespace_of",
    "renamed_to",
    "template_of",
    "without_per_user",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

SEPARATOR = "@"
"""Between a per-user server's name and its caller's key, in a copy's namespace."""


def template_of(namespace: str) -> str | None:
    """The per-user server ``namespace`` is a copy of, or None if it is no copy."""
    template, separator, _ = namespace.partition(SEPARATOR)
    return template if separator else None


def without_per_user(config: RuntimeConfig) -> RuntimeConfig:
    """``config`` without its per-user servers: what the runtime registers itself (their copies
    are registered per caller)."""
    shared = {ns: server for ns, server in config.servers.items() if server.affinity != "user"}
    return config if len(shared) == len(config.servers) else config.model_copy(update={"servers": shared})


@dataclass(eq=False)
class _Copy:
    """One caller's instance of a per-user server. Touched on the loop only."""

    namespace: str
    template: str
    caller: str
    config: ServerConfig
    """Filled in for the caller (secrets inside: never logged)."""
    source: ServerConfig
    """The server's entry it was filled in from."""
    registered: asyncio.Future[None] = field(repr=False)
    in_flight: int = 0
    last_used: float = 0.0
    retiring: bool = False


@dataclass(frozen=True)
class Routed:
    """A request as it is sent: to its caller's copy (``copy``), or as it came (``copy`` None)."""

    namespace: str
    message: ServerRequest
    copy: _Copy | None = None
    release: Callable[[], None] | None = None
    """Called once the request is answered (a copy that counts its requests in flight)."""


class PerUserServers:
    """The copies of per-user servers, by server and caller. Owned by the gateway's loop.

    ``config`` is the configuration served now (read on the loop); ``forget(namespace)`` is
    called on the loop once a copy is unregistered (the gateway's routes drop it).
    """

    def __init__(
        self,
        runtime: Runtime,
        config: Callable[[], RuntimeConfig],
        handoff: LoopHandoff,
        forget: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._runtime = runtime
        self._config = config
        self._handoff = handoff
        self._forget = forget
        self._clock = clock
        self.exchange = TokenExchange(clock)
        self._current: dict[tuple[str, str], _Copy] = {}
        """(server, caller key) → the copy that takes that caller's requests now."""
        self._copies: dict[str, _Copy] = {}
        """namespace → every copy registered or on its way in or out."""
        self._names = itertools.count(1)
        self._upkeep = CopyUpkeep(
            lambda: self._config().access.per_user_servers, clock, self._copies.values, self._retire
        )

    # ---- requests ------------------------------------------------------------------------------

    async def route(self, ctx: Any, namespace: str, message: ServerRequest) -> Routed | ToolResult:
        """``message`` for the caller of ``ctx``'s copy when ``namespace`` is a per-user server
        (registered first if need be), else as it is; an ``auth`` (or registration) failure as a
        result. A routed request is `done` once answered."""
        config = self._config()
        template = config.servers.get(namespace)
        if template is None or template.affinity != "user":
            return Routed(namespace, message)
        try:
            copy = await self._copy_for(principal_of(ctx), template, config)
        except (Unfilled, ExchangeFailed) as exc:
            return ToolResult.fail(ErrorType.AUTH, str(exc))
        copy.in_flight += 1
        try:
            await asyncio.shield(copy.registered)
        except asyncio.CancelledError:
            self.done(copy)
            raise
        except ToolError as exc:
            self.done(copy)
            return ToolResult.fail(exc.error_type, f"no instance of {namespace} for this caller: {exc}")
        copy.last_used = self._clock()
        return Routed(copy.namespace, dataclasses.replace(message, namespace=copy.namespace), copy)

    def done(self, copy: _Copy | None) -> None:
        """A request `route` sent to ``copy`` was answered."""
        if copy is None:
            return
        copy.in_flight -= 1
        copy.last_used = self._clock()
        if copy.retiring and copy.in_flight == 0:
            self._unregister(copy)

    def current(self, ctx: Any, namespace: str) -> str:
        """The namespace of the caller of ``ctx``'s copy of ``namespace``, if they have one, else
        ``namespace`` (what a request held across rounds is served by)."""
        copy = self._current.get((namespace, principal_of(ctx).key))
        return copy.namespace if copy is not None else namespace

    async def _copy_for(self, principal: Principal, template: ServerConfig, config: RuntimeConfig) -> _Copy:
        keys = config.gateway.servers.get(template.name)
        exchange = keys.token_exchange if keys is not None else None
        token: str | None = None
        if needs_token(template, exchange):
            if principal.mode is not AuthMode.OAUTH or not principal.credential:
                raise Unfilled(
                    f"server {template.name!r} sends each caller's own token to its backend, and this "
                    "request has none: call the gateway with an access token from its issuer"
                )
            token = principal.credential
            if exchange is not None:
                issuer = config.access.auth.issuer if config.access.auth is not None else None
                token = await self.exchange.token_for(token, exchange, issuer)
        caller = principal.key
        current = self._current.get((template.name, caller))
        if current is not None and not current.retiring:
            if (
                current.source == template
                and copy_of(template, principal, current.namespace, token) == current.config
            ):
                return current
            self._retire(current)
        return self._register(template, principal, caller, token)

    def _register(
        self, template: ServerConfig, principal: Principal, caller: str, token: str | None
    ) -> _Copy:
        namespace = f"{template.name}{SEPARATOR}{caller}"
        if namespace in self._copies:  # the caller's former copy is still on its way out
            namespace = f"{namespace}~{next(self._names)}"
        loop = asyncio.get_running_loop()
        copy = _Copy(
            namespace,
            template.name,
            caller,
            copy_of(template, principal, namespace, token),
            template,
            loop.create_future(),
            last_used=self._clock(),
        )
        self._current[template.name, caller] = copy
        self._copies[namespace] = copy
        self._handoff.start(self._registering(copy))
        self._upkeep.added(loop)
        logger.info("per-user: %s for %s", template.name, caller)
        return copy

    async def _registering(self, copy: _Copy) -> None:
        try:
            await anyio.to_thread.run_sync(self._runtime.register_server, copy.config)
        except Exception as exc:
            error = (
                exc
                if isinstance(exc, ToolError)
                else ToolError(copy.namespace, ErrorType.EXECUTION, str(exc))
            )
            logger.warning("per-user: %s not registered: %s", copy.namespace, error)
            copy.registered.set_exception(error)
            copy.registered.exception()  # retrieved: the callers waiting are told by `route`
            self._drop(copy)
            return
        copy.registered.set_result(None)
        if copy.retiring and copy.in_flight == 0:
            self._unregister(copy)

    # ---- leaving -------------------------------------------------------------------------------

    def _retire(self, copy: _Copy) -> None:
        """No new request goes to ``copy``; it is unregistered once its requests are answered."""
        if copy.retiring:
            return
        copy.retiring = True
        if self._current.get((copy.template, copy.caller)) is copy:
            del self._current[copy.template, copy.caller]
        if copy.in_flight == 0 and copy.registered.done():
            self._unregister(copy)

    def _unregister(self, copy: _Copy) -> None:
        if not copy.registered.done() or copy.registered.exception() is not None:
            return  # never registered (or not yet: `_registering` unregisters it when it is)
        self._handoff.start(self._unregistering(copy))

    async def _unregistering(self, copy: _Copy) -> None:
        try:
            await anyio.to_thread.run_sync(self._runtime.unregister_server, copy.namespace)
        except Exception as exc:
            logger.info("per-user: %s not unregistered: %s", copy.namespace, exc)
        self._drop(copy)
        logger.info("per-user: %s for %s unregistered", copy.template, copy.caller)

    def _drop(self, copy: _Copy) -> None:
        if self._copies.get(copy.namespace) is copy:
            del self._copies[copy.namespace]
        if self._current.get((copy.template, copy.caller)) is copy:
            del self._current[copy.template, copy.caller]
        self._forget(copy.namespace)

    def adopt(self) -> None:
        """The config was reloaded (any thread): copies of servers removed or changed go."""
        self._handoff.call(self._adopted)

    def _adopted(self) -> None:
        servers = self._config().servers
        for copy in list(self._copies.values()):
            if servers.get(copy.template) != copy.source:
                self._retire(copy)

    # ---- lists ---------------------------------------------------------------------------------

    async def prepare(self, ctx: Any) -> None:
        """Before a list: a per-user server with no copy on this replica gets the caller's, so
        that the list learns what it offers (a caller who cannot fill it in gets none)."""
        config = self._config()
        had = {copy.template for copy in self._copies.values() if not copy.retiring}
        missing = [s for ns, s in config.servers.items() if s.affinity == "user" and ns not in had]
        for template in missing:
            try:
                copy = await self._copy_for(principal_of(ctx), template, config)
            except (Unfilled, ExchangeFailed) as exc:
                logger.debug("per-user: %s not listed for this caller: %s", template.name, exc)
                continue
            # A failed registration is the caller's to hear of when they call (`route`).
            with contextlib.suppress(Exception):
                await asyncio.shield(copy.registered)

    def view(self, ctx: Any | None, items: Sequence[_T]) -> list[_T]:
        """``items`` of a list as a caller sees them: each per-user server once, under its own
        name, from the caller's copy (else the copy used last). Without ``ctx`` (a look-up, not
        a list): every copy's items, each once."""
        if not self._copies:
            return list(items)
        caller = principal_of(ctx).key if ctx is not None else None
        shown: dict[str, str] = {}
        """server → the copy whose items are shown."""
        answer: list[_T] = []
        seen: set[tuple[str, str]] = set()
        for item in items:
            namespace = namespace_of(item)
            template = template_of(namespace)
            if template is None:
                answer.append(item)
                continue
            if caller is not None:
                if template not in shown:
                    shown[template] = self._shown(template, caller, items)
                if namespace != shown[template]:
                    continue
            renamed = renamed_to(item, template)
            identity = (template, _identity(renamed))
            if identity not in seen:
                seen.add(identity)
                answer.append(renamed)
        return answer

    def _shown(self, template: str, caller: str, items: Sequence[Any]) -> str:
        listed = {namespace_of(item) for item in items}
        own = self._current.get((template, caller))
        if own is not None and own.namespace in listed:
            return own.namespace
        copies = [c for c in self._copies.values() if c.template == template and c.namespace in listed]
        return max(copies, key=lambda c: c.last_used).namespace if copies else ""


def namespace_of(item: Any) -> str:
    if isinstance(item, ToolSpec):
        return item.namespace
    return str(item.namespace)


def renamed_to(item: _T, template: str) -> _T:
    """A copy's list item under its server's own name."""
    if isinstance(item, ToolSpec):
        return item.model_copy(update={"name": f"{template}/{item.tool_name}"})
    if isinstance(item, PromptSpec):
        return item.model_copy(update={"name": f"{template}/{item.prompt_name}", "namespace": template})
    return item.model_copy(update={"namespace": template})  # type: ignore[attr-defined,no-any-return]


def _identity(item: Any) -> str:
    """What one item of a list is: a tool's or prompt's name, a resource's URI, a template."""
    for attribute in ("uri_template", "uri", "name"):
        value = getattr(item, attribute, None)
        if isinstance(value, str):
            return value
    return repr(item)
