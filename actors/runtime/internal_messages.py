"""The runtime's own messages: timer ticks, completions piped back from the loop, and what the
server actors, the registry and the supervisor tell each other. Hosts never send these.

`actors.runtime.messages` re-exports them, beside the public requests.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.mcp.freshness import Freshnesses, ListFreshness, ListKind, Received
from actors.mcp.transport import RemoteTool, ServerInfo
from actors.runtime.status import ServerStatus
from actors.tools import ToolSpec

__all__ = [
    "ArmIdle",
    "CallDone",
    "CannotStart",
    "CatalogChanged",
    "CatalogRelisted",
    "CatalogUpdated",
    "Closed",
    "ConnectionLost",
    "DescribeTools",
    "Freshen",
    "GiveUp",
    "HealthCheck",
    "IdleCheck",
    "ListsChanged",
    "LoginNeeded",
    "ProbeDone",
    "ResetRestarts",
    "ResourceUpdated",
    "Restart",
    "Retire",
    "ServerCrashed",
    "ServerStopped",
    "ServerUp",
    "Shutdown",
    "StartFailed",
    "Started",
    "StayDown",
    "Subscribed",
    "Supervise",
    "ToolsChanged",
    "ToolsRelisted",
    "ToolsUpdated",
    "Unsupervise",
]


def _slot() -> concurrent.futures.Future[Any]:
    return concurrent.futures.Future()


# ---- internal: ticks and completions ---------------------------------------------------


@dataclass(frozen=True)
class IdleCheck:
    """Timer tick: stop the server if it has been idle for its idle timeout."""

    generation: int = 0


@dataclass(frozen=True)
class HealthCheck:
    """Timer tick: probe the server."""

    generation: int = 0


@dataclass(frozen=True)
class Restart:
    """From the supervisor: start again after a crash (the backoff has passed)."""

    attempt: int


@dataclass(frozen=True)
class GiveUp:
    """From the supervisor: too many restarts; become ``failed``."""

    reason: str


@dataclass(frozen=True, eq=False)
class DescribeTools:
    """Registry to server: the reply is the server's tool specs, starting it if never seen."""

    reply: concurrent.futures.Future[list[ToolSpec]] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class Shutdown:
    """Registry to server: close the transport (a later call starts it again); reply when closed."""

    reply: concurrent.futures.Future[ServerStatus] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class Freshen:
    """Registry to server: its list of ``kind`` went stale; list it again if running. The reply
    (True: listed again) comes once the new list was told to the registry, or at once (False)
    if the server is not running. Asks while a list of that kind is in flight share it."""

    kind: ListKind
    told: int = 0
    """Which of the server's lists of that kind the registry holds (`ToolsUpdated.told`): one
    told since, still on its way to the registry, answers the ask (True) without a request."""
    reply: concurrent.futures.Future[bool] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class Retire:
    """Registry to server: close the transport and refuse everything from now on (it is being
    unregistered or the runtime is going away); reply when closed."""

    reason: str
    reply: concurrent.futures.Future[ServerStatus] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True)
class Started:
    """Completion: the connection ``connection`` is up, its tools and its catalog listed."""

    connection: int
    info: ServerInfo
    tools: tuple[RemoteTool, ...]
    catalog: Catalog = field(default_factory=Catalog)
    freshness: Freshnesses = field(default_factory=dict)
    """The caching hints of the four lists (a kind the server does not offer is left out)."""


@dataclass(frozen=True)
class StartFailed:
    """Completion: the connection ``connection`` could not be made; trying again may help."""

    connection: int
    error: str


@dataclass(frozen=True)
class CannotStart:
    """Completion: the connection ``connection`` could not be made, and trying again cannot
    help (`StartRefused`: no such command, a pinned protocol the server lacks)."""

    connection: int
    error: str


@dataclass(frozen=True)
class LoginNeeded:
    """Completion: the connection ``connection`` was refused for want of a (valid) login: the
    server stays down, calls fail as ``auth``, and the next call tries again."""

    connection: int
    error: str


