"""The one event-loop thread that every transport of a runtime shares.

`EventLoop` runs an anyio `BlockingPortal` (asyncio backend) on a thread named
``mcp-actors-loop``. Sync callers (actors) hand it coroutines with `submit` and get
`concurrent.futures.Future`s back; `run` is the blocking helper with a timeout. Long-lived
tasks that must outlive the coroutine that started them (a session's owner task) are started
on the loop with `spawn`; `stop` cancels them first, so what they own is released (their
shielded cleanup still runs) before the loop ends.

The loop boundary is guarded: no ``BaseException`` (``CancelledError``, an exception group
holding one) ever reaches a caller's thread. A coroutine cancelled by the loop stopping fails
its future with ``ConnectionError``; any other ``BaseException`` becomes ``RuntimeError``.

A lag probe (off by default) measures how late the loop wakes a task that sleeps for a fixed
interval: anything that blocks the loop thread (an import, a file read, a long parse) shows up
as lag, for every transport at once. Each loop keeps its worst lag (`EventLoop.max_lag`); the
class keeps the worst of all loops (`EventLoop.worst_lag`), so a test harness sees the loops
that runtimes create and stop on their own. Turn it on for one loop with
``lag_probe_interval``, or for every loop created afterwards with
``EventLoop.default_lag_probe_interval``.

CPU work the loop must not do itself (a big message to parse or encode) goes to the loop's
`OffloadWorker` thread, started and joined with the loop: ``await offload(fn, *args)``.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import enum
import functools
import logging
import math
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Generic, Literal, TypeVar

import anyio
import anyio.abc
import anyio.to_thread
from anyio.from_thread import BlockingPortal

try:
    import sniffio
except ImportError:  # anyio then assumes asyncio itself
    sniffio = None  # type: ignore[assignment]

from actors.mcp.offload import OffloadWorker

__all__ = ["OFFLOAD_THREAD_NAME", "THREAD_NAME", "EventLoop", "LoopLag", "offload"]

logger = logging.getLogger(__name__)

THREAD_NAME = "mcp-actors-loop"
OFFLOAD_THREAD_NAME = "mcp-actors-offload"

_T = TypeVar("_T")

_START_TIMEOUT = 10.0
_DEFAULT_STOP_TIMEOUT = 10.0
_DEFAULT_RUN_TIMEOUT = 60.0


class _Default(enum.Enum):
    CLASS = enum.auto()


_CLASS_DEFAULT: Final = _Default.CLASS


@dataclass(frozen=True)
class LoopLag:
    """One lag measurement: how late the loop named ``loop`` woke its probe."""

    seconds: float
    loop: str
    at: float
    """When it was measured (``time.monotonic()``)."""


class EventLoop:
    """One thread running an asyncio event loop behind an anyio `BlockingPortal`."""

    default_lag_probe_interval: ClassVar[float | None] = None
    """The lag probe interval of loops created without one; None: no probe."""

    _shared: ClassVar[EventLoop | None] = None
    _shared_count: ClassVar[int] = 0
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()
    _by_thread: ClassVar[dict[int, EventLoop]] = {}
    _worst_lag: ClassVar[LoopLag | None] = None
    _worst_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        name: str = THREAD_NAME,
        *,
        lag_probe_interval: float | Literal[_Default.CLASS] | None = _CLASS_DEFAULT,
    ) -> None:
        """Create a stopped loop; `start` (or the ``EventLoop.start()`` classmethod) runs it.

        ``lag_probe_interval``: seconds between lag measurements, None for none; by default
        `default_lag_probe_interval` as it is when the loop is created.
        """
        interval = (
            self.default_lag_probe_interval if lag_probe_interval is _CLASS_DEFAULT else lag_probe_interval
        )
        if interval is not None and not (math.isfinite(interval) and interval > 0):
            raise ValueError(f"lag_probe_interval must be a positive number of seconds, got {interval!r}")
        self.lag_probe_interval: float | None = interval
        self._max_lag = 0.0
        self._lag_lock = threading.Lock()
        self._name = name
        self._lock = threading.Lock()
        self._started = threading.Event()
        self._thread: threading.Thread | None = None
        self._worker: OffloadWorker | None = None
        self._portal: BlockingPortal | None = None
        self._services: anyio.abc.TaskGroup | None = None
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        # Submitted jobs the loop has not begun; one wake-up of the loop begins all of them.
        self._incoming: collections.deque[_LoopJob[Any]] = collections.deque()
        self._wake_due = False
        self._stop_requested: anyio.Event | None = None
        self._error: BaseException | None = None
        self._stopping = False

    # -- lifecycle -----------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        name: str = THREAD_NAME,
        *,
        lag_probe_interval: float | Literal[_Default.CLASS] | None = _CLASS_DEFAULT,
    ) -> EventLoop:
        """Create a loop and run it on its own thread; return once it accepts work."""
        loop = cls(name, lag_probe_interval=lag_probe_interval)
        loop._launch()
        return loop

    def _launch(self) -> None:
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("this EventLoop was already started")
            self._worker = OffloadWorker(OFFLOAD_THREAD_NAME).start()
            self._thread = threading.Thread(target=self._thread_main, name=self._name, daemon=True)
            self._thread.start()
        if not self._started.wait(_START_TIMEOUT):
            raise RuntimeError(f"the event loop thread did not start within {_START_TIMEOUT}s")
        if self._error is not None:
            raise RuntimeError("the event loop thread failed to start") from self._error

    def _thread_main(self) -> None:
        try:
            anyio.run(self._main, backend="asyncio")
        except BaseException as exc:  # the thread must end quietly; the error is logged
            self._error = exc
            logger.exception("the event loop thread ended with an error")
        finally:
            EventLoop._by_thread.pop(threading.get_ident(), None)
            self._portal = None
            self._stranded()
            if self._worker is not None:
                self._worker.stop(_DEFAULT_STOP_TIMEOUT)
            self._started.set()

    async def _main(self) -> None:
        EventLoop._by_thread[threading.get_ident()] = self
        if sniffio is not None:
            # anyio asks which library runs at every memory-stream step (many per request):
            # this thread runs asyncio only, so say so once instead of having it sniffed.
            sniffio.thread_local.name = "asyncio"
        self._stop_requested = anyio.Event()
        self._aloop = asyncio.get_running_loop()
        async with BlockingPortal() as portal, anyio.create_task_group() as services:
            self._services = services
            self._portal = portal
            if self.lag_probe_interval is not None:
                services.start_soon(self._probe_lag, self.lag_probe_interval, name="lag probe")
            self._started.set()
            await self._stop_requested.wait()
            # Owners first: their shielded cleanup (closing sessions, reaping children) runs
            # while the loop still works; then whatever callers still wait on is cancelled.
            services.cancel_scope.cancel("the event loop is stopping")
            await portal.stop(cancel_remaining=True)
        submitted = list(self._tasks)
        for task in submitted:
            task.cancel()
        if submitted:
            await asyncio.wait(submitted, timeout=_DEFAULT_STOP_TIMEOUT)
        self._stranded()

    def _stranded(self) -> None:
        """Fail the jobs submitted too late for the loop to begin them."""
        while self._incoming:
            job = self._incoming.popleft()
            _settle(
                job.outer,
                exception=ConnectionError(f"{_describe(job.fn)} was not run: the event loop stopped"),
            )

    def stop(self, timeout: float = _DEFAULT_STOP_TIMEOUT) -> None:
        """Cancel everything on the loop, end it and join its thread. Idempotent."""
        with self._lock:
            thread, portal, stop_requested = self._thread, self._portal, self._stop_requested
            first = not self._stopping
            self._stopping = True
        if thread is None:
            return
        if threading.current_thread() is thread:
            raise RuntimeError("EventLoop.stop() cannot be called from the loop thread")
        if first and portal is not None and stop_requested is not None:
            # RuntimeError and the rest: already stopping, or stopped on its own.
            with contextlib.suppress(RuntimeError, concurrent.futures.CancelledError, TimeoutError):
                portal.start_task_soon(stop_requested.set).result(timeout)
        thread.join(timeout)
        if thread.is_alive():
            logger.warning("the event loop thread did not end within %ss", timeout)

    @property
    def running(self) -> bool:
        """True while the loop accepts work."""
        thread = self._thread
        return thread is not None and thread.is_alive() and self._portal is not None and not self._stopping

    @property
    def portal(self) -> BlockingPortal:
        """The running portal; raise ``RuntimeError`` when the loop is not running."""
        portal = self._portal
        if portal is None or not self.running:
            raise RuntimeError("the event loop is not running")
        return portal

    @property
    def thread(self) -> threading.Thread | None:
        """The loop's thread (None before `start`)."""
        return self._thread

    # -- lag -------------------------------------------------------------------------------

    @property
    def max_lag(self) -> float:
        """The worst lag in seconds since the loop started or `reset_max_lag` (0 without a probe)."""
        return self._max_lag

    def reset_max_lag(self) -> float:
        """Return `max_lag` and start measuring afresh."""
        with self._lag_lock:
            worst, self._max_lag = self._max_lag, 0.0
        return worst

    @classmethod
    def worst_lag(cls) -> LoopLag | None:
        """The worst lag of any loop (running or stopped) since `reset_worst_lag`."""
        return cls._worst_lag

    @classmethod
    def reset_worst_lag(cls) -> LoopLag | None:
        """Return `worst_lag` and start measuring afresh, for every loop."""
        with cls._worst_lock:
            worst, cls._worst_lag = cls._worst_lag, None
        return worst

    async def _probe_lag(self, interval: float) -> None:
        while True:
            due = time.monotonic() + interval
            await anyio.sleep(interval)
            now = time.monotonic()
            lag = max(0.0, now - due)
            # Locks only for a new worst: the usual sample costs two comparisons.
            if lag > self._max_lag:
                with self._lag_lock:
                    self._max_lag = max(self._max_lag, lag)
            worst = EventLoop._worst_lag
            if worst is None or lag > worst.seconds:
                with EventLoop._worst_lock:
                    worst = EventLoop._worst_lag
                    if worst is None or lag > worst.seconds:
                        EventLoop._worst_lag = LoopLag(lag, self._name, now)

    # -- the shared instance -------------------------------------------------------------

    @classmethod
    def acquire_shared(cls) -> EventLoop:
        """Take a reference to the process-wide loop, starting it if needed."""
        with cls._shared_lock:
            if cls._shared is None or not cls._shared.running:
                cls._shared = cls.start()
                cls._shared_count = 0
            cls._shared_count += 1
            return cls._shared

    @classmethod
    def release_shared(cls, timeout: float = _DEFAULT_STOP_TIMEOUT) -> None:
        """Drop a reference taken with `acquire_shared`; the last one stops the loop."""
        with cls._shared_lock:
            if cls._shared is None or cls._shared_count <= 0:
                return
            cls._shared_count -= 1
            if cls._shared_count > 0:
                return
            loop, cls._shared = cls._shared, None
        loop.stop(timeout)

    # -- running work ----------------------------------------------------------------------

    @classmethod
    def current(cls) -> EventLoop | None:
        """The `EventLoop` whose thread is calling, or None."""
        return cls._by_thread.get(threading.get_ident())

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None:
        """Start a long-lived task; call from the loop thread only. `stop` cancels it."""
        services = self._services
        if services is None or self._stopping:
            raise RuntimeError("the event loop is not running")
        if threading.current_thread() is not self._thread:
            raise RuntimeError("EventLoop.spawn() must be called from the loop thread")
        services.start_soon(_contained, fn, args, name=name)

    def submit(self, fn: Callable[..., Awaitable[_T]], *args: Any) -> concurrent.futures.Future[_T]:
        """Run ``fn(*args)`` on the loop; cancelling the returned future cancels the task.

        Returns at once: the task is created by the loop thread, so the caller never waits for
        it (``BlockingPortal.start_task_soon`` would wait a thread round trip on every call).
        The future only ever fails with an ``Exception``: a task cancelled by the loop
        stopping fails with ``ConnectionError``, another ``BaseException`` with ``RuntimeError``.
        Callable from any thread.
        """
        aloop = self._aloop
        if aloop is None or not self.running:
            raise RuntimeError("the event loop is not running")
        job = _LoopJob(self, aloop, fn, args)
        self._incoming.append(job)
        # Writing to the loop's wake-up pipe costs a system call and a GIL hand-off: jobs
        # submitted before the loop got round to the last wake-up ride on it.
        if not self._wake_due:
            self._wake_due = True
            try:
                aloop.call_soon_threadsafe(self._begin_incoming)
            except RuntimeError:  # closed between the check and the call
                self._wake_due = False
                raise RuntimeError("the event loop is not running") from None
        return job.outer

    def _begin_incoming(self) -> None:
        # The flag first: a job appended from now on gets a wake-up of its own, or is begun here.
        self._wake_due = False
        incoming = self._incoming
        while incoming:
            job = incoming.popleft()
            try:
                job.begin()
            except Exception as exc:  # never strand the other jobs
                logger.exception("the event loop could not begin %s", _describe(job.fn))
                _settle(job.outer, exception=RuntimeError(f"{_describe(job.fn)} could not begin: {exc!r}"))

    def run(self, fn: Callable[..., Awaitable[_T]], *args: Any, timeout: float = _DEFAULT_RUN_TIMEOUT) -> _T:
        """Run ``fn(*args)`` on the loop and wait at most ``timeout`` seconds (finite); on timeout
        cancel it and raise ``TimeoutError``."""
        if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout >= 0):
            raise ValueError(f"timeout must be a finite number of seconds, got {timeout!r}")
        future = self.submit(fn, *args)
        concurrent.futures.wait([future], timeout)
        if not future.done():
            future.cancel()
            raise TimeoutError(f"{_describe(fn)} did not finish within {timeout}s")
        try:
            # A TimeoutError raised here is the coroutine's own (they are one class since 3.11).
            return future.result()
        except concurrent.futures.CancelledError:
            raise ConnectionError(f"{_describe(fn)} was cancelled") from None

    def __enter__(self) -> EventLoop:
        if self._thread is None:
            self._launch()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<EventLoop {self._name} running={self.running}>"


