"""Handshake-era requests over HTTP answered in JSON when their reply is the first thing to say.

The SDK's Streamable HTTP transport answers every request of a handshake-era session with an
SSE stream, so that the server can send the request's notifications and its own requests
(sampling, elicitation, roots) before the reply. That stream costs the gateway about a third of
its CPU per call (`benchmarks/gateway_load.py`), and most calls say nothing before their reply.
The specification lets the server choose per request between one JSON body and an SSE stream.

`FirstReplyTransport` chooses on what comes first: the request is dispatched, and if its reply
is the first message for it within `STREAM_AFTER` seconds, that reply is the JSON body. If a
notification or a server request comes first, or nothing comes in time, the answer is the SDK's
own SSE stream, starting with what came; nothing is lost, and a long call keeps the stream's
keep-alive. Everything else (initialize, notifications, GET, DELETE, sessions with an event
store, the SDK's errors) is the SDK's own handling.

Owned by the gateway's event-loop thread, as every transport of the SDK's session manager is.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from http import HTTPStatus
from typing import Any

import anyio
import pydantic_core
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.streamable_http import (
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID_HEADER,
    REQUEST_STREAM_BUFFER_SIZE,
    EventMessage,
    SSEEvent,
    StreamableHTTPServerTransport,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

__all__ = ["STREAM_AFTER", "FirstReplyTransport", "answer_first_replies_in_json"]

logger = logging.getLogger(__name__)

STREAM_AFTER = 1.0
"""Seconds a request may take to reply before its answer becomes an SSE stream anyway."""


class _Arrivals:
    """The send side of a request's stream that also says when the first message arrived.

    The SDK's router sends into ``_request_streams[id][0]``; waiting on `arrived` instead of
    receiving under a timeout means a message that arrives as the wait ends is never lost.
    """

    def __init__(self, inner: MemoryObjectSendStream[EventMessage]) -> None:
        self._inner = inner
        self.arrived = anyio.Event()

    async def send(self, item: EventMessage) -> None:
        await self._inner.send(item)
        self.arrived.set()

    async def aclose(self) -> None:
        await self._inner.aclose()
        self.arrived.set()


class FirstReplyTransport(StreamableHTTPServerTransport):
    """The SDK's transport, answering a request in JSON when its reply comes first."""

    async def _handle_post_request(
        self, scope: Scope, request: Request, receive: Receive, send: Send
    ) -> None:
        message = await self._plain_request(request)
        if message is None:
            await super()._handle_post_request(scope, request, receive, send)
            return
        if not await self._validate_accept_header(request, scope, send):
            return
        if not await self._validate_request_headers(request, send):
            return
        try:
            await self._answer(message, request, scope, receive, send)
        except Exception as err:
            logger.exception("Error handling POST request")
            await self._clean_up_memory_streams(str(message.id))
            await self._create_error_response(
                "Error handling POST request", HTTPStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR
            )(scope, receive, send)
            if self._read_stream_writer is not None:
                await self._read_stream_writer.send(Exception(err))

    async def _plain_request(self, request: Request) -> JSONRPCRequest | None:
        """The request this POST carries when it is one this class answers; None otherwise
        (the SDK answers it, errors included). Starlette keeps the body for the SDK to read."""
        if (
            self.is_json_response_enabled
            or self._event_store is not None
            or not self._check_content_type(request)
        ):
            return None
        try:
            message = jsonrpc_message_adapter.validate_python(
                pydantic_core.from_json(await request.body()), by_name=False
            )
        except (ValueError, ValidationError):
            return None
        if not isinstance(message, JSONRPCRequest) or message.method == "initialize":
            return None
        return message

    async def _answer(
        self, message: JSONRPCRequest, request: Request, scope: Scope, receive: Receive, send: Send
    ) -> None:
        writer = self._read_stream_writer
        if writer is None:  # pragma: no cover - connect() runs before any request is served
            raise ValueError("No read stream writer available. Ensure connect() is called first.")
        request_id = str(message.id)
        sending, reading = anyio.create_memory_object_stream[EventMessage](REQUEST_STREAM_BUFFER_SIZE)
        arrivals = _Arrivals(sending)
        self._request_streams[request_id] = (arrivals, reading)  # type: ignore[assignment]
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
        await writer.send(self._create_session_message(message, request, request_id, version))
        # A plain timer, not a cancel scope: the wait is never cancelled, only ended early.
        timer = asyncio.get_running_loop().call_later(STREAM_AFTER, arrivals.arrived.set)
        try:
            await arrivals.arrived.wait()
        finally:
            timer.cancel()
        first: EventMessage | None = None
        try:
            first = reading.receive_nowait()
        except anyio.WouldBlock:
            pass  # nothing yet: a slow request, answered as a stream
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            await self._clean_up_memory_streams(request_id)
            logger.debug("Session terminated with request %s in flight; no response to send", request_id)
            await self._create_error_response(
                "Session terminated before the request completed",
                HTTPStatus.INTERNAL_SERVER_ERROR,
                INTERNAL_ERROR,
            )(scope, receive, send)
            return
        if first is not None and isinstance(first.message, JSONRPCResponse | JSONRPCError):
            await self._clean_up_memory_streams(request_id)
            await self._create_json_response(first.message)(scope, receive, send)
            return
        await self._stream(request_id, first, scope, receive, send)

    async def _stream(
        self, request_id: str, first: EventMessage | None, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """The SDK's SSE answer, starting with ``first``."""
        sse_writer, sse_reader = anyio.create_memory_object_stream[SSEEvent](0)
        self._sse_stream_writers[request_id] = sse_writer
        opening = self._create_event_data(first) if first is not None else None
        headers = {
            "Cache-Control": "no-cache, no-transform",
            "Connection": "keep-alive",
            "Content-Type": CONTENT_TYPE_SSE,
            **({MCP_SESSION_ID_HEADER: self.mcp_session_id} if self.mcp_session_id else {}),
        }
        reading = self._request_streams[request_id][1]
        response = EventSourceResponse(
            content=sse_reader,
            data_sender_callable=partial(self._run_sse_writer, request_id, sse_writer, reading, opening),
            headers=headers,
        )
        try:
            await response(scope, receive, send)
        finally:
            await sse_reader.aclose()


def answer_first_replies_in_json(manager: StreamableHTTPSessionManager) -> None:
    """Make every session ``manager`` admits from now on a `FirstReplyTransport`.

    The SDK's manager builds its transports itself and offers no factory; its admission is the
    one place a session's transport is made, so that is where the class is set. A test pins it
    (tests/gateway/test_first_reply.py), so an SDK that changes it fails there, not in use.
    """
    admit = manager._admit_session

    def admitted(requestor: Any) -> StreamableHTTPServerTransport | None:
        transport = admit(requestor)
        if transport is not None and type(transport) is StreamableHTTPServerTransport:
            transport.__class__ = FirstReplyTransport
        return transport

    manager._admit_session = admitted  # type: ignore[method-assign]
