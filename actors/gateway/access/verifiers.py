"""The gateway's token verifiers, for the SDK's bearer middleware (`mcp.server.auth`).

- `JWTVerifier`: an OAuth 2.1 access token, a JWT (RFC 9068) checked against its issuer's keys
  (`actors.gateway.access.keys`): the signature, with an algorithm from the allow-list (public-key
  ones only, and only against a key of the algorithm's own kind: never ``none``, never an HMAC
  keyed with a public key); ``exp`` and ``nbf`` with a small leeway; ``iss``; ``aud`` naming the
  gateway (its resource URL, RFC 8707, or the configured audience). It answers an `AccessToken`
  with the subject, the client, the scopes and the claims, and ``resource`` set to the gateway's
  resource URL. Missing scopes are not its business: the middleware answers them 403
  ``insufficient_scope``, as the specification says.
- `StaticTokenVerifier`: one shared secret, compared in constant time: the static token of the
  simplest mode (`StaticAccess`), or the cluster's replica credential (`ReplicaAccess`).
- `Verifiers`: the first of several that accepts a token.

A refused token answers None (the middleware then answers 401); why it was refused is kept for
the request's ``WWW-Authenticate`` (`refusal`) and logged at debug level, never the token.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread
import jwt
from mcp.server.auth.provider import AccessToken, TokenVerifier

from actors.config import AuthKeys
from actors.gateway.access.keys import IssuerKeys, PublicKey
from actors.gateway.access.principal import ReplicaAccess, StaticAccess

__all__ = ["JWTVerifier", "StaticTokenVerifier", "Verifiers", "refusal"]

logger = logging.getLogger(__name__)

refusal: contextvars.ContextVar[str | None] = contextvars.ContextVar("mcp_actors_refusal", default=None)
"""Why the verifiers refused the current request's token (for its ``WWW-Authenticate``)."""

_MAX_TOKEN = 16 * 1024
"""Characters of a token looked at, at most: a longer one is refused unread."""
_CACHED = 4096
"""Tokens whose verdict is kept (per verifier), most recently used first."""
_ACCEPTED_FOR = 300.0
"""Seconds an accepted token is taken without checking it again (within its own lifetime): a
signing key the issuer withdraws stops working within that."""
_REFUSED_FOR = 10.0
"""Seconds a refused token is refused again without looking."""
_DECODERS = 2
"""Worker threads checking new tokens' signatures at once: a flood of made-up tokens takes no
more than these."""


class Refused(Exception):
    """A token is not accepted; the message says why, for the client (no secret in it)."""


class NoKey(Refused):
    """No key to check a token with, for now: never remembered (the issuer may answer, or list
    the key, at the next request)."""


class StaticTokenVerifier(TokenVerifier):
    """Accepts one shared secret: a static token (`StaticAccess`) or the replica credential
    (`ReplicaAccess`), holding ``scopes`` (the gateway's required ones: it is trusted whole).
    Stateless: any thread."""

    def __init__(
        self,
        secret: str,
        *,
        replica: bool = False,
        scopes: tuple[str, ...] = (),
        resource: str | None = None,
        name: str = "static",
    ) -> None:
        self._expected = secret.encode()
        self._kind: type[AccessToken] = ReplicaAccess if replica else StaticAccess
        self._scopes = list(scopes)
        self._resource = resource
        """The gateway's resource URL (OAuth mode): the middleware checks every token is for it."""
        self._name = name

    async def verify_token(self, token: str) -> AccessToken | None:
        if not hmac.compare_digest(token.encode(), self._expected):
            return None
        return self._kind(
            token=token,
            client_id=self._name,
            subject=self._name,
            scopes=self._scopes,
            resource=self._resource,
        )


class Verifiers(TokenVerifier):
    """The first of ``verifiers`` that accepts a token. Holds nothing that changes (the state is
    the verifiers'); runs where they run: on the gateway's loop."""

    def __init__(self, *verifiers: TokenVerifier) -> None:
        self._verifiers = verifiers

    async def verify_token(self, token: str) -> AccessToken | None:
        refusal.set(None)
        for verifier in self._verifiers:
            accepted = await verifier.verify_token(token)
            if accepted is not None:
                refusal.set(None)
                return accepted
        if refusal.get() is None:
            refusal.set("the token is not one this gateway accepts")
        return None


