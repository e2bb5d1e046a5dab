"""A real OpenID Connect issuer on loopback, for the tests of the gateway's identity.

It signs real JWTs with keys it makes when it starts (RS256 and ES256), and serves what a
resource server or a client looks up at an issuer:

- ``/.well-known/openid-configuration`` and ``/.well-known/oauth-authorization-server``
  (the same document: issuer, ``jwks_uri``, ``token_endpoint``, grants);
- ``/jwks``: the public keys, every key it signs with and, after a `OIDCIssuer.rotate`, the
  former ones too until `OIDCIssuer.retire`;
- ``/token``: ``client_credentials`` (client id and secret, in HTTP Basic or the form) and RFC
  8693 token exchange (``subject_token``: a token it issued; ``audience`` or ``resource``: the
  backend's), which answers a new JWT for that audience with the same ``sub``, its groups, and an
  ``act`` claim naming the client that exchanged it;
- ``/authorize``: refused: there is no interactive login here (tests mint users' tokens).

For tests only, `OIDCIssuer.mint` signs a user's token with any claims, bad ones included
(expired, not yet valid, another issuer or audience, without a scope); `OIDCIssuer.forged`,
`OIDCIssuer.unsigned` and `OIDCIssuer.hmac_confused` make tokens no verifier may accept. Over
HTTP, ``POST /test/mint`` (JSON: the claims, and optionally ``alg``) does what `mint` does, for a
test that runs the issuer in another process (``python -m tests.servers.oidc_issuer --port N``).

In a test, `serve_issuer` runs it on a free port in a thread of this process (uvicorn) and stops
it on leaving::

    with serve_issuer() as issuer:
        token = issuer.mint(sub="alice", aud=resource, scope="mcp")
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.servers.http_server import free_port

__all__ = [
    "TOKEN_EXCHANGE",
    "OIDCIssuer",
    "SigningKey",
    "serve_issuer",
]

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt"
_STARTED_WITHIN = 20.0
_LIFETIME = 3600


@dataclass(frozen=True)
class SigningKey:
    """A private key the issuer signs with, its ``kid`` and algorithm, and its public JWK."""

    kid: str
    alg: str
    private: Any
    jwk: Mapping[str, Any]

    @classmethod
    def make(cls, alg: str, kid: str | None = None) -> SigningKey:
        """A new key for ``alg`` (``RS256``, ``PS256``: RSA 2048; ``ES256``: P-256)."""
        kid = kid or f"{alg.lower()}-{secrets.token_hex(4)}"
        if alg.startswith(("RS", "PS")):
            private: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            public = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
        elif alg == "ES256":
            private = ec.generate_private_key(ec.SECP256R1())
            public = json.loads(ECAlgorithm.to_jwk(private.public_key()))
        else:
            raise ValueError(f"no key for {alg}")
        return cls(kid, alg, private, {**public, "kid": kid, "alg": alg, "use": "sig"})

    def public_pem(self) -> bytes:
        return bytes(
            self.private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class OIDCIssuer:
    """The issuer: its keys, its clients, what it was asked. Serves on a thread of its own
    (`start`); `mint` and the key changes may be called from any thread (the key list is
    replaced whole under a lock)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        """The issuer identifier (``iss``): no trailing slash."""
        self._lock = threading.Lock()
        self._keys: tuple[SigningKey, ...] = (SigningKey.make("RS256"), SigningKey.make("ES256"))
        self._signing: dict[str, SigningKey] = {key.alg: key for key in self._keys}
        self.clients: dict[str, str] = {}
        """Client id -> secret, for the token endpoint."""
        self.seen: Counter[str] = Counter()
        """What was asked: ``jwks``, ``metadata``, ``token:<grant>`` ..."""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # ---- keys --------------------------------------------------------------------------------

    @property
    def keys(self) -> tuple[SigningKey, ...]:
        """Every key the JWKS lists."""
        return self._keys

    def key(self, alg: str = "RS256") -> SigningKey:
        """The key that signs ``alg`` tokens now."""
        return self._signing[alg]

    def rotate(self, alg: str = "RS256") -> SigningKey:
        """A new key for ``alg``: listed from now on and signing, the former one still listed."""
        key = SigningKey.make(alg)
        with self._lock:
            self._keys = (*self._keys, key)
            self._signing = {**self._signing, alg: key}
        return key

    def retire(self, kid: str) -> None:
        """The key ``kid`` is no longer listed (nor signs)."""
        with self._lock:
            self._keys = tuple(key for key in self._keys if key.kid != kid)
            self._signing = {alg: key for alg, key in self._signing.items() if key.kid != kid}

    def jwks(self) -> dict[str, Any]:
        return {"keys": [dict(key.jwk) for key in self._keys]}

    # ---- tokens ------------------------------------------------------------------------------

    def claims(self, **claims: Any) -> dict[str, Any]:
        """A user's access token claims: ``iss``, ``iat``, ``exp`` (an hour), ``jti`` filled in;
        a value of None leaves that claim out."""
        now = int(time.time())
        base: dict[str, Any] = {
            "iss": self.url,
            "sub": "alice",
            "iat": now,
            "exp": now + _LIFETIME,
            "jti": secrets.token_hex(8),
        }
        base.update(claims)
        return {k: v for k, v in base.items() if v is not None}

    def mint(self, *, alg: str = "RS256", kid: str | None = None, **claims: Any) -> str:
        """A token signed by the current ``alg`` key with ``claims`` over the defaults (`claims`);
        ``kid`` overrides the header's key id."""
        key = self.key(alg)
        return jwt.encode(
            self.claims(**claims),
            key.private,
            algorithm=alg,
            headers={"kid": kid or key.kid, "typ": "at+jwt"},
        )

    def forged(self, alg: str = "RS256", **claims: Any) -> str:
        """A token that names a listed key (its ``kid``) but is signed by another: a forgery."""
        other = SigningKey.make(alg)
        return jwt.encode(
            self.claims(**claims), other.private, algorithm=alg, headers={"kid": self.key(alg).kid}
        )

    def unsigned(self, **claims: Any) -> str:
        """``alg: none``: no signature at all."""
        header = {"alg": "none", "typ": "JWT", "kid": self.key().kid}
        body = self.claims(**claims)
        return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(body).encode())}."

    def hmac_confused(self, **claims: Any) -> str:
        """HS256 keyed with the issuer's RSA public key (PEM): the key-confusion attack."""
        header = {"alg": "HS256", "typ": "JWT", "kid": self.key().kid}
        signing_input = (
            f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(self.claims(**claims)).encode())}"
        )
        mac = hmac.new(self.key().public_pem(), signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{_b64(mac)}"

    def verify(self, token: str) -> dict[str, Any]:
        """The claims of a token this issuer signed with a key it lists (raises otherwise)."""
        kid = jwt.get_unverified_header(token).get("kid")
        key = next((k for k in self._keys if k.kid == kid), None)
        if key is None:
            raise jwt.InvalidTokenError(f"unknown kid {kid!r}")
        return dict(
            jwt.decode(
                token,
                key.private.public_key(),
                algorithms=[key.alg],
                issuer=self.url,
                options={"verify_aud": False, "require": ["exp", "iss", "sub"]},
            )
        )

    def client(self, client_id: str | None = None, secret: str | None = None) -> tuple[str, str]:
        """Register a confidential client (a random one by default); its id and secret."""
        client_id = client_id or f"client-{secrets.token_hex(3)}"
        secret = secret or secrets.token_urlsafe(16)
        self.clients[client_id] = secret
        return client_id, secret

    # ---- serving -----------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "jwks_uri": f"{self.url}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
            "grant_types_supported": ["client_credentials", TOKEN_EXCHANGE],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "scopes_supported": ["openid", "mcp"],
        }

    def app(self) -> Starlette:
        async def metadata(request: Request) -> Response:
            self.seen["metadata"] += 1
            return JSONResponse(self.metadata())

        async def jwks(request: Request) -> Response:
            self.seen["jwks"] += 1
            return JSONResponse(self.jwks(), headers={"Cache-Control": "max-age=300"})

        async def authorize(request: Request) -> Response:
            return JSONResponse(
                {"error": "unsupported_response_type", "error_description": "no interactive login here"}, 400
            )

        async def token(request: Request) -> Response:
            form = dict(await request.form())
            grant = str(form.get("grant_type", ""))
            self.seen[f"token:{grant}"] += 1
            client_id = self._client(request, form)
            if client_id is None:
                return _error("invalid_client", "unknown client or wrong secret", 401)
            if grant == "client_credentials":
                audience = form.get("resource") or form.get("audience")
                scope = form.get("scope") or None
                issued = self.mint(sub=client_id, client_id=client_id, aud=audience, scope=scope)
                return _issued(issued, scope)
            if grant == TOKEN_EXCHANGE:
                return self._exchange(client_id, form)
            return _error("unsupported_grant_type", f"{grant!r} is not supported", 400)

        async def mint(request: Request) -> Response:
            body = await request.json()
            alg = body.pop("alg", "RS256")
            return JSONResponse({"access_token": self.mint(alg=alg, **body)})

        well_known = ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server")
        return Starlette(
            routes=[
                *(Route(path, metadata) for path in well_known),
                Route("/jwks", jwks),
                Route("/authorize", authorize),
                Route("/token", token, methods=["POST"]),
                Route("/test/mint", mint, methods=["POST"]),
            ]
        )

    def _client(self, request: Request, form: Mapping[str, Any]) -> str | None:
        """The authenticated client of a token request (HTTP Basic, else the form), or None."""
        client_id, secret = form.get("client_id"), form.get("client_secret")
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            with contextlib.suppress(ValueError):
                client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        expected = self.clients.get(str(client_id))
        if expected is None or not hmac.compare_digest(str(secret), expected):
            return None
        return str(client_id)

    def _exchange(self, client_id: str, form: Mapping[str, Any]) -> Response:
        """RFC 8693: a token for another audience, for the same subject, acted by the client."""
        if form.get("subject_token_type") not in (ACCESS_TOKEN_TYPE, JWT_TOKEN_TYPE):
            return _error("invalid_request", "subject_token_type must be an access token or a JWT", 400)
        audience = form.get("audience") or form.get("resource")
        if not audience:
            return _error("invalid_target", "audience or resource is required", 400)
        try:
            subject = self.verify(str(form.get("subject_token", "")))
        except jwt.InvalidTokenError as exc:
            return _error("invalid_grant", f"subject_token: {exc}", 400)
        scope = form.get("scope") or subject.get("scope")
        kept = {k: subject[k] for k in ("groups", "email", "name") if k in subject}
        act: dict[str, Any] = {"sub": client_id}
        if "act" in subject:
            act["act"] = subject["act"]  # a chain of delegation, innermost last (RFC 8693 4.1)
        issued = self.mint(
            sub=subject["sub"], aud=audience, scope=scope, client_id=client_id, act=act, **kept
        )
        return _issued(issued, scope, issued_type=ACCESS_TOKEN_TYPE)

    def start(self) -> OIDCIssuer:
        """Serve on 127.0.0.1:`port` on a thread; returns once it accepts connections."""
        config = uvicorn.Config(
            self.app(), host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="oidc-issuer", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + _STARTED_WITHIN
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the OIDC issuer did not start on port {self.port}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(_STARTED_WITHIN)
            if self._thread.is_alive():
                raise RuntimeError("the OIDC issuer did not stop")
        self._server = self._thread = None

    def __enter__(self) -> OIDCIssuer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _issued(token: str, scope: Any, issued_type: str | None = None) -> Response:
    body: dict[str, Any] = {"access_token": token, "token_type": "Bearer", "expires_in": _LIFETIME}
    if scope:
        body["scope"] = scope
    if issued_type:
        body["issued_token_type"] = issued_type
    return JSONResponse(body, headers={"Cache-Control": "no-store"})


def _error(error: str, description: str, status: int) -> Response:
    return JSONResponse({"error": error, "error_description": description}, status)


@contextlib.contextmanager
def serve_issuer(port: int | None = None) -> Iterator[OIDCIssuer]:
    """An issuer serving on a free port (``issuer.url``) while the block runs."""
    with OIDCIssuer(port) as issuer:
        yield issuer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--client", action="append", default=[], metavar="ID:SECRET")
    args = parser.parse_args(argv)
    issuer = OIDCIssuer(args.port)
    for pair in args.client:
        client_id, _, secret = pair.partition(":")
        issuer.client(client_id, secret)
    uvicorn.run(issuer.app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
