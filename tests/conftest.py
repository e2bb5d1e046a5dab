"""Guards for every test: no test may leave a thread or a child process behind, lag an event
loop beyond 100 ms (tests/harness/loop_lag.py), or skip without being allowed to
(tests/harness/skips.py, tests/allowed-skips.txt)."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Iterator

import pytest

from actors.testing import procfs
from tests.harness import forkserver

pytest_plugins = ("tests.harness.loop_lag", "tests.harness.skips")

# The runtime's owned parts assert they are touched on their owner thread (actors.runtime.owner):
# read when that module is first imported, which no import above does.
os.environ.setdefault("MCP_ACTORS_CHECK_OWNER", "1")
# Pinned tool definitions (actors.pins) go to a folder of this run's, not the user's state folder:
# a server changed since an earlier run (an upgraded package) must not be held here.
_PINS = tempfile.TemporaryDirectory(prefix="mcp-actors-pins-")
os.environ.setdefault("MCP_ACTORS_PINS_DIR", _PINS.name)

# Threads that the interpreter or a test runner plugin may start and keep on purpose.
_ALLOWED_THREAD_PREFIXES = ("pytest_timeout", "asyncio_")


def child_pids() -> set[int]:
    """Live (non-zombie) child processes of this process, its fork servers excepted (started by
    the harness at a test's first use, they serve the whole session: tests/harness/forkserver.py)."""
    return procfs.child_pids(os.getpid()) - forkserver.pids()


def _extra_threads(before: set[int]) -> list[threading.Thread]:
    return [
        t
        for t in threading.enumerate()
        if t.ident not in before and t.is_alive() and not t.name.startswith(_ALLOWED_THREAD_PREFIXES)
    ]


def wait_until(predicate: object, timeout: float, interval: float = 0.02) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` runs out; return its last value."""
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return bool(predicate())
        time.sleep(interval)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{forkserver.MARKER}: start this test's Python servers as real processes, not forked"
        " (tests/harness/forkserver.py)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before the item's fixtures, module-scoped ones included: they may build server entries.
    forkserver.real_processes = item.get_closest_marker(forkserver.MARKER) is not None


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session is over (in each xdist worker): stop this process's fork servers."""
    forkserver.stop_all()
    _PINS.cleanup()  # an xdist worker may end without running finalizers


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """Fail a test that leaves a thread or a child process behind."""
    threads_before = {t.ident for t in threading.enumerate() if t.ident is not None}
    children_before = child_pids()
    yield
    # Shutdown is asynchronous in places (actor threads join, children are reaped): give it time.
    wait_until(lambda: not _extra_threads(threads_before) and not (child_pids() - children_before), 10.0)
    threads = _extra_threads(threads_before)
    children = child_pids() - children_before
    problems = []
    if threads:
        problems.append("threads left behind: " + ", ".join(sorted(t.name for t in threads)))
    if children:
        problems.append(f"child processes left behind: {sorted(children)}")
    if problems:
        pytest.fail("; ".join(problems))
