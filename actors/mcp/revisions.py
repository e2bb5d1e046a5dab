"""`Revision`: what differs between MCP protocol revisions, declared once, as data.

The runtime (as a client) and the gateway (as a server) behave differently by the revision a
session speaks: how a server asks the client for input, how liveness is probed, where
notifications travel, whether list results carry caching hints, whether a request opts in to
log messages, whether extensions are declared, whether HTTP requests carry name headers. Code
asks the `Revision` of a session for the one difference it needs
(``revision_of(ctx.protocol_version).input is Input.ROUNDS``), never compares version strings.
A new revision is a new row of `REVISIONS`; `tests/mcp/test_revisions.py` pins the table and
checks it against the SDK's own list of versions. Pure; any thread.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Final

__all__ = ["HANDSHAKE", "REVISIONS", "Input", "Liveness", "Notices", "Revision", "revision_of"]


class Input(enum.Enum):
    """How a server asks the client for input (sampling, elicitation, roots) mid-request."""

    SERVER_REQUESTS = "requests from the server, on the session"
    ROUNDS = "rounds: an InputRequiredResult, answered by sending the request again"


class Liveness(enum.Enum):
    """How a client checks that the server answers."""

    PING = "ping"
    DISCOVER = "server/discover"


class Notices(enum.Enum):
    """Where the server's notifications (list changes, resource updates) travel."""

    SESSION = "on the session"
    LISTEN = "on a subscriptions/listen stream"


@dataclass(frozen=True, slots=True)
class Revision:
    """One protocol revision, by what the runtime and the gateway do differently for it."""

    version: str
    handshake: bool
    """``initialize`` opens a session (else every request stands alone)."""
    input: Input
    liveness: Liveness
    notices: Notices
    cache_hints: bool
    """List and read results carry ``ttlMs`` and ``cacheScope``."""
    log_level_per_request: bool
    """A request names the lowest log level it takes (else ``logging/setLevel``, per session)."""
    extensions: bool
    """Client and server declare extensions (tasks, skills) in their capabilities."""
    name_headers: bool
    """Over HTTP a request carries ``Mcp-Name`` / ``Mcp-Param-*`` headers."""


HANDSHAKE: Final = Revision(
    version="2025-11-25",
    handshake=True,
    input=Input.SERVER_REQUESTS,
    liveness=Liveness.PING,
    notices=Notices.SESSION,
    cache_hints=False,
    log_level_per_request=False,
    extensions=False,
    name_headers=False,
)
"""The newest handshake-era revision: also what a session of an unknown version is taken as."""

REVISIONS: Final[tuple[Revision, ...]] = (
    replace(HANDSHAKE, version="2024-11-05"),
    replace(HANDSHAKE, version="2025-03-26"),
    replace(HANDSHAKE, version="2025-06-18"),
    HANDSHAKE,
    Revision(
        version="2026-07-28",
        handshake=False,
        input=Input.ROUNDS,
        liveness=Liveness.DISCOVER,
        notices=Notices.LISTEN,
        cache_hints=True,
        log_level_per_request=True,
        extensions=True,
        name_headers=True,
    ),
)
"""Every revision the runtime speaks, oldest to newest."""

_BY_VERSION: Final = {revision.version: revision for revision in REVISIONS}


def revision_of(version: str | None) -> Revision:
    """The revision a session negotiated (``version``); a version none knows (or none yet) is
    taken as the newest handshake-era one, the most cautious reading."""
    if version is None:
        return HANDSHAKE
    return _BY_VERSION.get(version, HANDSHAKE)
