"""The SDK's transport and HTTP auth, wrapped so that the `PeerWatch` sees what happens in them.

``ObservedTransport`` reports the spawn of a stdio server and the read stream it opened;
``ObservedReadStream`` reports the end of the server's messages that nobody asked for;
``ObservedAuth`` reports each refused login as it happens (the SDK's streamable HTTP transport
lets it end the session wrapped in task groups, its SSE transport only logs it and then waits,
and the GET stream retries). Each calls the watch's public methods only. The SSE transport's
own ERROR record of such a refusal is dropped (`ReportedRefusals`): the watch reports it,
classified, and formatting its traceback would read source files on the loop.

Run on the event-loop thread, inside the session owner's task (or the SDK's tasks under it).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any

import anyio
import httpx2
from mcp.shared.message import SessionMessage

from actors.mcp.auth import AuthRefused, auth_failure, refusal_reason
from actors.mcp.sdk_transport.peer import PeerWatch

__all__ = ["ObservedAuth", "ObservedReadStream", "ObservedTransport", "ReportedRefusals"]


class ReportedRefusals(logging.Filter):
    """A filter of the SDK's SSE client logger: its record of an exception that is only
    `AuthRefused` (raised by `ObservedAuth`, reported by the watch) is dropped. Stateless."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return exc is None or not _only_refusals(exc)


def _only_refusals(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_refusals(inner) for inner in exc.exceptions)
    return isinstance(exc, AuthRefused)


_SSE_CLIENT_LOG = logging.getLogger("mcp.client.sse")
if not any(isinstance(known, ReportedRefusals) for known in _SSE_CLIENT_LOG.filters):
    _SSE_CLIENT_LOG.addFilter(ReportedRefusals())


class ObservedAuth(httpx2.Auth):
    """A session's HTTP auth: the login's provider, if any, each refusal reported to the watch.

    Without a provider a 401 or 403 answer is a refusal too.
    """

    def __init__(self, inner: httpx2.Auth | None, watch: PeerWatch) -> None:
        self._inner = inner
        self._watch = watch

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        label = self._watch.label
        try:
            if self._inner is None:
                response = yield request
                if response.status_code in (401, 403):
                    raise AuthRefused(label, response.status_code, refusal_reason(response))
                return
            flow = self._inner.async_auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()
        except Exception as exc:
            failure = auth_failure(exc, label)
            if failure is None:
                raise
            self._watch.refused(failure)
            if failure is exc:
                raise
            raise failure from exc


class ObservedTransport:
    """Wraps an SDK transport: reports the spawn and the read stream it opened."""

    def __init__(self, inner: AbstractAsyncContextManager[Any], watch: PeerWatch) -> None:
        self._inner = inner
        self._watch = watch

    async def __aenter__(self) -> tuple[ObservedReadStream, Any]:
        try:
            read_stream, write_stream = await self._inner.__aenter__()
        finally:
            self._watch.after_spawn()
        observed = ObservedReadStream(read_stream, self._watch)
        self._watch.stream_opened(observed)
        return observed, write_stream

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        # The stdio stream stops its server within the graces as it exits (actors.mcp.stdio_stream).
        return await self._inner.__aexit__(exc_type, exc, tb)


class ObservedReadStream:
    """The SDK's read stream, telling the watch when it ends while nobody asked it to."""

    def __init__(self, inner: Any, watch: PeerWatch) -> None:
        self._inner = inner
        self._watch = watch

    @property
    def last_context(self) -> Any:
        """The sender's contextvars snapshot, for transports whose streams carry one."""
        return getattr(self._inner, "last_context", None)

    def close(self) -> None:
        """End the stream now: the SDK's receive loop stops as at end of file."""
        close = getattr(self._inner, "close", None)
        if callable(close):
            close()

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._watch.peer_lost("the server closed the connection")
            raise
        return item

    def __aiter__(self) -> ObservedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> ObservedReadStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
