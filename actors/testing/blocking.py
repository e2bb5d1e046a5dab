"""`BlockingAdapter`: an `MCPToolAdapter` driven from a plain thread, for tests and scripts.

The runtime never blocks: its actors use the adapter's futures. A test (or a script that wants
one server's tools without the actors) waits on them instead; every wait has a timeout, and
every failure is classified as the adapter classifies it.
"""

from __future__ import annotations

import concurrent.futures
import logging
from typing import Any, TypeVar

from actors.mcp.adapter import MCPToolAdapter, TransportSource
from actors.mcp.config import ServerConfig, ToolFilter
from actors.mcp.loop import EventLoop
from actors.mcp.requests import GUARD_SLACK
from actors.mcp.transport import RemoteTool, ServerInfo, TransportEvents
from actors.tools import ErrorType, ToolError, ToolHandler, ToolRegistry, ToolResult, ToolSpec, duration_text

__all__ = ["BlockingAdapter"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class BlockingAdapter:
    """The blocking API of one server's adapter: connect, discover, invoke, register.

    ``adapter`` is the `MCPToolAdapter` underneath, for its futures (``read_future`` ...).
    """

    def __init__(
        self,
        config: ServerConfig,
        transport: TransportSource | None = None,
        *,
        loop: EventLoop | None = None,
    ) -> None:
        self.adapter = MCPToolAdapter(config, transport, loop=loop)
        self.config = config

    # ---- the adapter's state -------------------------------------------------------------

    @property
    def server_name(self) -> str:
        return self.adapter.server_name

    @property
    def transport_name(self) -> str:
        return self.adapter.transport_name

    @property
    def connected(self) -> bool:
        return self.adapter.connected

    @property
    def pid(self) -> int | None:
        return self.adapter.pid

    @property
    def server_info(self) -> ServerInfo | None:
        return self.adapter.server_info

    @property
    def capabilities(self) -> dict[str, Any]:
        return self.adapter.capabilities

    @property
    def discovered_tools(self) -> list[RemoteTool]:
        return self.adapter.discovered_tools

    # ---- blocking calls -----------------------------------------------------------------

    def connect(self, timeout: float | None = None, events: TransportEvents | None = None) -> ServerInfo:
        """Connect and handshake; idempotent. Raises `ToolError` of type ``connection``."""
        return self._wait(
            self.adapter.connect_future(timeout, events), timeout or self.config.connect_timeout
        )

    def disconnect(self, timeout: float = 5.0) -> None:
        """Close the connection; idempotent, never raises."""
        try:
            self._wait(self.adapter.disconnect_future(), timeout)
        except ToolError:
            logger.warning("%s: disconnect did not finish within %.1fs", self.server_name, timeout)
        finally:
            self.adapter.release_loop()

    def reconnect(self, timeout: float | None = None, events: TransportEvents | None = None) -> ServerInfo:
        """Disconnect, forget discovered tools, connect again."""
        self.disconnect()
        return self.connect(timeout, events)

    def discover(self, tool_filter: ToolFilter | None = None) -> list[RemoteTool]:
        """List the server's tools (every page), keep those the filter allows."""
        listed = self._wait(self.adapter.discover_future(tool_filter), self.config.call_timeout)
        return list(listed)

    def invoke(self, tool: str, arguments: dict[str, Any], timeout: float | None = None) -> ToolResult:
        """Call a tool (checked first); every failure is a failed `ToolResult`, never an exception."""
        limit = timeout if timeout is not None else self.config.call_timeout
        future = self.adapter.invoke_future(tool, arguments, limit)
        try:
            return future.result(timeout=limit + 2 * GUARD_SLACK)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return ToolResult.fail(ErrorType.TIMEOUT, f"{tool} got no answer within {duration_text(limit)}")

    def tool_specs(self, namespace: str | None = None) -> list[ToolSpec]:
        """`ToolSpec`s for the discovered tools, each calling `invoke`."""
        return self.adapter.tool_specs_for(
            namespace or self.server_name, self.adapter.discovered_tools, self._handler
        )

    def register(self, registry: ToolRegistry, namespace: str | None = None) -> list[ToolSpec]:
        """Register the discovered tools as ``namespace/tool`` (replacing that namespace whole)."""
        if not self.adapter.discovered:
            self.discover()
        specs = self.tool_specs(namespace)
        registry.replace_namespace(namespace or self.server_name, specs)
        return specs

    def reregister(self, registry: ToolRegistry, namespace: str | None = None) -> list[ToolSpec]:
        """Discover again and swap the namespace's tools: added appear, removed disappear."""
        self.discover()
        return self.register(registry, namespace)

    def _handler(self, remote: RemoteTool) -> ToolHandler:
        def handler(inputs: dict[str, Any]) -> ToolResult:
            return self.invoke(remote.name, inputs)

        return handler

    def _wait(self, future: concurrent.futures.Future[_T], timeout: float) -> _T:
        try:
            return future.result(timeout=timeout + 2 * GUARD_SLACK)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ToolError(self.server_name, ErrorType.TIMEOUT, f"no answer within {timeout}s") from None

    def __repr__(self) -> str:
        return f"<BlockingAdapter {self.adapter!r}>"
