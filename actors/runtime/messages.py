"""The messages of the actor runtime.

Request messages carry a ``reply`` slot, a `concurrent.futures.Future` that the actor
handling the request completes (``tell`` the message, then wait on ``msg.reply`` with a
timeout). ``ask`` of the registry actor returns that same future at once, without waiting for
a server. Internal messages (ticks and completions) are for the runtime's own actors.
"""

from __future__ import annotations

import concurrent.futures
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from actors.mcp.adapter import TransportSource
from actors.mcp.config import ServerConfig
from actors.mcp.transport import RemoteTool, ServerInfo
from actors.tools import ToolError, ToolResult, ToolSpec, check_json

__all__ = [
    "CallTool",
    "GetStatus",
    "ListTools",
    "RegisterServer",
    "ServerStatus",
    "ShutdownAll",
    "StartServer",
    "StopServer",
    "UnregisterServer",
    "refuse",
]


def _slot() -> concurrent.futures.Future[Any]:
    return concurrent.futures.Future()


def _is_seconds(value: object) -> bool:
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    )


# ---- public requests -------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CallTool:
    """Call ``namespace/tool``; the reply is a `ToolResult` (failures included)."""

    namespace: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    """Seconds; the server's ``callTimeout`` when None."""
    reply: concurrent.futures.Future[ToolResult] = field(default_factory=_slot, repr=False)

    def problem(self, max_argument_bytes: int | None = None) -> str | None:
        """What makes this call unfit to send anywhere, or None.

        The one check of a call's own shape (names, arguments, timeout), used by every actor
        that answers calls, so a call is refused the same way however it was sent.
        """
        if not isinstance(self.namespace, str) or not isinstance(self.tool, str):
            return f"the tool name {self.namespace!r}/{self.tool!r} is not text"
        if not isinstance(self.arguments, Mapping):
            return f"arguments must be an object, got {type(self.arguments).__name__}"
        if self.timeout is not None and not _is_seconds(self.timeout):
            return f"timeout must be a positive number of seconds, got {self.timeout!r}"
        return check_json(self.arguments, "arguments", max_bytes=max_argument_bytes)

    @classmethod
    def named(
        cls, name: str, arguments: dict[str, Any] | None = None, timeout: float | None = None
    ) -> CallTool:
        """A call of ``"namespace/tool"``."""
        namespace, _, tool = name.partition("/")
        return cls(namespace=namespace, tool=tool, arguments=dict(arguments or {}), timeout=timeout)


@dataclass(frozen=True, eq=False)
class ListTools:
    """The tools of every namespace (or of one); the reply is a list of `ToolSpec`."""

    namespace: str | None = None
    reply: concurrent.futures.Future[list[ToolSpec]] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class GetStatus:
    """Status snapshots; the reply is a list of `ServerStatus`, sorted by namespace."""

    namespace: str | None = None
    reply: concurrent.futures.Future[list[ServerStatus]] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class StartServer:
    """Start a server now (idempotent; also clears ``failed``); the reply is its `ServerStatus`."""

    namespace: str
    reply: concurrent.futures.Future[ServerStatus] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class StopServer:
    """Stop a server (idempotent); the reply is its `ServerStatus` once stopped."""

    namespace: str
    reply: concurrent.futures.Future[ServerStatus] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class RegisterServer:
    """Add a server under ``config.name``; the reply is None (or a `ToolError` if the name is taken)."""

    config: ServerConfig
    transport: TransportSource | None = None
    """A transport (or factory) to use instead of the one the config describes, e.g. a mock."""
    reply: concurrent.futures.Future[None] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class UnregisterServer:
    """Stop and remove a server and its tools; the reply is True if it existed."""

    namespace: str
    reply: concurrent.futures.Future[bool] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class ShutdownAll:
    """Stop every server in parallel, keeping their registrations; the reply is None."""

    reply: concurrent.futures.Future[None] = field(default_factory=_slot, repr=False)


# ---- status ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerStatus:
    """A snapshot of one server."""

    namespace: str
    state: str
    transport: str
    pid: int | None = None
    connected: bool = False
    restarts: int = 0
    health_check_failures: int = 0
    calls: int = 0
    errors: int = 0
    in_flight: int = 0
    tools: int | None = None
    """How many tools it offers, once known."""
    last_error: str | None = None
    """The last crash or failed start (kept after the server comes back)."""
    last_error_at: float | None = None
    """When ``last_error`` happened (``time.time()``)."""
    protocol_version: str | None = None
    capabilities: dict[str, bool] = field(default_factory=dict)


# ---- internal: ticks and completions ---------------------------------------------------


