"""The loop-lag watchdog: a test during which an event loop lagged more than 100 ms fails.

Every `EventLoop` created while pytest runs probes its own lag every 10 ms (loops that
runtimes and adapters start and stop on their own included): the probe's sleep ends late when
something blocks the loop thread (an import, a file read, a long parse), which stalls every
server at once. The worst lag of each test is checked when the test's fixtures are torn down;
lag outside any test (module fixtures, the end of the session) fails the run too.

A test that moves a huge message through the SDK on purpose (the SDK parses JSON on the loop)
may raise its own limit, with a reason: ``@pytest.mark.loop_lag(limit=2.0, reason="...")``.
Such tests are listed in docs/testing.md; keep them few.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Iterator

import pytest

from actors.loop import EventLoop, LoopLag
from tests.harness.stall_stacks import StallSampler

LIMIT = 0.1
"""Seconds an event loop may be late waking its probe during a test."""
PROBE_INTERVAL = 0.01

_saved_interval = pytest.StashKey[float | None]()
_outside = pytest.StashKey[list[str]]()
_sampler = pytest.StashKey[StallSampler]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "loop_lag(limit, reason): this test may lag the event loop up to `limit` seconds "
        f"(default {LIMIT}); the reason says why (listed in docs/testing.md)",
    )
    config.stash[_saved_interval] = EventLoop.default_lag_probe_interval
    config.stash[_outside] = []
    EventLoop.default_lag_probe_interval = PROBE_INTERVAL
    EventLoop.reset_worst_lag()
    config.stash[_sampler] = StallSampler().start()


def freeze_heap() -> None:
    """Collect, then move every object left out of the collector's sight.

    A full collection holds the GIL, and so stalls every loop, for as long as it scans the heap:
    pytest's, hypothesis's and every imported module's objects made that 90-500 ms on a busy
    2-core machine. Frozen before each test, the heap a collection scans is what that test
    allocated, so the watchdog measures the code under test, not the size of the test process.
    """
    gc.collect()
    gc.freeze()


def pytest_collection_finish(session: pytest.Session) -> None:
    freeze_heap()


def pytest_unconfigure(config: pytest.Config) -> None:
    if _saved_interval in config.stash:
        EventLoop.default_lag_probe_interval = config.stash[_saved_interval]
    if _sampler in config.stash:
        config.stash[_sampler].stop()


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def limit_of(item: pytest.Item) -> float:
    """The lag limit of ``item``: `LIMIT`, or its ``loop_lag`` marker's (which needs a reason)."""
    marker = item.get_closest_marker("loop_lag")
    if marker is None:
        return LIMIT
    limit, reason = marker.kwargs.get("limit"), marker.kwargs.get("reason")
    if marker.args or not isinstance(reason, str) or not reason.strip():
        pytest.fail("@pytest.mark.loop_lag takes keywords only: limit=<seconds>, reason=<why>", pytrace=False)
    if not isinstance(limit, int | float) or not math.isfinite(limit) or limit <= LIMIT:
        pytest.fail(f"@pytest.mark.loop_lag(limit=...) must be seconds above {LIMIT}", pytrace=False)
    return float(limit)


def describe(worst: LoopLag, limit: float, since: float | None, sampler: StallSampler | None = None) -> str:
    """The lag, when it happened, and what the loop (or the GIL's holder) was doing meanwhile."""
    when = f", {worst.at - since:.2f}s in" if since is not None else ""
    text = (
        f"the event loop {worst.loop!r} lagged {_ms(worst.seconds)} (limit {_ms(limit)}){when}: "
        "something blocked the loop thread"
    )
    if sampler is None:
        return text
    span = (worst.at - worst.seconds - PROBE_INTERVAL, worst.at)
    scheduling = sampler.scheduling_between(*span)
    if scheduling is not None:
        text += (
            f"\nmeanwhile the loop thread ran {_ms(scheduling.on_cpu)} on a CPU and waited "
            f"{_ms(scheduling.waiting_for_cpu)} for one (the rest it was blocked: on the GIL, or a call)"
        )
    for stall in sampler.stalls_between(*span):
        text += f"\nwhile it lagged, for {_ms(stall.seconds)}, the loop thread was in:\n{stall.stack}"
    for collection in sampler.collections_between(*span):
        text += (
            f"\na garbage collection (generation {collection.generation}) ran for "
            f"{_ms(collection.seconds)} in thread {collection.thread!r}"
        )
    return text


@pytest.fixture(autouse=True)
def loop_lag_watchdog(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if any event loop lagged beyond its limit while it ran."""
    node = request.node
    assert isinstance(node, pytest.Item)
    limit = limit_of(node)
    before = EventLoop.reset_worst_lag()
    if before is not None and before.seconds > LIMIT:
        # Module and session fixtures run outside any test's window: name where it was seen.
        sampler = request.config.stash.get(_sampler, None)
        request.config.stash[_outside].append(
            f"before {node.nodeid} (a module or session fixture, or the previous test's): "
            + describe(before, LIMIT, None, sampler)
        )
    freeze_heap()
    EventLoop.reset_worst_lag()  # what our own collection cost is not the test's
    started = time.monotonic()
    yield
    worst = EventLoop.reset_worst_lag()
    if worst is not None and worst.seconds > limit:
        sampler = request.config.stash.get(_sampler, None)
        pytest.fail(f"{node.nodeid}: {describe(worst, limit, started, sampler)}", pytrace=False)


def pytest_sessionfinish(session: pytest.Session) -> None:
    last = EventLoop.reset_worst_lag()
    outside = session.config.stash.get(_outside, [])
    if last is not None and last.seconds > LIMIT:
        outside.append(
            "after the last test: " + describe(last, LIMIT, None, session.config.stash.get(_sampler, None))
        )
    if outside and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    outside = config.stash.get(_outside, [])
    if outside:
        terminalreporter.section("event loop lag outside tests", red=True)
        for line in outside:
            terminalreporter.line(f"LAG {line}", red=True)
