"""behave hooks: the loop-lag watchdog for every scenario.

Every `EventLoop` created during the run probes its own lag every 10 ms (loops that runtimes
and adapters start and stop on their own included). A scenario during which a loop lagged
more than 100 ms fails (a hook error) naming itself, the worst lag and what the loop thread was
doing meanwhile: something blocked the loop thread that every server shares. behave runs a
scenario's cleanups (where its runtimes shut down) after ``after_scenario``: lag seen there is
reported with the next scenario, or at the end of the run, naming the scenario it came from.
The judging (and the heap frozen before each scenario) is shared with the pytest watchdog:
tests/harness/lag_report.py. behave puts the working folder, the repository, on the path.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field

from behave.model import Scenario
from behave.runner import Context

from actors.mcp.loop import EventLoop
from tests.harness.lag_report import LIMIT, PROBE_INTERVAL, Verdict, freeze_heap, judge
from tests.harness.stall_stacks import StallSampler


@dataclass
class _Watch:
    """Kept on the root context layer (attributes set during a scenario vanish with it)."""

    saved_interval: float | None
    sampler: StallSampler
    previous: str = "the start of the run"
    pending: list[str] = field(default_factory=list)

    def check(self, where: str) -> list[str]:
        """The failing lag since the last check, as a message; an excused one is printed."""
        verdict: Verdict | None = judge(EventLoop.reset_worst_lag(), LIMIT, self.sampler)
        if verdict is None:
            return []
        if not verdict.failed:
            # stderr: behave keeps a passing scenario's stdout to itself.
            print(f"LAG EXCUSED {where}: {verdict.text}", file=sys.stderr)
            return []
        return [f"{where}: {verdict.text}"]


def _name(scenario: Scenario) -> str:
    return f"{scenario.location} {scenario.name!r}"


def before_all(context: Context) -> None:
    context.lag_watch = _Watch(EventLoop.default_lag_probe_interval, StallSampler().start())
    # Pinned tool definitions (actors.pins) in a folder of this run's, not the user's state folder.
    context.pins_folder = tempfile.TemporaryDirectory(prefix="mcp-actors-pins-")
    os.environ.setdefault("MCP_ACTORS_PINS_DIR", context.pins_folder.name)
    EventLoop.default_lag_probe_interval = PROBE_INTERVAL
    freeze_heap()


def before_scenario(context: Context, scenario: Scenario) -> None:
    watch: _Watch = context.lag_watch
    # What happened since the last after_scenario: the previous scenario's cleanups.
    watch.pending = watch.check(f"cleanup of {watch.previous}")
    freeze_heap()


def after_scenario(context: Context, scenario: Scenario) -> None:
    watch: _Watch = context.lag_watch
    problems = [*watch.pending, *watch.check(_name(scenario))]
    watch.previous, watch.pending = _name(scenario), []
    if problems:
        raise AssertionError("\n".join(problems))


def after_all(context: Context) -> None:
    context.pins_folder.cleanup()
    watch: _Watch = context.lag_watch
    EventLoop.default_lag_probe_interval = watch.saved_interval
    problems = watch.check(f"cleanup of {watch.previous}")
    watch.sampler.stop()
    if problems:
        raise AssertionError("\n".join(problems))
