"""The per-call path cut to its minimum keeps its promises.

Completions reach the server actor without a wake-up of their own (read before its next
message); the loop begins every job submitted while one wake-up is pending; a request's one
cancel scope still times it out and still fails it fast when the server dies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import threading

import pytest

from actors import Runtime, ToolResult
from actors.mcp.loop import EventLoop
from actors.runtime.clock import ManualClock
from actors.runtime.messages import CallTool
from tests.conftest import wait_until
from tests.runtime.conftest import advance_to, armed, config, stdio_server

WAIT = 60.0


def test_a_status_asked_after_the_answers_counts_every_call() -> None:
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        for n in range(5):
            assert rt.call_tool("fx/echo", {"text": str(n)}, timeout=WAIT).success
        assert rt.call_tool("fx/fail", {"message": "no"}, timeout=WAIT).error_type == "server_error"
        # No waiting: a completion is noted for the actor before its caller is answered.
        status = rt.status("fx")[0]
        assert (status.calls, status.errors, status.in_flight) == (6, 1, 0)


def test_message_api_calls_in_flight_are_counted_until_answered() -> None:
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        assert rt.call_tool("fx/echo", {"text": "start"}, timeout=WAIT).success
        calls = [CallTool("fx", "sleep", {"seconds": 1.0, "marker": f"m{i}"}) for i in range(8)]
        for call in calls:
            rt.registry.tell(call)
        assert wait_until(lambda: rt.status("fx")[0].in_flight == 8, WAIT)
        for call in calls:
            assert call.reply.result(timeout=WAIT).success
        status = rt.status("fx")[0]
        assert (status.calls, status.in_flight) == (9, 0)


def test_an_idle_server_still_stops_after_calls_that_completed_unseen() -> None:
    clock = ManualClock()
    with Runtime.start(config({"fx": stdio_server(idleTimeout=300)}), clock=clock) as rt:
        for _ in range(3):
            assert rt.call_tool("fx/echo", {"text": "x"}, timeout=WAIT).success
        advance_to(clock, armed(rt, "idle", "fx"))
        assert wait_until(lambda: rt.status("fx")[0].state == "stopped", WAIT)
        assert rt.status("fx")[0].calls == 3


def test_a_timeout_still_ends_the_call_and_the_server_goes_on() -> None:
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        rt.start_server("fx", timeout=WAIT)
        result = rt.call_tool("fx/sleep", {"seconds": 30}, timeout=0.5)
        assert result.error_type == "timeout", result
        assert (result.error or "").startswith("timeout: sleep got no answer within 0.5 s"), result
        assert rt.call_tool("fx/echo", {"text": "after"}, timeout=WAIT).text == "after"


def test_a_server_that_dies_fails_its_calls_as_connection_before_their_timeout() -> None:
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        assert rt.call_tool("fx/echo", {"text": "up"}, timeout=WAIT).success
        slow = CallTool("fx", "sleep", {"seconds": 30}, timeout=WAIT)
        rt.registry.tell(slow)
        assert wait_until(lambda: rt.status("fx")[0].in_flight == 1, WAIT)
        assert rt.call_tool("fx/crash", {}, timeout=WAIT).error_type in {"connection", "server_error"}
        # Long before its own 60 s: the death is seen and the request cut off.
        assert slow.reply.result(timeout=WAIT / 2).error_type == "connection"


# ---- the loop --------------------------------------------------------------------------


@pytest.fixture
def loop() -> EventLoop:
    with EventLoop.start("test-hot-path-loop") as started:
        yield started


def test_jobs_submitted_from_many_threads_all_run(loop: EventLoop) -> None:
    async def double(n: int) -> int:
        await asyncio.sleep(0)
        return 2 * n

    futures: list[concurrent.futures.Future[int]] = []
    lock = threading.Lock()

    def submit_many(base: int) -> None:
        for n in range(base, base + 200):
            future = loop.submit(double, n)
            with lock:
                futures.append(future)

    threads = [threading.Thread(target=submit_many, args=(k * 1000,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    done, pending = concurrent.futures.wait(futures, WAIT)
    assert not pending
    assert sorted(f.result() for f in done) == sorted(
        2 * n for k in range(4) for n in range(k * 1000, k * 1000 + 200)
    )


def test_a_failing_job_fails_its_future_with_its_error(loop: EventLoop) -> None:
    async def boom() -> None:
        raise ValueError("boom")

    async def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(ValueError, match="boom"):
        loop.submit(boom).result(WAIT)
    with pytest.raises(RuntimeError, match="KeyboardInterrupt"):
        loop.submit(interrupted).result(WAIT)


def test_cancelling_the_future_cancels_the_task(loop: EventLoop) -> None:
    started = threading.Event()
    cancelled = threading.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    future = loop.submit(forever)
    assert started.wait(WAIT)
    assert future.cancel()
    assert cancelled.wait(WAIT)


def test_jobs_running_when_the_loop_stops_fail_as_connection() -> None:
    loop = EventLoop.start("test-hot-path-stop")
    started = threading.Event()

    async def forever() -> None:
        started.set()
        await asyncio.sleep(3600)

    future = loop.submit(forever)
    assert started.wait(WAIT)
    loop.stop()
    with pytest.raises(ConnectionError):
        future.result(WAIT)
    with pytest.raises(RuntimeError, match="not running"):
        loop.submit(forever)


def test_calls_leave_no_reference_cycles_behind() -> None:
    # A cycle per call (a reply, the request's future and their callbacks holding each other)
    # costs a collection every few dozen calls, with the GIL held.
    with Runtime.start(config({"fx": stdio_server()})) as rt:
        assert rt.call_tool("fx/echo", {"text": "warm"}, timeout=WAIT).success
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for n in range(20):
                assert rt.call_tool("fx/echo", {"text": str(n)}, timeout=WAIT).success
                message = CallTool("fx", "echo", {"text": str(n)})
                rt.registry.tell(message)
                assert message.reply.result(timeout=WAIT).success
                assert rt.call_tool("fx/echo", {"text": n}, timeout=WAIT).error_type == "validation"
            gc.collect()
            left = [o for o in gc.garbage if isinstance(o, CallTool | concurrent.futures.Future | ToolResult)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
        assert left == []
