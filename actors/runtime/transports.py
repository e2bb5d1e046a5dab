"""`sdk_transports`: the transports a `Runtime` makes for its servers, on the official SDK.

Called by `Runtime.start` on the host's thread, which is the point: importing the SDK costs
about half a second and building an SSL context up to 0.1 s, and neither may happen on the
event-loop thread (every server would stall) or an actor thread (a status request would).
The factory it returns is then cheap to call anywhere: the registry calls it when it spawns a
server actor, and the transport it makes is built on the loop at each connect.
"""

from __future__ import annotations

import functools
import ssl

from actors.mcp.adapter import TransportSource
from actors.mcp.config import ServerConfig
from actors.runtime.handlers import HostHandlers, client_handlers
from actors.runtime.host import HostCalls
from actors.runtime.registry import TransportFactory

__all__ = ["sdk_transports"]


def sdk_transports(servers: list[ServerConfig], handlers: HostHandlers, host: HostCalls) -> TransportFactory:
    """A factory of SDK transport sources, the SDK imported and the SSL context built now.

    ``servers`` are those known at start: an SSL context is built only if one of them is
    remote (a remote server registered later builds it on its first connect, off the loop).
    """
    # Deferred to here, the caller's thread (see the module docstring); `import actors` stays light.
    from actors.mcp.sdk_transport import SDKTransport  # noqa: PLC0415
    from actors.mcp.tls import default_ssl_context  # noqa: PLC0415

    context: ssl.SSLContext | None = None
    if any(server.transport != "stdio" for server in servers):
        context = default_ssl_context()

    def source(config: ServerConfig) -> TransportSource:
        answers = client_handlers(config, handlers, host)
        return functools.partial(SDKTransport.for_server, config, ssl_context=context, handlers=answers)

    return source
