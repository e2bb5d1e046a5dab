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

import contextlib
import logging
import socket
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

import anyio.to_thread
import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.auth.utils import extract_field_from_www_auth, union_scopes
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl

from actors.mcp.auth.errors import AuthError, AuthRefused, LoginRequired, auth_failure, refusal_reason
from actors.mcp.auth.store import ServerTokenStorage, StoredLogin, TokenStore
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

_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
_CALLBACK_PATH = "/callback"
_ASSERTION_LIFETIME = 300


@dataclass
class _Attempt:
    """What one request's pass through the flow did (one per request: see `_ATTEMPT`)."""

    challenge: int = 0
    """The status of the refusal that started the flow (401, or 403 for a scope step-up)."""
    refresh_tried: bool = False
    refreshing: bool = False
    refresh_refused: bool = False


# Per request, not per provider: requests run in their own tasks and an auth flow is driven in
# the task of its request, while one provider serves them all.
_ATTEMPT: ContextVar[_Attempt] = ContextVar("mcp_actors_oauth_attempt")


def redirect_uri_for(port: int) -> str:
    """The loopback redirect URI of a login that listens on ``port``."""
    return f"http://127.0.0.1:{port}{_CALLBACK_PATH}"


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
    provider: _StoredLoginFlow
    if oauth.grant == "client_credentials":
        assert oauth.client_id is not None
        if oauth.private_key_file:
            provider = _PrivateKeyJWT(
                server_url=config.url,
                storage=storage,
                client_id=oauth.client_id,
                assertion_provider=_KeyFileAssertion(oauth.client_id, oauth.private_key_file),
                scope=scope,
                issuer=oauth.issuer,
            )
        else:
            assert oauth.client_secret is not None
            provider = _ClientCredentials(
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
        provider = _AuthorizationCode(
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
    provider._wire(
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


class _StoredLoginFlow(OAuthClientProvider):
    """What the store, and the absence of a person, change in the SDK's flow (see the module)."""

    _server: str
    _oauth: OAuthConfig
    _storage: ServerTokenStorage
    _interactive: bool
    _needs_person: bool
    _fixed_redirect_uri: str | None
    _fresh: bool
    _configured_client: OAuthClientInformationFull | None

    def _wire(
        self,
        server: str,
        oauth: OAuthConfig,
        storage: ServerTokenStorage,
        *,
        interactive: bool,
        redirect_uri: str | None,
        fresh: bool,
    ) -> None:
        self._server = server
        self._oauth = oauth
        self._storage = storage
        self._interactive = interactive
        self._needs_person = oauth.grant == "authorization_code"
        self._fixed_redirect_uri = redirect_uri
        self._fresh = fresh
        self._configured_client = None
        storage.describe = self._discovered

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._server!r}, {self.context.server_url!r})"

    def _discovered(self) -> tuple[OAuthMetadata | None, ProtectedResourceMetadata | None]:
        return self.context.oauth_metadata, self.context.protected_resource_metadata

    # -- the flow around the SDK's ------------------------------------------------------------

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        # At most two passes: the SDK's flow, and once more with a login when the stored
        # login's refresh was refused (only where a person may log in).
        for attempt in range(2):
            state = _Attempt()
            _ATTEMPT.set(state)
            flow = super()._auth_flow(request)
            final: httpx2.Response | None = None
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    if outgoing is request:
                        final = response
                        state.challenge = response.status_code
                        await self._unanswerable(response, state)
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                pass
            except OAuthFlowError as exc:
                # The SDK's failures do not know which server they are about.
                failure = auth_failure(exc, self._server)
                assert failure is not None
                raise failure from exc
            finally:
                await flow.aclose()
            if final is None or final.status_code not in (401, 403):
                return
            if state.refresh_refused and attempt == 0 and self._interactive:
                request.headers.pop("Authorization", None)
                continue
            raise AuthRefused(self._server, final.status_code, refusal_reason(final))

    async def _unanswerable(self, response: httpx2.Response, state: _Attempt) -> None:
        """Raise `LoginRequired` for a refusal that only a person could answer, when there is none."""
        if self._interactive or not self._needs_person:
            return
        if response.status_code == 401 and not self.context.can_refresh_token():
            why = "the stored login could not be renewed" if state.refresh_refused else ""
            if not why and self._storage.login is not None and self._storage.login.tokens is not None:
                why = "the stored login was refused"
            raise LoginRequired(self._server, why)
        if (
            response.status_code == 403
            and extract_field_from_www_auth(response, "error") == "insufficient_scope"
        ):
            wanted = extract_field_from_www_auth(response, "scope") or ""
            if wanted:
                await self._storage.want_scope(wanted)
            raise LoginRequired(
                self._server, f"the server asks for more access (scope {wanted or 'unnamed'})"
            )

    # -- hooks in the SDK's flow -----------------------------------------------------------------

    async def _initialize(self) -> None:
        await super()._initialize()
        login = await self._storage.load()
        if self._fresh:
            self.context.current_tokens = None
        self.context.token_expiry_time = login.expires_at if self.context.current_tokens is not None else None
        if self.context.oauth_metadata is None:
            self.context.oauth_metadata = login.oauth_metadata
        if self.context.protected_resource_metadata is None and login.resource_metadata is not None:
            self.context.protected_resource_metadata = login.resource_metadata
            servers = login.resource_metadata.authorization_servers
            if servers and self.context.auth_server_url is None:
                self.context.auth_server_url = str(servers[0])
        if self._needs_person and self._interactive:
            await self._settle_registration(login)

    async def _settle_registration(self, login: StoredLogin) -> None:
        """Pick the redirect URI of this login, and drop a stored registration that does not
        allow it or the scopes wanted (a server may hold a client to the scopes it registered)."""
        stored = login.client_info if self._oauth.client_id is None else None
        uri = self._fixed_redirect_uri
        if uri is None:
            port = self._oauth.redirect_port or _loopback_port(stored)
            if (
                port
                and not self._oauth.redirect_port
                and not await anyio.to_thread.run_sync(_port_free, port)
            ):
                port = 0  # the registration's port is taken: register again, elsewhere
            if not port:
                port = await anyio.to_thread.run_sync(_free_port)
            uri = redirect_uri_for(port)
        self.context.client_metadata.redirect_uris = [AnyUrl(uri)]
        if self._oauth.client_id is not None:
            self._configured_client = OAuthClientInformationFull(
                client_id=self._oauth.client_id,
                client_secret=self._oauth.client_secret,
                redirect_uris=[AnyUrl(uri)],
                grant_types=["authorization_code", "refresh_token"],
                token_endpoint_auth_method="client_secret_basic" if self._oauth.client_secret else "none",
                scope=self.context.client_metadata.scope,
            )
            self.context.client_info = self._configured_client
        elif stored is not None:
            wanted = set((union_scopes(" ".join(self._oauth.scopes or ()), login.wanted_scope) or "").split())
            registered = set(stored.scope.split()) if stored.scope is not None else wanted
            if uri not in {str(u) for u in stored.redirect_uris or ()} or not wanted <= registered:
                logger.info(
                    "%s: the stored client registration does not fit this login; registering again",
                    self._server,
                )
                self.context.client_info = None
                await self._storage.forget_client()

    async def _perform_authorization(self) -> httpx2.Request:
        state = _ATTEMPT.get(None) or _Attempt()
        self._ask_for_scopes()
        self._send_secret_as_accepted()
        if state.challenge != 403 and not state.refresh_tried and self.context.can_refresh_token():
            # A token the server refused may have been revoked or expired early: its refresh
            # token may still work, and nobody has to be asked.
            state.refresh_tried = state.refreshing = True
            return await self._refresh_token()
        if self._needs_person and not self._interactive:
            raise LoginRequired(self._server, "the stored login no longer fits the server")
        return await super()._perform_authorization()

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        state = _ATTEMPT.get(None)
        if state is not None and state.refreshing:
            state.refreshing = False
            await self._handle_refresh_response(response)
            return
        await super()._handle_token_response(response)

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        tokens = self.context.current_tokens
        refresh_token = tokens.refresh_token if tokens is not None else None
        if await super()._handle_refresh_response(response):
            return True
        state = _ATTEMPT.get(None)
        if state is not None:
            state.refresh_refused = True
        if response.status_code in (400, 401):
            # Refused for good (invalid_grant): drop it, unless another process renewed it meanwhile.
            await self._storage.forget_tokens(refresh_token)
        return False

    def _expected_issuer(self) -> str:
        # The SDK also calls this as a registration begins, after it took the scopes from the
        # server's challenge: the configured scopes must be registered too, or asking for them
        # later is refused.
        self._ask_for_scopes()
        return super()._expected_issuer()

    def _ask_for_scopes(self) -> None:
        """Ask for the configured scopes (and ones a refused step-up wanted) beside the server's."""
        scope = self.context.client_metadata.scope
        if self._oauth.scopes:
            scope = union_scopes(" ".join(self._oauth.scopes), scope)
        login = self._storage.login
        if login is not None and login.wanted_scope and self._interactive:
            scope = union_scopes(scope, login.wanted_scope)
        self.context.client_metadata.scope = scope

    def _send_secret_as_accepted(self) -> None:
        """Send a configured secret as the authorization server accepts: Basic, unless it lists only post."""
        client = self.context.client_info
        if client is None or client is not self._configured_client or not client.client_secret:
            return
        metadata = self.context.oauth_metadata
        accepted = metadata.token_endpoint_auth_methods_supported if metadata is not None else None
        if accepted and "client_secret_basic" not in accepted and "client_secret_post" in accepted:
            client.token_endpoint_auth_method = "client_secret_post"


class _AuthorizationCode(_StoredLoginFlow):
    """The authorization-code grant (a user logs in)."""


class _ClientCredentials(_StoredLoginFlow, ClientCredentialsOAuthProvider):
    """The client-credentials grant with a client secret."""

    async def _initialize(self) -> None:
        await super()._initialize()
        self._configured_client = self.context.client_info


class _PrivateKeyJWT(_StoredLoginFlow, PrivateKeyJWTOAuthProvider):
    """The client-credentials grant with a signed assertion (``private_key_jwt``)."""


class _KeyFileAssertion:
    """Signs the client assertion with the key in a PEM file, read (and signed) on a worker thread."""

    def __init__(self, client_id: str, path: str) -> None:
        self._client_id = client_id
        self._path = Path(path).expanduser()
        self._key: Any = None
        self._algorithm: str | None = None

    async def __call__(self, audience: str) -> str:
        return await anyio.to_thread.run_sync(self._sign, audience)

    def _sign(self, audience: str) -> str:
        if self._key is None:
            pem = self._path.read_bytes()
            self._key = load_pem_private_key(pem, password=None)
            self._algorithm = _algorithm_for(self._key)
        assert self._algorithm is not None
        now = int(time.time())
        claims = {
            "iss": self._client_id,
            "sub": self._client_id,
            "aud": audience,
            "exp": now + _ASSERTION_LIFETIME,
            "iat": now,
            "jti": str(uuid.uuid4()),
        }
        return jwt.encode(claims, self._key, algorithm=self._algorithm)


def _algorithm_for(key: Any) -> Literal["RS256", "ES256", "ES384", "ES512", "EdDSA"]:
    """The JWS algorithm that fits the key."""
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        sizes: dict[int, Literal["ES256", "ES384", "ES512"]] = {256: "ES256", 384: "ES384", 521: "ES512"}
        if key.curve.key_size in sizes:
            return sizes[key.curve.key_size]
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    raise ValueError(f"cannot sign a client assertion with a {type(key).__name__}")


def _loopback_port(client: OAuthClientInformationFull | None) -> int:
    """The port of a registration's loopback redirect URI, or 0."""
    for uri in (client.redirect_uris or ()) if client is not None else ():
        parsed = urlparse(str(uri))
        if parsed.scheme == "http" and parsed.hostname in _LOOPBACK_HOSTS and parsed.port:
            return parsed.port
    return 0


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with contextlib.suppress(OSError):
            sock.bind(("127.0.0.1", port))
            return True
    return False


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
