"""An OAuth-protected MCP server (Streamable HTTP) with its own authorization server, for the auth tests.

Run it with `tests.servers.http_server.HTTPServer`::

    HTTPServer(module="tests.servers.oauth_server", extra_args=("--token-lifetime", "3600"))

Built from the SDK's server-side auth: `MCPServer` with an in-memory
`OAuthAuthorizationServerProvider` serves protected resource metadata, authorization server
metadata, dynamic client registration, ``/authorize``, ``/token`` and ``/revoke``; the MCP
endpoint ``/mcp`` requires a bearer token (scope ``mcp``). There is no user and no browser:
``/authorize`` redirects straight back to the client's redirect URI with a code, so a test
follows that redirect (or lets a loopback listener receive it) as the conformance suite does.

``/token`` also answers the identity-assertion grant (SEP-990) for the pre-registered client with
the assertion ``good-id-jag``, and the client_credentials grant for the client ``--client-id`` /
``--client-secret`` (the SDK's token endpoint has no such grant; a small ASGI layer adds it).

``/token`` answers the workload identity grant (SEP-1933) too: the JWT bearer grant from the public
client ``workload`` (no secret), whose assertion is good when it begins ``workload-token-``.

Tools: ``whoami`` (the client id of the caller's token), ``echo``.

Controls for tests (no token needed):

- ``POST /control/expire``: every access token stops being accepted (refresh tokens still work).
- ``POST /control/revoke``: every access and refresh token stops being accepted.
- ``POST /control/refuse?status=401`` (or ``403``): ``/mcp`` refuses every request, token or not;
  ``error`` and ``scope`` go into its ``WWW-Authenticate``; without ``status``: stops refusing.
- ``POST /control/redirect?uri=...``: the one redirect URI the pre-registered client may use.
- ``GET /control/stats``: counts of what the server saw, as JSON (``mcp:401``, ``discovery``,
  ``register``, ``authorize``, ``token:refresh_token`` ...).
"""

from __future__ import annotations

import argparse
import base64
import json
import secrets
import time
from collections import Counter
from urllib.parse import parse_qs, unquote, urlencode

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE, OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SCOPE = "mcp"
GOOD_ASSERTION = "good-id-jag"
WORKLOAD_CLIENT = "workload"
"""The public client of the workload identity grant (SEP-1933): no secret."""
WORKLOAD_TOKEN_PREFIX = "workload-token-"
"""A stand-in for a platform's signed token: any assertion so named is a good one."""
"""The identity assertion (SEP-990) the server accepts for the pre-registered client."""


class Provider:
    """An in-memory authorization server: clients, codes and tokens live in dicts."""

    def __init__(self, token_lifetime: int) -> None:
        self.token_lifetime = token_lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats: Counter[str] = Counter()

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.stats["register"] += 1
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        # No user to ask: consent is given at once and the code goes straight back.
        self.stats["authorize"] += 1
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.stats["token:authorization_code"] += 1
        self.codes.pop(authorization_code.code, None)
        return self.issue(
            authorization_code.client_id, authorization_code.scopes, authorization_code.resource
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.stats["token:refresh_token"] += 1
        self.refresh.pop(refresh_token.token, None)  # rotated: each refresh token works once
        return self.issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.access.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        # A stand-in for an enterprise IdP's ID-JAG: only the agreed assertion is good.
        self.stats["token:identity_assertion"] += 1
        if params.assertion != GOOD_ASSERTION:
            raise TokenError(error="invalid_grant", error_description="the assertion is not valid")
        assert client.client_id is not None
        token = self.issue(client.client_id, params.scopes or [SCOPE], params.resource)
        token.refresh_token = None
        return token

    def issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(24)}", f"rt-{secrets.token_urlsafe(24)}"
        expires_at = int(time.time()) + self.token_lifetime
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires_at, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access, expires_in=self.token_lifetime, scope=" ".join(scopes), refresh_token=refresh
        )


