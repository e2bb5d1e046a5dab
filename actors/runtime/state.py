"""`ServerState`: the lifecycle states of a server actor."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ServerState"]


class ServerState(StrEnum):
    """``idle → starting → running → stopping → stopped``, plus ``restarting`` and ``failed``.

    Members are strings: ``status.state == "running"`` works.
    """

    IDLE = "idle"
    """Configured, never started."""
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    """Stopped on request or when idle; a call starts it again if lazy start is on."""
    RESTARTING = "restarting"
    """Crashed; the supervisor will start it again after a backoff."""
    FAILED = "failed"
    """Too many restarts; calls fail until an explicit start."""

    def __repr__(self) -> str:
        # `ServerStatus.state` was a plain string: messages that show it with !r keep showing
        # 'running', not <ServerState.RUNNING: 'running'>.
        return repr(self.value)
