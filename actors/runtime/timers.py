"""`TimerService`: keyed timers on one thread with a heap, not a thread per timer."""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

__all__ = ["TimerService"]

logger = logging.getLogger(__name__)


@dataclass(order=True)
class _Entry:
    due: float
    seq: int
    key: Hashable = field(compare=False)
    generation: int = field(compare=False)
    action: Callable[[], None] = field(compare=False)
    repeat: float | None = field(compare=False)


class TimerService:
    """Runs short actions (an actor's ``tell``) when their time comes.

    Each timer has a key; scheduling a key again replaces its timer, and a replaced or
    cancelled timer never fires (its heap entry is dropped as stale when it comes up).
    """

    def __init__(self, name: str = "mcp-actors-timers") -> None:
        self._heap: list[_Entry] = []
        self._generations: dict[Hashable, int] = {}
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def schedule(
        self, key: Hashable, delay: float, action: Callable[[], None], *, repeat: float | None = None
    ) -> int:
        """Run ``action`` after ``delay`` seconds (then every ``repeat`` seconds); return the generation.

        A delay that is not a finite number raises ``ValueError``: a NaN on the heap would
        never come due, and every timer behind it would wait forever.
        """
        if not math.isfinite(delay) or (repeat is not None and not (math.isfinite(repeat) and repeat > 0)):
            raise ValueError(f"timer delays must be finite numbers, got delay={delay!r}, repeat={repeat!r}")
        with self._cond:
            if self._stopped:
                return 0
            generation = self._generations.get(key, 0) + 1
            self._generations[key] = generation
            heapq.heappush(
                self._heap,
                _Entry(time.monotonic() + max(delay, 0.0), next(self._seq), key, generation, action, repeat),
            )
            self._cond.notify()
            return generation

    def cancel(self, key: Hashable) -> None:
        """Cancel the timer of ``key``, if any."""
        with self._cond:
            if key in self._generations:
                self._generations[key] += 1

    def cancel_where(self, predicate: Callable[[Hashable], bool]) -> None:
        """Cancel every timer whose key matches."""
        with self._cond:
            for key in self._generations:
                if predicate(key):
                    self._generations[key] += 1

    def pending(self) -> int:
        """How many live timers there are."""
        with self._cond:
            return sum(1 for e in self._heap if self._generations.get(e.key) == e.generation)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread; timers not yet due never fire. Idempotent."""
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    now = time.monotonic()
                    if self._heap and self._heap[0].due <= now:
                        entry = heapq.heappop(self._heap)
                        if self._generations.get(entry.key) != entry.generation:
                            continue
                        if entry.repeat is not None:
                            entry.due = now + entry.repeat
                            entry.seq = next(self._seq)
                            heapq.heappush(self._heap, entry)
                        break
                    self._cond.wait(min(self._heap[0].due - now, 1.0) if self._heap else 1.0)
                else:
                    return
            try:
                entry.action()
            except Exception:
                logger.exception("timer action for %r failed", entry.key)
