"""`SupervisorActor`: idle and health ticks for every server, and the restart policy."""

from __future__ import annotations

import logging
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import pykka

from actors.mcp.config import ServerConfig
from actors.runtime.clock import Clock
from actors.runtime.messages import (
    ArmIdle,
    GiveUp,
    HealthCheck,
    IdleCheck,
    ResetRestarts,
    Restart,
    ServerCrashed,
    ServerStopped,
    ServerUp,
    StayDown,
    Supervise,
    Unsupervise,
)
from actors.runtime.reply import tell
from actors.runtime.timers import TimerService

__all__ = ["SupervisorActor", "restart_delay"]

logger = logging.getLogger(__name__)


def restart_delay(config: ServerConfig, attempt: int, rng: random.Random | None = None) -> float:
    """Exponential backoff with equal jitter: half the delay fixed, half random.

    ``attempt`` counts from 1; the delay doubles from ``restartBackoff`` up to ``restartBackoffMax``.
    """
    exponent = min(max(attempt - 1, 0), 1000)  # 2.0**1024 overflows a float
    ceiling = min(config.restart_backoff_max, config.restart_backoff * 2.0**exponent)
    jitter: float = (rng or random.Random()).uniform(0, ceiling / 2)
    return ceiling / 2 + jitter


@dataclass
class _Watched:
    server: pykka.ActorRef[Any]
    config: ServerConfig
    ends: deque[float] = field(default_factory=deque)
    """When it crashed (or failed to start), within the restart window."""
    attempts: int = 0


class SupervisorActor(pykka.ThreadingActor):
    """Schedules `IdleCheck` and `HealthCheck` ticks on one `TimerService`, and restarts
    crashed servers under their policy: permanent and transient restart after a crash,
    temporary never; at most ``maxRestarts`` within ``restartWindow`` seconds, then ``failed``.

    Every time it reads (the ticks, the backoff, the restart window) is the timers' clock, so a
    test that gives it a `TimerService` on a `ManualClock` drives them all.
    """

    use_daemon_thread = True

    def __init__(
        self,
        timers: TimerService | None = None,
        rng: random.Random | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        super().__init__()
        if timers is not None and clock is not None and timers.clock is not clock:
            raise ValueError("the supervisor reads its timers' clock: pass one or the other")
        self.timers = timers or TimerService(clock=clock)
        self._own_timers = timers is None
        self.clock: Clock = self.timers.clock
        self.rng = rng or random.Random()
        self.watched: dict[str, _Watched] = {}

    def on_receive(self, message: Any) -> Any:
        try:
            self._handle(message)
        except Exception:
            logger.exception("supervisor: error handling %r", type(message).__name__)
        return None

    def _handle(self, message: Any) -> None:
        match message:
            case Supervise(namespace=ns, server=server, config=config):
                self.watched[ns] = _Watched(server, config)
            case Unsupervise(namespace=ns):
                self._cancel(ns, "idle", "health", "restart")
                self.watched.pop(ns, None)
            case ServerUp(namespace=ns) if ns in self.watched:
                self._on_up(self.watched[ns], ns)
            case ArmIdle(namespace=ns, delay=delay) if ns in self.watched:
                self._arm_idle(self.watched[ns], ns, delay)
            case ServerStopped(namespace=ns) if ns in self.watched:
                self._cancel(ns, "idle", "health", "restart")
            case ServerCrashed(namespace=ns, reason=reason) if ns in self.watched:
                self._on_crash(self.watched[ns], ns, reason)
            case ResetRestarts(namespace=ns) if ns in self.watched:
                self._cancel(ns, "restart")
                self.watched[ns].ends.clear()
                self.watched[ns].attempts = 0
            case _:
                logger.debug("supervisor: ignored %r", message)

    def _on_up(self, watched: _Watched, ns: str) -> None:
        config, server = watched.config, watched.server
        if config.health_check_interval > 0:
            interval = config.health_check_interval
            self.timers.schedule(
                ("health", ns), interval, lambda: tell(server, HealthCheck()), repeat=interval
            )
        if config.idle_timeout > 0:
            self._arm_idle(watched, ns, config.idle_timeout)

    def _arm_idle(self, watched: _Watched, ns: str, delay: float) -> None:
        server = watched.server
        self.timers.schedule(("idle", ns), delay, lambda: tell(server, IdleCheck()))

    def _on_crash(self, watched: _Watched, ns: str, reason: str) -> None:
        self._cancel(ns, "idle", "health")
        config = watched.config
        if config.restart == "temporary":
            # Never restarted, so never given up on: a later call may still start it lazily.
            tell(watched.server, StayDown())
            return
        now = self.clock.monotonic()
        watched.ends.append(now)
        while watched.ends and now - watched.ends[0] > config.restart_window:
            watched.ends.popleft()
        if len(watched.ends) > config.max_restarts:
            logger.error(
                "%s: %d ends within %.0fs (max %d restarts): giving up",
                ns,
                len(watched.ends),
                config.restart_window,
                config.max_restarts,
            )
            tell(watched.server, GiveUp(reason))
            return
        watched.attempts = len(watched.ends)
        delay = restart_delay(config, watched.attempts, self.rng)
        logger.info("%s: restart in %.2fs (%s)", ns, delay, reason)
        server, attempt = watched.server, watched.attempts
        self.timers.schedule(("restart", ns), delay, lambda: tell(server, Restart(attempt)))

    def _cancel(self, ns: str, *kinds: str) -> None:
        for kind in kinds:
            self.timers.cancel((kind, ns))

    def on_stop(self) -> None:
        if self._own_timers:
            self.timers.stop()
        else:
            self.timers.cancel_where(lambda key: True)
