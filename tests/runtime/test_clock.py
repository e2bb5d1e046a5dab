"""`ManualClock` and `SystemClock`: the seam the runtime's timing reads."""

from __future__ import annotations

import time

import pytest

from actors.runtime.clock import Clock, ManualClock, SystemClock


def test_both_clocks_are_clocks() -> None:
    assert isinstance(SystemClock(), Clock)
    assert isinstance(ManualClock(), Clock)


def test_the_system_clock_reads_the_machine_s_clocks() -> None:
    clock = SystemClock()
    before = time.monotonic()
    assert before <= clock.monotonic() <= time.monotonic()
    assert abs(clock.wall() - time.time()) < 60


def test_a_manual_clock_moves_only_when_advanced() -> None:
    clock = ManualClock(start=5.0, wall_start=1_000.0)
    assert (clock.monotonic(), clock.wall()) == (5.0, 1_000.0)
    assert (clock.monotonic(), clock.wall()) == (5.0, 1_000.0)
    assert clock.advance(2.5) == 7.5
    assert (clock.monotonic(), clock.wall()) == (7.5, 1_002.5)
    assert clock.advance(0) == 7.5


@pytest.mark.parametrize("seconds", [-1.0, float("nan")])
def test_a_manual_clock_never_goes_back(seconds: float) -> None:
    clock = ManualClock()
    with pytest.raises(ValueError):
        clock.advance(seconds)
    assert clock.monotonic() == ManualClock().monotonic()


def test_listeners_run_after_the_time_has_moved() -> None:
    clock = ManualClock(start=0.0)
    seen: list[float] = []
    clock.on_advance(lambda: seen.append(clock.monotonic()))
    clock.advance(1)
    clock.advance(2)
    assert seen == [1.0, 3.0]


def test_the_system_clock_ignores_listeners() -> None:
    assert SystemClock().on_advance(lambda: None) is None
