"""`ResourceWatches`: backend subscriptions held for ``subscriptions/listen`` streams and
handshake-era ``resources/subscribe`` sessions.

A 2026-07-28 client names the resources it wants updates of in its listen request; a
handshake-era client subscribes to each. The gateway subscribes to each one at the backend that
serves it while at least one stream or session wants it (one backend subscription however many
share a URI, so each backend update is published once); the backend's updates go on the
subscription bus, which delivers each to the streams whose filter names its URI.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Followed", "ResourceWatches"]

logger = logging.getLogger(__name__)


class Followed(Protocol):
    """A URI followed at its backend (a `ResourceSubscription`, or one routed across replicas)."""

    def cancel(self) -> object:
        """Stop following it (blocks: called on a worker thread)."""


Subscribe = Callable[[str], Awaitable[Followed | None]]
"""Subscribes to a URI at its backend; None when no backend serves it (it then never fires)."""


@dataclass
class _HeldWatch:
    streams: int
    subscription: asyncio.Task[Followed | None]


class ResourceWatches:
    """Reference-counted backend subscriptions, one per URI. Used on the gateway's loop only."""

    def __init__(self, subscribe: Subscribe) -> None:
        self._subscribe = subscribe
        self._held: dict[str, _HeldWatch] = {}

    async def hold(self, uris: Iterable[str]) -> None:
        """Count one more stream for each URI; returns once each is subscribed (or found unserved).

        The caller must `release` the same URIs afterwards, also when this is cancelled: the
        counts are taken before the first wait.
        """
        tasks = []
        for uri in uris:
            held = self._held.get(uri)
            if held is None:
                task = asyncio.ensure_future(self._subscribe(uri))
                held = self._held[uri] = _HeldWatch(0, task)
            held.streams += 1
            tasks.append(held.subscription)
        if tasks:
            # asyncio.wait, not gather: a stream cancelled while waiting must not cancel a
            # subscription other streams share.
            await asyncio.wait(tasks)

    def release(self, uris: Iterable[str]) -> None:
        """One stream fewer for each URI; the last one out ends the backend subscription."""
        for uri in uris:
            held = self._held.get(uri)
            if held is None:
                continue
            held.streams -= 1
            if held.streams <= 0:
                del self._held[uri]
                # Once subscribed (now or when the pending subscribe finishes), end it; cancel()
                # waits on the server actor, so it runs on a worker thread, not on this loop.
                held.subscription.add_done_callback(_unsubscribe)


def _unsubscribe(task: asyncio.Task[Followed | None]) -> None:
    if task.cancelled() or task.exception() is not None:
        return
    subscription = task.result()
    if subscription is not None:
        asyncio.get_running_loop().run_in_executor(None, subscription.cancel)
