"""The ``httpx2.Auth`` that logs a transport in to a remote server: the SDK's OAuth providers,
wired to the `TokenStore` and to what may and may not wait on a person.

::

    auth = oauth_provider(config, TokenStore())            # embedded: never waits on a person
    http = httpx2.AsyncClient(auth=auth)                    # streamable_http_client(url, http_client=http)
    auth = oauth_provider(config, store, interactive=True,  # a login (actors.mcp.auth.login)
                          redirect_handler=..., callback_handler=...)

The SDK does the protocol: discovery, dynamic registration or a client ID metadata document,
PKCE, RFC 8707 resources, scope step-up, refresh. What is added here:

- A login found in the store is used before anyone is asked: the expiry is restored (the SDK
  forgets it across restarts) so an expired access token is refreshed before it is sent, and a
  token the server refuses anyway is refreshed once before a new login is started.
- Without a person (``interactive=False``), a server that needs a login fails at its first
  refusal with `LoginRequired`, before any discovery, registration or browser.
- A refusal that survives the refresh or the login is raised as `AuthRefused`, with the
  server's ``WWW-Authenticate`` reason; each request is refused at most once per login, so a
  server that answers 401 forever costs one attempt, not a loop.
- Configured scopes are asked for beside the ones the server names; a pre-registered client's
  secret is sent the way the authorization server's metadata says it accepts.

Building a provider is cheap and does no I/O (it is done on the event loop); the store is read
on a worker thread at the first request.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import httpx2
from mcp.client.auth import OAuthFlowError
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from pydantic import AnyUrl

from actors.mcp.auth.client_assertion import KeyFileAssertion
from actors.mcp.auth.errors import AuthError, AuthRefused, auth_failure, refusal_reason
from actors.mcp.auth.flows import (
    AuthorizationCode,
    ClientCredentials,
    PrivateKeyJWT,
    StoredLoginFlow,
    WorkloadIdentity,
)
from actors.mcp.auth.redirect import redirect_uri_for
from actors.mcp.auth.store import TokenStore
from actors.mcp.config import OAuthConfig, ServerConfig

__all__ = [
    "CLIENT_NAME",
    "AssertionHandler",
    "CallbackHandler",
    "RedirectHandler",
    "oauth_provider",
    "redirect_uri_for",
]

logger = logging.getLogger(__name__)

CLIENT_NAME = "mcp-actors"
"""The client name a dynamic registration shows the user."""

RedirectHandler = Callable[[str], Awaitable[None]]
"""Sends the user to the authorization URL (opens a browser, prints it, asks the host)."""
CallbackHandler = Callable[[], Awaitable[AuthorizationCodeResult]]
"""Waits for the redirect back and returns its ``code``, ``state`` and ``iss``."""
AssertionHandler = Callable[[str, str], Awaitable[str]]
"""``(audience, resource) -> ID-JAG``: the host's identity provider vouches for the user (SEP-990);
``audience`` is the authorization server's issuer, ``resource`` the MCP server."""


