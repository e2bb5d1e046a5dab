"""The SDK's OAuth flows with what the token store and the absence of a person change in them
(see `actors.mcp.auth.provider` for what that is): one class per grant, over one shared flow."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
)
from mcp.client.auth.utils import extract_field_from_www_auth, union_scopes
from mcp.shared.auth import (
    JWT_BEARER_GRANT_TYPE,
    OAuthClientInformationFull,
    OAuthMetadata,
    ProtectedResourceMetadata,
)
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from pydantic import AnyUrl

from actors.mcp.auth.dpop import Proofs, htu_of
from actors.mcp.auth.errors import AuthError, AuthRefused, LoginRequired, auth_failure, refusal_reason
from actors.mcp.auth.redirect import free_port, loopback_port, port_free, redirect_uri_for
from actors.mcp.auth.store import ServerTokenStorage, StoredLogin
from actors.mcp.config import OAuthConfig
from actors.mcp.own_thread import in_own_thread

__all__ = ["AuthorizationCode", "ClientCredentials", "PrivateKeyJWT", "StoredLoginFlow", "WorkloadIdentity"]

logger = logging.getLogger(__name__)


@dataclass
class _LoginAttempt:
    """What one request's pass through the flow did (one per request: see `_ATTEMPT`)."""

    challenge: int = 0
    """The status of the refusal that started the flow (401, or 403 for a scope step-up)."""
    refresh_tried: bool = False
    refreshing: bool = False
    refresh_refused: bool = False


# Per request, not per provider: requests run in their own tasks and an auth flow is driven in
# the task of its request, while one provider serves them all.
_ATTEMPT: ContextVar[_LoginAttempt] = ContextVar("mcp_actors_oauth_attempt")