@dataclass(frozen=True)
class Closed:
    """Completion: the connection ``connection`` was closed on our request."""

    connection: int


@dataclass(frozen=True)
class ConnectionLost:
    """Pushed by the transport: the peer went away unasked; ``auth``: it refused the login."""

    connection: int
    reason: str
    auth: bool = False


@dataclass(frozen=True)
class ToolsChanged:
    """Pushed by the transport: the server's tool list changed."""

    connection: int


@dataclass(frozen=True)
class CatalogChanged:
    """Pushed by the transport: the server's resource, template or prompt list changed."""

    connection: int


@dataclass(frozen=True)
class ResourceUpdated:
    """Pushed by the transport: a subscribed resource changed."""

    connection: int
    uri: str


@dataclass(frozen=True)
class CatalogRelisted:
    connection: int
    catalog: Catalog | None
    error: str | None = None
    freshness: Freshnesses = field(default_factory=dict)


@dataclass(frozen=True)
class Subscribed:
    """Completion: subscribing to ``uri`` on connection ``connection`` succeeded or failed."""

    connection: int
    uri: str
    error: str | None = None


@dataclass(frozen=True)
class ToolsRelisted:
    connection: int
    tools: tuple[RemoteTool, ...] | None
    error: str | None = None
    freshness: ListFreshness | None = None


@dataclass(frozen=True)
class CallDone:
    """Completion of one call: bookkeeping only (the caller's reply is set at the same time)."""

    call_id: int
    error_type: str | None
    """None when the call succeeded."""
    duration_ms: float = 0.0
    at: float = 0.0
    """When it completed (``time.monotonic()``): the server's last activity."""
    task: tuple[str, bool, int | None] | None = None
    """A task request's news of its task: its id, whether it ended, its ``ttlMs``."""


@dataclass(frozen=True)
class ProbeDone:
    connection: int
    error: str | None
    error_type: str | None = None


@dataclass(frozen=True)
class StayDown:
    """From the supervisor: no restart for this end; become ``stopped``."""


@dataclass(frozen=True)
class ToolsUpdated:
    """Server to registry: the server's tools (specs without handlers) are now these."""

    namespace: str
    tools: tuple[Any, ...]
    received: Received | None = None
    """When they were received, with their caching hint (None: no news of either)."""
    told: int = 0
    """How many tool lists the server's actor has told, this one included."""


@dataclass(frozen=True)
class CatalogUpdated:
    """Server to registry: the server's resources, templates and prompts are now these."""

    namespace: str
    catalog: Catalog
    received: Mapping[ListKind, Received] = field(default_factory=dict)
    """Per kind listed: when, with its caching hint (a kind the server does not offer is left out)."""
    told: int = 0
    """How many catalogs the server's actor has told, this one included."""


@dataclass(frozen=True)
class ListsChanged:
    """Server to registry: the server said its lists of these kinds changed (they are being
    listed again): stale whatever their TTL, until the new lists come."""

    namespace: str
    kinds: tuple[ListKind, ...]


# ---- internal: to the supervisor -------------------------------------------------------


@dataclass(frozen=True)
class Supervise:
    namespace: str
    server: Any
    """The server actor's `pykka.ActorRef`."""
    config: ServerConfig


@dataclass(frozen=True)
class Unsupervise:
    namespace: str


@dataclass(frozen=True)
class ServerUp:
    namespace: str


@dataclass(frozen=True)
class ServerStopped:
    """A server ended because it was asked to (or cannot start at all): nothing to restart."""

    namespace: str


@dataclass(frozen=True)
class ServerCrashed:
    """A server ended unasked (a crash, a failed probe, a failed start): restart it by policy."""

    namespace: str
    reason: str


@dataclass(frozen=True)
class ArmIdle:
    namespace: str
    delay: float


@dataclass(frozen=True)
class ResetRestarts:
    namespace: str
