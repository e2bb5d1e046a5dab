"""The stall sampler names what the loop thread was doing, and holds on to nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterator

import pytest

from actors.mcp.loop import EventLoop
from tests.harness.stall_stacks import StallSampler

SPIN = 0.4


async def _spin_on_the_loop() -> None:
    end = time.monotonic() + SPIN
    while time.monotonic() < end:
        pass


@pytest.fixture
def sampler() -> Iterator[StallSampler]:
    sampler = StallSampler().start()
    yield sampler
    sampler.stop()


@pytest.mark.loop_lag(limit=5.0, reason="keeps the loop busy on purpose so the sampler has a stall to name")
def test_a_busy_loop_is_reported_with_its_stack(sampler: StallSampler) -> None:
    with EventLoop(lag_probe_interval=None) as loop:
        started = time.monotonic()
        loop.run(_spin_on_the_loop, timeout=30)
        loop.run(_nothing, timeout=30)
        ended = time.monotonic()
        time.sleep(0.05)  # let the sampler see the loop idle again and close the stall
    stalls = sampler.stalls_between(started, ended)
    assert any("_spin_on_the_loop" in stall.stack for stall in stalls), [s.stack for s in stalls]
    scheduling = sampler.scheduling_between(started + 0.05, ended - 0.05)
    assert scheduling is not None
    # Busy on the loop: most of the time on a CPU or waiting for one, none of it blocked.
    assert scheduling.on_cpu + scheduling.waiting_for_cpu >= (ended - started - 0.1) * 0.5, scheduling


async def _nothing() -> None:
    return None


@pytest.mark.loop_lag(limit=5.0, reason="keeps a loop busy on purpose so the sampler has a stall to name")
def test_a_loop_of_another_name_is_sampled_too(sampler: StallSampler) -> None:
    # Tests start loops of their own names ("auth-test-loop"): a lag there must be judged on the
    # same evidence (its scheduling, its stack), not failed for want of it.
    loop = EventLoop.start("some-test-loop", lag_probe_interval=None)
    try:
        started = time.monotonic()
        loop.run(_spin_on_the_loop, timeout=30)
        loop.run(_nothing, timeout=30)
        ended = time.monotonic()
        time.sleep(0.05)
    finally:
        loop.stop()
    assert sampler.scheduling_between(started + 0.05, ended - 0.05) is not None
    stalls = sampler.stalls_between(started, ended)
    assert any("_spin_on_the_loop" in stall.stack for stall in stalls), [s.stack for s in stalls]


class Payload:
    pass


def _hold_briefly(payload: Payload) -> None:
    time.sleep(0.05)  # long enough to be sampled while this frame is alive


def test_the_sampler_keeps_no_frame_alive(sampler: StallSampler) -> None:
    payload = Payload()
    ref = weakref.ref(payload)
    _hold_briefly(payload)
    del payload
    time.sleep(0.02)  # a sample taken meanwhile must not hold the returned frame
    assert ref() is None


def test_another_thread_s_wait_for_a_cpu_is_measured() -> None:
    # A thread of ours and a process that spins, both held to one CPU: the kernel makes the
    # thread wait for it, as an overloaded machine makes a thread that holds the GIL wait.
    # The spinning thread holds the GIL most of the time: the sampler reads the other threads'
    # numbers at every sample it gets, to have several within the span.
    sampler = StallSampler(others_every=1).start()
    cpu = min(os.sched_getaffinity(0))
    spinning = (
        f"import os, sys, time\nos.sched_setaffinity(0, {{{cpu}}})\nprint('go', flush=True)\n"
        "end = time.monotonic() + 2.5\nwhile time.monotonic() < end: pass\n"
    )
    spinner = subprocess.Popen([sys.executable, "-c", spinning], stdout=subprocess.PIPE, text=True)
    assert spinner.stdout is not None and spinner.stdout.readline() == "go\n"
    started = threading.Event()

    def spin() -> None:
        os.sched_setaffinity(0, {cpu})
        started.set()
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            pass

    helper = threading.Thread(target=spin, name="busy-helper")
    try:
        with EventLoop(lag_probe_interval=None):
            helper.start()
            assert started.wait(10)
            begun = time.monotonic()
            helper.join(30)
            ended = time.monotonic()
            time.sleep(0.1)  # a sample after the span
    finally:
        spinner.kill()
        spinner.wait(30)
        sampler.stop()
    scheduling = sampler.scheduling_between(begun, ended)
    assert scheduling is not None
    assert scheduling.other == "busy-helper", scheduling
    # Sharing one CPU with the spinner for 1 s it waited (36-150 ms of 0.6 s seen; alone: none).
    assert scheduling.other_waiting_for_cpu >= 0.02, scheduling
