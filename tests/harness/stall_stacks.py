"""What the event loop was doing while it lagged: a sampler of the loop threads' stacks.

A daemon thread samples the stack of every event-loop thread every few milliseconds. An
idle loop waits in its selector; a run of samples outside it that lasts longer than
``min_stall`` is a stall, kept with the stack seen most often during it. The loop-lag
watchdog quotes the stall that overlaps the worst lag, so a failure names the code that
blocked the loop (an import, a spawn, a parse) rather than only how long it took.

When another thread holds the GIL the sampler cannot run either: such gaps between samples
are reported as stalls too, with the stacks the other threads were in.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from types import FrameType

from actors.loop import THREAD_NAME

__all__ = ["Stall", "StallSampler"]

# An asyncio loop waiting for work sits in its selector's select(), inside the C poll call.
_IDLE = ("selectors.py", "select")


@dataclass(frozen=True)
class Stall:
    """A stretch of time in which a loop thread did not wait for work."""

    start: float
    end: float
    stack: str
    """The stack seen most often (innermost call last), or what other threads held."""
    samples: int

    @property
    def seconds(self) -> float:
        return self.end - self.start


def _stack(frame: FrameType | None, limit: int = 40) -> tuple[str, ...]:
    lines: list[str] = []
    while frame is not None and len(lines) < limit:
        code = frame.f_code
        lines.append(f"{code.co_filename}:{frame.f_lineno} {code.co_name}")
        frame = frame.f_back
    return tuple(reversed(lines))


def _idle(frame: FrameType | None) -> bool:
    return (
        frame is not None and frame.f_code.co_name == _IDLE[1] and frame.f_code.co_filename.endswith(_IDLE[0])
    )


class StallSampler:
    """Samples the loop threads; `stalls_between` answers which stalls overlap a time span."""

    def __init__(self, interval: float = 0.005, min_stall: float = 0.05, keep: int = 200) -> None:
        self.interval = interval
        self.min_stall = min_stall
        self._keep = keep
        self._stalls: list[Stall] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="loop-stall-sampler", daemon=True)
        # Per loop thread: when its current busy run began, and the stacks seen during it.
        self._busy: dict[int, tuple[float, Counter[tuple[str, ...]]]] = {}

    def start(self) -> StallSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def stalls_between(self, start: float, end: float) -> list[Stall]:
        with self._lock:
            return [s for s in self._stalls if s.end >= start and s.start <= end]

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.interval):
            now = time.monotonic()
            frames = sys._current_frames()
            loops = {t.ident: t for t in threading.enumerate() if t.name == THREAD_NAME and t.ident}
            if now - last > self.min_stall + self.interval and loops:
                others = Counter(_stack(frame)[-6:] for ident, frame in frames.items() if ident not in loops)
                self._record(
                    Stall(
                        last, now, "the GIL was held elsewhere; other threads were in:\n" + _format(others), 1
                    )
                )
            last = now
            for ident in list(self._busy):
                if ident not in loops:
                    self._finish(ident, now)
            for ident in loops:
                frame = frames.get(ident)
                if _idle(frame):
                    self._finish(ident, now)
                    continue
                stacks = self._busy.setdefault(ident, (now, Counter()))[1]
                stacks[_stack(frame)] += 1

    def _finish(self, ident: int, now: float) -> None:
        busy = self._busy.pop(ident, None)
        if busy is None:
            return
        began, stacks = busy
        if now - began >= self.min_stall and stacks:
            self._record(Stall(began, now, _format(stacks), sum(stacks.values())))

    def _record(self, stall: Stall) -> None:
        with self._lock:
            self._stalls.append(stall)
            del self._stalls[: -self._keep]


def _format(stacks: Counter[tuple[str, ...]]) -> str:
    if not stacks:
        return "  (no stack)"
    stack, count = stacks.most_common(1)[0]
    total = sum(stacks.values())
    return f"  ({count} of {total} samples)\n" + "\n".join(f"    {line}" for line in stack[-25:])
