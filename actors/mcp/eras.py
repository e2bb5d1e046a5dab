"""The two protocol eras of MCP, and the memo of which one each server spoke.

A server speaks the handshake era (``initialize``; called ``legacy`` here) or the sessionless
2026-07-28 revision. In ``auto`` mode the SDK discovers which, and that can stall for up to 10 s
on servers that ignore unknown methods. `EraMemo` remembers what auto mode found per server, so
that a reconnect pins the era and never pays the stall again.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Final

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["AUTO", "LEGACY", "MODERN_PROTOCOL", "PROTOCOLS", "EraMemo", "era_of"]

logger = logging.getLogger(__name__)

MODERN_PROTOCOL: Final = "2026-07-28"
"""The sessionless protocol revision (no ``initialize``, no ``ping``, ``subscriptions/listen``)."""
LEGACY: Final = "legacy"
"""The handshake era: ``initialize``, ``ping``, notifications on the session."""
AUTO: Final = "auto"
"""Let the SDK discover the era."""
PROTOCOLS: Final = (LEGACY, AUTO, MODERN_PROTOCOL)


def era_of(protocol_version: str) -> str:
    """`MODERN_PROTOCOL` or `LEGACY`: the era of a negotiated protocol version."""
    return MODERN_PROTOCOL if protocol_version in MODERN_PROTOCOL_VERSIONS else LEGACY


class EraMemo:
    """The era that ``auto`` mode found for each server, keyed by what identifies the server.

    Only auto mode teaches it: a pinned era says nothing about what the server would choose.
    Used on the event-loop thread only.
    """

    def __init__(self, store: MutableMapping[str, str]) -> None:
        self.store = store
        """Server key -> `LEGACY` or `MODERN_PROTOCOL`; may be shared by many memos."""

    def modes(self, key: str, protocol: str) -> list[str]:
        """The SDK modes to try, in order: a pinned protocol alone; in auto mode the
        remembered era first, then ``auto`` again in case the server changed."""
        if protocol != AUTO:
            return [protocol]
        known = self.store.get(key)
        if known in (LEGACY, MODERN_PROTOCOL):
            return [known, AUTO]
        return [AUTO]

    def learn(self, key: str, protocol: str, era: str) -> None:
        """Remember ``era`` for ``key`` if it was found in auto mode (``protocol``)."""
        if protocol == AUTO:
            self.store[key] = era

    def forget(self, key: str) -> None:
        """The server refused its remembered era: discover it again next time."""
        if self.store.pop(key, None) is not None:
            logger.debug("forgot the protocol era of %s", key)