async def offload(fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` off the loop: on the calling `EventLoop`'s `OffloadWorker`, or on one of
    anyio's worker threads on any other loop. The loop runs other tasks meanwhile."""
    loop = EventLoop.current()
    worker = loop._worker if loop is not None else None
    if worker is None:
        return await anyio.to_thread.run_sync(fn, *args)
    return await worker.run(fn, *args)


def _describe(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _settle(
    future: concurrent.futures.Future[_T], *, result: Any = None, exception: BaseException | None = None
) -> None:
    if not future.set_running_or_notify_cancel():
        return
    if exception is not None:
        future.set_exception(exception)
    else:
        future.set_result(result)


class _LoopJob(Generic[_T]):
    """One `EventLoop.submit`: the task on the loop and the future its caller holds."""

    __slots__ = ("aloop", "args", "fn", "loop", "outer", "task")

    def __init__(
        self,
        loop: EventLoop,
        aloop: asyncio.AbstractEventLoop,
        fn: Callable[..., Awaitable[_T]],
        args: tuple[Any, ...],
    ) -> None:
        self.loop = loop
        self.aloop = aloop
        self.fn = fn
        self.args = args
        self.outer: concurrent.futures.Future[_T] = concurrent.futures.Future()
        self.task: asyncio.Task[None] | None = None

    def begin(self) -> None:
        """On the loop: start the task, unless the caller cancelled meanwhile."""
        if self.outer.cancelled():
            return
        self.task = self.aloop.create_task(self._run())
        self.loop._tasks.add(self.task)
        # Weakly: the future must not hold the job (which holds it) in a reference cycle, or
        # every call leaves garbage for the cycle collector.
        self.outer.add_done_callback(functools.partial(_forward_cancel, self.aloop, weakref.ref(self.task)))

    async def _run(self) -> None:
        # The task settles the caller's future itself, in its last step: a done callback
        # would wait for one more turn of the loop.
        outer = self.outer
        try:
            result = await self.fn(*self.args)
        except Exception as exc:
            _settle(outer, exception=exc)
        except asyncio.CancelledError:
            # Cancelled by the loop stopping (or by the caller, whose future is then cancelled).
            _settle(
                outer,
                exception=ConnectionError(f"{_describe(self.fn)} was cancelled: the event loop stopped"),
            )
            raise
        except BaseException as exc:
            _settle(outer, exception=RuntimeError(f"{_describe(self.fn)} raised {exc!r} on the event loop"))
        else:
            _settle(outer, result=result)
        finally:
            if self.task is not None:
                self.loop._tasks.discard(self.task)


def _forward_cancel(
    aloop: asyncio.AbstractEventLoop,
    task_ref: weakref.ref[asyncio.Task[None]],
    done: concurrent.futures.Future[Any],
) -> None:
    """A submitted job's future was cancelled: cancel its task (if it still runs)."""
    task = task_ref()
    if done.cancelled() and task is not None:
        with contextlib.suppress(RuntimeError):  # the loop has closed meanwhile
            aloop.call_soon_threadsafe(task.cancel)


async def _contained(fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
    """Run a spawned task so its failure is logged and never ends the loop."""
    try:
        await fn(*args)
    except anyio.get_cancelled_exc_class():
        raise
    except BaseException:
        logger.exception("a task on the event loop failed: %s", _describe(fn))
