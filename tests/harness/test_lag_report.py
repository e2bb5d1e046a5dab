"""How a lag is judged: over the limit fails, unless only the wait for a CPU put it over."""

from __future__ import annotations

import os

import pytest

from actors.mcp.loop import LoopLag
from tests.harness.lag_report import LIMIT, judge
from tests.harness.stall_stacks import _TICK, Collection, Scheduling, Stall, StallSampler, _steal, _stolen


class Recorded(StallSampler):
    """A sampler that was never started, answering with what a test gives it."""

    def __init__(
        self, scheduling: Scheduling | None, sampler_blocked: bool = False, spawning: bool = False
    ) -> None:
        super().__init__()
        self.scheduling = scheduling
        self.sampler_blocked = sampler_blocked
        self.spawning = spawning

    def scheduling_between(self, start: float, end: float) -> Scheduling | None:
        return self.scheduling

    def stalls_between(self, start: float, end: float) -> list[Stall]:
        if self.sampler_blocked:
            held = "  the sampler itself could not run"
            return [Stall(start, end, held, 1, sampler_blocked=True, spawning=self.spawning)]
        return [Stall(start, end, "    somewhere.py:1 blocking_call", 3)]

    def collections_between(self, start: float, end: float, longer_than: float = 0.01) -> list[Collection]:
        return [Collection(start, end, 2, "MainThread")]


LAG = LoopLag(0.3, "mcp-actors-loop", 100.0)


def test_within_the_limit_is_no_verdict() -> None:
    assert judge(LoopLag(LIMIT, "loop", 1.0), LIMIT, None) is None
    assert judge(None, LIMIT, None) is None


def test_a_lag_spent_blocked_or_busy_fails_and_says_what_the_loop_did() -> None:
    verdict = judge(LAG, LIMIT, Recorded(Scheduling(on_cpu=0.05, waiting_for_cpu=0.1)), since=99.0)
    assert verdict is not None and verdict.failed
    assert "lagged 300 ms (limit 100 ms), 1.00s in" in verdict.text
    assert "ran 50 ms on a CPU, waited 100 ms for one" in verdict.text
    assert "somewhere.py:1 blocking_call" in verdict.text
    assert "garbage collection (generation 2)" in verdict.text


def test_a_lag_over_the_limit_only_by_the_wait_for_a_cpu_is_excused() -> None:
    verdict = judge(LAG, LIMIT, Recorded(Scheduling(on_cpu=0.0, waiting_for_cpu=0.25)))
    assert verdict is not None and not verdict.failed
    assert "the machine was too busy to run it" in verdict.text


def test_without_the_kernel_s_numbers_a_lag_fails() -> None:
    verdict = judge(LAG, LIMIT, Recorded(None))
    assert verdict is not None and verdict.failed
    no_sampler = judge(LAG, LIMIT, None)
    assert no_sampler is not None and no_sampler.failed


def test_a_lag_blocked_while_another_thread_waited_for_a_cpu_is_excused_up_to_that_wait() -> None:
    # Blocked 280 ms; a thread (which may have held the GIL) waited 250 ms to run: excused.
    # ...while the sampler could not run either (so another thread held the GIL).
    busy = Scheduling(on_cpu=0.01, waiting_for_cpu=0.01, other_waiting_for_cpu=0.25, other="actor-b")
    verdict = judge(LAG, LIMIT, Recorded(busy, sampler_blocked=True))
    assert verdict is not None and not verdict.failed, verdict
    assert "the longest another thread (actor-b) waited for a CPU around it: 250 ms" in verdict.text
    # The loop thread blocked in a call the sampler saw it in (a sleep, a read): never excused.
    in_a_call = judge(LAG, LIMIT, Recorded(busy))
    assert in_a_call is not None and in_a_call.failed
    # The other thread's wait excuses only time the loop thread was blocked, not time it ran.
    running = Scheduling(on_cpu=0.25, waiting_for_cpu=0.0, other_waiting_for_cpu=0.3, other="actor-b")
    ran = judge(LAG, LIMIT, Recorded(running, sampler_blocked=True))
    assert ran is not None and ran.failed
    # A short wait of another thread excuses no more than itself.
    brief = Scheduling(on_cpu=0.0, waiting_for_cpu=0.0, other_waiting_for_cpu=0.05, other="actor-b")
    short = judge(LAG, LIMIT, Recorded(brief, sampler_blocked=True))
    assert short is not None and short.failed


