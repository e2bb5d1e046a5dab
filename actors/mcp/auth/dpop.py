"""DPoP (RFC 9449, SEP-1932): access tokens bound to a key that only this client holds.

Where the authorization server offers it (``dpop_signing_alg_values_supported`` in its metadata
names ES256), the login makes an EC P-256 key, proves it with a ``DPoP`` header on each token
request, and gets a token bound to the key's thumbprint. The token then goes out as
``Authorization: DPoP <token>`` with a fresh proof on every request: the method, the URL (no
query or fragment), the time, a new ``jti`` and the token's hash (``ath``). A stolen token is
useless without the key; a captured proof is useless for another request.

A server (authorization server or MCP server) may insist on a nonce it chooses: it refuses
with ``use_dpop_nonce`` and a ``DPoP-Nonce`` header, and the request is sent once more with a
proof that carries it (`nonce_asked`). Each origin's last nonce is kept for its next proofs.

The key is stored with the login (`actors.mcp.auth.store`): a stored token works in the next
process too. Keys are made, and proofs signed, off the event loop (`actors.mcp.loop.offload`).
Pure but for the clock; `Nonces` is owned by the flow that holds it (the event-loop thread).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import time
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from actors.mcp.loop import offload

__all__ = ["ALGORITHM", "DPoPKey", "Nonces", "Proofs", "htu_of", "nonce_asked", "offered"]

ALGORITHM = "ES256"
"""The one signing algorithm the runtime proves keys with (the one every server must accept)."""

_NONCE_ERROR = "use_dpop_nonce"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class DPoPKey:
    """An EC P-256 key pair, and the proofs it signs. Immutable; any thread."""

    def __init__(self, private: ec.EllipticCurvePrivateKey) -> None:
        if not isinstance(private.curve, ec.SECP256R1):
            raise ValueError(f"a DPoP key must be on P-256, not {private.curve.name}")
        self._private = private
        numbers = private.public_key().public_numbers()
        self.jwk: dict[str, str] = {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64url(numbers.x.to_bytes(32, "big")),
            "y": _b64url(numbers.y.to_bytes(32, "big")),
        }
        """The public key, as the proofs carry it (never the private part)."""

    @classmethod
    def generate(cls) -> DPoPKey:
        return cls(ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def from_pem(cls, pem: str) -> DPoPKey:
        private = serialization.load_pem_private_key(pem.encode("ascii"), password=None)
        if not isinstance(private, ec.EllipticCurvePrivateKey):
            raise ValueError("a DPoP key must be an EC private key")
        return cls(private)

    def to_pem(self) -> str:
        return self._private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode("ascii")

    @property
    def thumbprint(self) -> str:
        """The key's JWK SHA-256 thumbprint (RFC 7638): what a bound token's ``cnf.jkt`` names."""
        canonical = json.dumps(
            {k: self.jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True
        )
        return _b64url(hashlib.sha256(canonical.encode("ascii")).digest())

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
        now: float | None = None,
    ) -> str:
        """A fresh proof for one request (RFC 9449 4.2): with ``access_token``'s hash when the
        request presents it, and ``nonce`` when the server gave one."""
        claims: dict[str, Any] = {
            "jti": uuid.uuid4().hex,
            "htm": method.upper(),
            "htu": htu_of(url),
            "iat": int(time.time() if now is None else now),
        }
        if access_token is not None:
            claims["ath"] = _b64url(hashlib.sha256(access_token.encode("ascii")).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        return jwt.encode(
            claims, self._private, algorithm=ALGORITHM, headers={"typ": "dpop+jwt", "jwk": self.jwk}
        )


def htu_of(url: str) -> str:
    """A request's URL as a proof names it: without its query and fragment (RFC 9449 4.2)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def offered(metadata: Any) -> bool:
    """Whether an authorization server's metadata (as JSON) offers DPoP with the runtime's
    algorithm (``dpop_signing_alg_values_supported``, RFC 9449 5.1)."""
    algorithms = metadata.get("dpop_signing_alg_values_supported") if isinstance(metadata, dict) else None
    return isinstance(algorithms, list) and ALGORITHM in algorithms


_AS_METADATA = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


def nonce_asked(response: httpx2.Response) -> str | None:
    """The nonce a refusal asks the next proof to carry (``use_dpop_nonce``), else None: a 400
    from a token endpoint (RFC 9449 8) or a 401 from a resource server (RFC 9449 9)."""
    nonce = response.headers.get("DPoP-Nonce")
    if not nonce:
        return None
    if response.status_code == 401:
        challenge = response.headers.get("WWW-Authenticate", "")
        return nonce if _NONCE_ERROR in challenge else None
    if response.status_code == 400:
        try:
            body = json.loads(response.content or b"{}")
        except ValueError:
            return None
        return nonce if isinstance(body, dict) and body.get("error") == _NONCE_ERROR else None
    return None


