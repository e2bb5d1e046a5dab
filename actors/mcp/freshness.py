"""How long a server's list stays fresh, and who may share it: the caching hints of SEP-2549.

On 2026-07-28 sessions every complete ``tools/list``, ``resources/list``,
``resources/templates/list``, ``prompts/list`` and ``resources/read`` result carries ``ttlMs``
(how many milliseconds after receipt it stays fresh; 0: stale at once) and ``cacheScope``
(``public``: may be shared across authorization contexts; ``private``: may not). Handshake-era
sessions have no hints: their lists stay valid until the server says they changed.

`ListFreshness` is one list's hint, combined over its pages (the shortest TTL wins, one private
page makes the list private); `Listing` is a list as a transport returns it, with its freshness
beside the items; `Received` is a hint with the moment it arrived, which says whether the list
is stale and how much freshness it has left. Pure values, safe on any thread; nothing here
reads a clock (the caller passes the time).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar, overload

__all__ = [
    "CACHE_HINT",
    "LIST_KINDS",
    "MAX_TTL_MS",
    "Freshnesses",
    "ListFreshness",
    "ListKind",
    "Listing",
    "Received",
    "Scope",
    "combine",
    "combined",
    "freshness_of",
]

ListKind = Literal["tools", "resources", "templates", "prompts"]
"""The four lists a server may offer (``templates``: ``resources/templates/list``)."""

LIST_KINDS: Final[tuple[ListKind, ...]] = ("tools", "resources", "templates", "prompts")

Scope = Literal["public", "private"]

MAX_TTL_MS: Final = 24 * 60 * 60 * 1000
"""The longest ``ttlMs`` honoured, as the SDK's client cache caps it (``mcp.client.caching``)."""

CACHE_HINT: Final = "cacheHint"
"""The key of a read's hint in a `ToolResult`'s metadata: ``{"ttlMs": ..., "cacheScope": ...}``."""

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ListFreshness:
    """One list's caching hint: fresh for ``ttl_ms`` milliseconds after receipt, shareable
    across authorization contexts only when ``scope`` is ``public``. Immutable: any thread."""

    ttl_ms: int = 0
    scope: Scope = "private"

    def __post_init__(self) -> None:
        if isinstance(self.ttl_ms, bool) or not isinstance(self.ttl_ms, int) or self.ttl_ms < 0:
            raise ValueError(f"ttl_ms must be a whole number >= 0, got {self.ttl_ms!r}")
        if self.scope not in ("public", "private"):
            raise ValueError(f"scope must be 'public' or 'private', got {self.scope!r}")

    @property
    def public(self) -> bool:
        return self.scope == "public"

    def combine(self, other: ListFreshness) -> ListFreshness:
        """Both lists as one answer: the shorter TTL, private if either is."""
        scope: Scope = "public" if self.public and other.public else "private"
        return ListFreshness(min(self.ttl_ms, other.ttl_ms), scope)

    def to_json(self) -> dict[str, Any]:
        """As MCP spells it: ``{"ttlMs": ..., "cacheScope": ...}``."""
        return {"ttlMs": self.ttl_ms, "cacheScope": self.scope}

    @classmethod
    def from_json(cls, data: object) -> ListFreshness | None:
        """From ``{"ttlMs": ..., "cacheScope": ...}``; None for anything else (no hint)."""
        if not isinstance(data, Mapping):
            return None
        try:
            return cls(data.get("ttlMs"), data.get("cacheScope"))  # type: ignore[arg-type]
        except ValueError:
            return None


Freshnesses = Mapping[ListKind, ListFreshness | None]
"""Per kind of list: its freshness (None: no hint). A kind left out was not listed (the server
does not offer it), so it constrains nothing."""


def combine(first: ListFreshness | None, second: ListFreshness | None) -> ListFreshness | None:
    """Two lists merged into one answer. No hint beside a hint counts as ``ttlMs`` 0 and
    private (a list without a hint may change at any time, for anyone); two without stay None."""
    if first is None and second is None:
        return None
    return (first or ListFreshness()).combine(second or ListFreshness())


def combined(parts: Iterable[ListFreshness | None]) -> ListFreshness | None:
    """Every part (the pages of one list, or the lists of several servers) as one answer."""
    result: ListFreshness | None = None
    for index, part in enumerate(parts):
        result = part if index == 0 else combine(result, part)
    return result


@dataclass(frozen=True, slots=True)
class Listing(Sequence[_T]):
    """A list as a transport returns it: the items, and the freshness beside them (None on
    handshake-era sessions, or from a transport that knows no hints). Reads as a sequence of
    its items. Immutable: any thread."""

    items: tuple[_T, ...] = ()
    freshness: ListFreshness | None = None

    @overload
    def __getitem__(self, index: int) -> _T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[_T]: ...

    def __getitem__(self, index: int | slice) -> _T | Sequence[_T]:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[_T]:
        return iter(self.items)


def freshness_of(listed: Iterable[Any]) -> ListFreshness | None:
    """The freshness of what a transport listed: a `Listing`'s, else None (a plain list)."""
    return listed.freshness if isinstance(listed, Listing) else None


@dataclass(frozen=True, slots=True)
class Received:
    """A list's freshness and when it was received, in seconds of one clock (monotonic in
    memory, wall-clock on disk: see `moved`). Immutable: any thread."""

    at: float
    freshness: ListFreshness | None = None
    changed: bool = False
    """The server said the list changed since: stale whatever its TTL (a hint-less list is
    re-listed on the notification as it always was, and is not marked)."""
    notified: bool = False
    """The server tells this list's changes (it declared ``listChanged`` for it): a TTL of 0
    then leaves it to those notifications, and only a positive TTL running out makes it stale."""

    def stale(self, now: float) -> bool:
        """Whether the list should be listed again before it is answered: the server said it
        changed, its positive TTL has run out, or its TTL is 0 and the server tells no changes.
        Never without a hint.

        A TTL of 0 is the SDK's default for a server that says nothing of caching, and the spec
        lets a client re-fetch such a list every time (MAY), not must: where the server tells
        its changes, the list the runtime holds is current until one comes, and re-listing on
        every host list (an agent lists every turn) would cost a round trip per running server
        for nothing.
        """
        if self.freshness is None:
            return False
        if self.changed:
            return True
        if self.freshness.ttl_ms == 0:
            return not self.notified
        return (now - self.at) * 1000.0 >= self.freshness.ttl_ms

    def remaining(self, now: float) -> ListFreshness | None:
        """The freshness left at ``now``: the TTL less the list's age, floored at 0 (None
        without a hint)."""
        if self.freshness is None:
            return None
        if self.changed:
            return ListFreshness(0, self.freshness.scope)
        age_ms = max(0.0, (now - self.at) * 1000.0)
        return ListFreshness(max(0, int(self.freshness.ttl_ms - age_ms)), self.freshness.scope)

    def moved(self, then: float, now: float) -> Received:
        """The same moment on another clock whose time is ``now`` where this one's is ``then``
        (a list received in the future of that clock counts as received now)."""
        return Received(now - max(0.0, then - self.at), self.freshness, self.changed, self.notified)
