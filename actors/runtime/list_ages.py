"""`ListAges`: when each server's lists were received and how long they stay fresh (SEP-2549).

The registry answers lists from what each server told it. A list with a caching hint goes
stale once its TTL has run out (a TTL of 0: at once) or the server said it changed; the
registry then has a running server list it again before answering (`Freshen`). A list
without a hint (a handshake-era server) stays valid until the server says it changed, as it
always did. What is left of the lists' freshness is what the registry's answer carries
(`remaining`), for a gateway's own hints.

Times are the runtime clock's monotonic seconds; the schema cache stores wall-clock seconds
(`stored`, `restored`). Owned by the registry actor's thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from actors.mcp.freshness import LIST_KINDS, ListFreshness, ListKind, Received, combine
from actors.runtime.owner import OwnerCheck

__all__ = ["ListAges"]


class ListAges:
    """Per server, per kind of list: when it was received and its hint. A kind missing for a
    known server is one it does not offer (it constrains no answer). Owned by the registry
    actor's thread."""

    def __init__(self) -> None:
        self._lists: dict[str, dict[ListKind, Received]] = {}
        self._told: dict[str, dict[ListKind, int]] = {}
        self._owner = OwnerCheck("the registry's list ages")

    def learnt(
        self, namespace: str, received: Mapping[ListKind, Received], kinds: Iterable[ListKind]
    ) -> bool:
        """The server's lists of ``kinds`` were (re)listed: ``received`` for those it offers.
        Whether a hint changed (a list's age alone is no change worth writing down)."""
        self._owner.touch()
        lists = self._lists.setdefault(namespace, {})
        changed = False
        for kind in kinds:
            before, now = lists.pop(kind, None), received.get(kind)
            if now is not None:
                lists[kind] = now
            changed |= (before is None) != (now is None) or (
                before is not None and now is not None and before.freshness != now.freshness
            )
        return changed

    def restored(self, namespace: str, stored: Mapping[ListKind, Received], wall: float, now: float) -> None:
        """Lists read from the schema cache, received at ``stored`` wall-clock times (``wall``
        now, ``now`` on the monotonic clock). An entry that says nothing of them (written before
        hints were kept) counts as listed without hints."""
        self._owner.touch()
        if stored:
            self._lists[namespace] = {kind: seen.moved(wall, now) for kind, seen in stored.items()}
        else:
            self._lists[namespace] = {kind: Received(now) for kind in LIST_KINDS}

    def changed(self, namespace: str, kinds: Iterable[ListKind]) -> None:
        """The server said these lists changed: stale until the new ones come."""
        self._owner.touch()
        lists = self._lists.get(namespace, {})
        for kind in kinds:
            if (seen := lists.get(kind)) is not None and seen.freshness is not None:
                lists[kind] = dataclasses.replace(seen, changed=True)

    def forget(self, namespace: str) -> None:
        self._owner.touch()
        self._lists.pop(namespace, None)
        self._told.pop(namespace, None)

    def count(self, namespace: str, kinds: Iterable[ListKind], told: int) -> None:
        """The lists of ``kinds`` just come are the ``told``-th its server's actor told."""
        self._owner.touch()
        counts = self._told.setdefault(namespace, {})
        for kind in kinds:
            counts[kind] = told

    def told(self, namespace: str, kind: ListKind) -> int:
        """Which of its lists of ``kind`` the server's actor told last (0: none yet, or read
        from the schema cache): a `Freshen` carries it, so that a server that has told a later
        one since answers at once instead of listing again."""
        self._owner.touch()
        return self._told.get(namespace, {}).get(kind, 0)

    def stale(self, namespace: str, kind: ListKind, now: float) -> bool:
        """Whether the server's list of ``kind`` should be listed again before it is answered."""
        self._owner.touch()
        seen = self._lists.get(namespace, {}).get(kind)
        return seen is not None and seen.stale(now)

    def remaining(self, namespaces: Iterable[str], kind: ListKind, now: float) -> ListFreshness | None:
        """The freshness left, at ``now``, of an answer that merges these servers' lists of
        ``kind``: the shortest TTL left, private if any is. A server whose lists are unknown, or
        without a hint, makes it ``ttlMs`` 0 and private; None if none of them had a hint."""
        self._owner.touch()
        result: ListFreshness | None = None
        first = True
        for namespace in namespaces:
            lists = self._lists.get(namespace)
            if lists is None:
                part = None  # never listed: its lists may come at any time
            elif kind not in lists:
                continue  # it does not offer this kind
            else:
                part = lists[kind].remaining(now)
            result = part if first else combine(result, part)
            first = False
        return result

    def stored(self, namespace: str, wall: float, now: float) -> dict[ListKind, Received]:
        """The server's lists as the schema cache keeps them: received at wall-clock times
        (``wall`` now, ``now`` on the monotonic clock)."""
        self._owner.touch()
        return {kind: seen.moved(now, wall) for kind, seen in self._lists.get(namespace, {}).items()}
