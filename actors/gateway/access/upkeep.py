"""`CopyUpkeep`: how long the gateway's copies of servers live.

The gateway registers copies of a server's entry for some callers: one per caller of a per-user
server (`actors.gateway.access.per_user`), one per handshake-era caller of a dual-era server
(`actors.gateway.era_copies`). Both kinds are kept the same way, by the keys of
``access.perUserServers``: a copy without a request for ``unregisterAfter`` seconds goes, and
past ``maxCopies`` copies the least recently used idle one goes. "Goes" is the owner's
``retire``: no new request reaches the copy, and it is unregistered once its requests are answered.

Owned by the gateway's loop, as the copies are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from actors.mcp.per_user import PerUserKeys

__all__ = ["CopyUpkeep", "Kept"]


class Kept(Protocol):
    """What the upkeep reads of a copy."""

    in_flight: int
    last_used: float
    retiring: bool

    @property
    def registered(self) -> asyncio.Future[Any]: ...


_C = TypeVar("_C", bound=Kept)


class CopyUpkeep(Generic[_C]):
    """Bounds and sweeps one kind of copies: ``copies()`` are all of them (those on their way
    out too), ``retire(copy)`` lets one go, ``keys()`` are the ``access.perUserServers`` keys
    served now."""

    def __init__(
        self,
        keys: Callable[[], PerUserKeys],
        clock: Callable[[], float],
        copies: Callable[[], Iterable[_C]],
        retire: Callable[[_C], None],
    ) -> None:
        self._keys = keys
        self._clock = clock
        self._copies = copies
        self._retire = retire
        self._sweeping: asyncio.TimerHandle | None = None

    def added(self, loop: asyncio.AbstractEventLoop) -> None:
        """A copy was added: the least recently used idle ones past ``maxCopies`` go, and the
        sweep runs from now on."""
        live = [copy for copy in self._copies() if not copy.retiring]
        excess = len(live) - self._keys().max_copies
        if excess > 0:
            idle = [copy for copy in live if copy.in_flight == 0 and copy.registered.done()]
            idle.sort(key=lambda copy: copy.last_used)
            for copy in idle[:excess]:
                self._retire(copy)
        self._sweep_soon(loop)

    def _sweep_soon(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._sweeping is None:
            after = self._keys().unregister_after
            self._sweeping = loop.call_later(max(0.5, min(60.0, after / 4)), self._sweep, loop)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        """Copies without a request for ``unregisterAfter`` seconds go (now and then, while any is left)."""
        self._sweeping = None
        horizon = self._clock() - self._keys().unregister_after
        copies = list(self._copies())
        for copy in copies:
            if copy.in_flight == 0 and copy.last_used < horizon:
                self._retire(copy)
        if copies:
            self._sweep_soon(loop)
