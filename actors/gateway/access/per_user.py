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
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from actors.config import RuntimeConfig
from actors.gateway.access.claims import Unfilled, copy_of, needs_token
from actors.gateway.access.copy_book import Copy, CopyBook
from actors.gateway.access.exchange import ExchangeFailed, TokenExchange
from actors.gateway.access.principal import AuthMode, Principal, principal_of
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
    shared = {ns: server for ns, server in config.servers.items() if not config.cluster.per_user(ns)}
    return config if len(shared) == len(config.servers) else config.model_copy(update={"servers": shared})


@dataclass(frozen=True)
class Routed:
    """A request as it is sent: to its caller's copy (``copy``), or as it came (``copy`` None)."""

    namespace: str
    message: ServerRequest
    copy: Copy | None = None
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
        self._config = config
        self.exchange = TokenExchange(clock)
        self._book = CopyBook("per-user", runtime, config, handoff, forget, clock)

    # ---- requests ------------------------------------------------------------------------------

    async def route(self, ctx: Any, namespace: str, message: ServerRequest) -> Routed | ToolResult:
        """``message`` for the caller of ``ctx``'s copy when ``namespace`` is a per-user server
        (registered first if need be), else as it is; an ``auth`` (or registration) failure as a
        result. A routed request is `done` once answered."""
        config = self._config()
        template = config.servers.get(namespace)
        if template is None or not config.cluster.per_user(namespace):
            return Routed(namespace, message)
        try:
            copy = await self._copy_for(principal_of(ctx), template, config)
        except (Unfilled, ExchangeFailed) as exc:
            return ToolResult.fail(ErrorType.AUTH, str(exc))
        try:
            await self._book.entered(copy)
        except ToolError as exc:
            return ToolResult.fail(exc.error_type, f"no instance of {namespace} for this caller: {exc}")
        return Routed(copy.namespace, dataclasses.replace(message, namespace=copy.namespace), copy)

    def done(self, copy: Copy | None) -> None:
        """A request `route` sent to ``copy`` was answered."""
        if copy is not None:
            self._book.done(copy)

    def current(self, ctx: Any, namespace: str) -> str:
        """The namespace of the caller of ``ctx``'s copy of ``namespace``, if they have one, else
        ``namespace`` (what a request held across rounds is served by)."""
        copy = self._book.current(namespace, principal_of(ctx).key)
        return copy.namespace if copy is not None else namespace

    async def _copy_for(self, principal: Principal, template: ServerConfig, config: RuntimeConfig) -> Copy:
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
        current = self._book.current(template.name, caller)
        if current is not None and not current.retiring:
            if (
                current.source == template
                and copy_of(template, principal, current.namespace, token) == current.config
            ):
                return current
            self._book.retire(current)
        logger.info("per-user: %s for %s", template.name, caller)
        name = f"{template.name}{SEPARATOR}{caller}"
        return self._book.register(template, caller, name, lambda ns: copy_of(template, principal, ns, token))

    def adopt(self) -> None:
        """The config was reloaded (any thread): copies of servers removed or changed go."""
        self._book.adopt()

    # ---- lists ---------------------------------------------------------------------------------

    async def prepare(self, ctx: Any) -> None:
        """Before a list: a per-user server with no copy on this replica gets the caller's, so
        that the list learns what it offers (a caller who cannot fill it in gets none)."""
        config = self._config()
        had = {copy.server for copy in self._book.live()}
        missing = [s for ns, s in config.servers.items() if config.cluster.per_user(ns) and ns not in had]
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
        if not self._book.copies:
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
        own = self._book.current(template, caller)
        if own is not None and own.namespace in listed:
            return own.namespace
        copies = [c for c in self._book.copies.values() if c.server == template and c.namespace in listed]
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
