"""`SupervisorActor` on a `ManualClock`: ticks, backoff and the restart window in clock time.

The supervisor's server is a recording actor, so each test sees exactly what the supervisor
tells it, and when in clock time; nothing here waits out a real second.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pykka
import pytest

from actors.mcp.config import ServerConfig
from actors.runtime.clock import ManualClock
from actors.runtime.messages import (
    ArmIdle,
    GiveUp,
    HealthCheck,
    IdleCheck,
    ResetRestarts,
    Restart,
    ServerCrashed,
    ServerStopped,
    ServerUp,
    StayDown,
    Supervise,
    Unsupervise,
)
from actors.runtime.supervisor import SupervisorActor, restart_delay
from actors.runtime.timers import TimerService

WAIT = 10.0
NS = "ns"
SEED = 20


@dataclass(frozen=True)
class _Told:
    """Ask the recorder what it has been told since the last time (in the order told)."""


class Recorder(pykka.ThreadingActor):
    """Stands in for a server actor: keeps every message, with the clock time it was handled at.

    That is the time it was told as long as the test does not advance the clock again before
    it asks what was told (the ask is handled after the message, the clock still).
    """

    use_daemon_thread = True

    def __init__(self, clock: ManualClock) -> None:
        super().__init__()
        self.clock = clock
        self.told: list[tuple[float, Any]] = []

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, _Told):
            told, self.told = self.told, []
            return told
        self.told.append((self.clock.monotonic(), message))
        return None


class Rig:
    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.timers = TimerService(name="test-supervisor-timers", clock=clock)
        self.supervisor = SupervisorActor.start(self.timers, random.Random(SEED))
        self.server = Recorder.start(clock)

    def send(self, message: Any) -> None:
        # ask, not tell: the supervisor has handled it when this returns.
        self.supervisor.ask(message, timeout=WAIT)

    def supervise(self, **lifecycle: Any) -> ServerConfig:
        config = ServerConfig(name=NS, command="x", **lifecycle)
        self.send(Supervise(NS, self.server, config))
        return config

    def told(self) -> list[tuple[float, Any]]:
        # Whatever the timers told before this ask is in the recorder's mailbox ahead of it.
        told: list[tuple[float, Any]] = self.server.ask(_Told(), timeout=WAIT)
        return told

    def due(self, kind: str) -> float | None:
        return self.timers.due((kind, NS))

    def stop(self) -> None:
        self.supervisor.stop(timeout=WAIT)
        self.server.stop(timeout=WAIT)
        self.timers.stop()


@pytest.fixture
def rig() -> Iterator[Rig]:
    made = Rig(ManualClock(start=0.0))
    try:
        yield made
    finally:
        made.stop()


def quiet(**lifecycle: Any) -> dict[str, Any]:
    return {"idle_timeout": 0, "health_check_interval": 0, **lifecycle}


def delays(config: ServerConfig, count: int) -> list[float]:
    """The backoff the supervisor's seeded generator draws for attempts 1..count, in order."""
    rng = random.Random(SEED)
    return [restart_delay(config, attempt, rng) for attempt in range(1, count + 1)]


# ---- idle and health ticks -------------------------------------------------------------------


def test_a_server_up_gets_its_idle_check_after_the_idle_timeout(rig: Rig) -> None:
    rig.supervise(**quiet(idle_timeout=300))
    rig.send(ServerUp(NS))
    assert rig.due("idle") == 300
    rig.clock.advance(299.9)
    assert rig.told() == []
    rig.clock.advance(0.1)
    assert rig.told() == [(300, IdleCheck())]
    assert rig.due("idle") is None  # one shot: the server asks for the next one


def test_arm_idle_sets_the_next_idle_check_from_now(rig: Rig) -> None:
    rig.supervise(**quiet(idle_timeout=300))
    rig.send(ServerUp(NS))
    rig.clock.advance(300)
    assert rig.told() == [(300, IdleCheck())]
    # The server was busy 100 s ago: it asks to be checked again when the rest has run out.
    rig.send(ArmIdle(NS, 200))
    assert rig.due("idle") == 500
    rig.clock.advance(200)
    assert rig.told() == [(500, IdleCheck())]


def test_health_checks_repeat_every_interval(rig: Rig) -> None:
    rig.supervise(**quiet(health_check_interval=30))
    rig.send(ServerUp(NS))
    for tick in (30, 60, 90):
        rig.clock.advance(30)
        assert rig.told() == [(tick, HealthCheck())]
    assert rig.due("health") == 120


def test_zero_intervals_schedule_nothing(rig: Rig) -> None:
    rig.supervise(**quiet())
    rig.send(ServerUp(NS))
    assert (rig.due("idle"), rig.due("health")) == (None, None)


@pytest.mark.parametrize("message", [ServerStopped(NS), Unsupervise(NS)], ids=["stopped", "unsupervised"])
def test_a_stopped_or_unsupervised_server_gets_no_more_ticks(rig: Rig, message: Any) -> None:
    rig.supervise(**quiet(idle_timeout=300, health_check_interval=30))
    rig.send(ServerUp(NS))
    rig.send(message)
    assert (rig.due("idle"), rig.due("health")) == (None, None)
    rig.clock.advance(3600)
    assert rig.told() == []


