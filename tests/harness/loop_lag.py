"""The loop-lag watchdog: a test during which an event loop lagged more than 100 ms fails.

Every `EventLoop` created while pytest runs probes its own lag every 10 ms (loops that
runtimes and adapters start and stop on their own included): the probe's sleep ends late when
something blocks the loop thread (an import, a file read, a long parse), which stalls every
server at once. The worst lag of each test is checked when the test's fixtures are torn down;
lag outside any test (module fixtures, the end of the session) fails the run too; under
pytest-xdist each worker hands what it saw outside tests to the controller, which fails the run.
How a lag is judged and reported (and when an overloaded machine excuses it) is in
`tests.harness.lag_report`.

A test that holds the loop on purpose may raise its own limit, with a reason:
``@pytest.mark.loop_lag(limit=2.0, reason="...")``. Such tests are listed in docs/testing.md;
keep them few. The limit is not scaled to the machine (`tests.harness.calibration`): time the
loop thread waited for a CPU is excused by the judge instead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import pytest

from actors.mcp.loop import EventLoop
from tests.harness import calibration
from tests.harness.lag_report import LIMIT, PROBE_INTERVAL, Verdict, freeze_heap, judge
from tests.harness.stall_stacks import StallSampler

_saved_interval = pytest.StashKey[float | None]()
_outside = pytest.StashKey[list[str]]()
_excused = pytest.StashKey[list[str]]()
_sampler = pytest.StashKey[StallSampler]()
_WORKER_OUTPUT = "loop_lag"
"""The key of an xdist worker's ``workeroutput`` that carries its lags outside tests."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "loop_lag(limit, reason): this test may lag the event loop up to `limit` seconds "
        f"(default {LIMIT}); the reason says why (listed in docs/testing.md)",
    )
    config.stash[_saved_interval] = EventLoop.default_lag_probe_interval
    config.stash[_outside] = []
    config.stash[_excused] = []
    EventLoop.default_lag_probe_interval = PROBE_INTERVAL
    EventLoop.reset_worst_lag()
    if not _is_xdist_controller(config):  # it runs no test, and no loop to sample
        config.stash[_sampler] = StallSampler().start()


def _is_xdist_controller(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def pytest_report_header(config: pytest.Config) -> str:
    # Measured here, before any test runs: once per session, on a quiet process.
    return calibration.describe()


def pytest_collection_finish(session: pytest.Session) -> None:
    freeze_heap()


def pytest_unconfigure(config: pytest.Config) -> None:
    if _saved_interval in config.stash:
        EventLoop.default_lag_probe_interval = config.stash[_saved_interval]
    if _sampler in config.stash:
        config.stash[_sampler].stop()


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


def _note(config: pytest.Config, where: str, verdict: Verdict | None) -> None:
    """Keep a lag seen outside a test: failing (it fails the run) or excused (it is printed)."""
    if verdict is not None:
        config.stash[_outside if verdict.failed else _excused].append(f"{where}: {verdict.text}")


@pytest.fixture(autouse=True)
def loop_lag_watchdog(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if any event loop lagged beyond its limit while it ran."""
    node = request.node
    assert isinstance(node, pytest.Item)
    config = request.config
    sampler = config.stash.get(_sampler, None)
    limit = limit_of(node)
    # Module and session fixtures run outside any test's window: name where it was seen.
    _note(
        config,
        f"before {node.nodeid} (a module or session fixture, or the previous test's)",
        judge(EventLoop.reset_worst_lag(), LIMIT, sampler),
    )
    freeze_heap()
    started = time.monotonic()
    yield
    verdict = judge(EventLoop.reset_worst_lag(), limit, sampler, started)
    if verdict is None:
        return
    if verdict.failed:
        pytest.fail(f"{node.nodeid}: {verdict.text}", pytrace=False)
    config.stash[_excused].append(f"{node.nodeid}: {verdict.text}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    _note(
        config,
        "after the last test",
        judge(EventLoop.reset_worst_lag(), LIMIT, config.stash.get(_sampler, None)),
    )
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: its exit status is not the run's
        workeroutput[_WORKER_OUTPUT] = {"outside": config.stash[_outside], "excused": config.stash[_excused]}
    if config.stash.get(_outside, []) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """On the xdist controller: keep what a finished worker saw outside its tests."""
    seen = getattr(node, "workeroutput", {}).get(_WORKER_OUTPUT)
    config = getattr(node, "config", None)
    if seen is None or not isinstance(config, pytest.Config):
        return
    name = getattr(node, "gateway", None)
    worker = getattr(name, "id", "a worker")
    config.stash[_outside].extend(f"[{worker}] {line}" for line in seen["outside"])
    config.stash[_excused].extend(f"[{worker}] {line}" for line in seen["excused"])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    outside, excused = config.stash.get(_outside, []), config.stash.get(_excused, [])
    if outside:
        terminalreporter.section("event loop lag outside tests", red=True)
        for line in outside:
            terminalreporter.line(f"LAG {line}", red=True)
    if excused:
        terminalreporter.section("event loop lag excused: the loop thread was waiting for a CPU", yellow=True)
        for line in excused:
            terminalreporter.line(f"EXCUSED {line}", yellow=True)
