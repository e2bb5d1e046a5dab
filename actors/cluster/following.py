"""Following a resource where its single-affinity server runs, from a replica that does not.

`Affinity.watch` follows a URI here while this replica holds the lease; otherwise it holds
listen streams at the owner (`listen_at`), which make the owner follow the URI at its backend and
publish each update on the bus. `Following` is what `watch` returns: cancel it to stop.
"""

from __future__ import annotations

import asyncio
import contextlib

from actors.cluster.forward import Forwarder

__all__ = ["LISTEN_SPAN", "Following", "listen_at"]

LISTEN_SPAN = 3.0
"""Seconds a listen stream held at an owner lasts before a new one replaces it."""


async def listen_at(forwarder: Forwarder, address: str, uri: str, ready: asyncio.Event) -> None:
    """Listen streams naming ``uri`` at ``address``, until one fails. Each is replaced
    after `LISTEN_SPAN` by a new one, opened before it ends (the owner follows the URI
    throughout): a replica that stops waits for its open requests, so no stream from here
    may hold an owner's shutdown up for longer than that."""
    current: asyncio.Task[None] | None = None
    try:
        while True:
            acked = asyncio.Event()

            def on_ack(acked: asyncio.Event = acked) -> None:
                acked.set()
                ready.set()

            fresh = asyncio.ensure_future(forwarder.listen(address, uri, on_ack))
            waiting = asyncio.ensure_future(acked.wait())
            first = asyncio.FIRST_COMPLETED
            await asyncio.wait({fresh, waiting}, timeout=LISTEN_SPAN, return_when=first)
            waiting.cancel()
            if current is not None:
                current.cancel()
            current = fresh
            if fresh.done() or not acked.is_set():
                return  # it failed or went unanswered: route again
            await asyncio.wait({fresh}, timeout=LISTEN_SPAN)
            if fresh.done():
                return
    finally:
        if current is not None:
            current.cancel()


class Following:
    """A resource followed across replicas (`Affinity.watch`); `cancel` ends it. Made on the
    gateway's loop; `cancel` may come from any thread (it hands the cancel to the loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[None]) -> None:
        self._loop = loop
        self._task = task

    def cancel(self) -> bool:
        """Stop following (from any thread)."""
        if self._loop.is_closed():
            return False
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            self._loop.call_soon_threadsafe(self._task.cancel)
        return True
