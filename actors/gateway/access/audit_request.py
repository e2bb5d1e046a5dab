"""`AuditMiddleware`: one audit record per request, where the SDK's server sees every request.

It wraps each request the gateway's MCP server answers (the SDK's context-tier middleware,
inside its OpenTelemetry span), over stdio and HTTP alike: lists and reads as well as calls.
What the request was about and how the gate decided comes from a `RequestNote` the middleware
puts in a context variable for the request's task: the gate notes the `Use` it admitted, a
denial and a limit (`actors.gateway.access.gate`), and the conversion of a backend's answer
notes its error type (`note_result`). Without a note (the request never reached the gate: a
list, a retry of a held request) the record takes the method's own params.

A request another replica forwarded here (its replica credential) is recorded where the client
sent it, not again here; the note says so to the gate, which does not count it against a
limit twice either (`RequestNote.forwarded`).

Runs on the gateway's loop; hands each record to the audit's writer (`Audit.submit`) and
returns: over HTTP through the request's exchange (`actors.gateway.access.audit_http.record`),
which writes the one record of the request the client sent.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError

from actors.gateway.access.audit import Audit, AuditEvent, Outcome, Who, current_trace_id
from actors.gateway.access.audit_http import record
from actors.gateway.access.limits import RATE_LIMITED
from actors.gateway.access.principal import ReplicaAccess, access_token_of, principal_of
from actors.gateway.access.use import EntityType, Use
from actors.gateway.access.verdict import Verdict
from actors.tools import ErrorType, ToolResult

__all__ = ["AuditMiddleware", "RequestNote", "current_note", "note_result"]

_UNRECORDED = frozenset({"ping"})
"""Requests too frequent and empty to be worth a record."""

_BY_CODE = {
    types.INVALID_PARAMS: ErrorType.VALIDATION,
    types.INVALID_REQUEST: ErrorType.VALIDATION,
    types.METHOD_NOT_FOUND: ErrorType.NOT_FOUND,
    types.REQUEST_TIMEOUT: ErrorType.TIMEOUT,
    types.CONNECTION_CLOSED: ErrorType.CONNECTION,
}


class RequestNote:
    """What is learnt of one request while it is served, for its record. Touched only by the
    request's own task, on the gateway's loop."""

    __slots__ = ("denied", "error_type", "forwarded", "limited", "use")

    def __init__(self, forwarded: bool = False) -> None:
        self.forwarded = forwarded
        """Forwarded by another replica: recorded and limited there."""
        self.use: Use | None = None
        self.denied: Verdict | None = None
        self.limited: str | None = None
        """The scope of the bucket that refused the request."""
        self.error_type: ErrorType | None = None


_NOTE: ContextVar[RequestNote | None] = ContextVar("mcp_actors_request_note", default=None)


def current_note() -> RequestNote | None:
    """The note of the request being served (None outside one, or in a test without the
    middleware)."""
    return _NOTE.get()


def note_result(result: ToolResult) -> None:
    """The backend's answer to the request being served: its error type, if it failed."""
    note = _NOTE.get()
    if note is not None and result.error_type is not None:
        note.error_type = result.error_type


class AuditMiddleware:
    """The SDK server middleware that records each request (`Server.middleware`)."""

    def __init__(self, audit: Audit) -> None:
        self._audit = audit

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None or ctx.method in _UNRECORDED:
            return await call_next(ctx)
        forwarded = isinstance(access_token_of(ctx), ReplicaAccess)
        note = RequestNote(forwarded)
        token = _NOTE.set(note)
        try:
            if forwarded:
                return await call_next(ctx)
            started, began = time.time(), time.monotonic()
            trace_id = current_trace_id()
            result: HandlerResult = None
            error: BaseException | None = None
            try:
                result = await call_next(ctx)
                return result
            except BaseException as exc:
                error = exc
                raise
            finally:
                fields = _event(ctx, note, result, error)
                who = Who.of(principal_of(ctx))
                duration = time.monotonic() - began
                event = AuditEvent(who=who, started=started, duration=duration, trace_id=trace_id, **fields)
                record(getattr(ctx.request, "scope", None), self._audit, event)
        finally:
            _NOTE.reset(token)


def _event(
    ctx: ServerRequestContext[Any, Any], note: RequestNote, result: Any, error: BaseException | None
) -> dict[str, Any]:
    """What the record says of the request: what it used, and how it ended."""
    fields: dict[str, Any] = {"method": ctx.method, **_what(ctx, note.use)}
    if note.limited is not None or (isinstance(error, MCPError) and error.code == RATE_LIMITED):
        fields.update(outcome=Outcome.LIMITED, reason=note.limited or _scope(error))
    elif note.denied is not None:
        fields.update(outcome=Outcome.DENIED, reason=",".join(note.denied.rules) or None)
    elif error is not None:
        fields.update(outcome=Outcome.ERROR, error_type=note.error_type or _error_type(error))
    elif _is_error(result) or note.error_type is not None:
        fields.update(outcome=Outcome.ERROR, error_type=note.error_type or ErrorType.SERVER_ERROR)
    else:
        fields.update(outcome=Outcome.OK)
    return fields


def _what(ctx: ServerRequestContext[Any, Any], use: Use | None) -> dict[str, Any]:
    if use is not None:
        named = {EntityType.TOOL: "tool", EntityType.PROMPT: "prompt"}.get(use.kind)
        what: dict[str, Any] = {"server": use.server or None, "uri": use.uri}
        if named is not None:
            what[named] = use.name
            what["arguments"] = use.arguments
        elif use.kind is EntityType.TEMPLATE and use.uri is None:
            what["uri"] = use.name
        return what
    # The gate did not see it: what the client named, as it named it.
    params = ctx.params if isinstance(ctx.params, Mapping) else {}
    name = params.get("name") if isinstance(params.get("name"), str) else None
    arguments = params.get("arguments")
    uri = params.get("uri")
    return {
        "tool": name if ctx.method == "tools/call" else None,
        "prompt": name if ctx.method == "prompts/get" else None,
        "uri": uri if isinstance(uri, str) else None,
        "arguments": arguments if isinstance(arguments, Mapping) and name is not None else None,
    }


def _is_error(result: Any) -> bool:
    if isinstance(result, types.CallToolResult):
        return bool(result.is_error)
    return isinstance(result, Mapping) and result.get("isError") is True


def _error_type(error: BaseException) -> ErrorType:
    if isinstance(error, asyncio.CancelledError):
        return ErrorType.CANCELLED
    if isinstance(error, TimeoutError):
        return ErrorType.TIMEOUT
    if isinstance(error, MCPError):
        return _BY_CODE.get(error.code, ErrorType.SERVER_ERROR)
    return ErrorType.EXECUTION


def _scope(error: BaseException | None) -> str | None:
    data = error.data if isinstance(error, MCPError) else None
    scope = data.get("scope") if isinstance(data, Mapping) else None
    return scope if isinstance(scope, str) else None
