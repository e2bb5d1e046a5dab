"""`ServerStatus`: a snapshot of one server, as `GetStatus` and `Runtime.status` answer it."""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.runtime.state import ServerState

__all__ = ["ServerStatus"]


@dataclass(frozen=True)
class ServerStatus:
    """A snapshot of one server."""

    namespace: str
    state: ServerState
    """A `str` enum: ``status.state == "running"`` works."""
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
    latency_p50_ms: float | None = None
    """The median duration of its recent calls (`actors.runtime.latency`), once it had one."""
    latency_p99_ms: float | None = None
    """The 99th percentile of the same."""
    last_call_error: str | None = None
    """The `ErrorType` value of its last failed call (kept after calls succeed again)."""
    last_call_error_at: float | None = None
    """When ``last_call_error`` happened (``time.time()``)."""
    protocol_version: str | None = None
    capabilities: dict[str, bool] = field(default_factory=dict)
