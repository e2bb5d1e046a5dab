"""`LoopHandoff`: how other threads hand work to the gateway's event loop.

Everything the gateway keeps about its clients (sessions, requests in flight, subscriptions,
routes) is owned by the loop it serves on. The host thread (server logs, progress, server
requests, list changes), the registry's replies, the subscription bus and the cluster's lease
thread never touch that state: they hand a function or a coroutine to the loop here.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["LoopHandoff"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class LoopHandoff:
    """The gateway's loop, once known, and the ways onto it.

    ``loop`` is written once (by `bind` before serving, or by the first request handler on the
    loop) and only read afterwards, from any thread. Tasks started here are kept until done (the
    loop holds only weak references to tasks); that set is touched on the loop only.
    """

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def on_loop(self) -> None:
        """Called by request handlers: the running loop is the gateway's, if none was bound."""
        if self.loop is None:
            self.loop = asyncio.get_running_loop()

    def _open(self) -> asyncio.AbstractEventLoop | None:
        loop = self.loop
        return None if loop is None or loop.is_closed() else loop

    def call(self, function: Callable[..., object], *args: Any) -> bool:
        """Run ``function(*args)`` on the loop soon (from any thread); False if not serving."""
        loop = self._open()
        if loop is None:
            return False
        try:
            loop.call_soon_threadsafe(function, *args)
        except RuntimeError:  # closed meanwhile
            return False
        return True

    def send_soon(self, coroutine: Awaitable[Any]) -> concurrent.futures.Future[Any] | None:
        """Run ``coroutine`` on the loop (from any thread, in the order handed over); None, and
        the coroutine closed, when the gateway is not serving."""
        loop = self._open()
        if loop is None:
            with contextlib.suppress(AttributeError):
                coroutine.close()  # type: ignore[attr-defined]
            return None
        return asyncio.run_coroutine_threadsafe(quietly(coroutine), loop)

    def start(self, coroutine: Coroutine[Any, Any, _T]) -> asyncio.Task[_T]:
        """A task on the loop for ``coroutine``, kept until done (on the loop only)."""
        task = asyncio.get_running_loop().create_task(quietly(coroutine))
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled():
            task.exception()  # logged by `quietly`; retrieved, so asyncio does not log it again

    def run(self, coroutine: Coroutine[Any, Any, _T], timeout: float) -> _T:
        """Run ``coroutine`` on the loop and wait for it here (a host thread, never the loop)."""
        loop = self._open()
        if loop is None:
            coroutine.close()
            raise RuntimeError("the gateway is not serving")
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout=timeout)


async def quietly(coroutine: Awaitable[_T]) -> _T:
    """Await what was handed over; a client that went away is only logged at debug level."""
    try:
        return await coroutine
    except Exception as exc:
        logger.debug("gateway: could not send to a client: %r", exc)
        raise
