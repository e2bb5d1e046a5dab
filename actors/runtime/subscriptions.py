"""`Subscriptions`: who follows which resource of one server. Owned by the server actor's thread.

The session is subscribed once per URI, however many follow it; a new session is subscribed to
every URI again (it knows nothing of the old one's).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pykka

from actors.runtime.messages import ResourceSubscription, SubscribeResource
from actors.runtime.owner import OwnerCheck
from actors.runtime.reply import settle

__all__ = ["Subscriptions"]

_ids = itertools.count(1)


@dataclass(frozen=True)
class _Subscriber:
    uri: str
    on_update: Callable[[str], Any]


class Subscriptions:
    """Who follows which URI of one server; owned by its server actor's thread."""

    def __init__(self) -> None:
        self._subscribers: dict[int, _Subscriber] = {}
        self._owner = OwnerCheck("a server's subscriptions")

    def __bool__(self) -> bool:
        self._owner.touch()
        return bool(self._subscribers)

    def add(self, uri: str, on_update: Callable[[str], Any]) -> tuple[int, bool]:
        """Follow ``uri``: the subscription's id, and whether the URI is new (subscribe it)."""
        self._owner.touch()
        fresh = all(s.uri != uri for s in self._subscribers.values())
        sid = next(_ids)
        self._subscribers[sid] = _Subscriber(uri, on_update)
        return sid, fresh

    def keep(self, asked: SubscribeResource, namespace: str, ref: pykka.ActorRef[Any]) -> str | None:
        """Follow what ``asked`` asks and answer it with its `ResourceSubscription`; the URI if it
        is new to the server (the session must subscribe it)."""
        sid, fresh = self.add(asked.uri, asked.on_update)
        settle(asked.reply, ResourceSubscription(namespace, asked.uri, sid, ref))
        return asked.uri if fresh else None

    def remove(self, sid: int) -> tuple[bool, str | None]:
        """Drop ``sid``: whether it existed, and its URI if no one follows that any more."""
        self._owner.touch()
        gone = self._subscribers.pop(sid, None)
        if gone is None:
            return False, None
        if any(s.uri == gone.uri for s in self._subscribers.values()):
            return True, None
        return True, gone.uri

    def uris(self) -> list[str]:
        """Every followed URI, once, in the order first followed."""
        self._owner.touch()
        return list(dict.fromkeys(s.uri for s in self._subscribers.values()))

    def followers(self, uri: str) -> list[Callable[[str], Any]]:
        self._owner.touch()
        return [s.on_update for s in self._subscribers.values() if s.uri == uri]
