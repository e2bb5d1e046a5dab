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
from typing import Any

from actors.mcp.adapter import TransportSource
from actors.mcp.config import ServerConfig
from actors.runtime.handlers import HostHandlers, LoginHandlers, client_handlers
from actors.runtime.host import HostCalls
from actors.runtime.registry import TransportFactory

__all__ = ["sdk_transports"]


def sdk_transports(
    servers: list[ServerConfig],
    handlers: HostHandlers,
    host: HostCalls,
    login: LoginHandlers | None = None,
) -> TransportFactory:
    """A factory of SDK transport sources, the SDK imported and the SSL context built now.

    ``servers`` are those known at start: an SSL context is built only if one of them is
    remote (a remote server registered later builds it on its first connect, off the loop).
    """
    # Deferred to here, the caller's thread (see the module docstring); `import actors` stays light.
    from actors.mcp.auth import TokenStore, oauth_provider  # noqa: PLC0415
    from actors.mcp.sdk_transport import SDKTransport  # noqa: PLC0415
    from actors.mcp.tls import default_ssl_context  # noqa: PLC0415

    store = TokenStore()
    host_login = login or LoginHandlers()

    context: ssl.SSLContext | None = None
    if any(server.transport != "stdio" for server in servers):
        context = default_ssl_context()

    def source(config: ServerConfig) -> TransportSource:
        answers = client_handlers(config, handlers, host)
        # A fresh OAuth provider per connection (cheap: it reads the store off the loop, when asked).
        auth = (
            functools.partial(oauth_provider, config, store, **_login_options(config.name, host_login, host))
            if config.transport != "stdio"
            else None
        )
        return functools.partial(
            SDKTransport.for_server, config, ssl_context=context, handlers=answers, auth=auth
        )

    return source


def _login_options(server: str, login: LoginHandlers, host: HostCalls) -> dict[str, Any]:
    """`oauth_provider` keywords for the host's login handlers, each run on a host thread."""
    # Deferred with the rest of the SDK (see sdk_transports); only reached from there.
    from mcp.client.auth import AuthorizationCodeResult  # noqa: PLC0415

    from actors.mcp.auth import AuthError  # noqa: PLC0415

    options: dict[str, Any] = {}
    if login.redirect is not None and login.callback is not None:
        send, receive = login.redirect, login.callback

        async def redirect(url: str) -> None:
            await host.call(send, url, timeout=login.timeout)

        async def callback() -> Any:
            answer = await host.call(receive, timeout=login.timeout)
            try:
                code, state, iss = _redirect_parameters(answer)
            except TypeError as exc:
                raise AuthError(server, f"{server}: {exc}") from None
            return AuthorizationCodeResult(code=code, state=state, iss=iss)

        options.update(interactive=True, redirect_handler=redirect, callback_handler=callback)
    if login.assertion is not None:
        vouch = login.assertion

        async def assertion(audience: str, resource: str) -> str:
            return await host.call(vouch, audience, resource, timeout=login.timeout)

        options["assertion_handler"] = assertion
    return options


def _redirect_parameters(answer: object) -> tuple[str, str | None, str | None]:
    """``(code, state, iss)`` of what a host's `LoginHandlers.callback` returned, which is
    ``(code, state, iss)`` or ``(code, state)``; anything else is the host's mistake."""
    if isinstance(answer, tuple) and len(answer) in (2, 3):
        code, state, iss = (*answer, None) if len(answer) == 2 else answer
        if (
            isinstance(code, str)
            and code
            and all(value is None or isinstance(value, str) for value in (state, iss))
        ):
            return code, state, iss
    raise TypeError(
        "LoginHandlers.callback must return (code, state, iss) or (code, state): a non-empty code, "
        f"state and iss each a string or None; it returned {type(answer).__name__}"
    )
