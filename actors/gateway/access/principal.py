"""`Principal`: who is calling the gateway, as every access decision sees them.

The HTTP gateway authenticates each request before the MCP layer sees it, with the SDK's own
bearer middleware over a `TokenVerifier` (`actors.gateway.access.verifiers`): a JWT checked
against its issuer's keys, or the static token of the simplest mode. The middleware puts the
verified `AccessToken` on the request (``request.user``); `principal_of` reads it back in a
handler, from the request context the SDK hands it. Policy, audit, limits, per-user servers and
credentials all take the `Principal`, never the token's raw text or the HTTP request.

Over stdio, or on loopback without authentication, the one client is `LOCAL`: the user who
started the gateway. A static-token caller is the one principal `STATIC`.

Across replicas: a replica that forwards a request to another (`actors.cluster.forward`)
authenticates as a replica (`ReplicaAccess`, a credential the cluster shares through Redis) and
carries its caller in the request's ``_meta`` (`caller_meta`); the owner's `principal_of` gives
that caller, and trusts such an entry only on a request a replica sent.

Immutable values: built on the loop, read on any thread.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from mcp.server.auth.provider import AccessToken
from pydantic import ValidationError

__all__ = [
    "FORWARDED_CALLER",
    "LOCAL",
    "STATIC",
    "AuthMode",
    "Principal",
    "ReplicaAccess",
    "StaticAccess",
    "access_token_of",
    "caller_meta",
    "principal_of",
]

logger = logging.getLogger(__name__)

FORWARDED_CALLER = "io.github.mcp-actors/caller"
"""The ``_meta`` key of a forwarded request that names its caller (see `caller_meta`)."""


class AuthMode(StrEnum):
    """How a principal was established."""

    LOCAL = "local"
    """No authentication: stdio, or HTTP on loopback without a token."""
    STATIC = "static"
    """The one bearer token of the simplest mode (``MCP_ACTORS_TOKEN``)."""
    OAUTH = "oauth"
    """An OAuth 2.1 access token (a JWT) checked against its issuer."""
    REPLICA = "replica"
    """Another replica of the cluster, on its own behalf (a request that names no caller)."""


class StaticAccess(AccessToken):
    """What `StaticTokenVerifier` answers for the static token: a type no JWT can take."""


class ReplicaAccess(AccessToken):
    """What the verifiers answer for the cluster's replica credential."""


_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Principal:
    """A caller: the token's subject at its issuer, the client it used, its groups and scopes.

    ``claims`` are the token's claims as verified (read-only). ``credential`` is the bearer
    token itself, for a backend that takes the caller's own token; it is never printed
    (``repr``), compared, logged or audited.
    """

    subject: str
    mode: AuthMode = AuthMode.LOCAL
    issuer: str | None = None
    client_id: str | None = None
    groups: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)
    credential: str | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> str:
        """A stable name for this caller that is safe in names and logs: the subject where it
        is plain, a digest of issuer and subject otherwise (``sub`` is unique per issuer)."""
        plain = self.subject.replace("-", "").replace("_", "").replace(".", "")
        if self.issuer is None and plain.isalnum() and len(self.subject) <= 40:
            return self.subject
        digest = hashlib.sha256(f"{self.issuer or ''}\n{self.subject}".encode()).hexdigest()[:16]
        return f"u{digest}"

    @classmethod
    def of_token(cls, token: AccessToken, mode: AuthMode = AuthMode.OAUTH) -> Principal:
        """The principal an `AccessToken` from a verifier stands for."""
        claims = MappingProxyType(dict(token.claims or {}))
        issuer = claims.get("iss")
        return cls(
            subject=token.subject or token.client_id,
            mode=mode,
            issuer=issuer if isinstance(issuer, str) else None,
            client_id=token.client_id,
            groups=_words(claims.get("groups")),
            scopes=tuple(token.scopes),
            claims=claims,
            credential=token.token,
        )


def _words(value: Any) -> tuple[str, ...]:
    """A claim that is a list of names, or one space-separated string of them."""
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list | tuple):
        return tuple(str(item) for item in value)
    return ()


LOCAL = Principal("local")
"""The one client of a gateway without authentication."""
STATIC = Principal("static", mode=AuthMode.STATIC, client_id="static")
"""Whoever holds the static token: one principal, however many clients."""
_REPLICA = Principal("replica", mode=AuthMode.REPLICA, client_id="replica")


def access_token_of(ctx: Any) -> AccessToken | None:
    """The verified token of the request a handler answers (``ctx``: the SDK's request context),
    as the bearer middleware left it; None where nothing authenticated it."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, Mapping) else None
    token = getattr(user, "access_token", None)
    return token if isinstance(token, AccessToken) else None


def principal_of(ctx: Any) -> Principal:
    """The principal of the request a handler is answering (``ctx``: the SDK's request
    context). `LOCAL` where nothing authenticated it (stdio, loopback without a token)."""
    token = access_token_of(ctx)
    if token is None:
        return LOCAL
    if isinstance(token, StaticAccess):
        return STATIC
    if isinstance(token, ReplicaAccess):
        return _forwarded(getattr(ctx, "meta", None))
    return Principal.of_token(token, AuthMode.OAUTH)


def caller_meta(ctx: Any) -> dict[str, Any]:
    """The ``_meta`` entry that carries this request's caller to the replica it is forwarded to
    (empty without authentication: the owner's `principal_of` then gives what it gives any
    caller of its own). The caller's token goes along, for the owner's per-user credentials."""
    token = access_token_of(ctx)
    if token is None:
        return {}
    if isinstance(token, ReplicaAccess):
        # Forwarded here already: it goes no further (`actors.cluster.affinity`); said as it came.
        meta = getattr(ctx, "meta", None)
        caller = meta.get(FORWARDED_CALLER) if isinstance(meta, Mapping) else None
        return {FORWARDED_CALLER: caller} if caller is not None else {}
    mode = AuthMode.STATIC if isinstance(token, StaticAccess) else AuthMode.OAUTH
    plain = AccessToken.model_validate(token.model_dump())
    return {FORWARDED_CALLER: {"mode": mode.value, "token": plain.model_dump(mode="json")}}


def _forwarded(meta: Any) -> Principal:
    """The caller a replica named in a forwarded request's ``_meta``, else the replica itself."""
    caller = meta.get(FORWARDED_CALLER) if isinstance(meta, Mapping) else None
    if not isinstance(caller, Mapping):
        return _REPLICA
    mode = caller.get("mode")
    if mode == AuthMode.STATIC:
        return STATIC
    if mode != AuthMode.OAUTH:
        logger.warning("a forwarded request names its caller in an unknown mode %r", mode)
        return _REPLICA
    try:
        token = AccessToken.model_validate(caller.get("token"))
    except ValidationError:
        logger.warning("a forwarded request names its caller with a token that does not parse")
        return _REPLICA
    return Principal.of_token(token, AuthMode.OAUTH)
