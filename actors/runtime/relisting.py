"""`Coalescer`: at most one list request in flight and one more owed, however many changes come.

A burst of ``list_changed`` notifications must not cost a request each: the first starts one,
the rest while it runs owe one more, which starts when it ends. Asks for a fresh list (a stale
list the host wants, `wait`) share the request in flight, or start one: each is answered when
that request ends. The server actor keeps one for its tools and one for its catalog (resources,
templates and prompts). Owned by the server actor's thread.
"""

from __future__ import annotations

import concurrent.futures
from enum import Enum

from actors.runtime.owner import OwnerCheck
from actors.runtime.reply import settle

__all__ = ["Coalescer"]


class _Relist(Enum):
    IDLE = "idle"
    RUNNING = "running"
    OWED = "owed"


class Coalescer:
    """``changed()`` says whether to send a request now; ``done()`` whether to send another."""

    def __init__(self, what: str = "a relist") -> None:
        self._state = _Relist.IDLE
        self._waiting: list[concurrent.futures.Future[bool]] = []
        self._owner = OwnerCheck(what)

    @property
    def in_flight(self) -> bool:
        return self._state != _Relist.IDLE

    def changed(self) -> bool:
        """A change was announced: True if a request should go now (none is in flight)."""
        self._owner.touch()
        if self._state != _Relist.IDLE:
            self._state = _Relist.OWED
            return False
        self._state = _Relist.RUNNING
        return True

    def wait(self, slot: concurrent.futures.Future[bool]) -> bool:
        """Someone wants a list no older than now: ``slot`` is answered when the request in
        flight ends (True if it listed). True if a request should go now (none is in flight)."""
        self._owner.touch()
        self._waiting.append(slot)
        if self._state != _Relist.IDLE:
            return False
        self._state = _Relist.RUNNING
        return True

    def done(self, listed: bool = True) -> bool:
        """The request in flight answered (``listed``: with a list, learnt by now): its waiters
        are answered; True if one more is owed (it is then in flight)."""
        self._owner.touch()
        self._answer(listed)
        if self._state == _Relist.OWED:
            self._state = _Relist.RUNNING
            return True
        self._state = _Relist.IDLE
        return False

    def reset(self) -> None:
        """A new session (or the actor's end): what was in flight will never answer."""
        self._owner.touch()
        self._answer(False)
        self._state = _Relist.IDLE

    def _answer(self, listed: bool) -> None:
        waiting, self._waiting = self._waiting, []
        for slot in waiting:
            settle(slot, listed)