@dataclass(frozen=True)
class IdleCheck:
    """Timer tick: stop the server if it has been idle for its idle timeout."""

    generation: int = 0


@dataclass(frozen=True)
class HealthCheck:
    """Timer tick: probe the server."""

    generation: int = 0


@dataclass(frozen=True)
class Restart:
    """From the supervisor: start again after a crash (the backoff has passed)."""

    attempt: int


@dataclass(frozen=True)
class GiveUp:
    """From the supervisor: too many restarts; become ``failed``."""

    reason: str


@dataclass(frozen=True, eq=False)
class DescribeTools:
    """Registry to server: the reply is the server's tool specs, starting it if never seen."""

    reply: concurrent.futures.Future[list[ToolSpec]] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class Shutdown:
    """Registry to server: close the transport (a later call starts it again); reply when closed."""

    reply: concurrent.futures.Future[ServerStatus] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class Retire:
    """Registry to server: close the transport and refuse everything from now on (it is being
    unregistered or the runtime is going away); reply when closed."""

    reason: str
    reply: concurrent.futures.Future[ServerStatus] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True)
class Started:
    """Completion: the connection ``connection`` is up, its tools listed."""

    connection: int
    info: ServerInfo
    tools: tuple[RemoteTool, ...]


@dataclass(frozen=True)
class StartFailed:
    """Completion: the connection ``connection`` could not be made; trying again may help."""

    connection: int
    error: str


@dataclass(frozen=True)
class CannotStart:
    """Completion: the connection ``connection`` could not be made, and trying again cannot
    help (`StartRefused`: no such command, a pinned protocol the server lacks)."""

    connection: int
    error: str


@dataclass(frozen=True)
class Closed:
    """Completion: the connection ``connection`` was closed on our request."""

    connection: int


@dataclass(frozen=True)
class ConnectionLost:
    """Pushed by the transport: the peer went away unasked."""

    connection: int
    reason: str


@dataclass(frozen=True)
class ToolsChanged:
    """Pushed by the transport: the server's tool list changed."""

    connection: int


@dataclass(frozen=True)
class ToolsRelisted:
    connection: int
    tools: tuple[RemoteTool, ...] | None
    error: str | None = None


@dataclass(frozen=True)
class CallDone:
    """Completion of one call: bookkeeping only (the caller's reply is already set)."""

    call_id: int
    error_type: str | None
    """None when the call succeeded."""
    duration_ms: float = 0.0


@dataclass(frozen=True)
class ProbeDone:
    connection: int
    error: str | None
    error_type: str | None = None


@dataclass(frozen=True)
class CallExpired:
    """A call queued while the server starts ran out of time."""

    call: CallTool


@dataclass(frozen=True)
class StayDown:
    """From the supervisor: no restart for this end; become ``stopped``."""


@dataclass(frozen=True)
class ToolsUpdated:
    """Server to registry: the server's tools (specs without handlers) are now these."""

    namespace: str
    tools: tuple[Any, ...]


# ---- internal: to the supervisor -------------------------------------------------------


@dataclass(frozen=True)
class Supervise:
    namespace: str
    server: Any
    """The server actor's `pykka.ActorRef`."""
    config: ServerConfig


@dataclass(frozen=True)
class Unsupervise:
    namespace: str


@dataclass(frozen=True)
class ServerUp:
    namespace: str


@dataclass(frozen=True)
class ServerStopped:
    """A server ended because it was asked to (or cannot start at all): nothing to restart."""

    namespace: str


@dataclass(frozen=True)
class ServerCrashed:
    """A server ended unasked (a crash, a failed probe, a failed start): restart it by policy."""

    namespace: str
    reason: str


@dataclass(frozen=True)
class ArmIdle:
    namespace: str
    delay: float


@dataclass(frozen=True)
class ResetRestarts:
    namespace: str


# ---- answering what is left ------------------------------------------------------------


def refuse(message: object, error_type: str, why: str) -> None:
    """Answer ``message``'s reply slot, if it has an open one, with a failure of ``error_type``.

    Calls get a failed `ToolResult` (they promise one); other requests a `ToolError`.
    """
    reply = getattr(message, "reply", None)
    if not isinstance(reply, concurrent.futures.Future) or reply.done():
        return
    try:
        if isinstance(message, CallTool):
            reply.set_result(ToolResult.fail(error_type, why))
        else:
            reply.set_exception(
                ToolError(str(getattr(message, "namespace", None) or "runtime"), error_type, why)
            )
    except concurrent.futures.InvalidStateError:
        pass  # answered meanwhile on another thread
