"""`in_own_thread`: blocking work that may take long, on a thread of its own, off the loop.

The `OffloadWorker` (`actors.mcp.loop.offload`) is one thread every big frame waits for: work
that may block for seconds (a lock another process holds, a slow disk) must not sit there. Nor
may the loop start a thread itself: a thread's start waits until the new thread runs, which on
a machine short of CPU is a stall of every server (as anyio's ``to_thread`` does to grow its
pool). So the thread is started from the offload worker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

from actors.mcp.loop import EventLoop, offload

__all__ = ["in_own_thread"]

_T = TypeVar("_T")


async def in_own_thread(fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` on a thread of its own, started from the offload worker (on any other
    loop than an `EventLoop`: on anyio's). Cancelling the caller abandons the thread's result,
    not the thread."""
    if EventLoop.current() is None:
        return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)
    done: concurrent.futures.Future[_T] = concurrent.futures.Future()

    def run() -> None:
        if not done.set_running_or_notify_cancel():
            return
        try:
            done.set_result(fn(*args))
        except BaseException as exc:  # the caller gets it, as from the function itself
            done.set_exception(exc)

    thread = threading.Thread(
        target=run, name=f"mcp-actors-blocking {getattr(fn, '__qualname__', fn)!s}", daemon=True
    )
    await offload(thread.start)
    return await asyncio.wrap_future(done)
