"""`Clock`: where the runtime's timing reads the time, so tests can drive it.

Idle stops, health probes, restart backoff and the restart window all read one clock. The
runtime uses `SystemClock`; a test gives `Runtime.start` (or the actors) a `ManualClock` and
moves it with `advance`, so a 30 s idle timeout passes in microseconds and no test waits out
real seconds to see a timer fire.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "ManualClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """Monotonic seconds for intervals and deadlines, wall seconds for what is shown to people."""

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin that never go back."""
        ...

    def wall(self) -> float:
        """Seconds since the epoch (``time.time``): timestamps such as ``last_error_at``."""
        ...

    def on_advance(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (from the advancing thread) whenever the clock jumps forward.

        A real clock never jumps, so `SystemClock` ignores it; `TimerService` registers here to
        re-check its heap when a test moves a `ManualClock`.
        """
        ...


class SystemClock:
    """The machine's clocks: `time.monotonic` and `time.time`. Stateless, shared freely."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def on_advance(self, listener: Callable[[], None]) -> None:
        return None


class ManualClock:
    """A clock that moves only when a test calls `advance`.

    Thread-safe: any thread reads it, the test thread advances it. Listeners run on the thread
    that calls `advance`, after the time has moved, outside the clock's lock.
    """

    def __init__(self, start: float = 1000.0, wall_start: float = 1_700_000_000.0) -> None:
        self._lock = threading.Lock()
        self._now = start
        self._wall_offset = wall_start - start
        self._listeners: list[Callable[[], None]] = []

    def monotonic(self) -> float:
        with self._lock:
            return self._now

    def wall(self) -> float:
        with self._lock:
            return self._now + self._wall_offset

    def on_advance(self, listener: Callable[[], None]) -> None:
        with self._lock:
            self._listeners.append(listener)

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` (not negative); return the new time.

        Returns after its listeners: a `TimerService` on this clock has by then run every timer
        due by the new time, so what those timers tell is in the actors' mailboxes.
        """
        if not seconds >= 0:
            raise ValueError(f"a clock only moves forward, got {seconds!r}")
        with self._lock:
            self._now += seconds
            now = self._now
            listeners = list(self._listeners)
        for listener in listeners:
            listener()
        return now