class JWTVerifier(TokenVerifier):
    """Verifies JWT access tokens from one issuer, for this gateway (``auth``: ``access.auth``).

    Owned by the gateway's event loop (`verify_token` runs there, from the bearer middleware):
    its cache of verdicts is touched there only. A token not seen before is checked on a worker
    thread (a signature costs CPU): with the issuer's keys, immutable values, as input.
    """

    def __init__(self, auth: AuthKeys, keys: IssuerKeys, *, clock: Callable[[], float] = time.time) -> None:
        self._auth = auth
        self._keys = keys
        self._clock = clock
        self._algorithms = frozenset(auth.algorithms)
        self._verdicts: OrderedDict[bytes, tuple[AccessToken | str, float]] = OrderedDict()
        """Token digest -> the accepted token or why it was refused, and until when that stands
        (by digest: a flood of long made-up tokens holds 32 bytes each)."""
        self._limiter = anyio.CapacityLimiter(_DECODERS)

    @property
    def keys(self) -> IssuerKeys:
        return self._keys

    async def verify_token(self, token: str) -> AccessToken | None:
        now = self._clock()
        digest = hashlib.sha256(token[: _MAX_TOKEN + 1].encode()).digest()
        cached = self._verdicts.get(digest)
        if cached is not None and now < cached[1]:
            self._verdicts.move_to_end(digest)
            verdict = cached[0]
        else:
            verdict, lasting = await self._verdict(token)
            ttl = _REFUSED_FOR if isinstance(verdict, str) else _ACCEPTED_FOR
            expiry = verdict.expires_at if isinstance(verdict, AccessToken) else None
            if lasting:
                self._remember(digest, verdict, min(now + ttl, expiry if expiry is not None else now + ttl))
        if isinstance(verdict, str):
            refusal.set(verdict)
            logger.debug("access: a token was refused: %s", verdict)
            return None
        return verdict

    def _remember(self, digest: bytes, verdict: AccessToken | str, until: float) -> None:
        self._verdicts[digest] = (verdict, until)
        self._verdicts.move_to_end(digest)
        while len(self._verdicts) > _CACHED:
            self._verdicts.popitem(last=False)

    async def _verdict(self, token: str) -> tuple[AccessToken | str, bool]:
        """The accepted token, or why not; and whether that verdict may be remembered."""
        try:
            if len(token) > _MAX_TOKEN:
                raise Refused("the token is too long")
            try:
                header = jwt.get_unverified_header(token)
            except jwt.InvalidTokenError:
                raise Refused("the token is not a JWT") from None
            alg, kid = header.get("alg"), header.get("kid")
            if not isinstance(alg, str) or alg not in self._algorithms:
                raise Refused(f"the token's algorithm {alg!r} is not accepted")
            keys = await self._keys.keys_for(kid if isinstance(kid, str) else None, alg)
            if not keys and not self._keys.held:
                raise NoKey("the issuer's keys cannot be fetched now")
            if not keys:
                raise NoKey("the token is signed with a key the issuer does not list")
            claims = await anyio.to_thread.run_sync(self._decode, token, alg, keys, limiter=self._limiter)
            return self._access(token, claims), True
        except Refused as exc:
            return str(exc), not isinstance(exc, NoKey)

    def _decode(self, token: str, alg: str, keys: tuple[PublicKey, ...]) -> dict[str, Any]:
        """The verified claims (on a worker thread). Raises `Refused`."""
        auth = self._auth
        for key in keys:
            try:
                return dict(
                    jwt.decode(
                        token,
                        key.key,
                        algorithms=[alg],
                        audience=auth.expected_audience,
                        issuer=auth.issuer,
                        leeway=auth.leeway,
                        options={"require": ["exp", "iss", "aud"]},
                    )
                )
            except jwt.InvalidSignatureError:
                continue  # without a kid, another key of the set may have signed it
            except jwt.ExpiredSignatureError:
                raise Refused("the token has expired") from None
            except jwt.ImmatureSignatureError:
                raise Refused("the token is not valid yet") from None
            except jwt.InvalidIssuerError:
                raise Refused("the token is from another issuer") from None
            except jwt.InvalidAudienceError:
                raise Refused("the token is for another audience") from None
            except jwt.MissingRequiredClaimError as exc:
                raise Refused(f"the token has no {exc.claim!r} claim") from None
            except jwt.InvalidTokenError as exc:
                raise Refused(f"the token is not valid: {type(exc).__name__}") from None
        raise Refused("the token's signature does not verify")

    def _access(self, token: str, claims: Mapping[str, Any]) -> AccessToken:
        client = claims.get("client_id") or claims.get("azp")
        subject = claims.get("sub") or client
        if not isinstance(subject, str) or not subject:
            raise Refused("the token names no subject")
        return AccessToken(
            token=token,
            client_id=client if isinstance(client, str) and client else subject,
            scopes=_scopes(claims),
            # Accepted until its expiry, and the leeway (the middleware checks this again).
            expires_at=int(float(claims["exp"]) + self._auth.leeway),
            resource=self._auth.resource,
            subject=subject,
            claims=dict(claims),
        )


def _scopes(claims: Mapping[str, Any]) -> list[str]:
    """RFC 9068's ``scope`` (space-separated), or the ``scp`` list some issuers use."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [str(item) for item in value]
    return []
