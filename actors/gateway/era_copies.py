"""`EraCopies`: a handshake-era client of a dual-era backend is served in its own era.

A server configured with ``"protocol": "auto"`` is spoken to in the newest era it offers: for a
dual-era server, 2026-07-28. That era has no back-channel: a tool that asks for input on the
session (``create_message``, ``elicit``, ``list_roots``) works only when it was called in the
handshake era. A handshake-era client that goes direct to such a server gets that input asked
of it; through the gateway it must too.

So the requests of a handshake-era client that can answer such questions (it declared sampling,
elicitation or roots) go to a copy of the server's entry pinned to the handshake era
(``"protocol": "legacy"``), registered on the first such request as ``<server>@2025-11-25``, or
``<server>@2025-11-25.<caller>`` for an authenticated caller: one copy per caller, because a
handshake-era session cannot say which of the requests in flight a question is for, and one
caller must never be asked another's. What a copy asks travels to its client the way a
handshake-era backend's requests always do (`actors.gateway.client_inputs`).

Which era the server speaks is learnt once per configuration from its own connection: the first
such request starts it (as any request would) and reads the version it negotiated. A server that
speaks the handshake era anyway is used as it is; so are servers pinned to an era, per-user
servers (each caller has a copy already), and clients that declared none of those capabilities
(a server has nothing to ask them; their log messages reach them in either era).

Copies stop when idle like any server (``idleTimeout``); a copy without a request for
``access.perUserServers.unregisterAfter`` seconds is unregistered, and past
``access.perUserServers.maxCopies`` copies the least recently used idle one is. A reload that
changes or removes its server unregisters it. Lists never show a copy: its items are its
server's, under the server's own name.

Across replicas, a forwarded request carries its caller's era (`era_meta`); the owner serves it
as it would serve that caller directly. The entry is a routing preference, not a credential: a
client that forges it gets a handshake-era session of its own.

Owned by the gateway's loop: every method but `adopt` runs there. Registering waits on the
runtime on a worker thread (`anyio.to_thread`): it reads the schema cache and the pins.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from actors.config import RuntimeConfig
from actors.gateway.access.copy_book import CopyBook
from actors.gateway.access.per_user import Routed, namespace_of
from actors.gateway.access.principal import AuthMode, principal_of
from actors.gateway.handoff import LoopHandoff
from actors.mcp.eras import AUTO, LEGACY, MODERN_PROTOCOL, era_of
from actors.mcp.revisions import HANDSHAKE, revision_of
from actors.runtime import Runtime
from actors.runtime.messages import ServerRequest, StartServer
from actors.runtime.status import ServerStatus
from actors.tools import ToolError

__all__ = ["COPY_MARK", "FORWARDED_ERA", "EraCopies", "caller_version", "era_meta"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

COPY_MARK = f"@{HANDSHAKE.version}"
"""After a server's name, in the namespace of a handshake-era copy of it."""

FORWARDED_ERA = "io.github.mcp-actors/era"
"""The ``_meta`` key of a forwarded request that names its caller's protocol version."""

_LEARN_TIMEOUT = 120.0
"""The longest a request waits for its server to start and say its era (a start's own timeout
is usually shorter)."""

_ASKS = ("sampling", "elicitation", "roots")
"""The client capabilities a server's back-channel questions need."""


def caller_version(ctx: Any) -> str | None:
    """The protocol version of the client a request ``ctx`` serves: the one a replica forwarded
    it for, else the session's own."""
    meta = getattr(ctx, "meta", None)
    if isinstance(meta, Mapping):
        forwarded = meta.get(FORWARDED_ERA)
        if isinstance(forwarded, str):
            return forwarded
    version = getattr(ctx, "protocol_version", None)
    return version if isinstance(version, str) else None


def era_meta(ctx: Any) -> dict[str, str]:
    """The ``_meta`` entry that carries the caller's era to the replica a request is forwarded to
    (none for a 2026-07-28 caller: the forwarded request is in that era already)."""
    version = caller_version(ctx)
    if version is None or not revision_of(version).handshake:
        return {}
    return {FORWARDED_ERA: version}


