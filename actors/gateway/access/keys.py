"""`IssuerKeys`: the public keys a token issuer signs with, found from its metadata and kept fresh.

Where the keys are: ``jwksUri`` when configured, else the ``jwks_uri`` of the issuer's metadata
(``/.well-known/openid-configuration``, then RFC 8414's ``/.well-known/oauth-authorization-server``),
whose ``issuer`` must be the configured one. The key set is fetched when first needed (or by
`IssuerKeys.prefetch` when the gateway starts), kept `MAX_AGE` seconds, and fetched again early
when a token names a key it does not hold (the issuer rotated its keys), at most once per
``refetch_interval``: a stream of tokens with made-up key ids costs the issuer nothing. A
failed fetch keeps the keys already held.

The HTTP client is made by the caller off the loop (its SSL context is built there); the fetches
run on the loop; parsing the documents and building the keys runs on a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.to_thread
import httpx2
from jwt import PyJWK, PyJWTError

__all__ = [
    "MAX_AGE",
    "REFETCH_INTERVAL",
    "IssuerKeys",
    "KeySet",
    "KeysUnavailable",
    "PublicKey",
    "http_client",
    "parse_jwks",
]

logger = logging.getLogger(__name__)

MAX_AGE = 900.0
"""Seconds a key set is used before it is fetched again (a retired key goes within that)."""
REFETCH_INTERVAL = 30.0
"""Seconds between two fetches caused by a token naming a key not held."""
_RETRY = 2.0
"""Seconds after a failed fetch before another is tried."""
_FETCH_TIMEOUT = 10.0
_MAX_DOCUMENT = 1 << 20
"""Bytes of a metadata or key set document read at most."""

# Which key type and curve each signature algorithm needs: a token's ``alg`` only ever selects
# among the keys of its own kind (no key confusion).
_KINDS: dict[str, tuple[str, str | None]] = {
    **{f"RS{n}": ("RSA", None) for n in (256, 384, 512)},
    **{f"PS{n}": ("RSA", None) for n in (256, 384, 512)},
    "ES256": ("EC", "P-256"),
    "ES384": ("EC", "P-384"),
    "ES512": ("EC", "P-521"),
    "EdDSA": ("OKP", None),
}


class KeysUnavailable(Exception):
    """The issuer's keys could not be fetched (the message says why)."""


@dataclass(frozen=True, slots=True)
class PublicKey:
    """One signing key of the issuer's key set. An immutable value: any thread."""

    kid: str | None
    kty: str
    crv: str | None
    alg: str | None
    """The one algorithm the key is for, if its JWK says."""
    key: Any
    """The ``cryptography`` public key."""

    def signs(self, alg: str) -> bool:
        """Whether a token signed with ``alg`` may be checked against this key."""
        kind = _KINDS.get(alg)
        if kind is None or kind[0] != self.kty or (self.alg is not None and self.alg != alg):
            return False
        return kind[1] is None or kind[1] == self.crv


@dataclass(frozen=True, slots=True)
class KeySet:
    """The issuer's keys as fetched at ``fetched_at`` (monotonic seconds). An immutable value,
    replaced whole: read on any thread."""

    keys: tuple[PublicKey, ...]
    fetched_at: float

    def find(self, kid: str | None, alg: str) -> tuple[PublicKey, ...]:
        """The keys that may check a token with ``kid`` and ``alg`` (without a ``kid``: every key
        of the right kind)."""
        return tuple(key for key in self.keys if key.signs(alg) and (kid is None or key.kid == kid))


def parse_jwks(document: bytes) -> tuple[PublicKey, ...]:
    """The signing keys of a JWKS document (keys it cannot use are left out, with a log line).
    Builds public keys: run it off the loop."""
    try:
        data = json.loads(document)
    except ValueError as exc:
        raise KeysUnavailable(f"the key set is not JSON: {exc}") from None
    entries = data.get("keys") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        raise KeysUnavailable("the key set has no list of keys")
    keys = []
    for entry in entries:
        if not isinstance(entry, Mapping) or entry.get("use", "sig") != "sig" or "d" in entry:
            continue  # an encryption key; or a private one, which an issuer never publishes
        if entry.get("kty") not in ("RSA", "EC", "OKP"):
            continue  # a shared secret ("oct") is never a key to check a public signature with
        try:
            built = PyJWK(dict(entry))
        except (PyJWTError, ValueError, TypeError) as exc:
            logger.info("access: a key of the issuer's key set is not usable here: %s", exc)
            continue
        kid, alg, crv = entry.get("kid"), entry.get("alg"), entry.get("crv")
        keys.append(
            PublicKey(
                kid=kid if isinstance(kid, str) else None,
                kty=str(entry.get("kty")),
                crv=crv if isinstance(crv, str) else None,
                alg=alg if isinstance(alg, str) else None,
                key=built.key,
            )
        )
    return tuple(keys)


def _metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be: OpenID Connect's, then RFC 8414's (path inserted)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    oidc = urlunsplit((parts.scheme, parts.netloc, f"{path}/.well-known/openid-configuration", "", ""))
    rfc8414 = urlunsplit(
        (parts.scheme, parts.netloc, f"/.well-known/oauth-authorization-server{path}", "", "")
    )
    return [oidc, rfc8414]


