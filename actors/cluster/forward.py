"""`Forwarder`: a call for a single-affinity server, sent to the replica that runs it.

The owner is another gateway replica: the call goes to its MCP endpoint over the SDK's
Streamable HTTP client, in the 2026-07-28 era (stateless: one POST per request, no handshake),
with the cluster's bearer token, under the external name the owner serves it by. A header marks
it forwarded, so the owner serves it itself or refuses it, never forwards it again.

Every outcome is a `ToolResult` in the shape the gateway answers from (a tool call's
``content``/``structuredContent``, a read's ``contents``, a prompt's ``messages``); failures are
classified: ``connection`` with `is_unreachable` true when the owner could not be reached at all
(the call never ran there); ``connection`` too when the owner went away mid-call (it may have run);
``timeout`` past the server's call timeout.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from types import UnionType
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult

from actors.mcp.tls import default_ssl_context
from actors.tools import ErrorType, ToolResult

__all__ = ["FORWARDED_HEADER", "Forwarder", "is_unreachable"]

logger = logging.getLogger(__name__)

FORWARDED_HEADER = "x-mcp-actors-forwarded"
"""Set (to the sending replica's id) on a forwarded request: the owner never forwards it on."""

_E = TypeVar("_E", bound=BaseException)

_ERA = "2026-07-28"
_CONNECT_TIMEOUT = 5.0


def is_unreachable(result: ToolResult) -> bool:
    """Whether ``result`` says the owner could not be reached: the request never ran there."""
    return bool(result.metadata.get("unreachable"))


class Forwarder:
    """Sends requests to other replicas as this replica (``replica_id``), with ``token``."""

    def __init__(self, replica_id: str, token: str | None = None) -> None:
        self.replica_id = replica_id
        self._headers = {FORWARDED_HEADER: replica_id}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        # Built here, on the caller's thread: never on the event loop that forwards.
        self._ssl: ssl.SSLContext = default_ssl_context()

    async def call_tool(
        self, address: str, name: str, arguments: dict[str, Any], timeout: float
    ) -> ToolResult:
        """``tools/call`` of ``name`` (the external name) at ``address``."""

        async def send(client: Client) -> ToolResult:
            result = await client.call_tool(name, arguments)
            return _tool_result(result)

        return await self._send(address, timeout, send)

    async def read_resource(self, address: str, uri: str, timeout: float) -> ToolResult:
        """``resources/read`` of ``uri`` at ``address``."""

        async def send(client: Client) -> ToolResult:
            result = await client.read_resource(uri, cache_mode="bypass")
            return ToolResult.ok(_dumped(result))

        return await self._send(address, timeout, send)

    async def get_prompt(
        self, address: str, name: str, arguments: dict[str, str], timeout: float
    ) -> ToolResult:
        """``prompts/get`` of ``name`` (the external name) at ``address``."""

        async def send(client: Client) -> ToolResult:
            result = await client.get_prompt(name, arguments)
            return ToolResult.ok(_dumped(result))

        return await self._send(address, timeout, send)

    async def _send(
        self, address: str, timeout: float, send: Callable[[Client], Awaitable[ToolResult]]
    ) -> ToolResult:
        start = time.monotonic()
        try:
            with anyio.fail_after(timeout):
                async with httpx2.AsyncClient(
                    headers=self._headers,
                    timeout=httpx2.Timeout(timeout, connect=min(timeout, _CONNECT_TIMEOUT)),
                    verify=self._ssl,
                ) as http:
                    transport = streamable_http_client(address, http_client=http, terminate_on_close=False)
                    async with Client(transport, mode=_ERA, cache=None) as client:
                        result = await send(client)
        except TimeoutError:
            return ToolResult.fail(
                ErrorType.TIMEOUT, f"the owner replica at {address} gave no answer within {timeout:g} s"
            )
        except Exception as exc:  # the transport's errors, often in exception groups
            if _is_connect_failure(exc):
                return _unreachable(address, exc)
            answered = _found(exc, MCPError)
            if answered is not None:
                # The owner answered with an error (a name or URI it does not know, say).
                kind = (
                    ErrorType.NOT_FOUND if answered.error.code == INVALID_PARAMS else ErrorType.SERVER_ERROR
                )
                return ToolResult.fail(kind, answered.error.message)
            return ToolResult.fail(
                ErrorType.CONNECTION, f"the owner replica at {address} went away mid-request: {_reason(exc)}"
            )
        elapsed = (time.monotonic() - start) * 1000.0
        logger.debug("forwarded to %s in %.1f ms", address, elapsed)
        return ToolResult(
            success=result.success,
            output=result.output,
            error=result.error,
            error_type=result.error_type,
            duration_ms=elapsed,
            metadata={**result.metadata, "forwarded_to": address},
        )


def _unreachable(address: str, exc: BaseException) -> ToolResult:
    return ToolResult.fail(
        ErrorType.CONNECTION,
        f"the owner replica at {address} is unreachable: {_reason(exc)}",
        unreachable=True,
    )


def _is_connect_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps) says no connection was made."""
    return _found(exc, httpx2.ConnectError | httpx2.ConnectTimeout | ConnectionRefusedError) is not None


def _found(exc: BaseException, kind: type[_E] | UnionType) -> _E | None:
    """``exc`` or the first exception of ``kind`` it wraps (in groups, causes, contexts)."""
    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kind):
            return current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(inner for inner in (current.__cause__, current.__context__) if inner is not None)
    return None


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__


def _dumped(result: Any) -> dict[str, Any]:
    return dict(result.model_dump(mode="json", by_alias=True, exclude_none=True))


def _tool_result(result: CallToolResult) -> ToolResult:
    """The owner's answer, shaped as the runtime shapes a server's (`actors.gateway` reads it)."""
    answer = _dumped(result)
    content = answer.get("content", [])
    if result.is_error:
        texts = [c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        return ToolResult.fail(
            ErrorType.SERVER_ERROR, "; ".join(t for t in texts if t) or "error", content=content
        )
    output: dict[str, Any] = {"content": content}
    if "structuredContent" in answer:
        output["structuredContent"] = answer["structuredContent"]
    return ToolResult.ok(output)
