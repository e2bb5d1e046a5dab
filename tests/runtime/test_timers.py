"""`TimerService`: keyed timers on one heap-ordered thread."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator

import pytest

from actors.runtime.clock import ManualClock, SystemClock
from actors.runtime.timers import TimerService
from tests.conftest import wait_until

WAIT = 5.0


@pytest.fixture
def timers() -> Iterator[TimerService]:
    service = TimerService(name="test-timers")
    try:
        yield service
    finally:
        service.stop()


class Log:
    """Thread-safe record of which actions ran, with an event per expected count."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fired: list[str] = []
        self.threads: set[str] = set()
        self.done = threading.Event()
        self.expect = 1

    def action(self, label: str) -> Callable[[], None]:
        def run() -> None:
            with self.lock:
                self.fired.append(label)
                self.threads.add(threading.current_thread().name)
                if len(self.fired) >= self.expect:
                    self.done.set()

        return run


def timer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "test-timers"]


def test_timers_fire_in_due_order(timers: TimerService) -> None:
    log = Log()
    log.expect = 4
    timers.schedule("c", 0.15, log.action("c"))
    timers.schedule("a", 0.05, log.action("a"))
    timers.schedule("d", 0.20, log.action("d"))
    timers.schedule("b", 0.10, log.action("b"))
    assert log.done.wait(WAIT)
    assert log.fired == ["a", "b", "c", "d"]
    assert log.threads == {"test-timers"}


def test_due_timers_fire_in_scheduling_order(timers: TimerService) -> None:
    log = Log()
    log.expect = 20
    gate = threading.Event()

    def hold() -> None:
        gate.wait(WAIT)

    # Hold the timer thread so that every timer below is due when it gets to them.
    timers.schedule("gate", 0, hold)
    for i in range(20):
        timers.schedule(i, 0, log.action(str(i)))
    gate.set()
    assert log.done.wait(WAIT)
    assert log.fired == [str(i) for i in range(20)]


def test_negative_delay_fires_at_once(timers: TimerService) -> None:
    log = Log()
    log.expect = 2
    gate = threading.Event()
    timers.schedule("gate", 0, lambda: gate.wait(WAIT))
    timers.schedule("late", 60, log.action("late"))
    # Due no later than a zero delay scheduled after it: at once, not in 10 s, not never.
    timers.schedule("negative", -10, log.action("negative"))
    timers.schedule("zero", 0, log.action("zero"))
    gate.set()
    assert log.done.wait(WAIT)
    assert log.fired == ["negative", "zero"]


def test_one_thread_for_many_timers(timers: TimerService) -> None:
    log = Log()
    log.expect = 200
    for i in range(200):
        timers.schedule(i, 0.01 * (i % 10), log.action(str(i)))
    assert len(timer_threads()) == 1
    assert log.done.wait(WAIT)
    assert sorted(log.fired, key=int) == [str(i) for i in range(200)]
    assert log.threads == {"test-timers"}


def test_rescheduling_a_key_replaces_its_timer(timers: TimerService) -> None:
    log = Log()
    first = timers.schedule("k", 0.05, log.action("stale"))
    second = timers.schedule("k", 0.10, log.action("fresh"))
    assert second == first + 1
    assert timers.pending() == 1
    assert log.done.wait(WAIT)
    # The stale timer was due first: had it fired, it would be in the log before "fresh".
    assert log.fired == ["fresh"]
    assert timers.pending() == 0


def test_replacing_with_an_earlier_time(timers: TimerService) -> None:
    log = Log()
    timers.schedule("k", 60, log.action("late"))
    timers.schedule("k", 0.01, log.action("early"))
    assert log.done.wait(WAIT)
    assert log.fired == ["early"]
    assert timers.pending() == 0


def test_replacing_with_a_later_time_never_fires_the_stale_one(timers: TimerService) -> None:
    log = Log()
    sentinel = threading.Event()
    timers.schedule("k", 0.02, log.action("stale"))
    timers.schedule("k", 60, log.action("late"))
    # The stale entry comes up (and is dropped) before the sentinel fires.
    timers.schedule("sentinel", 0.1, sentinel.set)
    assert sentinel.wait(WAIT)
    assert log.fired == []
    assert timers.pending() == 1


