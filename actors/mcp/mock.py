"""`MockTransport`: a scriptable in-memory MCP server for tests, in the spirit of httpx's.

It implements the `Transport` protocol without a process or a socket: tools with Python
handlers, scripted connect failures and hangs, a crash after N calls (the server goes silent,
so only a health probe notices), slow calls, and tool-list changes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

import anyio

from actors.mcp.transport import CallOutcome, RemoteTool, ServerInfo, TransportEvents

__all__ = ["MockTransport", "ToolBehaviour"]

logger = logging.getLogger(__name__)

ToolBehaviour = Callable[[dict[str, Any]], Any]
"""Returns a dict (structured content, also sent as JSON text), a `CallOutcome`, or raises."""

_FULL_CAPABILITIES: dict[str, Any] = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": False, "listChanged": False},
    "prompts": {"listChanged": False},
}


class MockTransport:
    """An MCP server in memory. Reusable: it can be connected again after a close."""

    kind = "mock"

    def __init__(
        self,
        tools: Iterable[RemoteTool | str] = (),
        handlers: dict[str, ToolBehaviour] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        connect_failures: int = 0,
        hang_on_connect: bool = False,
        fail_on_close: bool = False,
        crash_after: int | None = None,
        call_delay: float = 0.0,
        server_name: str = "mock",
    ) -> None:
        self.tools: list[RemoteTool] = [RemoteTool(name=t) if isinstance(t, str) else t for t in tools]
        self.handlers: dict[str, ToolBehaviour] = dict(handlers or {})
        self.capabilities = dict(
            capabilities if capabilities is not None else {"tools": {"listChanged": True}}
        )
        self.connect_failures = connect_failures
        self.hang_on_connect = hang_on_connect
        self.fail_on_close = fail_on_close
        self.crash_after = crash_after
        self.call_delay = call_delay
        self.server_name = server_name
        self.connects = 0
        self.closes = 0
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.connected = False
        self.crashed = False
        self._calls_this_connection = 0
        self._events: TransportEvents | None = None

    @classmethod
    def full_capabilities(cls, tools: Iterable[RemoteTool | str] = ()) -> MockTransport:
        """A server that offers tools, resources and prompts."""
        return cls(tools, capabilities=_FULL_CAPABILITIES)

    @property
    def pid(self) -> int | None:
        return None

    async def connect(self, events: TransportEvents | None = None) -> ServerInfo:
        if self.hang_on_connect:
            await anyio.sleep_forever()
        if self.connect_failures > 0:
            self.connect_failures -= 1
            raise ConnectionError(f"{self.server_name} refused the connection")
        self.connects += 1
        self.connected, self.crashed = True, False
        self._calls_this_connection = 0
        self._events = events
        return ServerInfo(
            name=self.server_name,
            version="1.0",
            protocol_version="mock",
            capabilities=dict(self.capabilities),
        )

    def _require_alive(self) -> None:
        if not self.connected or self.crashed:
            raise ConnectionError(f"{self.server_name} is not answering")

    async def list_tools(self) -> list[RemoteTool]:
        self._require_alive()
        return list(self.tools)

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float | None) -> CallOutcome:
        self._require_alive()
        self.calls.append((name, arguments))
        self._calls_this_connection += 1
        if self.crash_after is not None and self._calls_this_connection > self.crash_after:
            self.crashed = True
            raise ConnectionError(f"{self.server_name} crashed")
        if self.call_delay:
            with anyio.fail_after(timeout if timeout is not None else float("inf")):
                await anyio.sleep(self.call_delay)
        if self.crash_after is not None and self._calls_this_connection >= self.crash_after:
            # The call is answered, then the server dies silently: only a probe can tell.
            self.crashed = True
        behaviour = self.handlers.get(name)
        value = behaviour(arguments) if behaviour is not None else {"ok": True}
        if isinstance(value, CallOutcome):
            return value
        return CallOutcome(
            content=[{"type": "text", "text": json.dumps(value)}],
            structured_content=value if isinstance(value, dict) else {"result": value},
        )

    async def probe(self) -> None:
        self._require_alive()

    async def close(self) -> None:
        self.closes += 1
        self.connected = False
        self._events = None
        if self.fail_on_close:
            raise RuntimeError(f"{self.server_name} failed to close cleanly")

    def add_tool(self, tool: RemoteTool | str) -> None:
        """Add a tool and tell the client its list changed (as a server's notification would)."""
        self.tools.append(RemoteTool(name=tool) if isinstance(tool, str) else tool)
        if self._events is not None:
            self._events.on_tools_changed()

    def crash(self) -> None:
        """Die silently now."""
        self.crashed = True

    def die(self, reason: str = "process exited") -> None:
        """Die and say so, as a process exit seen by the transport would."""
        self.crashed = True
        if self._events is not None:
            self._events.on_closed(reason)