class StoredLoginFlow(OAuthClientProvider):
    """What the store, and the absence of a person, change in the SDK's flow (see the module)."""

    _server: str
    _oauth: OAuthConfig
    _storage: ServerTokenStorage
    _interactive: bool
    _needs_person: bool
    _fixed_redirect_uri: str | None
    _fresh: bool
    _configured_client: OAuthClientInformationFull | None

    def wire(
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
        self._proofs: Proofs | None = None
        storage.describe = self._discovered

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._server!r}, {self.context.server_url!r})"

    def _discovered(self) -> tuple[OAuthMetadata | None, ProtectedResourceMetadata | None]:
        return self.context.oauth_metadata, self.context.protected_resource_metadata

    # -- the flow around the SDK's ------------------------------------------------------------

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if self._oauth.unattended:
            renewing = self._renewed_ahead(request)
            try:
                outgoing = await renewing.__anext__()
                while True:
                    outgoing = await renewing.asend((yield outgoing))
            except StopAsyncIteration:
                pass
            except OAuthFlowError as exc:
                raise self._classified(exc) from exc
            finally:
                await renewing.aclose()
        # At most two passes: the SDK's flow, and once more with a login when the stored
        # login's refresh was refused (only where a person may log in).
        for attempt in range(2):
            state = _LoginAttempt()
            _ATTEMPT.set(state)
            flow = super()._auth_flow(request)
            final: httpx2.Response | None = None
            try:
                outgoing = await flow.__anext__()
                while True:
                    proved = await self._proved(outgoing, request)
                    response = yield outgoing
                    if self._proofs is not None and await self._proofs.again_with_nonce(outgoing, response):
                        await self._proved(outgoing, request)
                        response = yield outgoing
                        await self._proofs.again_with_nonce(outgoing, response)
                    if proved and self._proofs is not None:
                        response = await self._proofs.token_response(response)
                    if outgoing is request:
                        final = response
                        state.challenge = response.status_code
                        await self._unanswerable(response, state)
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                pass
            except OAuthFlowError as exc:
                raise self._classified(exc) from exc
            finally:
                await flow.aclose()
            if final is None or final.status_code not in (401, 403):
                return
            if state.refresh_refused and attempt == 0 and self._interactive:
                request.headers.pop("Authorization", None)
                continue
            raise AuthRefused(self._server, final.status_code, refusal_reason(final))

    async def _renewed_ahead(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """A client that logs itself in replaces an expired token without a refresh token before
        the request goes out (the SDK's flow would send the request bare, and exchange on its 401)."""
        async with self.context.lock:
            if not self._initialized:
                await self._initialize()
            context = self.context
            if (
                context.current_tokens is None
                or context.is_token_valid()
                or context.can_refresh_token()
                or context.oauth_metadata is None
            ):
                return
            context.protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
            exchange = await self._perform_authorization()
            proved = await self._proved(exchange, request)
            response = yield exchange
            if self._proofs is not None and await self._proofs.again_with_nonce(exchange, response):
                await self._proved(exchange, request)
                response = yield exchange
            if proved and self._proofs is not None:
                response = await self._proofs.token_response(response)
            await self._handle_token_response(response)

    def _classified(self, exc: OAuthFlowError) -> AuthError:
        """The SDK's failure, named for the server it is about (the SDK's do not know)."""
        failure = auth_failure(exc, self._server)
        assert failure is not None
        return failure

    async def _proved(self, outgoing: httpx2.Request, request: httpx2.Request) -> bool:
        """DPoP (`actors.mcp.auth.dpop`): ``request`` presents a bound token with a fresh proof;
        a token request is proved where the authorization server offers it (whether it was)."""
        proofs = self._proofs
        if proofs is None:
            return False
        if outgoing is request:
            tokens = self.context.current_tokens
            await proofs.present(outgoing, tokens.access_token if tokens is not None else None)
            return False
        metadata = self.context.oauth_metadata
        if outgoing.method != "POST" or metadata is None:
            return False
        if htu_of(str(outgoing.url)).rstrip("/") != htu_of(str(metadata.token_endpoint)).rstrip("/"):
            return False
        return await proofs.prove_token_request(outgoing)

    async def _unanswerable(self, response: httpx2.Response, state: _LoginAttempt) -> None:
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
        self._proofs = Proofs(
            login.dpop_key if login.tokens is not None else None, self._storage.set_dpop_key
        )
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
            port = self._oauth.redirect_port or loopback_port(stored)
            if port and not self._oauth.redirect_port and not await in_own_thread(port_free, port):
                port = 0  # the registration's port is taken: register again, elsewhere
            if not port:
                port = await in_own_thread(free_port)
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
        state = _ATTEMPT.get(None) or _LoginAttempt()
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


class AuthorizationCode(StoredLoginFlow):
    """The authorization-code grant (a user logs in)."""


class ClientCredentials(StoredLoginFlow, ClientCredentialsOAuthProvider):
    """The client-credentials grant with a client secret."""

    async def _initialize(self) -> None:
        await super()._initialize()
        self._configured_client = self.context.client_info


class PrivateKeyJWT(StoredLoginFlow, PrivateKeyJWTOAuthProvider):
    """The client-credentials grant with a signed assertion (``private_key_jwt``)."""


class WorkloadIdentity(StoredLoginFlow, ClientCredentialsOAuthProvider):
    """Workload identity federation (SEP-1933): the platform's token for this workload, read
    afresh from its file for every token request (platforms rotate it), exchanged with the RFC 7523
    JWT bearer grant. The client sends no secret (``none``): the token is the credential. A token
    about to expire, or refused with a 401, is replaced by a new exchange; no person is asked."""

    def __init__(
        self,
        *,
        server_url: str,
        storage: ServerTokenStorage,
        client_id: str,
        token_file: str,
        scope: str | None,
        issuer: str | None,
    ) -> None:
        # The SDK's client-credentials provider discovers the authorization server and pins it
        # to ``issuer``; only the grant differs (and the secret, which there is none of).
        super().__init__(
            server_url=server_url,
            storage=storage,
            client_id=client_id,
            client_secret="",
            scope=scope,
            issuer=issuer,
        )
        self._fixed_client_info = OAuthClientInformationFull(
            redirect_uris=None,
            client_id=client_id,
            grant_types=[JWT_BEARER_GRANT_TYPE],
            token_endpoint_auth_method="none",
            scope=scope,
        )
        self._token_file = Path(token_file).expanduser()

    async def _initialize(self) -> None:
        await super()._initialize()
        self._configured_client = self.context.client_info

    async def _exchange_token_client_credentials(self) -> httpx2.Request:
        # The SDK's request is built for its checks (the configured issuer's metadata), not sent.
        await super()._exchange_token_client_credentials()
        data = {"grant_type": JWT_BEARER_GRANT_TYPE, "assertion": await self._workload_token()}
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        data, headers = self.context.prepare_token_auth(data, headers)
        data.setdefault("client_id", self._fixed_client_info.client_id or "")  # a public client names itself
        if self.context.should_include_resource_param(self.context.protocol_version):
            data["resource"] = self.context.get_resource_url()
        if self.context.client_metadata.scope:
            data["scope"] = self.context.client_metadata.scope
        return httpx2.Request("POST", self._get_token_endpoint(), data=data, headers=headers)

    async def _workload_token(self) -> str:
        """The workload's token as the platform left it, read on a worker thread."""
        try:
            token = (await in_own_thread(self._token_file.read_text)).strip()
        except OSError as exc:
            raise AuthError(
                self._server, f"{self._server}: cannot read the workload token file {self._token_file}: {exc}"
            ) from None
        if not token:
            raise AuthError(
                self._server, f"{self._server}: the workload token file {self._token_file} is empty"
            )
        return token
