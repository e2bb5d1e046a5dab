"""`Latencies`: a server's recent call durations, for the percentiles its status reports.

A bounded reservoir of the last `WINDOW` calls' durations rather than a histogram since start:
an operator asks how the server answers now, and a slow morning should not weigh on the evening.
Owned by the server actor's thread (it notes each completion as it counts it); `percentiles`
runs there too, when a `GetStatus` asks, and answers plain numbers.
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass

__all__ = ["WINDOW", "Latencies", "Percentiles"]

WINDOW = 1024
"""How many recent calls the percentiles are taken over (sorting them costs some 0.1 ms)."""


@dataclass(frozen=True, slots=True)
class Percentiles:
    """The median and the 99th percentile of the recent calls, in milliseconds."""

    p50_ms: float
    p99_ms: float
    samples: int


class Latencies:
    """The last `WINDOW` durations of one server's calls (see the module)."""

    __slots__ = ("_durations",)

    def __init__(self, window: int = WINDOW) -> None:
        self._durations: collections.deque[float] = collections.deque(maxlen=window)

    def note(self, duration_ms: float) -> None:
        """One call took ``duration_ms`` (whatever its outcome: a timeout is slow too)."""
        if math.isfinite(duration_ms) and duration_ms >= 0:
            self._durations.append(duration_ms)

    def percentiles(self) -> Percentiles | None:
        """p50 and p99 of the recent calls (nearest rank); None before the first call."""
        if not self._durations:
            return None
        ordered = sorted(self._durations)
        return Percentiles(_rank(ordered, 0.50), _rank(ordered, 0.99), len(ordered))


def _rank(ordered: list[float], quantile: float) -> float:
    """The nearest-rank percentile of sorted ``ordered``: a duration some call really took."""
    index = max(0, math.ceil(quantile * len(ordered)) - 1)
    return round(ordered[index], 3)