class TestLayer:
    """ASGI in front of the app: counts responses, refuses ``/mcp`` on demand, answers the
    client_credentials grant at ``/token``, and on demand acts as an authorization server with
    RFC 9207 issuer identification (``iss``: "right" or "wrong" adds it to every authorization
    redirect and advertises it in the metadata)."""

    def __init__(
        self, app: ASGIApp, provider: Provider, client_id: str, client_secret: str, port: int
    ) -> None:
        self.app = app
        self.provider = provider
        self.client_id = client_id
        self.client_secret = client_secret
        self.refuse: int | None = None
        self.refuse_error = ""
        self.refuse_scope = ""
        self.iss = ""
        self.issuer = f"http://127.0.0.1:{port}"
        self.metadata_url = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        stats = self.provider.stats
        if path == "/mcp" and self.refuse is not None:
            stats[f"mcp:{self.refuse}"] += 1
            error = self.refuse_error or (
                "invalid_token" if self.refuse == 401 else "insufficient_permissions"
            )
            header = f'Bearer error="{error}", error_description="refused by the test", '
            if self.refuse_scope:
                header += f'scope="{self.refuse_scope}", '
            header += f'resource_metadata="{self.metadata_url}"'
            await JSONResponse({"error": error}, self.refuse, headers={"WWW-Authenticate": header})(
                scope, receive, send
            )
            return
        if path == "/token" and method == "POST":
            body = await _read_body(receive)
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            if form.get("grant_type") == "client_credentials":
                await self._client_credentials(scope, form)(scope, receive, send)
                return
            if form.get("grant_type") == JWT_BEARER_GRANT_TYPE and form.get("client_id") == WORKLOAD_CLIENT:
                await self._workload_identity(form)(scope, receive, send)
                return
            receive = _replay(body)

        if path.startswith("/.well-known/"):
            stats["discovery"] += 1
        if self.iss and path.startswith("/.well-known/oauth-authorization-server"):
            await self.app(scope, receive, _iss_advertised(send))
            return
        if self.iss and path == "/authorize":
            await self.app(scope, receive, _iss_added(send, self._iss_value()))
            return

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start" and path == "/mcp":
                stats[f"mcp:{message['status']}"] += 1
            await send(message)

        await self.app(scope, receive, counted)

    def _iss_value(self) -> str:
        return self.issuer if self.iss == "right" else "https://elsewhere.example"

    def _client_credentials(self, scope: Scope, form: dict[str, str]) -> Response:
        self.provider.stats["token:client_credentials"] += 1
        client_id, secret = form.get("client_id"), form.get("client_secret")
        headers = dict((k.decode().lower(), v.decode()) for k, v in scope["headers"])
        basic = headers.get("authorization", "")
        if basic.startswith("Basic "):
            client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            client_id, secret = unquote(client_id), unquote(secret)
        if not self.client_id or client_id != self.client_id or secret != self.client_secret:
            return JSONResponse({"error": "invalid_client"}, 401)
        scopes = form.get("scope", SCOPE).split()
        token = self.provider.issue(client_id, scopes, form.get("resource"))
        token.refresh_token = None
        return JSONResponse(token.model_dump(exclude_none=True))

    def _workload_identity(self, form: dict[str, str]) -> Response:
        """SEP-1933: a public client (no secret) presents its platform's token for this workload."""
        assertion = form.get("assertion", "")
        self.provider.stats["token:workload_identity"] += 1
        self.provider.stats[f"workload:{assertion}"] += 1
        if "client_secret" in form or not assertion.startswith(WORKLOAD_TOKEN_PREFIX):
            return JSONResponse({"error": "invalid_grant", "error_description": "not a workload token"}, 400)
        token = self.provider.issue(WORKLOAD_CLIENT, form.get("scope", SCOPE).split(), form.get("resource"))
        token.refresh_token = None
        return JSONResponse(token.model_dump(exclude_none=True))


