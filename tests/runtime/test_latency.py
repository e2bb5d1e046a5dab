"""A server's latency percentiles and its last failed call, as its status reports them: the
reservoir alone, then a real runtime in front of the fixture server."""

from __future__ import annotations

import math

from actors import Runtime
from actors.runtime.latency import Latencies
from tests.conftest import wait_until
from tests.runtime.conftest import config, stdio_server

WAIT = 30.0


def test_nearest_rank_percentiles_of_the_recent_window() -> None:
    latencies = Latencies(window=100)
    assert latencies.percentiles() is None
    for ms in range(1, 101):  # 1 .. 100 ms
        latencies.note(float(ms))
    found = latencies.percentiles()
    assert found is not None and (found.p50_ms, found.p99_ms, found.samples) == (50.0, 99.0, 100)
    # The window moves on: 100 calls of 1000 ms push the old ones out.
    for _ in range(100):
        latencies.note(1000.0)
    found = latencies.percentiles()
    assert found is not None and (found.p50_ms, found.p99_ms) == (1000.0, 1000.0)
    # What is no duration is not counted.
    latencies.note(math.nan)
    latencies.note(-1.0)
    assert latencies.percentiles() == found


def test_one_sample_is_both_percentiles() -> None:
    latencies = Latencies()
    latencies.note(12.3456)
    found = latencies.percentiles()
    assert found is not None and (found.p50_ms, found.p99_ms) == (12.346, 12.346)


def test_the_status_reports_percentiles_and_the_last_failed_call() -> None:
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        [before] = rt.status("fx")
        assert (before.latency_p50_ms, before.latency_p99_ms, before.last_call_error) == (None, None, None)
        for n in range(5):
            assert rt.call_tool("fx/echo", {"text": str(n)}, timeout=WAIT).success
        failed = rt.call_tool("fx/fail", {"message": "no"}, timeout=WAIT)
        assert not failed.success and failed.error_type == "server_error"
        # Completions are counted on the actor's thread as its next message comes: wait for them.
        assert wait_until(lambda: rt.status("fx")[0].calls == 6, WAIT)
        [status] = rt.status("fx")
        assert status.latency_p50_ms is not None and status.latency_p99_ms is not None
        assert 0 < status.latency_p50_ms <= status.latency_p99_ms
        assert (status.errors, status.last_call_error) == (1, "server_error")
        assert status.last_call_error_at is not None
        # A call refused before it is sent is a failed call too, and not a latency sample.
        refused = rt.call_tool("fx/echo", {"text": 5}, timeout=WAIT)
        assert not refused.success
        assert wait_until(lambda: rt.status("fx")[0].last_call_error == refused.error_type, WAIT)
        assert rt.status("fx")[0].latency_p99_ms == status.latency_p99_ms
