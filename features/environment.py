"""behave hooks: the loop-lag watchdog for every scenario.

Every `EventLoop` created during the run probes its own lag every 10 ms (loops that runtimes
and adapters start and stop on their own included). A scenario during which a loop lagged
more than 100 ms fails (a hook error) naming itself and the worst lag: something blocked the
loop thread that every server shares. behave runs a scenario's cleanups (where its runtimes
shut down) after ``after_scenario``: lag seen there is reported with the next scenario, or
at the end of the run, naming the scenario it came from. tests/harness/loop_lag.py is the
pytest twin.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field

from behave.model import Scenario
from behave.runner import Context

from actors.loop import EventLoop, LoopLag

LIMIT = 0.1
"""Seconds an event loop may be late waking its probe during a scenario."""
PROBE_INTERVAL = 0.01


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _over_limit(where: str, worst: LoopLag | None) -> list[str]:
    if worst is None or worst.seconds <= LIMIT:
        return []
    return [
        f"{where}: the event loop {worst.loop!r} lagged {_ms(worst.seconds)} (limit {_ms(LIMIT)}): "
        "something blocked the loop thread"
    ]


def _name(scenario: Scenario) -> str:
    return f"{scenario.location} {scenario.name!r}"


@dataclass
class _Watch:
    """Kept on the root context layer (attributes set during a scenario vanish with it)."""

    saved_interval: float | None
    previous: str = "the start of the run"
    pending: list[str] = field(default_factory=list)


def _freeze_heap() -> None:
    # A full garbage collection holds the GIL, and so stalls every loop, for as long as it scans
    # the heap (90-500 ms seen on a busy 2-core machine): what is alive between scenarios is
    # moved out of its sight, so a collection scans what the current scenario allocated.
    gc.collect()
    gc.freeze()


def before_all(context: Context) -> None:
    _freeze_heap()
    context.lag_watch = _Watch(EventLoop.default_lag_probe_interval)
    EventLoop.default_lag_probe_interval = PROBE_INTERVAL
    EventLoop.reset_worst_lag()


def before_scenario(context: Context, scenario: Scenario) -> None:
    # What happened since the last after_scenario: the previous scenario's cleanups.
    watch: _Watch = context.lag_watch
    watch.pending = _over_limit(f"cleanup of {watch.previous}", EventLoop.reset_worst_lag())
    _freeze_heap()
    EventLoop.reset_worst_lag()  # what our own collection cost is not the scenario's


def after_scenario(context: Context, scenario: Scenario) -> None:
    watch: _Watch = context.lag_watch
    problems = [*watch.pending, *_over_limit(_name(scenario), EventLoop.reset_worst_lag())]
    watch.previous, watch.pending = _name(scenario), []
    if problems:
        raise AssertionError("\n".join(problems))


def after_all(context: Context) -> None:
    watch: _Watch = context.lag_watch
    EventLoop.default_lag_probe_interval = watch.saved_interval
    problems = _over_limit(f"cleanup of {watch.previous}", EventLoop.reset_worst_lag())
    if problems:
        raise AssertionError("\n".join(problems))