def test_cancel(timers: TimerService) -> None:
    log = Log()
    sentinel = threading.Event()
    timers.schedule("k", 0.02, log.action("cancelled"))
    timers.schedule("other", 0.03, log.action("kept"))
    timers.cancel("k")
    timers.cancel("never-scheduled")
    timers.schedule("sentinel", 0.1, sentinel.set)
    assert sentinel.wait(WAIT)
    assert log.fired == ["kept"]
    assert timers.pending() == 0


def test_a_cancelled_key_can_be_scheduled_again(timers: TimerService) -> None:
    log = Log()
    timers.schedule("k", 0.02, log.action("old"))
    timers.cancel("k")
    timers.schedule("k", 0.04, log.action("new"))
    assert log.done.wait(WAIT)
    assert log.fired == ["new"]


def test_cancel_where(timers: TimerService) -> None:
    log = Log()
    sentinel = threading.Event()
    for ns in ("a", "b"):
        for kind in ("idle", "health"):
            timers.schedule((kind, ns), 0.02, log.action(f"{kind}:{ns}"))
    timers.cancel_where(lambda key: isinstance(key, tuple) and key[1] == "a")
    timers.schedule("sentinel", 0.1, sentinel.set)
    assert sentinel.wait(WAIT)
    assert sorted(log.fired) == ["health:b", "idle:b"]


def test_repeat_until_cancelled(timers: TimerService) -> None:
    fired: list[int] = []
    third = threading.Event()
    sentinel = threading.Event()

    def tick() -> None:
        fired.append(len(fired))
        if len(fired) == 3:
            # Cancelling from inside the action: the next repetition is already queued, and stale.
            timers.cancel("tick")
            third.set()

    timers.schedule("tick", 0.01, tick, repeat=0.02)
    assert third.wait(WAIT)
    timers.schedule("sentinel", 0.15, sentinel.set)
    assert sentinel.wait(WAIT)
    assert fired == [0, 1, 2]
    assert timers.pending() == 0


def test_repeat_is_replaced_by_rescheduling(timers: TimerService) -> None:
    log = Log()
    ticked = threading.Event()
    timers.schedule("k", 0.0, ticked.set, repeat=0.01)
    assert ticked.wait(WAIT)
    timers.schedule("k", 0.05, log.action("once"))
    assert log.done.wait(WAIT)
    ticked.clear()
    sentinel = threading.Event()
    timers.schedule("sentinel", 0.1, sentinel.set)
    assert sentinel.wait(WAIT)
    assert not ticked.is_set()
    assert log.fired == ["once"]


class Action:
    """An action that can be watched with a weak reference (a closure cannot)."""

    def __init__(self, ran: threading.Event | None = None) -> None:
        self.ran = ran

    def __call__(self) -> None:
        if self.ran is not None:
            self.ran.set()


def released(refs: list[weakref.ref[Action]]) -> int:
    # No reference cycles here: an action is freed as soon as the service lets go of it.
    return sum(1 for ref in refs if ref() is None)


def all_released(refs: list[weakref.ref[Action]]) -> bool:
    # The lag watchdog's stall sampler may hold, for the few milliseconds of one sample, the
    # frame of a `schedule` call it caught, and that frame the action: seen once as 999 of 1000.
    # What the service keeps is kept for good, so a bounded wait still fails on a leak.
    return wait_until(lambda: released(refs) == len(refs), WAIT)


def test_cancelled_timers_forget_their_keys_and_actions(timers: TimerService) -> None:
    actions = [Action() for _ in range(1000)]
    refs = [weakref.ref(a) for a in actions]
    for i, action in enumerate(actions):
        timers.schedule(("call", i), 60, action)
    assert timers.pending() == 1000
    for i in range(1000):
        timers.cancel(("call", i))
    del actions, action
    assert timers.pending() == 0
    assert timers.queued() == 0
    assert all_released(refs), f"{len(refs) - released(refs)} actions still alive"


def test_fired_one_shot_timers_forget_their_keys_and_actions(timers: TimerService) -> None:
    fired = [threading.Event() for _ in range(1000)]
    actions = [Action(ran) for ran in fired]
    refs = [weakref.ref(a) for a in actions]
    for i, action in enumerate(actions):
        timers.schedule(("call", i), 0, action)
    del actions, action
    assert all(ran.wait(WAIT) for ran in fired)
    # The thread has let go of the last action once it has run the next one.
    sentinel = threading.Event()
    timers.schedule("sentinel", 0, sentinel.set)
    assert sentinel.wait(WAIT)
    assert timers.pending() == 0
    assert timers.queued() == 0
    assert all_released(refs), f"{len(refs) - released(refs)} actions still alive"


