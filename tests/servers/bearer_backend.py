"""A remote MCP server (Streamable HTTP) that takes only tokens of one issuer, for the per-user
credential tests (issue 23, item 5).

It is an OAuth resource server on the SDK's own server-side auth: every request to ``/mcp``
needs a bearer JWT signed by a key of ``--issuer``'s key set (fetched from its metadata's
``jwks_uri``), from that issuer, unexpired, and for one of the ``--audience`` values. Tool
``whoami`` answers the verified token's ``sub``, ``aud``, ``act`` and ``scope``: what the backend
learnt of who calls it.

Run it with `tests.servers.http_server.HTTPServer`::

    HTTPServer(module="tests.servers.bearer_backend",
               extra_args=("--issuer", issuer.url, "--audience", gateway_url, "--audience", "urn:backend"))
"""

from __future__ import annotations

import argparse
import json
import urllib.request
from typing import Any

import anyio.to_thread
import jwt
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp

_FETCH_TIMEOUT = 10.0


class IssuerVerifier:
    """Checks a JWT against the issuer's keys, issuer and the accepted audiences."""

    def __init__(self, issuer: str, audiences: list[str]) -> None:
        self.issuer = issuer
        self.audiences = audiences
        self._keys: jwt.PyJWKClient | None = None

    def _client(self) -> jwt.PyJWKClient:
        if self._keys is None:
            url = f"{self.issuer}/.well-known/openid-configuration"
            with urllib.request.urlopen(url, timeout=_FETCH_TIMEOUT) as response:
                metadata = json.load(response)
            self._keys = jwt.PyJWKClient(metadata["jwks_uri"], timeout=int(_FETCH_TIMEOUT))
        return self._keys

    def _verify(self, token: str) -> dict[str, Any] | None:
        try:
            key = self._client().get_signing_key_from_jwt(token)
            return dict(
                jwt.decode(
                    token,
                    key.key,
                    algorithms=["RS256", "ES256"],
                    issuer=self.issuer,
                    audience=self.audiences,
                    options={"require": ["exp", "iss", "sub", "aud"]},
                )
            )
        except jwt.PyJWTError:
            return None

    async def verify_token(self, token: str) -> AccessToken | None:
        claims = await anyio.to_thread.run_sync(self._verify, token)
        if claims is None:
            return None
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id") or claims["sub"]),
            scopes=str(claims.get("scope") or "").split(),
            expires_at=int(claims["exp"]),
            subject=str(claims["sub"]),
            claims=claims,
        )


def build(port: int, issuer: str, audiences: list[str]) -> ASGIApp:
    base = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "bearer-backend",
        token_verifier=IssuerVerifier(issuer, audiences),
        auth=AuthSettings(
            issuer_url=issuer,  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            validate_token_resource=False,
            required_scopes=[],
        ),
    )

    @server.tool()
    def whoami() -> dict[str, Any]:
        """Who the verified token says calls: its sub, aud, act and scope."""
        token = get_access_token()
        claims = (token.claims or {}) if token is not None else {}
        return {key: claims.get(key) for key in ("sub", "aud", "act", "scope")}

    return server.streamable_http_app()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["streamable-http"], default="streamable-http")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--audience", action="append", required=True)
    args = parser.parse_args(argv)
    app = build(args.port, args.issuer, args.audience)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
