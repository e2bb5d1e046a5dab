"""What the facade and the gateway ask the registry actor for, besides the public requests:
the route of a namespace (cached by the facade), and the live server actors (for shutdown)."""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Route", "ServerRefs"]


@dataclass(frozen=True, eq=False)
class ServerRefs:
    """The live server actors' refs, for an orderly shutdown; the reply is a list of `ActorRef`."""

    reply: concurrent.futures.Future[Any] = field(default_factory=concurrent.futures.Future, repr=False)


@dataclass(frozen=True, eq=False)
class Route:
    """Which actor serves ``namespace``; the reply is its `ActorRef` (spawned if need be), or None.

    The `Runtime` facade caches the answer to skip this actor on every call: the registry
    stays the one that decides routes, and a dead ref sends callers back here.
    """

    namespace: str
    reply: concurrent.futures.Future[Any] = field(default_factory=concurrent.futures.Future, repr=False)
