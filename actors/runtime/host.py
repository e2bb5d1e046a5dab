"""`HostCalls`: where the host's own code runs, away from the event loop and the actors.

Progress callbacks, resource-update callbacks, sampling/elicitation/roots handlers and the
logging of server log messages are host code: a slow or raising one must not stall every
server (the loop) or one server's bookkeeping (its actor). They run on a few threads of
their own, started with the runtime:

- `notify` hands over news in order, on one thread, fire and forget; the queue is bounded
  (a flood of server log messages drops the oldest, counted, rather than grow without end);
- `call` runs a request handler on a small pool and, from the loop, awaits its answer with a
  timeout, so a hanging handler gives the server an error answer instead of a hang.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from actors.runtime.reply import settle, settle_exception

__all__ = ["HostCalls"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

_Job = tuple[Callable[..., Any], tuple[Any, ...], concurrent.futures.Future[Any]]

_DEFAULT_WORKERS = 4
_DEFAULT_QUEUE = 10_000
_JOIN_TIMEOUT = 2.0


class HostCalls:
    """A news thread (ordered, bounded) and a few handler threads for host code."""

    def __init__(
        self, workers: int = _DEFAULT_WORKERS, queue_size: int = _DEFAULT_QUEUE, name: str = "mcp-actors-host"
    ) -> None:
        self._news: collections.deque[tuple[Callable[..., Any], tuple[Any, ...]]] = collections.deque(
            maxlen=queue_size
        )
        self._jobs: collections.deque[
            tuple[Callable[..., Any], tuple[Any, ...], concurrent.futures.Future[Any]]
        ] = collections.deque()
        # One lock, two conditions: news wakes the news thread only, a job one handler thread.
        self._lock = threading.Lock()
        self._news_ready = threading.Condition(self._lock)
        self._job_ready = threading.Condition(self._lock)
        self._delivering = False
        self._stopped = False
        self.told = 0
        """How much news was ever told (only grows; read from any thread): a caller that sees it
        unchanged across a request knows no news of that request can be on its way."""
        self.dropped = 0
        """News dropped because the queue was full."""
        self._threads = [threading.Thread(target=self._deliver_news, name=f"{name}-news", daemon=True)]
        self._threads += [
            threading.Thread(target=self._run_jobs, name=f"{name}-{i}", daemon=True) for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    # ---- news: in order, fire and forget ------------------------------------------------

    def notify(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the news thread, after the news before it. Never blocks."""
        with self._lock:
            if self._stopped:
                return
            if len(self._news) == self._news.maxlen:
                self.dropped += 1
            self.told += 1
            self._news.append((fn, args))
            self._news_ready.notify()

    def delivered(self) -> concurrent.futures.Future[None]:
        """A future that completes once the news queued before this call has been delivered."""
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._lock:
            # Nothing queued or being delivered: it is all delivered already (the gateway asks
            # after every call; a barrier through the news thread each time cost a wake-up).
            if self._stopped or not (self._news or self._delivering):
                settle(done, None)
                return done
            if len(self._news) == self._news.maxlen:
                self.dropped += 1
            self._news.append((settle, (done, None)))
            self._news_ready.notify()
        return done

    def _deliver_news(self) -> None:
        while True:
            with self._lock:
                self._delivering = False
                while not self._news and not self._stopped:
                    self._news_ready.wait()
                if not self._news:
                    return
                fn, args = self._news.popleft()
                self._delivering = True
            try:
                fn(*args)
            except Exception:
                logger.exception("a host callback raised: %r", fn)

    # ---- requests: a pool, awaited with a timeout -----------------------------------------

    def submit(self, fn: Callable[..., _T], *args: Any) -> concurrent.futures.Future[_T]:
        """Run ``fn(*args)`` on a handler thread; its future fails at once if stopped."""
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()
        with self._lock:
            if self._stopped:
                future.set_exception(RuntimeError("the runtime is shut down"))
                return future
            self._jobs.append((fn, args, future))
            self._job_ready.notify()
        return future

    async def call(self, fn: Callable[..., _T], *args: Any, timeout: float) -> _T:
        """From the loop: ``fn(*args)`` on a handler thread, its answer within ``timeout`` seconds.

        Raises ``TimeoutError`` when the handler is late (it is left to finish on its thread)
        and whatever it raised.
        """
        future = self.submit(fn, *args)
        try:
            with anyio.fail_after(timeout):
                return await asyncio.wrap_future(future)
        except TimeoutError:
            name = getattr(fn, "__qualname__", repr(fn))
            raise TimeoutError(f"the host's {name} gave no answer within {timeout:g} s") from None

    def _run_jobs(self) -> None:
        while True:
            with self._lock:
                while not self._jobs and not self._stopped:
                    self._job_ready.wait()
                if not self._jobs:
                    return
                fn, args, future = self._jobs.popleft()
            if future.cancelled():
                continue
            try:
                settle(future, fn(*args))
            except BaseException as exc:
                settle_exception(future, exc)

    # ---- the end ----------------------------------------------------------------------------

    def stop(self, timeout: float = _JOIN_TIMEOUT) -> None:
        """Deliver the news already queued, fail queued requests, end the threads. Idempotent."""
        with self._lock:
            self._stopped = True
            jobs, self._jobs = list(self._jobs), collections.deque()
            self._news_ready.notify_all()
            self._job_ready.notify_all()
        for _, _, future in jobs:
            settle_exception(future, RuntimeError("the runtime is shut down"))
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)
