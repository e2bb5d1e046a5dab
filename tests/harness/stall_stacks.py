"""What the event loop was doing while it lagged: a sampler of the loop threads' stacks.

A daemon thread samples the stack of every event-loop thread every few milliseconds. An
idle loop waits in its selector; a run of samples outside it that lasts longer than
``min_stall`` is a stall, kept with the stack seen most often during it. The loop-lag
watchdog quotes the stall that overlaps the worst lag, so a failure names the code that
blocked the loop (an import, a spawn, a parse) rather than only how long it took.

When another thread holds the GIL the sampler cannot run either: such gaps between samples
are reported as stalls too, with the busy threads' stacks and the garbage collections that
ran meanwhile (a collection holds the GIL from start to end, whichever thread triggered it).

It also reads the loop threads' scheduler statistics (Linux ``schedstat``): how long a loop
thread ran on a CPU and how long it waited for one. Lag spent waiting for a CPU is the
machine being overloaded; lag spent on a CPU is work on the loop; neither is the loop
thread blocked (on the GIL, or in a blocking call). Every `others_every` samples it reads
those of the process's other threads too: a thread that holds the GIL and is taken off its
CPU by an overloaded machine blocks the loop for as long as it waits to run again.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from itertools import takewhile
from types import FrameType

from actors.mcp.loop import THREAD_NAME, EventLoop

__all__ = ["Collection", "Scheduling", "Stall", "StallSampler"]

# An asyncio loop waiting for work sits in its selector's select(), inside the C poll call.
_IDLE = ("selectors.py", "select")
# Where a thread that waits (and so cannot hold the GIL for long) shows up at the top; a stdio
# server's keeper thread waits for its exit in Popen's _try_wait (os.waitpid).
_WAITING = frozenset(
    {"wait", "select", "get", "_wait_for_tstate_lock", "readline", "read", "accept", "_try_wait"}
)


@dataclass(frozen=True)
class Stall:
    """A stretch of time in which a loop thread did not wait for work."""

    start: float
    end: float
    stack: str
    """The stack seen most often (innermost call last), or what other threads held."""
    samples: int
    sampler_blocked: bool = False
    """The sampler itself could not run meanwhile: another thread held the GIL (or the
    sampler waited for a CPU), so the loop thread could not run Python code either."""
    spawning: bool = False
    """Meanwhile another thread was starting a process: CPython 3.11's ``fork_exec`` holds the
    GIL until the child has called exec, so a child that waits for a CPU holds every thread."""

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Collection:
    """One garbage collection (which holds the GIL throughout)."""

    start: float
    end: float
    generation: int
    thread: str

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Scheduling:
    """How the loop threads spent a span of time, by the kernel's account."""

    on_cpu: float
    waiting_for_cpu: float
    other_waiting_for_cpu: float = 0.0
    """The longest any one other thread of the process waited for a CPU around the span."""
    other: str = ""
    """That thread's name."""
    stolen: float = 0.0
    """The most time the hypervisor took from any one CPU of the machine around the span
    (Linux ``/proc/stat`` steal): a virtual CPU taken away runs no thread, ready or not."""


