"""A client assertion signed with a key from a PEM file: the ``private_key_jwt`` client
authentication of the client-credentials grant (RFC 7523). The key is read, and every assertion
signed, on a worker thread, never on the event loop."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Literal

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from actors.mcp.own_thread import in_own_thread

__all__ = ["KeyFileAssertion", "algorithm_for"]

_ASSERTION_LIFETIME = 300


class KeyFileAssertion:
    """Signs the client assertion with the key in a PEM file, read (and signed) on a worker thread."""

    def __init__(self, client_id: str, path: str) -> None:
        self._client_id = client_id
        self._path = Path(path).expanduser()
        self._key: Any = None
        self._algorithm: str | None = None

    async def __call__(self, audience: str) -> str:
        return await in_own_thread(self._sign, audience)

    def _sign(self, audience: str) -> str:
        if self._key is None:
            pem = self._path.read_bytes()
            self._key = load_pem_private_key(pem, password=None)
            self._algorithm = algorithm_for(self._key)
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


def algorithm_for(key: Any) -> Literal["RS256", "ES256", "ES384", "ES512", "EdDSA"]:
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