def _answers_questions(ctx: Any) -> bool:
    """Whether the client of ``ctx`` declared a capability a server may ask on the back-channel."""
    declared = getattr(getattr(ctx, "session", None), "client_capabilities", None)
    return any(getattr(declared, name, None) is not None for name in _ASKS)


class EraCopies:
    """The handshake-era copies of dual-era servers, by server and caller (`CopyBook`). Owned by
    the gateway's loop.

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
        self._eras: dict[str, asyncio.Future[str | None]] = {}
        """server → the era it speaks (`LEGACY`, `MODERN_PROTOCOL`; None: not known yet)."""
        self._book = CopyBook("eras", runtime, config, handoff, forget, clock)

    # ---- requests ------------------------------------------------------------------------------

    async def route(self, ctx: Any, namespace: str, message: ServerRequest) -> Routed:
        """``message`` for its caller's handshake-era copy of its server when the caller speaks
        the handshake era and may be asked for input, and the server, left to choose, speaks
        2026-07-28; else as it is. A routed request calls its ``release`` once answered."""
        if not revision_of(caller_version(ctx)).handshake or not _answers_questions(ctx):
            return Routed(namespace, message)
        config = self._config()
        server = config.servers.get(namespace)
        if server is None or server.protocol != AUTO or config.cluster.per_user(namespace):
            return Routed(namespace, message)
        if await self._era_of(namespace) != MODERN_PROTOCOL:
            return Routed(namespace, message)
        principal = principal_of(ctx)
        copy = self._book.current(namespace, principal.key)
        if copy is None or copy.source != server:
            if copy is not None:
                self._book.retire(copy)
            shared = principal.mode in (AuthMode.LOCAL, AuthMode.STATIC)
            name = f"{server.name}{COPY_MARK}{'' if shared else f'.{principal.key}'}"
            pinned = lambda ns: server.model_copy(update={"name": ns, "protocol": LEGACY})  # noqa: E731
            copy = self._book.register(server, principal.key, name, pinned)
        try:
            await self._book.entered(copy)
        except ToolError:  # no copy: the server is served as it is
            return Routed(namespace, message)
        entered = copy
        return Routed(
            copy.namespace,
            dataclasses.replace(message, namespace=copy.namespace),
            release=lambda: self._book.done(entered),
        )

    def current(self, ctx: Any, namespace: str) -> str:
        """The namespace that serves the client of ``ctx`` for ``namespace`` now (what a request
        held across rounds is served by)."""
        if not revision_of(caller_version(ctx)).handshake:
            return namespace
        copy = self._book.current(namespace, principal_of(ctx).key)
        if copy is None or not copy.registered.done() or copy.registered.exception() is not None:
            return namespace
        return copy.namespace

    async def _era_of(self, namespace: str) -> str | None:
        learnt = self._eras.get(namespace)
        if learnt is None:
            learnt = asyncio.get_running_loop().create_future()
            self._eras[namespace] = learnt
            self._handoff.start(self._learning(namespace, learnt))
        return await asyncio.shield(learnt)

    async def _learning(self, namespace: str, learnt: asyncio.Future[str | None]) -> None:
        """Start the server (as the request would) and read the era it negotiated."""
        asked = StartServer(namespace)
        self._runtime.registry.tell(asked)
        era: str | None = None
        try:
            status: ServerStatus = await asyncio.wait_for(asyncio.wrap_future(asked.reply), _LEARN_TIMEOUT)
            if status.protocol_version:
                era = era_of(status.protocol_version)
        except Exception as exc:  # it could not start: the request meets that at the server itself
            logger.debug("eras: %s did not say its era: %s", namespace, exc)
        learnt.set_result(era)
        if era is None and self._eras.get(namespace) is learnt:
            del self._eras[namespace]  # learnt on a later request
        elif era is not None:
            logger.info("eras: %s speaks %s", namespace, era)

    def adopt(self) -> None:
        """The config was reloaded (any thread): copies of servers removed or changed go, and
        every server's era is learnt again."""
        self._handoff.call(self._eras.clear)
        self._book.adopt()

    # ---- lists ---------------------------------------------------------------------------------

    def view(self, items: Sequence[_T]) -> list[_T]:
        """``items`` of a list without any copy's: a copy's items are its server's."""
        copies = self._book.copies
        if not copies:
            return list(items)
        return [item for item in items if namespace_of(item) not in copies]