def _read(path: str, size: int) -> bytes | None:
    """Up to ``size`` bytes of a /proc file. Raw reads: these run every sample, in every test
    process, and a text file object costs several times the read itself."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def _schedstat(native_id: int) -> tuple[int, int] | None:
    """(nanoseconds on a CPU, nanoseconds waiting on a run queue) of a thread of this process."""
    data = _read(f"/proc/self/task/{native_id}/schedstat", 128)
    if data is None:
        return None
    fields = data.split()
    return int(fields[0]), int(fields[1])


def _steal() -> tuple[int, ...] | None:
    """Per CPU of the machine: clock ticks the hypervisor ran something else (``steal``)."""
    # The leading "cpu" lines only, not the interrupt counts that follow them.
    data = _read("/proc/stat", _STAT_BYTES)
    if data is None:
        return None
    lines = list(takewhile(lambda line: line.startswith("cpu"), data.decode().splitlines()))
    # "cpuN user nice system idle iowait irq softirq steal ...": the aggregate "cpu" line skipped.
    return tuple(int(f[8]) for f in (line.split() for line in lines) if f[0][3:].isdigit() and len(f) > 8)


_TICK = 1 / os.sysconf("SC_CLK_TCK")
# Enough of /proc/stat for its "cpu" lines: about 100 bytes a CPU.
_STAT_BYTES = 256 * ((os.cpu_count() or 1) + 1)


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

    def __init__(
        self, interval: float = 0.01, min_stall: float = 0.05, keep: int = 200, others_every: int = 5
    ) -> None:
        self.interval = interval
        self.others_every = others_every
        self._samples = 0
        self.min_stall = min_stall
        self._keep = keep
        self._stalls: list[Stall] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="loop-stall-sampler", daemon=True)
        # Per loop thread: when its current busy run began, and the stacks seen during it.
        self._busy: dict[int, tuple[float, Counter[tuple[str, ...]]]] = {}
        self._collections: deque[Collection] = deque(maxlen=keep)
        self._collecting: float | None = None
        # (time, thread, ns on a CPU, ns waiting for one) of the loop threads: 30,000 samples.
        self._sched: deque[tuple[float, int, int, int]] = deque(maxlen=30_000)
        # The same of the other threads, every `others_every` samples: (time, thread, cpu, wait).
        self._others: deque[tuple[float, int, int, int]] = deque(maxlen=60_000)
        self._names: dict[int, str] = {}
        # (time, per-CPU steal ticks) of the machine, every sample.
        self._steal: deque[tuple[float, tuple[int, ...]]] = deque(maxlen=30_000)

    def start(self) -> StallSampler:
        gc.callbacks.append(self._on_gc)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)

    def stalls_between(self, start: float, end: float) -> list[Stall]:
        with self._lock:
            return [s for s in self._stalls if s.end >= start and s.start <= end]

    def collections_between(self, start: float, end: float, longer_than: float = 0.01) -> list[Collection]:
        """Garbage collections longer than ``longer_than`` that overlap the span."""
        return [
            c
            for c in list(self._collections)
            if c.end >= start and c.start <= end and c.seconds > longer_than
        ]

    def scheduling_between(self, start: float, end: float) -> Scheduling | None:
        """How the loop threads spent ``start``..``end`` (None without samples after ``start``),
        and the longest wait for a CPU of one other thread around it.

        Each thread counts from its last sample before ``start`` (from zero if it has none: it
        was born in the span) to its first sample after ``end`` (its last one if it ended first).
        """
        loops = _deltas(list(self._sched), start, end, from_zero=True)
        if not loops:
            return None
        # Sampled 10 times less often: a thread with no sample before the span is counted from
        # its first one (counting from zero would charge it a long life's waits).
        others = _deltas(list(self._others), start, end, from_zero=False)
        longest = max(others, key=lambda t: others[t][1], default=None)
        return Scheduling(
            sum(cpu for cpu, _ in loops.values()) / 1e9,
            sum(wait for _, wait in loops.values()) / 1e9,
            others[longest][1] / 1e9 if longest is not None else 0.0,
            self._names.get(longest, str(longest)) if longest is not None else "",
            _stolen(list(self._steal), start, end),
        )

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        # Runs inside the collecting thread; appending to a deque needs no lock.
        if phase == "start":
            self._collecting = time.monotonic()
        elif self._collecting is not None:
            self._collections.append(
                Collection(
                    self._collecting,
                    time.monotonic(),
                    info.get("generation", -1),
                    threading.current_thread().name,
                )
            )
            self._collecting = None

    def _run(self) -> None:
        me = threading.get_native_id()
        _SAMPLER_THREADS.add(me)
        try:
            last = time.monotonic()
            while not self._stop.wait(self.interval):
                now = time.monotonic()
                self._sample(now, gap=now - last)
                last = now
        finally:
            _SAMPLER_THREADS.discard(me)

    def _sample(self, now: float, gap: float) -> None:
        # CPython 3.11 holds its thread-list lock in sys._current_frames() while it makes frame
        # objects; a collection there that frees a threading.local (hypothesis keeps them) takes
        # that lock again, and the whole process hangs. No collection while we take the frames.
        collecting = gc.isenabled()
        gc.disable()
        try:
            frames = sys._current_frames()
        finally:
            if collecting:
                gc.enable()
        try:
            self._note(frames, now, gap)
        finally:
            # Kept, a frame would keep its locals alive after its function returned (a test
            # counting released objects would fail); our own frame would make a cycle.
            frames.clear()

    def _note(self, frames: dict[int, FrameType], now: float, gap: float) -> None:
        threads = threading.enumerate()
        loops = {t.ident: t for t in threads if _is_loop(t) and t.ident}
        for loop_thread in loops.values():
            if loop_thread.native_id is not None and (stat := _schedstat(loop_thread.native_id)):
                self._sched.append((now, loop_thread.native_id, *stat))
        if (steal := _steal()) is not None:
            self._steal.append((now, steal))
        self._samples += 1
        if self._samples % self.others_every == 0:
            self._note_others(now, threads, {t.native_id for t in loops.values()})
        if gap > self.min_stall + self.interval and loops:
            held, spawning = _gil_held(frames, set(loops))
            self._record(Stall(now - gap, now, held, 1, sampler_blocked=True, spawning=spawning))
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

    def _note_others(self, now: float, threads: list[threading.Thread], loops: set[int | None]) -> None:
        # Kept after a thread ends (a lag is judged after it), within bounds.
        if len(self._names) > 10_000:
            self._names.clear()
        self._names.update({t.native_id: t.name for t in threads if t.native_id is not None})
        try:
            tasks = os.listdir("/proc/self/task")
        except OSError:
            return
        # Not a sampler's thread (ours, or another sampler's in this process: the harness runs
        # one per worker, a test may run its own): woken from its sleep it waits for a CPU
        # before it asks for the GIL, so its waits hold no one up (under a CPU quota they are
        # the longest of all).
        samplers = frozenset(_SAMPLER_THREADS)
        for task in tasks:
            native_id = int(task)
            if native_id not in loops and native_id not in samplers and (stat := _schedstat(native_id)):
                self._others.append((now, native_id, *stat))

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


_SAMPLER_THREADS: set[int] = set()
"""The native ids of the running samplers' threads (each adds and removes its own)."""


