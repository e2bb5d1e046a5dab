"""`MCPClient` and `MCPRegistry`: thin synchronous handles over the actors, for the tests.

They are what the lifecycle seed scenarios (features/mcp_lifecycle.feature) drive: one server,
or a few, each behind a small `Runtime` of its own; none is a second implementation. A host
uses `actors.Runtime` itself (issue 40: the behave-only handles are not part of the product).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from actors.config import BuiltinConfig, RuntimeConfig
from actors.mcp.adapter import TransportSource
from actors.mcp.config import ServerConfig
from actors.runtime.facade import Runtime
from actors.runtime.messages import ServerStatus, ShutdownAll
from actors.tools import ToolResult

__all__ = ["MCPClient", "MCPRegistry"]

_NO_BUILTINS = RuntimeConfig(builtin=BuiltinConfig(enabled=False))


class MCPClient:
    """One MCP server behind its own server actor: lazy start, idle stop, health checks."""

    def __init__(self, config: ServerConfig, transport: TransportSource | None = None) -> None:
        self.config = config
        self.runtime = Runtime.start(_NO_BUILTINS)
        try:
            self.runtime.register_server(config, transport)
        except BaseException:
            self.runtime.shutdown()
            raise

    @property
    def name(self) -> str:
        return self.config.name

    def status(self) -> ServerStatus:
        return self.runtime.status(self.name)[0]

    @property
    def state(self) -> str:
        return self.status().state

    @property
    def connected(self) -> bool:
        return self.status().connected

    @property
    def restart_count(self) -> int:
        return self.status().restarts

    @property
    def health_check_failures(self) -> int:
        return self.status().health_check_failures

    @property
    def capability_metadata(self) -> dict[str, bool]:
        """Which MCP features the connected server offers (tools, resources, prompts, ...)."""
        return self.status().capabilities

    def call_tool(
        self, tool: str, arguments: dict[str, Any] | None = None, timeout: float | None = None
    ) -> ToolResult:
        return self.runtime.call_tool(f"{self.name}/{tool}", arguments, timeout)

    def start(self, timeout: float | None = None) -> ServerStatus:
        """Start now and wait until running (idempotent)."""
        return self.runtime.start_server(self.name, timeout)

    def shutdown(self) -> ServerStatus:
        """Stop the server (idempotent); the handle stays usable and a call starts it again."""
        return self.runtime.stop_server(self.name)

    def close(self) -> None:
        """Stop the server and the actors behind this handle."""
        self.runtime.shutdown()

    def __enter__(self) -> MCPClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class MCPRegistry:
    """Several MCP servers under namespaces, each with its own lifecycle."""

    def __init__(self) -> None:
        self.runtime = Runtime.start(_NO_BUILTINS)

    def register(
        self, namespace: str, config: ServerConfig, transport: TransportSource | None = None
    ) -> ServerConfig:
        """Add ``config``'s server under ``namespace`` (which may differ from its name)."""
        named = (
            config
            if config.name == namespace
            else ServerConfig.model_validate({**config.model_dump(), "name": namespace})
        )
        return self.runtime.register_server(named, transport)

    @property
    def namespaces(self) -> list[str]:
        return [s.namespace for s in self.runtime.status()]

    def status(self, namespace: str) -> ServerStatus:
        return self.runtime.status(namespace)[0]

    def is_connected(self, namespace: str) -> bool:
        return self.status(namespace).connected

    def call_tool(
        self, namespace: str, tool: str, arguments: dict[str, Any] | None = None, timeout: float | None = None
    ) -> ToolResult:
        return self.runtime.call_tool(f"{namespace}/{tool}", arguments, timeout)

    def start(self, namespace: str) -> ServerStatus:
        return self.runtime.start_server(namespace)

    def shutdown_all(self, timeout: float = 15.0) -> None:
        """Stop every server in parallel; the registrations stay."""
        message = ShutdownAll()
        self.runtime.registry.tell(message)
        message.reply.result(timeout=timeout)

    def close(self) -> None:
        self.runtime.shutdown()

    def __enter__(self) -> MCPRegistry:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
