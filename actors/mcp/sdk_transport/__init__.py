"""`Transport` on the official MCP SDK (``mcp`` 2.3): stdio, streamable HTTP and legacy SSE.

`SDKTransport` (`.transport`) is what the runtime builds; it is a thin composition of one part
per concept, each a module of its own that owns its state (all of it on the event-loop thread)
and talks to the others through narrow public methods. Read them in this order:

- `owner`: the session owner, one long-lived task per session, started with anyio's
  ``TaskGroup.start``; it enters ``mcp.Client`` and leaves it in that same task (the SDK's cancel
  scopes demand it) and publishes the connected client, so many calls share one session.
- `negotiation`: the protocol era (handshake era or 2026-07-28), remembered per server so that a
  reconnect never pays auto mode's discovery stall again (`actors.mcp.eras`).
- `requests`: requests under death watch; each has its cancel scope, its timeout is its
  deadline (the SDK tells the server to cancel), and the peer's death fails them all at once.
- `peer`: peer-death detection and diagnostics: the end of the server's stream, the exit of its
  process (`actors.mcp.stdio_process`), a refused login, a probe without answer; the reason
  names the exit status and the last stderr lines. `observed` wraps the SDK's transport and
  HTTP auth so that the watch sees them.
- `channel`: a stdio process (`actors.mcp.stdio_stream`, output read in linear time up to
  ``max_message_bytes``) or an HTTP client; the ``PATH`` lookup and the SSL context
  (`actors.mcp.tls`) are done on a worker thread, never on the loop.
- `server_requests`: sampling, elicitation and roots, answered by the host's `ClientHandlers`.
- `notifications`: list changes, resource updates and log messages, told to `TransportEvents`.
- `calls`: which SDK call each `ClientTransport` method is, with its pages.
- `convert` and `failures`: SDK objects to the seam's plain data, and what errors mean.

What this adds to the SDK: death is pushed, not found at the next call (every in-flight
request fails at once with a reason that names the exit status and the last stderr lines);
timeouts tell the server to cancel and leave the session usable; stdio servers are closed fast
and in parallel (SIGTERM after ``close_grace``, not the SDK's 2 s) and die with the host
(`actors.mcp.pdeathsig`); no session outlives a failed or cancelled `connect`.

Logins (`actors.mcp.auth`): a refusal, or a login nobody can do now, is an `AuthError` (type
``auth``): `connect` raises it as it is, and mid-session it ends the session and every
in-flight request raises it. Importing this package loads the SDK: the runtime does it on the
host's thread (`actors.runtime.transports`), never on the loop.
"""

from __future__ import annotations

from actors.mcp.eras import MODERN_PROTOCOL, PROTOCOLS
from actors.mcp.sdk_options import HTTPEndpoint, SDKOptions, StdioCommand
from actors.mcp.sdk_transport.transport import KINDS, SDKTransport

__all__ = [
    "KINDS",
    "MODERN_PROTOCOL",
    "PROTOCOLS",
    "HTTPEndpoint",
    "SDKOptions",
    "SDKTransport",
    "StdioCommand",
]
