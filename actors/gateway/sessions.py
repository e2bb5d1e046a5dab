"""`Sessions`: the clients that have talked to the gateway, and their requests in flight.

A handshake-era client is told of list changes on its connection; a backend's log messages and
its server requests (sampling, elicitation, roots) go to the client whose request that backend
is serving. This is the book of both.
"""

from __future__ import annotations

import asyncio
import itertools
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.server.connection import allowed_log_levels

from actors.mcp.meta_keys import FORWARDED_CALL

__all__ = ["InFlight", "Sessions"]


@dataclass
class InFlight:
    """A client request being served by one backend namespace (for routing server requests)."""

    session: Any
    """The SDK's ``ServerSession`` of the request."""
    request_id: Any
    sent: list[asyncio.Future[Any]] = field(default_factory=list)
    """What was forwarded to the client for this request (its backend's log messages and
    progress): sent before the answer is."""
    asks: bool = True
    """Whether the backend's server requests may go to this request's client (not to one whose
    requests are held across rounds: those come to it as rounds)."""
    tag: str | None = None
    """The tag of a request another replica forwarded here (`actors.mcp.meta_keys`): the log
    messages sent for it carry it, so the forwarder knows which of its requests they are for."""
    levels: frozenset[str] = frozenset()
    """The log levels a tagged request takes (what it asked for)."""


class Sessions:
    """Connections seen and requests in flight. Owned by the gateway's loop: every method is
    called on it (other threads hand over with `actors.gateway.handoff.LoopHandoff`).

    `in_flight` is the one value read from other threads (a replica's load, by the membership
    thread): an int, replaced, never mutated in place.
    """

    def __init__(self) -> None:
        self._seen: weakref.WeakSet[Any] = weakref.WeakSet()
        """The clients' connections (what outlives a request; each has ``send_tool_list_changed``...)."""
        self._busy: dict[str, dict[int, InFlight]] = {}
        self._tickets = itertools.count()
        self.in_flight = 0
        """Client requests being served by a backend right now."""

    def seen(self, ctx: Any) -> None:
        """Remember the connection of the request ``ctx``."""
        # The SDK builds a ServerSession per request, gone once it is answered: keep the
        # client's connection, which lasts as long as the client (and can notify it).
        self._seen.add(getattr(ctx.session, "_connection", ctx.session))

    def connections(self) -> list[Any]:
        return list(self._seen)

    def busy(self, namespace: str, ctx: Any, *, asks: bool = True) -> int:
        """Note that ``namespace`` serves the request ``ctx``; the ticket to `idle` it with."""
        ticket = next(self._tickets)
        meta = getattr(ctx, "meta", None)
        meta = meta if isinstance(meta, Mapping) else {}
        tag = meta.get(FORWARDED_CALL)
        request = InFlight(ctx.session, ctx.request_id, asks=asks)
        if isinstance(tag, str):
            # Only a forwarded request's log messages are sent tagged, filtered here.
            version = getattr(ctx, "protocol_version", None)
            request.tag = tag
            request.levels = allowed_log_levels(version, meta) if isinstance(version, str) else frozenset()
        self._busy.setdefault(namespace, {})[ticket] = request
        self.in_flight += 1
        return ticket

    def idle(self, namespace: str, ticket: int) -> None:
        requests = self._busy.get(namespace)
        if requests is not None and requests.pop(ticket, None) is not None:
            self.in_flight -= 1
            if not requests:
                del self._busy[namespace]

    def request(self, namespace: str, ticket: int) -> InFlight | None:
        return self._busy.get(namespace, {}).get(ticket)

    def serving(self, session: Any, request_id: Any) -> InFlight | None:
        """The request ``request_id`` of ``session`` a backend is serving, if one is."""
        for requests in self._busy.values():
            for request in requests.values():
                if request.session is session and request.request_id == request_id:
                    return request
        return None

    def waiting_on(self, namespace: str) -> list[InFlight]:
        """The requests ``namespace`` is serving, the oldest first."""
        return list(self._busy.get(namespace, {}).values())
