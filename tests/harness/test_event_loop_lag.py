"""`EventLoop`'s lag probe and its bounded `run`."""

from __future__ import annotations

import inspect
import math
import subprocess
import sys
import time

import anyio
import pytest

from actors.mcp.loop import EventLoop

BLOCK = 0.3
"""How long the tests below block the loop thread on purpose."""


async def _block_the_loop() -> None:
    time.sleep(BLOCK)  # what an import or a file read on the loop does to every server


async def _nothing() -> None:
    await anyio.sleep(0)


@pytest.mark.loop_lag(limit=5.0, reason="blocks the loop thread on purpose to measure the lag")
def test_the_probe_measures_a_blocked_loop_and_reset_starts_afresh() -> None:
    with EventLoop(lag_probe_interval=0.01) as loop:
        EventLoop.reset_worst_lag()
        loop.run(_block_the_loop, timeout=30)
        loop.run(anyio.sleep, 0.05, timeout=30)  # the probe wakes (late) and records it
        # A lower bound only: a busy machine makes the lag longer, never shorter.
        assert loop.max_lag >= BLOCK - 0.05, loop.max_lag
        worst = EventLoop.worst_lag()
        assert worst is not None and worst.seconds >= BLOCK - 0.05, worst
        assert worst.loop == "mcp-actors-loop"
        assert loop.reset_max_lag() >= BLOCK - 0.05
        assert loop.max_lag < BLOCK - 0.05
        assert EventLoop.reset_worst_lag() == worst
        after = EventLoop.worst_lag()
        assert after is None or after.seconds < BLOCK - 0.05, after


@pytest.mark.loop_lag(limit=5.0, reason="blocks the loop thread on purpose to show a loop without a probe")
def test_a_loop_without_a_probe_measures_nothing() -> None:
    with EventLoop(lag_probe_interval=None) as loop:
        assert loop.lag_probe_interval is None
        loop.run(_block_the_loop, timeout=30)
        loop.run(anyio.sleep, 0.05, timeout=30)
        assert loop.max_lag == 0.0


def test_the_class_default_reaches_loops_created_later(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EventLoop, "default_lag_probe_interval", 0.25)
    assert EventLoop().lag_probe_interval == 0.25
    assert EventLoop(lag_probe_interval=None).lag_probe_interval is None
    assert EventLoop(lag_probe_interval=0.5).lag_probe_interval == 0.5
    monkeypatch.setattr(EventLoop, "default_lag_probe_interval", None)
    assert EventLoop().lag_probe_interval is None


def test_the_library_leaves_the_probe_off() -> None:
    # The harness turns it on (tests/harness/loop_lag.py); the library's own default is off.
    code = "from actors.mcp.loop import EventLoop; print(EventLoop.default_lag_probe_interval)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out.strip() == "None"


@pytest.mark.parametrize("interval", [0.0, -1.0, math.nan, math.inf])
def test_a_probe_interval_must_be_a_positive_number(interval: float) -> None:
    with pytest.raises(ValueError, match="lag_probe_interval"):
        EventLoop(lag_probe_interval=interval)


@pytest.mark.parametrize("timeout", [None, math.inf, math.nan, -1.0])
def test_run_never_waits_without_a_bound(timeout: float | None) -> None:
    with EventLoop() as loop:
        with pytest.raises(ValueError, match="finite"):
            loop.run(_nothing, timeout=timeout)  # type: ignore[arg-type]
        assert loop.run(_nothing) is None
    default = inspect.signature(EventLoop.run).parameters["timeout"].default
    assert isinstance(default, float) and math.isfinite(default), default
