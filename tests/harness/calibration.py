"""How slow this machine is, once per session: time bounds in tests scale with it.

A test that must bound a time ("a call to another server answered within 2 s while a big
response was parsed") states the bound as measured on our development machine and asserts
against ``scaled(bound)``. `machine_factor` times two reference operations, each against what
it takes on that machine: pure-Python CPU work (a JSON round trip of a small document) and a
hand-off between two threads (what every actor message and loop wake-up costs). The factor
is the slower of the two ratios, never below 1 (a faster machine keeps the stated bound) and
at most `MAX_FACTOR` (a machine that slow is broken, and no bound would mean anything).

Loop-lag limits are not scaled: a lag is the code holding the loop, and the watchdog already
excuses the part of a lag the loop thread spent waiting for a CPU (`tests.harness.lag_report`).
"""

from __future__ import annotations

import functools
import json
import queue
import statistics
import threading
import time
from collections.abc import Callable

__all__ = ["MAX_FACTOR", "REFERENCE", "describe", "machine_factor", "scaled"]

REFERENCE = {"cpu": 0.060, "handoff": 0.0025}
"""Seconds each reference operation takes on the development machine (2 cores, idle)."""
MAX_FACTOR = 10.0
_RUNS = 5

_DOCUMENT = {
    "items": [{"id": i, "name": f"item {i}", "tags": ["a", "b"], "score": i / 7} for i in range(2000)]
}


def _cpu() -> float:
    started = time.perf_counter()
    for _ in range(5):
        json.loads(json.dumps(_DOCUMENT))
    return time.perf_counter() - started


def _handoff() -> float:
    """200 round trips between this thread and another."""
    there: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    back: queue.SimpleQueue[int] = queue.SimpleQueue()

    def echo() -> None:
        while (item := there.get()) is not None:
            back.put(item)

    thread = threading.Thread(target=echo, name="calibration-echo", daemon=True)
    thread.start()
    started = time.perf_counter()
    for item in range(200):
        there.put(item)
        back.get(timeout=10)
    elapsed = time.perf_counter() - started
    there.put(None)
    thread.join(10)
    return elapsed


_OPERATIONS: dict[str, Callable[[], float]] = {"cpu": _cpu, "handoff": _handoff}


@functools.cache
def measurements() -> dict[str, float]:
    """The median seconds of each reference operation on this machine (measured once)."""
    return {name: statistics.median(run() for _ in range(_RUNS)) for name, run in _OPERATIONS.items()}


def machine_factor() -> float:
    """How many times slower than the development machine this one is (1 to `MAX_FACTOR`)."""
    ratios = [seconds / REFERENCE[name] for name, seconds in measurements().items()]
    return min(MAX_FACTOR, max(1.0, *ratios))


def scaled(seconds: float) -> float:
    """``seconds`` (a bound stated for the development machine) for this machine."""
    return seconds * machine_factor()


def describe() -> str:
    parts = ", ".join(f"{name} {seconds * 1000:.1f} ms" for name, seconds in measurements().items())
    return f"machine calibration: {parts}; time bounds scaled by {machine_factor():.2f}"
