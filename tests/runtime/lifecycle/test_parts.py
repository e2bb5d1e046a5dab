"""The server actor's plain parts, each alone: no actor, no loop, no real time."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

import pytest

from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.runtime import owner
from actors.runtime.admission import refusal
from actors.runtime.calls import Completions
from actors.runtime.health import HealthProbe, ProbeVerdict
from actors.runtime.messages import CallDone, CallTool, ReadResource
from actors.runtime.relisting import Coalescer
from actors.runtime.subscriptions import Subscriptions
from actors.runtime.waiting import WaitingCalls
from actors.tools import ErrorType, RefusalReason, ToolSpec

NS_CONFIG = ServerConfig(name="ns", command="srv")
SMALL_CONFIG = ServerConfig(name="ns", command="srv", max_argument_bytes=50)


def test_a_burst_of_changes_costs_one_request_in_flight_and_one_owed() -> None:
    relist = Coalescer()
    assert relist.changed() is True  # the first goes now
    assert [relist.changed() for _ in range(50)] == [False] * 50  # the rest owe one
    assert relist.done() is True  # the owed one goes
    assert relist.done() is False and not relist.in_flight
    assert relist.changed() is True


def test_a_new_session_forgets_a_relist_that_will_never_answer() -> None:
    relist = Coalescer()
    relist.changed()
    relist.reset()
    assert relist.changed() is True


def test_a_probe_that_times_out_once_gets_another_chance() -> None:
    health = HealthProbe(interval=0.5)
    assert health.timeout == 2.0  # at least the floor, however short the interval
    assert health.begin() and not health.begin()  # one probe at a time
    assert health.answered("slow", ErrorType.TIMEOUT, running=True) == ProbeVerdict.AGAIN
    assert health.begin()
    assert health.answered("slow", ErrorType.TIMEOUT, running=True) == ProbeVerdict.FAILED
    assert health.answered(None, None, running=True) == ProbeVerdict.HEALTHY
    assert health.answered("gone", "connection", running=False) == ProbeVerdict.HEALTHY
    assert health.answered("gone", "connection", running=True) == ProbeVerdict.FAILED
    assert health.failures == 3


def test_subscriptions_follow_each_uri_once() -> None:
    subs = Subscriptions()
    a, fresh_a = subs.add("file:///x", print)
    b, fresh_b = subs.add("file:///x", repr)
    assert (fresh_a, fresh_b) == (True, False) and subs.uris() == ["file:///x"]
    assert subs.followers("file:///x") == [print, repr]
    assert subs.remove(a) == (True, None)  # someone still follows it
    assert subs.remove(b) == (True, "file:///x") and not subs
    assert subs.remove(b) == (False, None)


class FakeTimers:
    def __init__(self) -> None:
        self.live: dict[Hashable, tuple[float, Callable[[], None]]] = {}

    def schedule(self, key: Hashable, delay: float, action: Callable[[], None]) -> int:
        self.live[key] = (delay, action)
        return 1

    def cancel(self, key: Hashable) -> None:
        self.live.pop(key, None)


def test_waiting_calls_keep_their_deadlines_and_cancel_them_when_drained() -> None:
    timers = FakeTimers()
    waiting = WaitingCalls("ns", timers)
    first, second = CallTool("ns", "a", {}), CallTool("ns", "b", {})
    expired: list[CallTool] = []
    waiting.add(first, now=100.0, timeout=5.0, on_expiry=lambda: expired.append(first))
    waiting.add(second, now=101.0, timeout=5.0, on_expiry=lambda: expired.append(second))
    assert len(waiting) == 2 and [d for d, _ in timers.live.values()] == [5.0, 5.0]
    key = next(iter(timers.live))
    timers.live.pop(key)[1]()  # the first deadline passes (a timer that fired is gone)
    assert expired == [first] and waiting.expire(first) and not waiting.expire(first)
    (entry,) = waiting.drain()
    assert (entry.call, entry.queued_at, entry.deadline) == (second, 101.0, 106.0)
    assert not waiting and not timers.live


def test_admission_refuses_what_the_known_tools_rule_out() -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    spec = ToolSpec(name="ns/echo", input_schema=schema)
    tools = {"echo": spec}
    assert refusal(CallTool("ns", "echo", {"text": "hi"}), NS_CONFIG, tools, Catalog()) is None
    unknown = refusal(CallTool("ns", "ecko", {}), NS_CONFIG, tools, Catalog())
    assert unknown is not None and unknown.error_type == ErrorType.NOT_FOUND
    assert unknown.reason is RefusalReason.NOT_OFFERED
    assert "did you mean 'echo'" in unknown.message
    missing = refusal(CallTool("ns", "echo", {}), NS_CONFIG, tools, Catalog())
    assert missing is not None and missing.error_type == ErrorType.VALIDATION
    big = refusal(CallTool("ns", "echo", {"text": "x" * 100}), SMALL_CONFIG, tools, Catalog())
    assert big is not None and big.error_type == ErrorType.VALIDATION
    # Nothing known yet: the server decides.
    assert refusal(CallTool("ns", "anything", {}), NS_CONFIG, None, Catalog()) is None
    assert refusal(ReadResource("ns", "file:///x"), NS_CONFIG, tools, Catalog()) is None


def test_completions_cross_from_any_thread_and_are_read_on_one() -> None:
    done = Completions()
    writer = threading.Thread(target=lambda: [done.put(CallDone(i, None)) for i in range(100)])
    writer.start()
    writer.join(5)
    assert [d.call_id for d in done.drain()] == list(range(100)) and not done


def test_an_owned_part_touched_off_its_owner_thread_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(owner, "CHECK_OWNER", True)
    relist = Coalescer()
    relist.changed()  # this thread owns it now
    failures: list[BaseException] = []

    def elsewhere() -> None:
        try:
            relist.done()
        except owner.WrongThread as exc:
            failures.append(exc)

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join(5)
    assert len(failures) == 1
