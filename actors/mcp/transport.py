"""The transport seam: what the adapter needs from a connection to one MCP server.

Every method is a coroutine run on the runtime's one event-loop thread (`EventLoop`).
The real implementation drives the official SDK (`SDKTransport`); the seed scenarios use
mock transports that implement the same protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "CallOutcome",
    "RemoteTool",
    "ServerInfo",
    "ServerReplyError",
    "StartRefused",
    "Transport",
    "TransportEvents",
]


class StartRefused(ConnectionError):
    """The server cannot start as configured, and trying again will not change that.

    For example: the command does not exist, or the server does not speak the pinned protocol.
    The runtime marks such a server ``failed`` at once instead of restarting it.
    """


class ServerReplyError(Exception):
    """The server answered a request with a JSON-RPC error.

    Transports raise it in place of their SDK's own error type, so that classifying a failure
    never needs the SDK (importing it on the event-loop thread would stall every server).
    """

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"


@dataclass(frozen=True)
class ServerInfo:
    """What the handshake told us about the server."""

    name: str = ""
    version: str = ""
    protocol_version: str = ""
    capabilities: dict[str, Any] = field(default_factory=dict)
    """The server's capabilities as JSON (``{"tools": {...}, "resources": {...}, ...}``)."""
    instructions: str | None = None


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the server lists it."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    """MCP tool annotations as JSON (``readOnlyHint``, ``destructiveHint``, ...)."""


@dataclass(frozen=True)
class CallOutcome:
    """A ``tools/call`` result as JSON: the content blocks and the structured content."""

    content: list[dict[str, Any]] = field(default_factory=list)
    structured_content: dict[str, Any] | None = None
    is_error: bool = False


class TransportEvents(Protocol):
    """Told by a transport, from the event-loop thread, about things that happen to it.

    Implementations must not block: they hand the news over (for example with an actor's
    ``tell``) and return.
    """

    def on_closed(self, reason: str) -> None:
        """The peer went away (process exit, closed stream) without being asked to."""

    def on_tools_changed(self) -> None:
        """The server said its tool list changed."""


@runtime_checkable
class Transport(Protocol):
    """One connection to one MCP server. Single use: connect once, close once.

    Errors: `connect` raises ``ConnectionError`` (or ``OSError``) when the server cannot be
    reached or dies during the handshake; requests raise ``ConnectionError`` when the peer
    has died (fast: in-flight requests fail as soon as the death is seen), ``TimeoutError``
    when ``timeout`` runs out (after telling the server the request is cancelled), and
    `ServerReplyError` (or any other exception) for an error the server answered with.
    """

    kind: str
    """``stdio``, ``streamable-http``, ``sse`` or, for test doubles, ``mock``."""

    @property
    def pid(self) -> int | None:
        """The server's process id for stdio transports once connected, else None."""
        ...

    async def connect(self, events: TransportEvents | None = None) -> ServerInfo:
        """Open the connection and do the handshake."""
        ...

    async def list_tools(self) -> list[RemoteTool]:
        """Every tool the server lists, following pagination."""
        ...

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float | None) -> CallOutcome:
        """Call one tool; many calls may be in flight at once."""
        ...

    async def probe(self) -> None:
        """Check the server answers, in either protocol era; raise if it does not."""
        ...

    async def close(self) -> None:
        """Close the connection and reap what it started. Idempotent; never raises."""
        ...
