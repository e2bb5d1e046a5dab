"""`OffloadWorker`: one thread beside an event loop for CPU work the loop must not do itself.

The loop hands it a function (parsing or encoding a big message, say) and awaits the result
without blocking: other tasks run meanwhile. One thread per loop, started and joined with the
loop (no thread appears or lingers while the loop runs), doing one job at a time: with the
GIL, a second thread would make no job finish sooner. A job should let the GIL go often (work
in pieces, not one long C call): a thread that holds it stalls the loop all the same.

Owner: the jobs queue is the worker's; `run` may be called from any event loop thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["OffloadWorker"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

_Job = tuple[Callable[..., Any], tuple[Any, ...], "concurrent.futures.Future[Any]"]


class OffloadWorker:
    """A thread that runs the functions handed to it, one at a time, in order."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._closed = False

    def start(self) -> OffloadWorker:
        self._thread.start()
        return self

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    async def run(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)`` on the worker; the awaiting task waits, the loop does not.

        Cancelled before the worker takes it up, the job never runs; once it runs it
        finishes, and its result is dropped. Raises ``RuntimeError`` once `stop` was called.
        """
        if self._closed:
            raise RuntimeError("the offload worker is stopped")
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()
        self._jobs.put((fn, args, future))
        return await asyncio.wrap_future(future)

    def stop(self, timeout: float) -> None:
        """Finish the jobs handed over, then end the thread (joined within ``timeout``)."""
        self._closed = True
        self._jobs.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout)
            if self._thread.is_alive():
                logger.warning("the offload worker did not end within %ss", timeout)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, args, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args)
            except BaseException as exc:  # the caller gets it, as from the function itself
                future.set_exception(exc)
            else:
                future.set_result(result)
