"""`RegistryEntry`: the registry actor's record of one server. Owned by the registry's thread."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pykka

from actors.mcp.adapter import TransportSource
from actors.mcp.config import ServerConfig
from actors.runtime.schema_cache import CachedLists

__all__ = ["RegistryEntry", "live_server", "retry_gap"]


@dataclass
class RegistryEntry:
    """The registry's record of one server: its config, its actor once spawned, what is known."""

    config: ServerConfig
    transport: TransportSource | None
    server: pykka.ActorRef[Any] | None = None
    seen: bool = False
    """Its lists are known (it has run, or the schema cache knew them)."""
    known: CachedLists | None = None
    """What the schema cache knew of it when it was registered."""
    unlisted: float | None = None
    """When a list last found it could not say its lists (its start failed, or hangs): lists do
    not wait on it again, and ask it to start at most once per `retry_gap`."""


def retry_gap(config: ServerConfig) -> float:
    """How long lists leave a server that could not start before asking it to start again."""
    return max(config.restart_backoff_max, 1.0)


def live_server(entry: RegistryEntry) -> pykka.ActorRef[Any] | None:
    """The entry's server actor if it is alive (it may be running: only it knows)."""
    return entry.server if entry.server is not None and entry.server.is_alive() else None
