"""Gateway replicas coordinated through Redis (``mcp-actors serve --http ... --cluster URL``).

Each replica keeps its own runtime and server processes; Redis holds only what replicas share:
the schema cache (`RedisSchemaStore`), list changes and resource updates (`RedisSubscriptionBus`),
and membership (`Membership`). `ClusterReplica` wires them for ``serve``. Needs the ``redis``
package (``pip install 'mcp-actors[cluster]'``).
"""

from __future__ import annotations

from actors.cluster.bus import RedisSubscriptionBus
from actors.cluster.link import PREFIX, RedisLink
from actors.cluster.members import Member, Membership
from actors.cluster.replica import ClusterReplica, new_replica_id
from actors.cluster.schema_store import RedisSchemaStore

__all__ = [
    "PREFIX",
    "ClusterReplica",
    "Member",
    "Membership",
    "RedisLink",
    "RedisSchemaStore",
    "RedisSubscriptionBus",
    "new_replica_id",
]
