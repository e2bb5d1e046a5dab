"""`HostCalls.delivered`: the barrier a gateway waits on before it answers (so a backend's log
messages go out first) completes once the news queued before it has been delivered, and at
once when there is none."""

from __future__ import annotations

import threading

from actors.runtime.host import HostCalls

WAIT = 30.0


def test_delivered_is_done_at_once_when_no_news_is_queued_or_under_way() -> None:
    host = HostCalls(workers=1)
    try:
        assert host.delivered().done()
        seen = threading.Event()
        host.notify(seen.set)
        assert seen.wait(WAIT)
        # The news thread may still be finishing that delivery: it is done soon, never later.
        host.delivered().result(WAIT)
    finally:
        host.stop()


def test_delivered_waits_for_news_queued_and_under_way() -> None:
    host = HostCalls(workers=1)
    release = threading.Event()
    started = threading.Event()
    order: list[str] = []
    try:

        def slow() -> None:
            started.set()
            release.wait(WAIT)
            order.append("slow")

        host.notify(slow)
        assert started.wait(WAIT)
        under_way = host.delivered()  # slow() is being delivered: nothing queued behind it
        host.notify(order.append, "queued")
        queued = host.delivered()
        assert not under_way.done() and not queued.done()
        release.set()
        under_way.result(WAIT)
        queued.result(WAIT)
        assert order == ["slow", "queued"]
    finally:
        release.set()
        host.stop()


def test_delivered_after_stop_is_done() -> None:
    host = HostCalls(workers=1)
    host.stop()
    assert host.delivered().done()