def oauth_provider(
    config: ServerConfig,
    store: TokenStore,
    *,
    interactive: bool = False,
    redirect_handler: RedirectHandler | None = None,
    callback_handler: CallbackHandler | None = None,
    redirect_uri: str | None = None,
    assertion_handler: AssertionHandler | None = None,
    fresh: bool = False,
) -> httpx2.Auth:
    """The ``auth`` for an ``httpx2.AsyncClient`` that reaches the remote server ``config``.

    ``interactive=False`` (the embedded runtime): a server that needs a login raises
    `LoginRequired` at once. ``interactive=True``: the authorization-code flow runs through
    ``redirect_handler`` and ``callback_handler`` (both required), with ``redirect_uri`` as the
    redirect URI (default: the loopback, on ``oauth.redirectPort``, the port of the stored
    registration, or a free one). ``fresh``: ignore stored tokens (a new login), keeping the
    registration. ``assertion_handler``: the ID-JAG of the ``identity_assertion`` grant.

    A server whose config sets its own ``Authorization`` header and no ``oauth`` gets an auth
    that only reports refusals as `AuthRefused`.
    """
    if config.transport == "stdio" or not config.url:
        raise ValueError(f"server {config.name!r} is not a remote server: OAuth needs a url")
    if interactive and (redirect_handler is None or callback_handler is None):
        raise ValueError("an interactive login needs both a redirect_handler and a callback_handler")
    if not interactive and (redirect_handler is not None or callback_handler is not None):
        raise ValueError("redirect and callback handlers are for interactive logins (interactive=True)")
    oauth = config.oauth
    if oauth is None and any(name.lower() == "authorization" for name in config.headers):
        return _RefusalCheck(config.name)
    oauth = oauth if oauth is not None else OAuthConfig()
    storage = store.for_server(config.url)
    scope = " ".join(oauth.scopes) if oauth.scopes else None
    if oauth.grant == "identity_assertion":
        assert oauth.client_id is not None and oauth.client_secret is not None and oauth.issuer is not None
        return _IdentityAssertion(
            config.name,
            server_url=config.url,
            storage=storage,
            client_id=oauth.client_id,
            client_secret=oauth.client_secret,
            issuer=oauth.issuer,
            assertion_provider=assertion_handler or _no_assertion(config.name),
            scope=scope,
            # OAuth's default, which every authorization server must accept (RFC 6749 2.3.1).
            token_endpoint_auth_method="client_secret_basic",
        )
    provider: StoredLoginFlow
    if oauth.grant == "workload_identity":
        assert oauth.client_id is not None and oauth.workload_token_file is not None
        provider = WorkloadIdentity(
            server_url=config.url,
            storage=storage,
            client_id=oauth.client_id,
            token_file=oauth.workload_token_file,
            scope=scope,
            issuer=oauth.issuer,
        )
    elif oauth.grant == "client_credentials":
        assert oauth.client_id is not None
        if oauth.private_key_file:
            provider = PrivateKeyJWT(
                server_url=config.url,
                storage=storage,
                client_id=oauth.client_id,
                assertion_provider=KeyFileAssertion(oauth.client_id, oauth.private_key_file),
                scope=scope,
                issuer=oauth.issuer,
            )
        else:
            assert oauth.client_secret is not None
            provider = ClientCredentials(
                server_url=config.url,
                storage=storage,
                client_id=oauth.client_id,
                client_secret=oauth.client_secret,
                scope=scope,
                issuer=oauth.issuer,
            )
    else:
        # A placeholder until the first request settles the port (see `_settle_redirect_uri`).
        uri = redirect_uri or redirect_uri_for(oauth.redirect_port or 1)
        provider = AuthorizationCode(
            server_url=config.url,
            client_metadata=OAuthClientMetadata(
                client_name=CLIENT_NAME,
                redirect_uris=[AnyUrl(uri)],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                scope=scope,
            ),
            storage=storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
            client_metadata_url=oauth.client_metadata_url,
        )
    provider.wire(
        config.name, oauth, storage, interactive=interactive, redirect_uri=redirect_uri, fresh=fresh
    )
    return provider


class _RefusalCheck(httpx2.Auth):
    """For a server with its own ``Authorization`` header: a 401 or 403 becomes `AuthRefused`."""

    def __init__(self, server: str) -> None:
        self._server = server

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        response = yield request
        if response.status_code in (401, 403):
            raise AuthRefused(self._server, response.status_code, refusal_reason(response))


class _IdentityAssertion(IdentityAssertionOAuthProvider):
    """The SDK's SEP-990 provider, with its failures named and classified."""

    def __init__(self, server: str, **arguments: Any) -> None:
        super().__init__(**arguments)
        self._server = server

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._server!r})"

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)
        final: httpx2.Response | None = None
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is request:
                    final = response
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            pass
        except OAuthFlowError as exc:
            failure = auth_failure(exc, self._server)
            assert failure is not None
            raise failure from exc
        finally:
            await flow.aclose()
        if final is not None and final.status_code in (401, 403):
            raise AuthRefused(self._server, final.status_code, refusal_reason(final))


def _no_assertion(server: str) -> AssertionHandler:
    async def refuse(audience: str, resource: str) -> str:
        raise AuthError(
            server, f"{server}: the identity_assertion grant needs an identity assertion from the host"
        )

    return refuse