def _jwks_uri_of(document: bytes, issuer: str) -> str:
    try:
        data = json.loads(document)
    except ValueError as exc:
        raise KeysUnavailable(f"the issuer's metadata is not JSON: {exc}") from None
    if not isinstance(data, Mapping):
        raise KeysUnavailable("the issuer's metadata is not an object")
    if data.get("issuer") != issuer:
        # RFC 8414 3.3: metadata naming another issuer is not this issuer's.
        raise KeysUnavailable(f"the issuer's metadata names the issuer {data.get('issuer')!r}")
    uri = data.get("jwks_uri")
    if not isinstance(uri, str) or urlsplit(uri).scheme not in ("http", "https"):
        raise KeysUnavailable("the issuer's metadata has no jwks_uri")
    return uri


class IssuerKeys:
    """The issuer's key set for the gateway's token verifier.

    Owned by the gateway's event loop: `keys_for`, `prefetch` and `aclose` run there, and one
    fetch at a time is in flight (concurrent callers await the same one). The `KeySet` is an
    immutable value replaced whole.
    """

    def __init__(
        self,
        issuer: str,
        http: httpx2.AsyncClient,
        *,
        jwks_uri: str | None = None,
        refetch_interval: float = REFETCH_INTERVAL,
        max_age: float = MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self._http = http
        self._jwks_uri = jwks_uri
        self._refetch_interval = refetch_interval
        self._max_age = max_age
        self._clock = clock
        self._set: KeySet | None = None
        self._fetching: asyncio.Task[KeySet | None] | None = None
        self._not_before = float("-inf")
        """No fetch for an unknown key, or after a failure, before this time."""
        self._failing = False
        self.fetches = 0
        """Key sets fetched (successfully or not): what an operator, or a test, may count."""

    async def keys_for(self, kid: str | None, alg: str) -> tuple[PublicKey, ...]:
        """The keys that may check a token naming ``kid`` and signed with ``alg``: fetched first
        when none are held or they are old, and again when none fits (at most once per interval)."""
        now = self._clock()
        current = self._set
        if (current is None or now - current.fetched_at > self._max_age) and now >= self._not_before:
            current = await self._refresh()
        found = current.find(kid, alg) if current is not None else ()
        if not found and current is not None and self._clock() >= self._not_before:
            self._not_before = self._clock() + self._refetch_interval
            current = await self._refresh()
            found = current.find(kid, alg) if current is not None else ()
        return found

    @property
    def held(self) -> bool:
        """Whether a key set was ever fetched (else every token is refused for want of keys)."""
        return self._set is not None

    async def prefetch(self) -> None:
        """Fetch the key set now (when the gateway starts: the first request need not wait)."""
        await self._refresh()

    async def aclose(self) -> None:
        """Close the HTTP client (on the loop, when the gateway stops)."""
        if self._fetching is not None:
            self._fetching.cancel()
        await self._http.aclose()

    async def _refresh(self) -> KeySet | None:
        """The key set fetched now (one fetch for every concurrent caller); on failure, the one
        held before."""
        if self._fetching is None or self._fetching.done():
            self._fetching = asyncio.get_running_loop().create_task(self._fetch(), name="issuer keys")
        return await asyncio.shield(self._fetching)

    async def _fetch(self) -> KeySet | None:
        self.fetches += 1
        try:
            with anyio.fail_after(_FETCH_TIMEOUT * 2):
                uri = self._jwks_uri or await self._discover()
                keys = await anyio.to_thread.run_sync(parse_jwks, await self._get(uri))
        except (KeysUnavailable, httpx2.HTTPError, TimeoutError, OSError) as exc:
            self._not_before = self._clock() + _RETRY
            if not self._failing:
                logger.warning("access: cannot fetch the keys of the issuer %s: %s", self.issuer, exc)
            self._failing = True
            return self._set
        if self._failing:
            logger.warning("access: the keys of the issuer %s are fetched again", self.issuer)
        self._failing = False
        self._jwks_uri = uri
        self._set = KeySet(keys, self._clock())
        logger.info("access: %d signing keys of %s from %s", len(keys), self.issuer, uri)
        return self._set

    async def _discover(self) -> str:
        """The issuer's ``jwks_uri``, from the first of its metadata documents that answers."""
        why = "no metadata document answered"
        for url in _metadata_urls(self.issuer):
            try:
                document = await self._get(url)
            except KeysUnavailable as exc:
                why = str(exc)
                continue
            return await anyio.to_thread.run_sync(_jwks_uri_of, document, self.issuer)
        raise KeysUnavailable(why)

    async def _get(self, url: str) -> bytes:
        """The body of ``url`` (200 only, at most `_MAX_DOCUMENT` bytes)."""
        async with self._http.stream("GET", url, headers={"Accept": "application/json"}) as response:
            if response.status_code != 200:
                raise KeysUnavailable(f"{url} answered {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > _MAX_DOCUMENT:
                    raise KeysUnavailable(f"{url} answered more than {_MAX_DOCUMENT} bytes")
        return bytes(body)


def http_client(ssl_context: Any) -> httpx2.AsyncClient:
    """The client `IssuerKeys` fetches with (make it off the loop)."""
    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(_FETCH_TIMEOUT), verify=ssl_context, follow_redirects=False
    )