def test_a_lag_blocked_while_the_hypervisor_took_a_cpu_is_excused_up_to_the_steal() -> None:
    # Neither on a CPU nor waiting for one by the guest's account: its CPU was taken away.
    stolen = Scheduling(on_cpu=0.0, waiting_for_cpu=0.0, stolen=0.25)
    verdict = judge(LAG, LIMIT, Recorded(stolen, sampler_blocked=True))
    assert verdict is not None and not verdict.failed, verdict
    assert "the hypervisor took up to 250 ms from a CPU of the machine" in verdict.text
    # A loop thread the sampler saw blocked in a call of ours is not excused by steal.
    in_a_call = judge(LAG, LIMIT, Recorded(stolen))
    assert in_a_call is not None and in_a_call.failed
    # Steal excuses only what it took: 50 ms of it leaves 250 ms blocked.
    little = judge(LAG, LIMIT, Recorded(Scheduling(on_cpu=0.0, waiting_for_cpu=0.0, stolen=0.05), True))
    assert little is not None and little.failed
    # Nor does it excuse time the loop thread ran.
    ran = judge(LAG, LIMIT, Recorded(Scheduling(on_cpu=0.25, waiting_for_cpu=0.0, stolen=0.3), True))
    assert ran is not None and ran.failed


def test_steal_is_counted_from_the_samples_around_a_span_for_the_cpu_that_lost_most() -> None:
    samples = [(1.0, (100, 200)), (2.0, (105, 230)), (3.0, (140, 231))]
    assert _stolen(samples, 1.5, 2.5) == pytest.approx(40 * _TICK)  # 1.0..3.0: cpu0 40, cpu1 31
    assert _stolen(samples, 0.5, 1.5) == 0.0  # no sample before the span
    assert _stolen(samples, 2.5, 3.5) == 0.0  # none after it
    assert _stolen([(1.0, (1,)), (2.0, (1, 2))], 1.0, 1.5) == 0.0  # a CPU came or went


def test_the_machine_s_steal_is_read_per_cpu() -> None:
    steal = _steal()
    assert steal is not None and 1 <= len(steal) <= (os.cpu_count() or 1)
    assert all(ticks >= 0 for ticks in steal)


def test_a_lag_blocked_while_another_thread_started_a_process_is_excused() -> None:
    # The loop thread blocked 280 ms while the sampler could not run and a builtin tool's
    # thread was in subprocess's fork_exec (the GIL held until its child called exec).
    blocked = Scheduling(on_cpu=0.01, waiting_for_cpu=0.01)
    verdict = judge(LAG, LIMIT, Recorded(blocked, sampler_blocked=True, spawning=True))
    assert verdict is not None and not verdict.failed, verdict
    assert "another thread was starting a process" in verdict.text
    # The same without a process starting: another thread held the GIL running, never excused.
    running = judge(LAG, LIMIT, Recorded(blocked, sampler_blocked=True))
    assert running is not None and running.failed
    # A process started while the loop thread ran on a CPU excuses none of that time.
    ran = Scheduling(on_cpu=0.25, waiting_for_cpu=0.0)
    busy = judge(LAG, LIMIT, Recorded(ran, sampler_blocked=True, spawning=True))
    assert busy is not None and busy.failed


def test_a_thread_in_subprocess_fork_exec_is_seen_as_starting_a_process() -> None:
    import subprocess
    import sys

    from tests.harness.stall_stacks import _gil_held

    seen: list[bool] = []
    real = subprocess._fork_exec  # type: ignore[attr-defined]

    def watched(*args: object) -> int:
        # As the sampler, another thread, sees this one: its innermost Python frame.
        seen.append(_gil_held({-1: sys._getframe(1)}, set())[1])
        return real(*args)  # type: ignore[no-any-return]

    subprocess._fork_exec = watched  # type: ignore[attr-defined]
    try:
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    finally:
        subprocess._fork_exec = real  # type: ignore[attr-defined]
    assert seen == [True]
