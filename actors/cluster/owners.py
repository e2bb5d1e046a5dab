"""`KnownOwners`: where each single-affinity server was last seen to run, and since when.

A replica forwards a single-affinity server's requests to the owner Redis names. While Redis is
away it cannot ask, so it remembers the last owner it was told of (its replica id and address)
and when: a request may still go there while that owner may believe its lease (no longer than a
TTL after Redis last named it). The owner decides by its own belief, so forwarding to a former
owner never starts a second copy: at worst it answers a classified error.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["KnownOwner", "KnownOwners"]


@dataclass(frozen=True)
class KnownOwner:
    """An owner as Redis last named it: its replica id, its address, and when (monotonic).
    Immutable: read from any thread."""

    replica_id: str
    address: str
    seen: float


class KnownOwners:
    """Per namespace, the owner last forwarded to. Read and written from the gateway's loop and
    the leases' thread: every access is under one lock, never held across a wait."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owners: dict[str, KnownOwner] = {}

    def seen(self, namespace: str, owner: KnownOwner) -> str | None:
        """Note ``owner`` as ``namespace``'s; the former owner's address when no namespace is
        forwarded there any longer (its client to be closed: it moved, or died)."""
        with self._lock:
            before = self._owners.get(namespace)
            self._owners[namespace] = owner
            addresses = {known.address for known in self._owners.values()}
        if before is not None and before.address != owner.address and before.address not in addresses:
            return before.address
        return None

    def recent(self, namespace: str, now: float, within: float) -> KnownOwner | None:
        """``namespace``'s owner if Redis named it less than ``within`` seconds before ``now``."""
        with self._lock:
            owner = self._owners.get(namespace)
        return owner if owner is not None and now - owner.seen < within else None

    def address_of(self, replica_id: str) -> str | None:
        """The address last seen for replica ``replica_id``, if any."""
        with self._lock:
            found = [known.address for known in self._owners.values() if known.replica_id == replica_id]
        return found[0] if found else None
