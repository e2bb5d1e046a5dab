"""``mcp-actors login``, ``logout`` and the ``auth:`` of ``status``, for one remote server.

::

    result = login(config, TokenStore(), on_url=print)   # opens the browser, waits for the redirect
    logout(config, TokenStore())
    auth_status(config, TokenStore())                      # "ok", "expired" or "needs login"

`login` runs on the caller's thread, with an event loop of its own (never the runtime's): it
sends the server one ``initialize`` request through the OAuth provider, which meets the
server's 401 with discovery, registration, the browser and the loopback redirect
(`LoopbackRedirect`), stores the tokens, and is done. A client-credentials server gets its
token the same way, with nobody asked.
"""

from __future__ import annotations

import contextlib
import logging
import ssl
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import httpx2

from actors.mcp.auth.loopback import LoopbackRedirect
from actors.mcp.auth.provider import CLIENT_NAME, oauth_provider
from actors.mcp.auth.store import AuthStatus, TokenStore
from actors.mcp.config import ServerConfig
from actors.mcp.tls import default_ssl_context

__all__ = ["LoginResult", "auth_status", "login", "logout"]

logger = logging.getLogger(__name__)

_HTTP_TIMEOUT = httpx2.Timeout(30.0)
# Beyond the wait for the person: discovery, registration and the token exchange.
_EXCHANGE_MARGIN = 60.0
_HANDSHAKE_VERSION = "2025-11-25"


@dataclass(frozen=True)
class LoginResult:
    """How a login went."""

    server: str
    authorization_url: str | None
    """Where the user was sent; None when nobody had to be asked (the server did not ask for a
    login, or the client logged in with its own credentials)."""
    status: AuthStatus
    """The server's `auth_status` afterwards."""


def login(
    config: ServerConfig,
    store: TokenStore,
    *,
    open_browser: bool = True,
    timeout: float = 300.0,
    on_url: Callable[[str], object] | None = None,
) -> LoginResult:
    """Log in to the remote server ``config`` and store the tokens; blocks until done.

    ``on_url`` gets the authorization URL as soon as it is known (the CLI prints it);
    ``open_browser`` also opens it. Waits up to ``timeout`` seconds for the redirect. Stored
    tokens are replaced; the client registration is kept. Raises `AuthError` (`AuthRefused`,
    or a failed flow) when the login does not succeed. Must not be called on a running event loop.
    """
    if config.transport == "stdio" or not config.url:
        raise ValueError(f"server {config.name!r} is not a remote server: there is nothing to log in to")
    url = config.url

    def show(authorization_url: str) -> None:
        if on_url is not None:
            on_url(authorization_url)
        if open_browser:
            webbrowser.open(authorization_url)

    ssl_context = default_ssl_context()
    with LoopbackRedirect(open_url=show, timeout=timeout, server=config.name) as redirect:
        if config.oauth is not None and config.oauth.unattended:
            auth = oauth_provider(config, store, fresh=True)
        else:
            auth = oauth_provider(
                config,
                store,
                interactive=True,
                redirect_handler=redirect.redirect_handler,
                callback_handler=redirect.callback_handler,
                fresh=True,
            )
        anyio.run(_probe, config, auth, ssl_context, timeout + _EXCHANGE_MARGIN)
        asked = redirect.authorization_url
    status = store.load(url).status()
    logger.info("%s: login %s (auth: %s)", config.name, "done" if asked else "not asked for", status)
    return LoginResult(server=config.name, authorization_url=asked, status=status)


def logout(config: ServerConfig, store: TokenStore) -> bool:
    """Forget the tokens and the client registration of ``config``'s server; whether there were any."""
    if not config.url:
        return False
    return store.forget(config.url)


def auth_status(config: ServerConfig, store: TokenStore) -> AuthStatus:
    """``ok``, ``expired`` or ``needs login`` (see `StoredLogin.status`); a server whose client
    logs itself in (client credentials, workload identity) is ``ok``. Reads the store: not on the
    event loop."""
    if config.transport == "stdio" or not config.url:
        raise ValueError(f"server {config.name!r} is not a remote server")
    if config.oauth is not None and config.oauth.unattended:
        return "ok"
    return store.load(config.url).status()


async def _probe(config: ServerConfig, auth: httpx2.Auth, ssl_context: ssl.SSLContext, limit: float) -> None:
    """One request through ``auth``: the login happens when the server refuses it."""
    assert config.url is not None
    headers = dict(config.headers)
    with anyio.fail_after(limit):
        async with httpx2.AsyncClient(auth=auth, timeout=_HTTP_TIMEOUT, verify=ssl_context) as http:
            if config.transport == "sse":
                headers["Accept"] = "text/event-stream"
                async with http.stream("GET", config.url, headers=headers):
                    return
            headers["Accept"] = "application/json, text/event-stream"
            initialize = {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": _HANDSHAKE_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": CLIENT_NAME, "version": "login"},
                },
            }
            async with http.stream("POST", config.url, json=initialize, headers=headers) as response:
                session = response.headers.get("mcp-session-id")
            if session:
                # Tidy: the session was only opened to be let in.
                with contextlib.suppress(httpx2.HTTPError):
                    await http.delete(config.url, headers={**headers, "mcp-session-id": session})
