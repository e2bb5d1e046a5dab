"""`TimerService`: keyed timers on one thread with a heap, not a thread per timer.

Due times are read from a `Clock`. On the `SystemClock` the thread sleeps until the next timer
is due. On a `ManualClock` nothing comes due until a test advances it: `advance` wakes the thread
and returns once every timer due by the new time has run its action, so a test that advances
past a deadline knows the action (an actor's ``tell``) has been sent.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from actors.runtime.clock import Clock, SystemClock

__all__ = ["TimerService"]

logger = logging.getLogger(__name__)


@dataclass(order=True)
class _Entry:
    due: float
    seq: int
    key: Hashable = field(compare=False)
    generation: int = field(compare=False)
    action: Callable[[], None] | None = field(compare=False)
    """None once the timer is replaced or cancelled: the entry is dead, its closure let go."""
    repeat: float | None = field(compare=False)


class TimerService:
    """Runs short actions (an actor's ``tell``) when their time comes.

    Each timer has a key; scheduling a key again replaces its timer, and a replaced or
    cancelled timer never fires. A key is forgotten once its timer has fired (unless it
    repeats) or is cancelled, so keys made per call (a call's deadline) cost nothing after.
    """

    # How long `ManualClock.advance` waits for the due actions to run: an action is a ``tell``,
    # so only a stopped or wedged service takes this long, and then the advance goes on.
    settle_timeout = 5.0

    def __init__(self, name: str = "mcp-actors-timers", *, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or SystemClock()
        self._heap: list[_Entry] = []
        self._live: dict[Hashable, _Entry] = {}
        # Dead entries still on the heap: they are dropped when they come up, or all at once
        # when they are half the heap (a heap cannot remove from its middle).
        self._dead = 0
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        # Advances of the clock asked for, and the last one whose due timers have all run.
        self._advances = 0
        self._settled = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self.clock.on_advance(self._on_advance)

    def schedule(
        self, key: Hashable, delay: float, action: Callable[[], None], *, repeat: float | None = None
    ) -> int:
        """Run ``action`` after ``delay`` seconds (then every ``repeat`` seconds); return the generation.

        The generation is 1 for a key without a live timer, one more than the replaced timer's
        otherwise. A negative delay counts as zero. A delay that is not a finite number raises
        ``ValueError``: a NaN on the heap would never come due, and every timer behind it would
        wait forever.
        """
        if not math.isfinite(delay) or (repeat is not None and not (math.isfinite(repeat) and repeat > 0)):
            raise ValueError(f"timer delays must be finite numbers, got delay={delay!r}, repeat={repeat!r}")
        with self._cond:
            if self._stopped:
                return 0
            replaced = self._live.get(key)
            generation = 1 if replaced is None else replaced.generation + 1
            if replaced is not None:
                self._kill(replaced)
            due = self.clock.monotonic() + max(delay, 0.0)
            entry = _Entry(due, next(self._seq), key, generation, action, repeat)
            self._live[key] = entry
            heapq.heappush(self._heap, entry)
            self._cond.notify()
            return generation

    def cancel(self, key: Hashable) -> None:
        """Cancel the timer of ``key``, if any."""
        with self._cond:
            if (entry := self._live.pop(key, None)) is not None:
                self._kill(entry)

    def cancel_where(self, predicate: Callable[[Hashable], bool]) -> None:
        """Cancel every timer whose key matches."""
        with self._cond:
            for key in [k for k in self._live if predicate(k)]:
                self._kill(self._live.pop(key))

    def due(self, key: Hashable) -> float | None:
        """When the timer of ``key`` is next due, in the clock's seconds; None without a live timer."""
        with self._cond:
            entry = self._live.get(key)
            return None if entry is None else entry.due

    def pending(self) -> int:
        """How many live timers there are: the keys the service remembers."""
        with self._cond:
            return len(self._live)

    def queued(self) -> int:
        """How many entries the heap holds, dead ones included: what the service keeps in memory."""
        with self._cond:
            return len(self._heap)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread; timers not yet due never fire. Idempotent."""
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._live.clear()
            self._dead = 0
            self._cond.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _on_advance(self) -> None:
        # Called on the thread that advanced the clock: wake ours, then wait until every timer
        # due by now has run (never from our own thread, which would wait for itself).
        with self._cond:
            if self._stopped:
                return
            self._advances += 1
            asked = self._advances
            self._cond.notify_all()
            if threading.current_thread() is self._thread:
                return
            self._cond.wait_for(lambda: self._stopped or self._settled >= asked, self.settle_timeout)

    def _kill(self, entry: _Entry) -> None:
        # Under the lock. The entry stays on the heap until it comes up or the heap is compacted.
        entry.action = None
        self._dead += 1
        if self._dead * 2 > len(self._heap):
            self._heap = [e for e in self._heap if e.action is not None]
            heapq.heapify(self._heap)
            self._dead = 0

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    advances = self._advances
                    now = self.clock.monotonic()
                    if self._heap and self._heap[0].due <= now:
                        entry = heapq.heappop(self._heap)
                        action = entry.action
                        if action is None:
                            self._dead -= 1
                            continue
                        if entry.repeat is None:
                            del self._live[entry.key]
                            entry.action = None
                        else:
                            entry.due = now + entry.repeat
                            entry.seq = next(self._seq)
                            heapq.heappush(self._heap, entry)
                        break
                    if self._settled != advances:
                        # Nothing more is due at the advanced time: tell `_on_advance`.
                        self._settled = advances
                        self._cond.notify_all()
                    # A wait bounded by the real time to the next due: right on a SystemClock, and
                    # on a ManualClock the advance's notify cuts it short.
                    self._cond.wait(min(self._heap[0].due - now, 1.0) if self._heap else 1.0)
                else:
                    return
            try:
                action()
            except Exception:
                logger.exception("timer action for %r failed", entry.key)
            # Not kept alive while this thread waits for the next timer.
            del action, entry
