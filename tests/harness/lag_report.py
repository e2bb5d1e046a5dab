"""Judging a loop lag, for the pytest and the behave watchdogs alike.

A lag over the limit fails, and the report says what the loop was doing meanwhile (see
`StallSampler`). One part of a lag is not the code's doing: time the loop thread spent ready
to run but waiting for a CPU, by the kernel's own account (Linux ``schedstat``), because the
machine was overloaded; and, of the time it was blocked while the stall sampler could not
run either (so another thread held the GIL), as much as one other thread of the process
waited for a CPU meanwhile (a thread taken off its CPU while it holds the GIL blocks the loop
until it runs again); and, of the time it was blocked, as much as the hypervisor took from
a CPU of the machine (``/proc/stat`` steal: a virtual machine's CPU taken away runs none of
its threads, which then are neither on a CPU nor waiting for one by the guest kernel's
account). A loop thread blocked in a call (a sleep, a read) lets the sampler run
and see it there: that is never excused. That part is not held against the test; such a lag is reported
as excused, with its numbers. Lag spent running on the loop, or blocked by a thread that holds
the GIL while it runs (or in a blocking call), always counts, except a thread starting a
process: CPython 3.11 holds the GIL until the child has called exec, and the child, a process
of its own waiting for a CPU, cannot be measured here.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

from actors.mcp.loop import EventLoop, LoopLag
from tests.harness.stall_stacks import Stall, StallSampler

__all__ = ["LIMIT", "PROBE_INTERVAL", "Verdict", "freeze_heap", "judge", "settle_heap"]

LIMIT = 0.1
"""Seconds an event loop may be late waking its probe during a test or scenario."""
PROBE_INTERVAL = 0.01


@dataclass(frozen=True)
class Verdict:
    failed: bool
    """False: the lag was over the limit only by the time the loop thread waited for a CPU."""
    text: str


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def judge(
    worst: LoopLag | None, limit: float, sampler: StallSampler | None, since: float | None = None
) -> Verdict | None:
    """None if ``worst`` is within ``limit``; else whether it fails, and the report."""
    if worst is None or worst.seconds <= limit:
        return None
    when = f", {worst.at - since:.2f}s in" if since is not None else ""
    text = f"the event loop {worst.loop!r} lagged {_ms(worst.seconds)} (limit {_ms(limit)}){when}"
    if sampler is None:
        return Verdict(True, text + ": something blocked the loop thread")
    span = (worst.at - worst.seconds - PROBE_INTERVAL, worst.at)
    scheduling = sampler.scheduling_between(*span)
    stalls = sampler.stalls_between(*span)
    excused = 0.0
    if scheduling is not None:
        blocked = max(0.0, worst.seconds - scheduling.on_cpu - scheduling.waiting_for_cpu)
        gil = sum(_overlap(s, span) for s in stalls if s.sampler_blocked)
        # A stolen CPU stalls whoever was on it, even asleep in the selector; blocked time the
        # sampler saw the loop thread spend in a call of ours stays held against the test.
        in_a_call = any(not s.sampler_blocked for s in stalls)
        stolen = 0.0 if in_a_call else scheduling.stolen
        held = min(gil, scheduling.other_waiting_for_cpu)
        # A thread starting a process holds the GIL until its child has called exec (CPython
        # 3.11's fork_exec): the child, waiting for a CPU of a busy machine, is no thread of
        # ours to measure; the time the loop thread was blocked meanwhile is excused.
        spawn = sum(_overlap(s, span) for s in stalls if s.sampler_blocked and s.spawning)
        excused = scheduling.waiting_for_cpu + min(blocked, max(held, stolen, spawn))
    failed = worst.seconds - excused > limit
    if scheduling is not None:
        text += (
            f"; meanwhile the loop thread ran {_ms(scheduling.on_cpu)} on a CPU, waited "
            f"{_ms(scheduling.waiting_for_cpu)} for one, and was blocked (on the GIL, or in a call) the rest"
        )
        if scheduling.other:
            text += (
                f"; the longest another thread ({scheduling.other}) waited for a CPU around it: "
                f"{_ms(scheduling.other_waiting_for_cpu)}"
            )
        if scheduling.stolen:
            text += f"; the hypervisor took up to {_ms(scheduling.stolen)} from a CPU of the machine"
        if any(s.spawning for s in stalls):
            text += "; another thread was starting a process (it holds the GIL until the child runs exec)"
    text += ": something blocked the loop thread" if failed else ": the machine was too busy to run it"
    for stall in stalls:
        text += f"\nwhile it lagged, for {_ms(stall.seconds)}, the loop thread was in:\n{stall.stack}"
    for collection in sampler.collections_between(*span):
        text += (
            f"\na garbage collection (generation {collection.generation}) ran for "
            f"{_ms(collection.seconds)} in thread {collection.thread!r}"
        )
    return Verdict(failed, text)


def _overlap(stall: Stall, span: tuple[float, float]) -> float:
    return max(0.0, min(stall.end, span[1]) - max(stall.start, span[0]))


def freeze_heap() -> None:
    """Collect, then move every object left out of the collector's sight; forget the lag it cost.

    A full collection holds the GIL, and so stalls every loop, for as long as it scans the heap:
    pytest's, hypothesis's, behave's and every imported module's objects made that 90-500 ms on
    a busy 2-core machine. Frozen before each test, the heap a collection scans is what that
    test allocated, so the watchdog measures the code under test, not the size of the process.
    """
    gc.collect()
    gc.freeze()
    EventLoop.reset_worst_lag()


def settle_heap() -> None:
    """Between the examples of a property test: collect what the last ones left, freeze the rest.

    Hypothesis keeps what it generates and shrinks through a test's hundreds of examples, and
    the runtime's answers pile up with it: a full collection late in such a test scanned all
    of it while holding the GIL (428 ms on a built-in worker thread, under a one-core CPU
    quota). Settled before each example, the heap a collection scans is one example's. The
    lag measured so far is kept (unlike `freeze_heap`): this collection is small.
    """
    gc.collect()
    gc.freeze()
