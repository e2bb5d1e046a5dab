"""`Guard`: how the HTTP gateway authenticates every request, in whichever mode it runs.

- **OAuth** (``access.auth``): the gateway is an OAuth 2.1 resource server on the SDK's own
  server-side auth: `AuthSettings` (issuer, resource URL, required scopes) and a `JWTVerifier`
  given to ``streamable_http_app``, which installs the bearer middleware on ``/mcp`` and serves
  the protected resource metadata (RFC 9728, ``/.well-known/oauth-protected-resource/...``).
- **Static token** (``MCP_ACTORS_TOKEN``, ``--token-file``): a `StaticTokenVerifier` through the
  same middleware, so that `principal_of` works the same (the caller is `STATIC`).
- **Replica**: in a cluster, the credential the replicas share (Redis) is accepted too, from a
  replica forwarding a request (`ReplicaAccess`).

Both modes may be on together: the static token is then one more principal. The routes beside
``/mcp`` (``/healthz``, ``/metrics``, what other parts add) see the same ``request.user``
(`authenticate`); `require` guards one of them as ``/mcp`` is guarded; `Challenges` completes
every 401 and 403's ``WWW-Authenticate``.

Built on the command's thread before serving (the HTTP client for the issuer's keys, and its SSL
context, are made there); `prefetch` and `aclose` run on the gateway's loop. Immutable after.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings
from pydantic import AnyHttpUrl
from starlette.authentication import AuthCredentials
from starlette.middleware.authentication import AuthenticationMiddleware

from actors.config import AuthKeys
from actors.gateway.access.asgi import ASGIApp
from actors.gateway.access.challenge import Challenges
from actors.gateway.access.keys import IssuerKeys, http_client
from actors.gateway.access.verifiers import JWTVerifier, StaticTokenVerifier, Verifiers
from actors.mcp.tls import default_ssl_context

__all__ = ["Guard"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Guard:
    """The HTTP gateway's authentication: its verifier, and its OAuth settings when it has them.
    Built on the command's thread, immutable after; its verifiers run on the gateway's loop."""

    verifier: Verifiers
    settings: AuthSettings | None
    """The resource server's settings (OAuth mode), else None (static token only)."""
    jwt: JWTVerifier | None = None

    @classmethod
    def build(
        cls, auth: AuthKeys | None, token: str | None = None, replica_secret: str | None = None
    ) -> Guard | None:
        """The guard for these settings (None: no authentication at all). On the command's
        thread: it makes the HTTP client the issuer's keys are fetched with."""
        scopes = tuple(auth.scopes) if auth is not None else ()
        resource = auth.resource if auth is not None else None
        verifiers: list[Any] = []
        if replica_secret:
            verifiers.append(
                StaticTokenVerifier(
                    replica_secret, replica=True, scopes=scopes, resource=resource, name="replica"
                )
            )
        if token:
            verifiers.append(StaticTokenVerifier(token, scopes=scopes, resource=resource))
        settings = jwt = None
        if auth is not None:
            keys = IssuerKeys(auth.issuer, http_client(default_ssl_context()), jwks_uri=auth.jwks_uri)
            jwt = JWTVerifier(auth, keys)
            verifiers.append(jwt)
            # From strings, so that the settings keep them as written (no "/" added to an empty
            # path): clients compare the issuer of the metadata exactly (RFC 8414 3.3).
            settings = AuthSettings.model_validate(
                {
                    "issuer_url": auth.issuer,
                    "resource_server_url": auth.resource,
                    "required_scopes": list(auth.scopes) or None,
                    # The verifier sets ``resource`` only for a token whose audience is this gateway.
                    "validate_token_resource": True,
                }
            )
            if token:
                logger.warning("access: the static token is accepted beside the issuer's tokens")
        if not verifiers:
            return None
        return cls(Verifiers(*verifiers), settings, jwt)

    @property
    def scopes(self) -> tuple[str, ...]:
        """The scopes every request's token must hold."""
        return tuple(self.settings.required_scopes or ()) if self.settings is not None else ()

    @property
    def resource_metadata(self) -> str | None:
        """The URL of the protected resource metadata (OAuth mode)."""
        if self.settings is None or self.settings.resource_server_url is None:
            return None
        return str(build_resource_metadata_url(self.settings.resource_server_url))

    def sdk_options(self) -> dict[str, Any]:
        """What ``streamable_http_app`` takes: the SDK guards ``/mcp`` itself and serves the
        metadata. Without OAuth settings it installs no authentication (`protect` does)."""
        return {"auth": self.settings, "token_verifier": self.verifier}

    def protect(self, mcp_app: ASGIApp) -> ASGIApp:
        """``/mcp``, as the SDK's app built with `sdk_options`, completed: authenticated here
        where the SDK did not install its middleware (static token), challenges filled in."""
        app = mcp_app if self.settings is not None else self.authenticate(mcp_app)
        return self.challenges(app)

    def authenticate(self, app: ASGIApp) -> ASGIApp:
        """``app`` with ``request.user`` set from the bearer token (refusing nothing itself)."""
        resource = self.settings.resource_server_url if self.settings is not None else None
        backend = BearerAuthBackend(self.verifier, resource_server_url=resource)
        return AuthenticationMiddleware(AuthContextMiddleware(app), backend=backend)

    def require(self, endpoint: ASGIApp) -> ASGIApp:
        """``endpoint`` for authenticated requests holding the required scopes only (401/403)."""
        metadata = AnyHttpUrl(self.resource_metadata) if self.resource_metadata else None
        return RequireAuthMiddleware(endpoint, list(self.scopes), metadata)

    def challenges(self, app: ASGIApp) -> ASGIApp:
        """``app`` with its 401 and 403 challenges completed (`Challenges`)."""
        return Challenges(app, scopes=self.scopes, resource_metadata=self.resource_metadata)

    def authorized(self, scope: Mapping[str, Any]) -> bool:
        """Whether the request of ``scope`` was authenticated, with the required scopes."""
        credentials = scope.get("auth")
        held = set(credentials.scopes) if isinstance(credentials, AuthCredentials) else set()
        return isinstance(scope.get("user"), AuthenticatedUser) and set(self.scopes) <= held

    async def prefetch(self) -> None:
        """Fetch the issuer's keys now (on the gateway's loop, as it starts serving)."""
        if self.jwt is not None:
            await self.jwt.keys.prefetch()

    async def aclose(self) -> None:
        """Close the client to the issuer (on the gateway's loop, once it stopped serving)."""
        if self.jwt is not None:
            await self.jwt.keys.aclose()
