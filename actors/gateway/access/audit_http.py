"""`HTTPAudit`: over HTTP, one audit record per request a client sent, refused ones included.

The MCP layer records each JSON-RPC request it serves (`actors.gateway.access.audit_request`),
and the request limits each one they refuse (`actors.gateway.access.limits_http`). Over HTTP
both hand their record to the HTTP request's `Exchange` (`record`), which writes it once the
HTTP answer is given. That settles what the MCP layer cannot see:

- a request refused before it (401 and 403 by the guard, 421 a foreign ``Host``, 404 a path or
  a session that does not exist, 413 a body too large, 400 a body that is no JSON-RPC request
  or headers that do not match it, 405, 406) leaves a record too, made here from what the
  client sent;
- on one HTTP request the SDK may serve a request of its own: to check a 2026-07-28 call's
  ``Mcp-Param-*`` headers it runs the gateway's ``tools/list``, which the MCP layer records as
  any list. An HTTP request carries one JSON-RPC request: its record is the one of the method
  the client sent.

What is not a request (a notification, a response to the gateway's own request, the ``GET``
of a stream, a session's ``DELETE``) and is not refused leaves no record; nor does a request
another replica forwarded (recorded where the client sent it).

The body is kept as it passes (its chunks, up to `MAX_KEPT` bytes), read as JSON only when the
record depends on it. Runs on the gateway's loop.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from actors.gateway.access.asgi import ASGIApp, Receive, Scope, Send, scope_context
from actors.gateway.access.audit import Audit, AuditEvent, Outcome, Who
from actors.gateway.access.principal import ReplicaAccess, access_token_of, principal_of
from actors.tools import ErrorType

__all__ = ["MAX_KEPT", "Exchange", "HTTPAudit", "record"]

MAX_KEPT = 1024 * 1024
"""Bytes of a request's body kept at most, to say what a refused request asked for."""

_KEY = "mcp_actors.audit"
"""Where the `Exchange` of an HTTP request is, in its ASGI scope."""

_LISTING = "tools/list"
"""What the SDK serves of its own on a client's request (the ``Mcp-Param-*`` check)."""

_ANONYMOUS = Who("anonymous", mode="none")
"""Who sent a request without a credential the gateway took, to a gateway that wants one."""

_DENIED = frozenset({401, 403, 421})
"""Statuses that refuse the caller (their credential, their scopes, their ``Host``)."""


class Exchange:
    """One HTTP request: the records made while it is answered, and its body as it passed.
    Touched only by the tasks serving it, on the gateway's loop."""

    __slots__ = ("_chunks", "_complete", "_size", "held", "open")

    def __init__(self) -> None:
        self.held: list[AuditEvent] = []
        self.open = True
        """Until its answer is given: a record made after (a handler that outlived its client)
        is written at once."""
        self._chunks: list[bytes] = []
        self._size = 0
        self._complete = False

    def keep(self, chunk: bytes, more: bool) -> None:
        """A chunk of the body passed (``more``: more follow)."""
        self._size += len(chunk)
        if self._size <= MAX_KEPT:
            self._chunks.append(chunk)
        self._complete = not more

    def sent(self) -> Mapping[str, Any] | None:
        """The JSON-RPC message the body holds, if it is whole, kept, and one JSON object."""
        if not self._complete or self._size > MAX_KEPT:
            return None
        try:
            message = json.loads(b"".join(self._chunks))
        except (ValueError, RecursionError):
            return None
        return message if isinstance(message, dict) else None

    def recorded(self) -> AuditEvent | None:
        """The record of the request the client sent, of those made while it was answered."""
        if not self.held:
            return None
        if len(self.held) == 1 and self.held[0].method != _LISTING:
            return self.held[0]  # the one request served: no body to read
        sent = self.sent()
        method = sent.get("method") if sent is not None else None
        if not isinstance(method, str):
            return self.held[-1]
        mine = [event for event in self.held if event.method == method]
        return mine[-1] if mine else None  # none: refused after the SDK's own listing


def record(scope: Mapping[str, Any] | None, audit: Audit, event: AuditEvent) -> None:
    """Record ``event``, a request served (or refused) on the HTTP request of ``scope``: held
    until its answer is given, then written with it (`HTTPAudit`); at once without one (stdio,
    or once the answer was given)."""
    exchange = scope.get(_KEY) if isinstance(scope, Mapping) else None
    if isinstance(exchange, Exchange) and exchange.open:
        exchange.held.append(event)
    else:
        audit.submit(event)


class HTTPAudit:
    """The ASGI middleware, outermost: each HTTP request's `Exchange`, written when answered.

    ``authenticated``: the gateway takes bearer credentials, so a request without one is
    ``anonymous`` (not the local user of a gateway without authentication).
    """

    def __init__(self, app: ASGIApp, audit: Audit, *, authenticated: bool) -> None:
        self._app = app
        self._audit = audit
        self._authenticated = authenticated

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        exchange = Exchange()
        scope[_KEY] = exchange
        started, began = time.time(), time.monotonic()
        status = 500  # what the server answers for an app that raised before it answered

        async def receiving() -> MutableMapping[str, Any]:
            message = await receive()
            if message["type"] == "http.request":
                exchange.keep(message.get("body", b""), bool(message.get("more_body", False)))
            return message

        async def sending(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self._app(scope, receiving, sending)
        finally:
            exchange.open = False
            event = exchange.recorded()
            if event is None and status >= 400 and not self._forwarded(scope):
                event = self._refused(scope, exchange, status, started, time.monotonic() - began)
            if event is not None:
                self._audit.submit(event)

    @staticmethod
    def _forwarded(scope: Scope) -> bool:
        return isinstance(access_token_of(scope_context(scope)), ReplicaAccess)

    def _who(self, scope: Scope) -> Who:
        context = scope_context(scope)
        if self._authenticated and access_token_of(context) is None:
            return _ANONYMOUS
        return Who.of(principal_of(context))

    def _refused(
        self, scope: Scope, exchange: Exchange, status: int, started: float, duration: float
    ) -> AuditEvent:
        """The record of a request refused before the MCP layer served it: what it asked for
        (as the client named it, if its body says), and the status it was refused with."""
        sent = exchange.sent() if scope.get("method") == "POST" else None
        method = sent.get("method") if sent is not None else None
        params = sent.get("params") if sent is not None else None
        params = params if isinstance(params, Mapping) else {}
        name = params.get("name") if isinstance(params.get("name"), str) else None
        arguments, uri = params.get("arguments"), params.get("uri")
        if status in _DENIED:
            outcome, error_type = Outcome.DENIED, None
        else:
            outcome = Outcome.ERROR
            error_type = (
                ErrorType.NOT_FOUND
                if status == 404
                else ErrorType.VALIDATION
                if status < 500
                else ErrorType.SERVER_ERROR
            )
        return AuditEvent(
            who=self._who(scope),
            method=method if isinstance(method, str) else f"{scope.get('method')} {scope.get('path')}",
            outcome=outcome,
            tool=name if method == "tools/call" else None,
            prompt=name if method == "prompts/get" else None,
            uri=uri if isinstance(uri, str) else None,
            arguments=arguments if isinstance(arguments, Mapping) and name is not None else None,
            error_type=error_type,
            reason=f"http {status}",
            started=started,
            duration=duration,
        )
