"""`Record`: what a server's history says about it: restarts, the last error (kept after it
recovers), and why it was retired. Owned by the server actor's thread; it also logs and
traces what it notes."""

from __future__ import annotations

import logging

from actors.runtime.clock import Clock
from actors.runtime.lifecycle import Text
from actors.runtime.owner import OwnerCheck
from actors.runtime.telemetry import end_span, instruments, request_span

__all__ = ["Record"]

logger = logging.getLogger("actors.runtime.server")


class Record:
    def __init__(self, namespace: str, clock: Clock) -> None:
        self.namespace, self.clock = namespace, clock
        self.restarts = 0
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        """Wall-clock seconds of ``last_error``."""
        self.retired: str | None = None
        """Why this server takes no more work (it is being unregistered), once it is."""
        self._owner = OwnerCheck(f"{namespace}'s record")

    def render(self, text: Text) -> str:
        return text.render(self.namespace, self.restarts, self.last_error, self.retired)

    def note_error(self, reason: str, what: str) -> None:
        """``what`` happened because of ``reason``: kept as the last error, and logged."""
        self._owner.touch()
        self.last_error, self.last_error_at = reason, self.clock.wall()
        logger.warning("%s: %s: %s", self.namespace, what, reason)

    def crashed(self, reason: str) -> None:
        """A crash is a span of its own, so a trace shows where a server went down."""
        span = request_span(
            f"mcp.server.crash {self.namespace}", None, {"mcp_actors.namespace": self.namespace}
        )
        end_span(span, "crash", reason, 0.0)

    def restarted(self) -> None:
        self._owner.touch()
        self.restarts += 1
        instruments().restarts.add(1, {"namespace": self.namespace})
        extra = {"mcp_event": "restart", "namespace": self.namespace, "restarts": self.restarts}
        logger.info("%s: restart %d", self.namespace, self.restarts, extra=extra)

    def gave_up(self, reason: str) -> None:
        logger.error("%s: failed after %d restarts: %s", self.namespace, self.restarts, reason)
