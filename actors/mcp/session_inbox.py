"""`SessionInbox`: a stdio server's messages, handed to the session as its read stream.

The SDK's session reads its messages from a ``ReadStream``. Here the stream is fed straight
from the pipe's protocol callback: a line that arrives is parsed there (a small one) and put in
the inbox, which wakes the session's reader, with no task and no memory stream in between. A
big line is parsed off the loop; its place in the inbox is kept by a future, so messages reach
the session in the order the server wrote them. Owned by the loop (every method runs on it).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

import anyio
from mcp.shared.message import SessionMessage

__all__ = ["HIGH_WATER", "Item", "SessionInbox"]

Item = SessionMessage | Exception
"""What the session reads: a message, or the error that says why a line is none."""

HIGH_WATER = 16
"""Items waiting past which the pipe is no longer read (until the session has taken them all)."""


class SessionInbox:
    """The session's read stream (the SDK's ``ReadStream`` protocol). ``resume``: called when
    the session has taken every item (the pipe may be read again)."""

    def __init__(self, resume: Callable[[], None]) -> None:
        self._resume = resume
        self._items: deque[Item | asyncio.Future[Item]] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._parsing = 0
        """How many of the items are big lines still being parsed (futures)."""
        self._ended = False
        self._closed = False

    # ---- the pipe's side -------------------------------------------------------------------

    @property
    def reading(self) -> bool:
        """Whether the session still reads (else what arrives may be dropped)."""
        return not self._closed

    @property
    def full(self) -> bool:
        """Whether the pipe should wait: many items, or a big one still being parsed."""
        # Asked after every line: counted, not searched (a chunk may hold hundreds of lines).
        return self._parsing > 0 or len(self._items) >= HIGH_WATER

    def put(self, item: Item | asyncio.Future[Item]) -> None:
        """Add ``item`` (or the future of a big one's parse) after what is waiting."""
        if self._closed or self._ended:
            return
        self._items.append(item)
        if isinstance(item, asyncio.Future):
            self._parsing += 1
        self._wake()

    def end(self) -> None:
        """No more items: the session reads what waits, then the end of the stream."""
        self._ended = True
        self._wake()

    # ---- the session's side ----------------------------------------------------------------

    async def receive(self) -> Item:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._items:
                head = self._items[0]
                if not isinstance(head, asyncio.Future):
                    self._take()
                    return head
                if head.done():
                    self._take()
                    failure = head.exception()
                    return failure if isinstance(failure, Exception) else head.result()
                # Not awaited itself: a reader cancelled meanwhile leaves the parse to the next one.
                await asyncio.wait([head])
                continue
            if self._ended:
                raise anyio.EndOfStream
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def _take(self) -> None:
        if isinstance(self._items.popleft(), asyncio.Future):
            self._parsing -= 1
        if not self._items:
            self._resume()

    def close(self) -> None:
        """The session reads no more: what waits is dropped, and a reader is told so."""
        self._closed = True
        for item in self._items:
            if isinstance(item, asyncio.Future):
                item.cancel()
        self._items.clear()
        self._parsing = 0
        self._wake()

    async def aclose(self) -> None:
        self.close()

    def __aiter__(self) -> SessionInbox:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> SessionInbox:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
