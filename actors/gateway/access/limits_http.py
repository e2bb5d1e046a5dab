"""`RequestLimits`: each principal's whole request rate (``access.limits.perUser``), at the HTTP
layer, answered as HTTP answers it: status 429 with ``Retry-After``.

It sits inside the authentication middleware (which put the caller on the scope) and in front
of the SDK's Streamable HTTP app. Each ``POST /mcp`` takes a token from its principal's bucket.
Once the bucket is empty, the request's body is read to answer it properly: a JSON-RPC request
gets 429, ``Retry-After`` and, in the body, the JSON-RPC error `RATE_LIMITED` with its ``id``
(the SDK's clients read that error, retry hint and all, from a non-2xx answer); a notification
or a response to the gateway's own request (a sampling answer, say) goes through all the same,
as refusing it would break a request already admitted. A refused request is audited
(``limited``). The ``GET`` of a listen stream and the ``DELETE`` of a session are not counted.

A request another replica forwards (its replica credential) is not counted here: its caller
was, at the replica it came to.

Runs on the gateway's loop; waits on nothing but the limits (whose shared buckets answer
within a bound, `actors.gateway.access.limits_redis`).
"""

from __future__ import annotations

import json
import time
from collections.abc import MutableMapping
from typing import Any

from starlette.routing import Route

from actors.gateway.access.asgi import ASGIApp, Receive, Scope, Send, scope_context
from actors.gateway.access.audit import Audit, AuditEvent, Outcome, Who
from actors.gateway.access.audit_http import record
from actors.gateway.access.limits import BucketDecision, RateLimits, limited_error, retry_after_seconds
from actors.gateway.access.principal import ReplicaAccess, access_token_of, principal_of

__all__ = ["MAX_READ", "RequestLimits", "limit_requests"]

MAX_READ = 1024 * 1024
"""Bytes of a refused request's body read at most, to find its id and method."""


class RequestLimits:
    """The ASGI middleware. Owned by the gateway's loop."""

    def __init__(
        self, app: ASGIApp, limits: RateLimits, audit: Audit | None = None, path: str = "/mcp"
    ) -> None:
        self._app = app
        self._limits = limits
        self._audit = audit
        self._path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or scope.get("path") != self._path
            or not self._limits.plan.limits_requests
        ):
            await self._app(scope, receive, send)
            return
        context = scope_context(scope)
        token = access_token_of(context)
        if isinstance(token, ReplicaAccess) or ("user" in scope and token is None):
            # A replica's (its caller counted where it came), or not authenticated (refused
            # next, 401, by the SDK's guard: no principal to count it against).
            await self._app(scope, receive, send)
            return
        principal = principal_of(context)
        started = time.time()
        decision = await self._limits.admit_request(principal)
        if decision.allowed:
            await self._app(scope, receive, send)
            return
        body, whole = await _read(receive)
        message = _message(body) if whole else None
        if message is not None and not _is_request(message):
            await self._app(scope, _replay(body, receive), send)
            return
        request_id = message.get("id") if message is not None else None
        if self._audit is not None:
            record(scope, self._audit, _event(Who.of(principal), message, started, decision))
        await _refuse(send, request_id, decision)


def limit_requests(app: Any, limits: RateLimits, audit: Audit | None, path: str) -> None:
    """Put `RequestLimits` in front of the endpoint of ``path`` in the SDK's Streamable HTTP
    app ``app`` (a Starlette app): inside its authentication, before its ``RequireAuth``."""
    for route in app.routes:
        if isinstance(route, Route) and route.path == path:
            route.app = RequestLimits(route.app, limits, audit, path)
            return
    raise ValueError(f"no route {path} in the MCP app")


async def _read(receive: Receive) -> tuple[bytes, bool]:
    """The request's body, up to `MAX_READ` bytes; whether that is all of it."""
    chunks: list[bytes] = []
    size = 0
    while True:
        event = await receive()
        if event["type"] != "http.request":
            return b"".join(chunks), False
        chunk = event.get("body", b"")
        size += len(chunk)
        if size > MAX_READ:
            return b"", False
        chunks.append(chunk)
        if not event.get("more_body", False):
            return b"".join(chunks), True


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body read already, then what the client sends next (its
    disconnect, which a streaming answer listens for)."""
    sent = False

    async def replay() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _message(body: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


def _is_request(message: dict[str, Any]) -> bool:
    """A JSON-RPC request (a method and an id): not a notification, not a response."""
    return isinstance(message.get("method"), str) and "id" in message


def _event(who: Who, message: dict[str, Any] | None, started: float, decision: BucketDecision) -> AuditEvent:
    method = message.get("method") if message is not None else None
    params = message.get("params") if message is not None else None
    params = params if isinstance(params, dict) else {}
    name = params.get("name") if isinstance(params.get("name"), str) else None
    arguments = params.get("arguments")
    uri = params.get("uri")
    return AuditEvent(
        who=who,
        method=method if isinstance(method, str) else "?",
        outcome=Outcome.LIMITED,
        tool=name if method == "tools/call" else None,
        prompt=name if method == "prompts/get" else None,
        uri=uri if isinstance(uri, str) else None,
        arguments=arguments if isinstance(arguments, dict) else None,
        reason=decision.key.scope.value if decision.key is not None else None,
        started=started,
        duration=max(0.0, time.time() - started),
    )


async def _refuse(send: Send, request_id: Any, decision: BucketDecision) -> None:
    error = limited_error(decision, "requests").error
    body = json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": error.model_dump(mode="json", exclude_none=True)}
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(retry_after_seconds(decision)).encode()),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})
