"""The transport seam: what the adapter needs from a connection to one MCP server.

Every method is a coroutine run on the runtime's one event-loop thread (`EventLoop`).
The real implementation drives the official SDK (`SDKTransport`); the seed scenarios use
mock transports that implement the same protocol.

`Transport` is what tools need; `ClientTransport` adds reads, prompts and subscriptions.
`RequestTransport` is the narrow seam: a request as a value (`Request`) in, its result as JSON
out; the catalog's lists, completion and the methods of extensions (skills) are written above
it, as typed helpers (`actors.mcp.list_requests`, `actors.mcp.request_functions`,
`actors.mcp.skill_requests`), and need nothing more of a transport. Server-to-client
requests (sampling, elicitation, roots) are answered by `ClientHandlers`, given to a transport
when it is made.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "CallOutcome",
    "ClientHandlers",
    "ClientTransport",
    "JSONObject",
    "Progress",
    "RemotePrompt",
    "RemoteResource",
    "RemoteResourceTemplate",
    "RemoteTool",
    "Request",
    "RequestTransport",
    "ServerInfo",
    "ServerReplyError",
    "StartRefused",
    "StrayOutput",
    "Transport",
    "TransportEvents",
    "stray_text",
]

JSONObject = dict[str, Any]
"""An MCP object as JSON (camelCase keys, ``None`` fields left out)."""

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""``progress(progress, total, message)`` for one request's progress notifications (on the loop)."""


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

    def __init__(self, message: str, code: int, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data
        """The error's ``data``, as JSON (for example the capabilities a -32021 names)."""

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
    task_support: str | None = None
    """``execution.taskSupport`` (2025-11-25): ``forbidden``, ``optional`` or ``required``."""
    definition: JSONObject | None = field(default=None, compare=False, repr=False)
    """The whole ``Tool`` as the server sent it (MCP JSON: title, icons, ``_meta`` too), what
    `actors.pins` pins; None where a transport does not keep it (built from the fields above)."""


@dataclass(frozen=True)
class RemoteResource:
    """A resource as the server lists it (``resources/list``)."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: JSONObject | None = None


@dataclass(frozen=True)
class RemoteResourceTemplate:
    """A resource template as the server lists it (``resources/templates/list``)."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: JSONObject | None = None


@dataclass(frozen=True)
class RemotePrompt:
    """A prompt as the server lists it (``prompts/list``); ``arguments`` as JSON
    (``[{"name": ..., "description": ..., "required": ...}]``)."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[JSONObject, ...] = ()


@dataclass(frozen=True)
class ClientHandlers:
    """How a client answers a server's requests; None leaves that capability undeclared.

    Each is a coroutine function run on the loop; it must hand the work to the host (never run
    host code on the loop) and bound it with a timeout. Raising answers the server with an
    error; the session goes on.
    """

    sampling: Callable[[JSONObject], Awaitable[JSONObject]] | None = None
    """``sampling/createMessage`` params → a ``CreateMessageResult`` (JSON)."""
    elicitation: Callable[[JSONObject], Awaitable[JSONObject]] | None = None
    """``elicitation/create`` params → an ``ElicitResult`` (JSON); overrides an elicitation policy."""
    roots: Callable[[], Awaitable[list[JSONObject]]] | None = None
    """→ the roots (``[{"uri": "file:///...", "name": ...}]``) for ``roots/list``."""


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

    def on_closed(self, reason: str, *, auth: bool = False) -> None:
        """The peer went away (process exit, closed stream) without being asked to; ``auth``:
        because the server refused the login (the session cannot go on without a new one)."""

    def on_tools_changed(self) -> None:
        """The server said its tool list changed."""

    def on_resources_changed(self) -> None:
        """The server said its resource (or resource template) list changed."""

    def on_prompts_changed(self) -> None:
        """The server said its prompt list changed."""

    def on_resource_updated(self, uri: str) -> None:
        """A subscribed resource changed (``notifications/resources/updated`` or a listen event)."""

    def on_log(self, level: str, logger: str | None, data: Any) -> None:
        """The server sent a log message (``notifications/message``)."""


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

    async def list_tools(self) -> Sequence[RemoteTool]:
        """Every tool the server lists, following pagination: a list, or an
        `actors.mcp.freshness.Listing` that carries the pages' caching hint beside them."""
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


@runtime_checkable
class StrayOutput(Protocol):
    """A transport that keeps what a stdio server wrote to stdout that is not MCP (a banner,
    ``Downloading package...``), for a failed start to quote."""

    def stray_output(self) -> tuple[str, ...]:
        """The first such lines of the last connection attempt, quoted and cut short; on the loop."""
        ...


def stray_text(lines: Sequence[str]) -> str:
    """What a failed start says of ``lines`` (`StrayOutput.stray_output`): nothing for none."""
    return f"the server wrote to stdout what is not MCP: {' | '.join(lines)}" if lines else ""


@runtime_checkable
class ClientTransport(Transport, Protocol):
    """A `Transport` that also reads resources, gets prompts and follows subscriptions.

    Lists follow pagination. Requests raise as `Transport` documents; a request the server
    does not support raises `ServerReplyError` (``-32601``).
    """

    async def call_tool_with_progress(
        self, name: str, arguments: dict[str, Any], timeout: float | None, progress: Progress
    ) -> CallOutcome:
        """`call_tool`, asking the server for progress notifications (a progress token)."""
        ...

    async def read_resource(self, uri: str, timeout: float | None) -> JSONObject:
        """The ``ReadResourceResult`` as JSON: ``{"contents": [{"uri", "mimeType", "text" | "blob"}]}``,
        and its caching hint, if any, under `actors.mcp.freshness.CACHE_HINT`."""
        ...

    async def get_prompt(self, name: str, arguments: dict[str, str], timeout: float | None) -> JSONObject:
        """The ``GetPromptResult`` as JSON: ``{"description"?, "messages": [...]}``."""
        ...

    async def subscribe_resource(self, uri: str) -> None:
        """Follow updates of ``uri`` (``resources/subscribe``, or ``subscriptions/listen`` on
        2026-07-28 sessions); updates arrive as `TransportEvents.on_resource_updated`."""
        ...

    async def unsubscribe_resource(self, uri: str) -> None: ...


@dataclass(frozen=True)
class Request:
    """One request as a value: its method and its params (JSON, ``_meta`` left to the session)."""

    method: str
    params: JSONObject = field(default_factory=dict)


@runtime_checkable
class RequestTransport(Protocol):
    """A transport that sends any `Request` of the session it holds."""

    async def send(self, request: Request, timeout: float | None) -> JSONObject:
        """The request's result as JSON; an error answer raises `ServerReplyError` with its
        code, a lost peer `ConnectionError`, no answer in ``timeout`` `TimeoutError`."""
        ...
