"""`WaitingCalls`: requests queued until their server runs, each with its own deadline.

Owned by the server actor's thread. A queued request's deadline is a timer (on the timer
service's thread) whose only act is to tell the actor; the actor then takes the request out
with `expire` and answers it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Protocol

from actors.runtime.messages import ServerRequest
from actors.runtime.owner import OwnerCheck

__all__ = ["Waiting", "WaitingCalls"]

_ids = itertools.count(1)


class _Timers(Protocol):
    def schedule(self, key: Hashable, delay: float, action: Callable[[], None]) -> int: ...

    def cancel(self, key: Hashable) -> None: ...


@dataclass(frozen=True)
class Waiting:
    """A queued request: when it was queued and when its time runs out (monotonic seconds)."""

    call: ServerRequest
    queued_at: float
    deadline: float
    timer_key: tuple[str, str, int]


class WaitingCalls:
    def __init__(self, namespace: str, timers: _Timers) -> None:
        self._namespace = namespace
        self._timers = timers
        self._entries: dict[int, Waiting] = {}
        self._owner = OwnerCheck(f"{namespace}'s waiting calls")

    def __bool__(self) -> bool:
        self._owner.touch()
        return bool(self._entries)

    def __len__(self) -> int:
        self._owner.touch()
        return len(self._entries)

    def add(self, call: ServerRequest, now: float, timeout: float, on_expiry: Callable[[], None]) -> None:
        """Queue ``call`` for at most ``timeout`` seconds; ``on_expiry`` runs on the timer thread."""
        self._owner.touch()
        call_id = next(_ids)
        key = ("call-deadline", self._namespace, call_id)
        self._entries[call_id] = Waiting(call, now, now + timeout, key)
        self._timers.schedule(key, timeout, on_expiry)

    def expire(self, call: ServerRequest) -> bool:
        """Take out ``call``, whose deadline passed; False if it was no longer waiting."""
        self._owner.touch()
        for call_id, entry in list(self._entries.items()):
            if entry.call is call:
                del self._entries[call_id]
                return True
        return False

    def drain(self) -> list[Waiting]:
        """Take out every queued request (its deadline timer cancelled), oldest first."""
        self._owner.touch()
        entries, self._entries = list(self._entries.values()), {}
        for entry in entries:
            self._timers.cancel(entry.timer_key)
        return entries