def _iss_advertised(send: Send) -> Send:
    """The authorization server's metadata, saying it sends ``iss`` in its redirects."""
    start: Message | None = None
    body = b""

    async def rewritten(message: Message) -> None:
        nonlocal start, body
        if message["type"] == "http.response.start":
            start = message
            return
        body += message.get("body", b"")
        if message.get("more_body"):
            return
        assert start is not None
        metadata = {**json.loads(body), "authorization_response_iss_parameter_supported": True}
        data = json.dumps(metadata).encode()
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(data)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": data, "more_body": False})

    return rewritten


def _iss_added(send: Send, iss: str) -> Send:
    """An authorization redirect with ``iss`` among its parameters."""

    async def rewritten(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = []
            for key, value in message["headers"]:
                if key.lower() == b"location":
                    location = value.decode()
                    sep = "&" if "?" in location else "?"
                    headers.append((key, f"{location}{sep}{urlencode({'iss': iss})}".encode()))
                else:
                    headers.append((key, value))
            message = {**message, "headers": headers}
        await send(message)

    return rewritten


async def _read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def build(port: int, token_lifetime: int, client_id: str, client_secret: str, redirect_uri: str) -> ASGIApp:
    base = f"http://127.0.0.1:{port}"
    provider = Provider(token_lifetime)
    server = MCPServer(
        "oauth-fixture",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            validate_token_resource=False,
            required_scopes=[SCOPE],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE, "extra"], default_scopes=[SCOPE]
            ),
            revocation_options=RevocationOptions(enabled=True),
            identity_assertion_enabled=True,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """The client id of the caller's token."""
        token = get_access_token()
        return token.client_id if token is not None else "nobody"

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    layer: TestLayer

    @server.custom_route("/control/expire", methods=["POST"])
    async def expire(request: Request) -> Response:
        provider.access.clear()
        return JSONResponse({"ok": True})

    @server.custom_route("/control/revoke", methods=["POST"])
    async def revoke(request: Request) -> Response:
        provider.access.clear()
        provider.refresh.clear()
        return JSONResponse({"ok": True})

    @server.custom_route("/control/refuse", methods=["POST"])
    async def refuse(request: Request) -> Response:
        status = request.query_params.get("status")
        layer.refuse = int(status) if status else None
        layer.refuse_error = request.query_params.get("error", "")
        layer.refuse_scope = request.query_params.get("scope", "")
        return JSONResponse({"ok": True})

    @server.custom_route("/control/redirect", methods=["POST"])
    async def redirect(request: Request) -> Response:
        # The one redirect URI the pre-registered client may use (an OAuth app's setting).
        uri = request.query_params["uri"]
        fields = {**provider.clients[client_id].model_dump(), "redirect_uris": [uri]}
        provider.clients[client_id] = OAuthClientInformationFull.model_validate(fields)
        return JSONResponse({"ok": True})

    @server.custom_route("/control/iss", methods=["POST"])
    async def iss(request: Request) -> Response:
        layer.iss = request.query_params.get("mode", "")
        return JSONResponse({"ok": True})

    @server.custom_route("/control/stats", methods=["GET"])
    async def stats(request: Request) -> Response:
        return JSONResponse(dict(provider.stats))

    if client_id:
        # The pre-registered client (an "OAuth app"): authorization code with a fixed redirect
        # URI on the loopback, and client credentials.
        provider.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=client_secret or None,
            redirect_uris=[redirect_uri] if redirect_uri else None,  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token", "client_credentials", JWT_BEARER_GRANT_TYPE],
            token_endpoint_auth_method="client_secret_basic" if client_secret else "none",
            scope=SCOPE,
        )
    layer = TestLayer(server.streamable_http_app(), provider, client_id, client_secret, port)
    return layer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transport", choices=["streamable-http"], default="streamable-http")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--token-lifetime", type=int, default=3600)
    parser.add_argument("--client-id", default="")
    parser.add_argument("--client-secret", default="")
    parser.add_argument("--redirect-uri", default="", help="the pre-registered client's redirect URI")
    args = parser.parse_args(argv)
    app = build(args.port, args.token_lifetime, args.client_id, args.client_secret, args.redirect_uri)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