# ---- crashes, backoff and the restart window -----------------------------------------------


def test_a_crash_is_restarted_after_the_backoff_in_clock_time(rig: Rig) -> None:
    config = rig.supervise(**quiet(idle_timeout=300, health_check_interval=30, restart_backoff=8))
    rig.send(ServerUp(NS))
    rig.clock.advance(10)
    rig.send(ServerCrashed(NS, "process exited"))
    # The ticks stop with the crash; the restart comes after the seeded backoff, not before.
    (first,) = delays(config, 1)
    assert 4 <= first <= 8
    assert (rig.due("idle"), rig.due("health")) == (None, None)
    assert rig.due("restart") == pytest.approx(10 + first)
    rig.clock.advance(first - 0.01)
    assert rig.told() == []
    rig.clock.advance(0.01)
    assert rig.told() == [(pytest.approx(10 + first), Restart(1))]


def test_backoff_doubles_with_each_crash_in_the_window(rig: Rig) -> None:
    config = rig.supervise(**quiet(restart_backoff=1, restart_backoff_max=100, max_restarts=5))
    expected = delays(config, 4)
    for attempt, delay in enumerate(expected, start=1):
        crashed_at = rig.clock.monotonic()
        rig.send(ServerCrashed(NS, "exit"))
        assert rig.due("restart") == pytest.approx(crashed_at + delay)
        rig.clock.advance(delay)
        assert rig.told() == [(pytest.approx(crashed_at + delay), Restart(attempt))]
    # Equal jitter: each delay within [ceiling/2, ceiling] of a doubling ceiling.
    assert [2 ** (n - 1) / 2 <= d <= 2 ** (n - 1) for n, d in enumerate(expected, start=1)] == [True] * 4


def test_one_crash_too_many_within_the_window_gives_up(rig: Rig) -> None:
    rig.supervise(**quiet(restart_backoff=1, max_restarts=2, restart_window=60))
    for _ in range(2):
        rig.send(ServerCrashed(NS, "exit"))
        rig.clock.advance(5)
    assert [type(m) for _, m in rig.told()] == [Restart, Restart]
    rig.send(ServerCrashed(NS, "third"))
    assert rig.due("restart") is None
    assert [m for _, m in rig.told()] == [GiveUp("third")]


def test_crashes_older_than_the_window_are_forgotten(rig: Rig) -> None:
    rig.supervise(**quiet(restart_backoff=1, max_restarts=1, restart_window=60))
    rig.send(ServerCrashed(NS, "exit"))
    rig.clock.advance(60)
    assert [m for _, m in rig.told()] == [Restart(1)]
    # Exactly the window later the first crash still counts...
    rig.send(ServerCrashed(NS, "exit"))
    assert [m for _, m in rig.told()] == [GiveUp("exit")]
    rig.send(ResetRestarts(NS))
    rig.send(ServerCrashed(NS, "exit"))
    rig.clock.advance(60.001)
    assert [m for _, m in rig.told()] == [Restart(1)]
    # ...and past it, it is forgotten: this is attempt 1 again, not a give-up.
    rig.send(ServerCrashed(NS, "exit"))
    rig.clock.advance(60)
    assert [m for _, m in rig.told()] == [Restart(1)]


def test_reset_restarts_cancels_a_pending_restart_and_clears_the_window(rig: Rig) -> None:
    rig.supervise(**quiet(restart_backoff=1, restart_backoff_max=100, max_restarts=1, restart_window=60))
    rig.send(ServerCrashed(NS, "exit"))
    assert rig.due("restart") is not None
    rig.send(ResetRestarts(NS))
    assert rig.due("restart") is None
    rig.clock.advance(60)
    assert rig.told() == []
    rig.send(ServerCrashed(NS, "exit"))
    # Within the window of the first crash, yet a first attempt again: half to all of 1 s.
    due = rig.due("restart")
    assert due is not None
    assert 60.5 <= due <= 61


def test_a_temporary_server_is_told_to_stay_down(rig: Rig) -> None:
    rig.supervise(**quiet(restart="temporary", health_check_interval=30))
    rig.send(ServerUp(NS))
    rig.send(ServerCrashed(NS, "exit"))
    assert (rig.due("restart"), rig.due("health")) == (None, None)
    rig.clock.advance(3600)
    assert [m for _, m in rig.told()] == [StayDown()]


def test_the_supervisor_reads_its_timers_clock() -> None:
    clock = ManualClock()
    timers = TimerService(name="test-supervisor-timers", clock=clock)
    try:
        with pytest.raises(ValueError):
            SupervisorActor(timers, clock=ManualClock())
        assert SupervisorActor(timers).clock is clock
        own = SupervisorActor(clock=clock)
        assert own.timers.clock is clock
        own.timers.stop()
    finally:
        timers.stop()