def _deltas(
    samples: list[tuple[float, int, int, int]], start: float, end: float, *, from_zero: bool
) -> dict[int, tuple[int, int]]:
    """Per thread: (ns on a CPU, ns waiting for one) from its last sample at or before
    ``start`` (if none: zero, or its first sample with ``from_zero=False``) to its first sample
    after ``end`` (its last if it ended first)."""
    base: dict[int, tuple[int, int]] = {}
    top: dict[int, tuple[int, int, float]] = {}
    for at, thread, cpu, wait in samples:
        if at <= start:
            base[thread] = (cpu, wait)
        else:
            if not from_zero and thread not in base:
                base[thread] = (cpu, wait)
            if thread not in top or top[thread][2] < end:
                top[thread] = (cpu, wait, at)
    return {
        thread: (cpu - base.get(thread, (0, 0))[0], wait - base.get(thread, (0, 0))[1])
        for thread, (cpu, wait, _) in top.items()
    }


def _stolen(samples: list[tuple[float, tuple[int, ...]]], start: float, end: float) -> float:
    """Seconds of steal of the CPU that lost most, from the last sample at or before ``start``
    to the first after ``end`` (0 without a sample on each side)."""
    before = next((steal for at, steal in reversed(samples) if at <= start), None)
    after = next((steal for at, steal in samples if at > end), None)
    if before is None or after is None or len(before) != len(after):
        return 0.0
    return max((b - a for a, b in zip(before, after, strict=True)), default=0) * _TICK


def _is_loop(thread: threading.Thread) -> bool:
    """The runtime's loop thread, or any other `EventLoop`'s (tests start some of their own,
    and the watchdog measures every one: each needs its scheduling on record to be judged)."""
    if thread.name == THREAD_NAME:
        return True
    # Thread keeps its target until run() returns: a loop's is its bound _thread_main.
    return isinstance(getattr(getattr(thread, "_target", None), "__self__", None), EventLoop)


def _gil_held(frames: dict[int, FrameType], loops: set[int]) -> tuple[str, bool]:
    """The threads that may have held the GIL: those not waiting, innermost frames last; and
    whether one of them was starting a process (`Stall.spawning`)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    me = threading.get_ident()
    others = [
        (ident, frame)
        for ident, frame in frames.items()
        if ident not in loops and ident != me and frame.f_code.co_name not in _WAITING
    ]
    busy = [(names.get(ident, str(ident)), _stack(frame)[-8:]) for ident, frame in others]
    lines = ["  the sampler itself could not run: another thread held the GIL. Threads not waiting:"]
    for name, stack in busy or [("(none)", ())]:
        lines.append(f"  [{name}]")
        lines.extend(f"    {line}" for line in stack)
    return "\n".join(lines), any(_spawning(frame) for _, frame in others)


def _spawning(frame: FrameType) -> bool:
    """Whether ``frame`` is `subprocess` starting a child (in its ``fork_exec`` call)."""
    code = frame.f_code
    return code.co_name == "_execute_child" and code.co_filename.endswith("subprocess.py")


def _format(stacks: Counter[tuple[str, ...]]) -> str:
    if not stacks:
        return "  (no stack)"
    stack, count = stacks.most_common(1)[0]
    total = sum(stacks.values())
    return f"  ({count} of {total} samples)\n" + "\n".join(f"    {line}" for line in stack[-25:])