class Nonces:
    """The last nonce each origin gave, for its next proofs. Owned by one flow's thread."""

    def __init__(self) -> None:
        self._by_origin: dict[str, str] = {}

    def for_url(self, url: str) -> str | None:
        return self._by_origin.get(_origin(url))

    def learn(self, url: str, response: httpx2.Response) -> None:
        """Keep the nonce a response of ``url``'s origin gave (any response may carry a new one)."""
        nonce = response.headers.get("DPoP-Nonce")
        if nonce:
            self._by_origin[_origin(url)] = nonce


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class Proofs:
    """What one login's flow does for DPoP: proves its token requests once the authorization
    server offers DPoP (with a key made then, or the stored one), presents a bound token with
    the ``DPoP`` scheme and a fresh proof, and sends a request once more when a server asks for
    a nonce. Owned by the flow, on the event-loop thread; keys are made and proofs signed off it.

    ``stored_key``: the key stored with the login (its tokens are bound to it); ``store_key(pem)``
    stores the key with the login once a bound token comes (an empty ``pem`` unbinds it).
    """

    def __init__(self, stored_key: str | None, store_key: Callable[[str], Awaitable[None]]) -> None:
        self._pem = stored_key or None
        self._stored = self._pem is not None
        self._key: DPoPKey | None = None
        self.bound = self._stored
        """Whether the login's tokens are bound to the key (the server answered ``DPoP``)."""
        self.offered = False
        """Whether the authorization server offers DPoP, as its metadata said."""
        self._store_key = store_key
        self._nonces = Nonces()

    async def _the_key(self) -> DPoPKey:
        if self._key is None:
            if self._pem is not None:
                self._key = await offload(DPoPKey.from_pem, self._pem)
            else:
                self._key = await offload(DPoPKey.generate)
                self._pem = await offload(self._key.to_pem)
        return self._key

    async def _observe(self, request: httpx2.Request, response: httpx2.Response) -> None:
        """Learn from the authorization server's metadata whether it offers DPoP (the SDK's model
        of it drops the key)."""
        if request.method != "GET" or response.status_code != 200:
            return
        if not any(marker in request.url.path for marker in _AS_METADATA):
            return
        try:
            self.offered = offered(json.loads(await response.aread()))
        except ValueError:
            return

    async def prove_token_request(self, request: httpx2.Request) -> bool:
        """Add a proof to a token request where DPoP is offered (or the login is bound to the
        key already); whether it did."""
        if not (self.offered or self.bound):
            return False
        url = str(request.url)
        key = await self._the_key()
        request.headers["DPoP"] = await offload(
            functools.partial(key.proof, request.method, url, nonce=self._nonces.for_url(url))
        )
        return True

    async def present(self, request: httpx2.Request, access_token: str | None) -> None:
        """Present a bound token: the ``DPoP`` scheme and a fresh proof for this request."""
        if not self.bound or access_token is None or "Authorization" not in request.headers:
            return
        url = str(request.url)
        key = await self._the_key()
        request.headers["Authorization"] = f"DPoP {access_token}"
        request.headers["DPoP"] = await offload(
            functools.partial(
                key.proof, request.method, url, access_token=access_token, nonce=self._nonces.for_url(url)
            )
        )

    async def again_with_nonce(self, request: httpx2.Request, response: httpx2.Response) -> bool:
        """Learn what ``response`` says (a nonce; whether DPoP is offered); whether it refused
        ``request`` for want of a nonce (send it once more, proved anew)."""
        await self._observe(request, response)
        self._nonces.learn(str(request.url), response)
        if "DPoP" not in request.headers:
            return False
        if response.status_code == 400:
            await response.aread()  # the error is in the body
        return nonce_asked(response) is not None

    async def token_response(self, response: httpx2.Response) -> httpx2.Response:
        """A proved token request's answer as the SDK reads it: a ``DPoP`` token marks the login
        bound (its key is stored with it, before the token is), and is handed on as the one
        token type the SDK knows (it still goes out as DPoP). A plain one unbinds the login."""
        if response.status_code != 200:
            return response
        try:
            body = json.loads(await response.aread())
        except ValueError:
            return response
        if not isinstance(body, dict):
            return response
        bound = str(body.get("token_type", "")).lower() == "dpop"
        if bound != self._stored:
            await self._store_key((self._pem or "") if bound else "")
            self._stored = bound
        self.bound = bound
        if not bound:
            return response
        body["token_type"] = "Bearer"
        headers = {
            k: v
            for k, v in response.headers.items()
            if k.lower() not in ("content-length", "content-encoding")
        }
        return httpx2.Response(
            response.status_code, headers=headers, content=json.dumps(body).encode(), request=response.request
        )
