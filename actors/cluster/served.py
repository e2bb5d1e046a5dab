"""`ServedGateway`: what the cluster needs of the gateway a replica serves, and nothing more.

The cluster sits under the gateway: it is typed against this protocol, never against the
gateway's class (`actors.gateway.Gateway` satisfies it structurally).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from mcp.shared.subscriptions import ServerEvent

from actors.config import RuntimeConfig

__all__ = ["ExternalNaming", "ServedGateway"]


class ExternalNaming(Protocol):
    """The names the gateway's clients see (`actors.gateway.ExternalNames`)."""

    def external(self, name: str) -> str:
        """The external name of ``namespace/name``."""


class ServedGateway(Protocol):
    """A replica's gateway, as its affinity router and its membership see it."""

    @property
    def config(self) -> RuntimeConfig:
        """The configuration served now (an immutable snapshot)."""

    @property
    def names(self) -> ExternalNaming: ...

    @property
    def in_flight(self) -> int:
        """Client requests being served by a backend right now (the replica's load)."""

    def announce(self, event: ServerEvent) -> None:
        """An event another replica published, for the gateway's clients (any thread)."""

    def stop_server(self, namespace: str) -> None:
        """Have ``namespace``'s server stopped here; returns at once."""

    def server_states(self, namespace: str, timeout: float) -> list[str]:
        """The states of ``namespace``'s server here (blocks)."""

    def caller_meta(self, ctx: Any) -> Mapping[str, Any]:
        """The ``_meta`` entries that carry the caller of the request ``ctx`` answers to the
        replica it is forwarded to (empty without authentication)."""