def test_rescheduling_one_key_does_not_grow_the_heap(timers: TimerService) -> None:
    log = Log()
    for i in range(1000):
        timers.schedule("k", 60 if i < 999 else 0, log.action(str(i)))
        assert timers.queued() <= 2
    assert log.done.wait(WAIT)
    assert log.fired == ["999"]


def test_dead_entries_are_at_most_half_the_heap(timers: TimerService) -> None:
    log = Log()
    log.expect = 10
    holding, gate = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        gate.wait(WAIT)

    # Hold the timer thread, so that nothing fires before the counts are read.
    timers.schedule("gate", 0, hold)
    assert holding.wait(WAIT)
    for i in range(1000):
        timers.schedule(i, 60 if i % 100 else 0.01 * (i // 100), log.action(str(i)))
    timers.cancel_where(lambda key: isinstance(key, int) and key % 100 != 0 and key % 7 != 0)
    assert timers.pending() == 10 + len([i for i in range(1000) if i % 100 and i % 7 == 0])
    assert timers.queued() <= 2 * timers.pending()
    gate.set()
    # The heap is still in order after compaction: the ten short timers fire, in order.
    assert log.done.wait(WAIT)
    assert log.fired == [str(i) for i in range(0, 1000, 100)]


def test_a_failing_action_does_not_kill_the_thread(
    timers: TimerService, caplog: pytest.LogCaptureFixture
) -> None:
    log = Log()

    def boom() -> None:
        raise RuntimeError("boom")

    timers.schedule("boom", 0, boom)
    timers.schedule("after", 0.02, log.action("after"))
    assert log.done.wait(WAIT)
    assert "timer action for 'boom' failed" in caplog.text


def test_stop_ends_the_thread_and_drops_timers() -> None:
    log = Log()
    service = TimerService(name="test-timers")
    try:
        service.schedule("later", 0.2, log.action("later"))
        service.schedule("repeat", 0.2, log.action("repeat"), repeat=0.1)
        assert len(timer_threads()) == 1
    finally:
        service.stop()
    assert timer_threads() == []
    assert service.pending() == 0
    assert service.schedule("after-stop", 0, log.action("after-stop")) == 0
    assert not log.done.wait(0.4)
    assert log.fired == []


def test_stop_is_idempotent() -> None:
    service = TimerService(name="test-timers")
    service.stop()
    service.stop()
    assert timer_threads() == []


def test_stop_from_inside_an_action() -> None:
    service = TimerService(name="test-timers")
    stopped = threading.Event()

    def stop_self() -> None:
        service.stop()
        stopped.set()

    try:
        service.schedule("stop", 0, stop_self)
        assert stopped.wait(WAIT)
        assert wait_until(lambda: timer_threads() == [], WAIT)
    finally:
        service.stop()


def test_stop_while_an_action_runs_waits_for_it() -> None:
    service = TimerService(name="test-timers")
    started, release = threading.Event(), threading.Event()
    finished = threading.Event()

    def slow() -> None:
        started.set()
        release.wait(WAIT)
        finished.set()

    try:
        service.schedule("slow", 0, slow)
        assert started.wait(WAIT)
        stopper = threading.Thread(target=service.stop, name="test-stopper")
        stopper.start()
        release.set()
        stopper.join(WAIT)
        assert finished.is_set()
        assert timer_threads() == []
    finally:
        service.stop()


# ---- on a ManualClock: due times are the clock's, and advancing it fires them ----------------


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def manual(clock: ManualClock) -> Iterator[TimerService]:
    service = TimerService(name="test-timers", clock=clock)
    try:
        yield service
    finally:
        service.stop()


def test_the_system_clock_is_the_default() -> None:
    service = TimerService(name="test-timers")
    try:
        assert isinstance(service.clock, SystemClock)
    finally:
        service.stop()


def test_due_times_are_read_from_the_clock(clock: ManualClock, manual: TimerService) -> None:
    manual.schedule("k", 30, lambda: None)
    assert manual.due("k") == clock.monotonic() + 30
    clock.advance(10)
    manual.schedule("k", 30, lambda: None)
    assert manual.due("k") == clock.monotonic() + 30
    assert manual.due("other") is None


def test_nothing_fires_until_the_clock_reaches_the_due_time(clock: ManualClock, manual: TimerService) -> None:
    log = Log()
    manual.schedule("idle", 30, log.action("idle"))
    # An advance returns once every timer due by then has run: what has not run is not due.
    clock.advance(29.999)
    assert log.fired == []
    assert manual.pending() == 1
    clock.advance(0.001)
    assert log.fired == ["idle"]
    assert log.threads == {"test-timers"}
    assert manual.pending() == 0


def test_one_advance_fires_every_due_timer_in_due_order(clock: ManualClock, manual: TimerService) -> None:
    log = Log()
    for label, delay in [("c", 3.0), ("late", 60.0), ("a", 1.0), ("b", 2.0)]:
        manual.schedule(label, delay, log.action(label))
    clock.advance(59)
    assert log.fired == ["a", "b", "c"]
    assert manual.due("late") == pytest.approx(clock.monotonic() + 1)


def test_a_repeating_timer_fires_once_per_interval_of_clock_time(
    clock: ManualClock, manual: TimerService
) -> None:
    log = Log()
    manual.schedule("health", 30, log.action("tick"), repeat=30)
    for expected in range(1, 4):
        clock.advance(30)
        assert log.fired == ["tick"] * expected
        assert manual.due("health") == clock.monotonic() + 30
    # A long jump fires it once, not once per interval missed: the next tick is an interval on.
    clock.advance(300)
    assert log.fired == ["tick"] * 4
    assert manual.due("health") == clock.monotonic() + 30


def test_replaced_and_cancelled_timers_never_fire_on_a_manual_clock(
    clock: ManualClock, manual: TimerService
) -> None:
    log = Log()
    manual.schedule("k", 1, log.action("stale"))
    manual.schedule("k", 5, log.action("fresh"))
    manual.schedule("gone", 1, log.action("gone"))
    manual.cancel("gone")
    clock.advance(4)
    assert log.fired == []
    clock.advance(1)
    assert log.fired == ["fresh"]


def test_an_action_that_schedules_a_due_timer_has_it_run_within_the_same_advance(
    clock: ManualClock, manual: TimerService
) -> None:
    log = Log()
    # A restart scheduled by a crash noticed at a tick: both are due by the advanced time.
    manual.schedule("first", 1, lambda: manual.schedule("second", 0, log.action("second")))
    clock.advance(1)
    assert log.fired == ["second"]


def test_an_action_may_advance_the_clock_itself(clock: ManualClock, manual: TimerService) -> None:
    log = Log()
    manual.schedule("later", 10, log.action("later"))
    manual.schedule("mover", 1, lambda: clock.advance(9))
    clock.advance(1)
    # The mover's advance does not wait for its own thread; the timer thread then finds "later" due.
    assert log.done.wait(WAIT)
    assert log.fired == ["later"]


def test_advancing_after_stop_fires_nothing_and_does_not_wait(clock: ManualClock) -> None:
    log = Log()
    service = TimerService(name="test-timers", clock=clock)
    try:
        service.schedule("later", 1, log.action("later"))
        service.schedule("repeat", 1, log.action("repeat"), repeat=1)
    finally:
        service.stop()
    assert timer_threads() == []
    began = time.monotonic()
    clock.advance(100)
    assert time.monotonic() - began < TimerService.settle_timeout
    assert log.fired == []


def test_a_wedged_action_delays_an_advance_by_the_settle_timeout_at_most(
    clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(TimerService, "settle_timeout", 0.05)
    service = TimerService(name="test-timers", clock=clock)
    release = threading.Event()
    try:
        service.schedule("wedged", 1, lambda: release.wait(WAIT))
        clock.advance(1)  # returns after the settle timeout, the action still running
        assert not release.is_set()
    finally:
        release.set()
        service.stop()


def test_two_services_on_one_clock_both_fire(clock: ManualClock, manual: TimerService) -> None:
    log = Log()
    other = TimerService(name="test-timers", clock=clock)
    try:
        manual.schedule("a", 1, log.action("a"))
        other.schedule("b", 2, log.action("b"))
        clock.advance(2)
        assert sorted(log.fired) == ["a", "b"]
    finally:
        other.stop()
