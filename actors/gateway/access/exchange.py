"""`TokenExchange`: a caller's token exchanged at the issuer for one meant for a backend (RFC 8693).

A remote per-user server with ``tokenExchange`` (`actors.mcp.per_user.TokenExchangeKeys`) gets,
for each caller, a token whose audience is the backend and whose subject is still the caller (an
issuer adds an ``act`` claim naming the gateway's client). The gateway authenticates to the
issuer's token endpoint as its own client (HTTP Basic, RFC 6749 2.3.1). The endpoint is the
configured ``tokenEndpoint``, else the ``token_endpoint`` of the issuer's metadata (OpenID
Connect's, then RFC 8414's), looked up once per issuer.

An exchanged token is kept until shortly before it expires (``expires_in``, else its ``exp``),
per caller token and backend, so a caller's requests cost the issuer one exchange per token
lifetime. Concurrent requests of one caller share one exchange. Every failure is an
`ExchangeFailed`, which the gateway answers as an ``auth`` error: its message says what the
issuer answered, never a token or the client's secret.

Owned by the gateway's loop: `token_for` runs there. Its HTTP client is made on a worker thread
(an SSL context is never built on the loop), one per exchange (an exchange is rare: once per
caller and token lifetime), and JSON is parsed on a worker thread too.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import anyio
import anyio.to_thread
import httpx2
import jwt

from actors.mcp.per_user import TokenExchangeKeys
from actors.mcp.tls import default_ssl_context

__all__ = ["GRANT", "ExchangeFailed", "TokenExchange"]

logger = logging.getLogger(__name__)

GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
_ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
_TIMEOUT = 10.0
"""Seconds of one HTTP request to the issuer; an exchange, discovery included, takes at most twice that."""
_MAX_BODY = 1 << 20
_DEFAULT_LIFETIME = 300.0
"""Seconds an exchanged token that says nothing of its expiry is kept."""
_MARGIN = 60.0
"""At most this long before it expires, an exchanged token is exchanged again."""
_KEEP = 10_000
"""Exchanged tokens kept at most (one per caller token and backend)."""


class ExchangeFailed(Exception):
    """The issuer did not exchange the caller's token (the message says why, without secrets)."""


@dataclass(frozen=True, slots=True)
class _HeldToken:
    token: str
    until: float
    """Monotonic seconds after which it is exchanged again."""


class TokenExchange:
    """Exchanged tokens, per caller token and backend. Owned by the gateway's loop."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._held: dict[str, _HeldToken] = {}
        self._pending: dict[str, asyncio.Task[_HeldToken]] = {}
        self._endpoints: dict[str, str] = {}
        """Issuer → its token endpoint, from its metadata."""
        self.exchanges = 0
        """Exchanges asked of the issuer (what a test, or an operator, may count)."""

    async def token_for(self, credential: str, keys: TokenExchangeKeys, issuer: str | None) -> str:
        """A token for the backend of ``keys``, exchanged for the caller token ``credential``."""
        key = _cache_key(credential, keys)
        held = self._held.get(key)
        if held is not None and self._clock() < held.until:
            return held.token
        task = self._pending.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._exchange(key, credential, keys, issuer))
            self._pending[key] = task
            task.add_done_callback(lambda _: self._pending.pop(key, None))
        # Shielded: a caller that goes away does not cancel the exchange others wait on.
        return (await asyncio.shield(task)).token

    async def _exchange(
        self, key: str, credential: str, keys: TokenExchangeKeys, issuer: str | None
    ) -> _HeldToken:
        self.exchanges += 1
        client = await anyio.to_thread.run_sync(_client)
        try:
            with anyio.fail_after(_TIMEOUT * 2):
                async with client:
                    endpoint = keys.token_endpoint or await self._endpoint(client, issuer)
                    answer = await self._post(client, endpoint, credential, keys)
        except TimeoutError:
            raise ExchangeFailed("the issuer did not answer the token exchange in time") from None
        except (httpx2.HTTPError, OSError) as exc:
            raise ExchangeFailed(f"the issuer could not be reached for the token exchange: {exc}") from None
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            raise ExchangeFailed("the issuer's answer to the token exchange holds no access_token")
        lifetime = await anyio.to_thread.run_sync(_lifetime, answer, token)
        held = _HeldToken(token, self._clock() + lifetime - min(_MARGIN, lifetime / 10))
        self._keep(key, held)
        logger.debug("access: a token exchanged for %s, for %.0fs", keys.audience, lifetime)
        return held

    def _keep(self, key: str, held: _HeldToken) -> None:
        if len(self._held) >= _KEEP:
            now = self._clock()
            self._held = {k: v for k, v in self._held.items() if v.until > now}
            while len(self._held) >= _KEEP:
                self._held.pop(next(iter(self._held)))  # the oldest kept
        self._held[key] = held

    async def _endpoint(self, client: httpx2.AsyncClient, issuer: str | None) -> str:
        if issuer is None:
            raise ExchangeFailed(
                "no token endpoint: set tokenExchange.tokenEndpoint, or access.auth's issuer"
            )
        known = self._endpoints.get(issuer)
        if known is not None:
            return known
        why = "no metadata document answered"
        for url in _metadata_urls(issuer):
            status, document = await _get(client, url)
            if status != 200:
                why = f"{url} answered {status}"
                continue
            data = await anyio.to_thread.run_sync(_json, document)
            endpoint = data.get("token_endpoint") if data.get("issuer") == issuer else None
            if not isinstance(endpoint, str) or urlsplit(endpoint).scheme not in ("http", "https"):
                raise ExchangeFailed(f"the metadata of {issuer} names no token_endpoint")
            self._endpoints[issuer] = endpoint
            return endpoint
        raise ExchangeFailed(f"the token endpoint of {issuer} is unknown: {why}")

    async def _post(
        self, client: httpx2.AsyncClient, endpoint: str, credential: str, keys: TokenExchangeKeys
    ) -> Mapping[str, Any]:
        form = {
            "grant_type": GRANT,
            "subject_token": credential,
            "subject_token_type": _ACCESS_TOKEN,
            "requested_token_type": _ACCESS_TOKEN,
            "audience": keys.audience,
        }
        if keys.resource is not None:
            form["resource"] = keys.resource
        if keys.scope:
            form["scope"] = keys.scope
        secret = keys.client_secret.get_secret_value()
        auth = httpx2.BasicAuth(quote(keys.client_id, safe=""), quote(secret, safe=""))
        response = await client.post(endpoint, data=form, auth=auth, headers={"Accept": "application/json"})
        body = await response.aread()
        if len(body) > _MAX_BODY:
            raise ExchangeFailed(f"the issuer answered the token exchange with more than {_MAX_BODY} bytes")
        data = await anyio.to_thread.run_sync(_json, body)
        if response.status_code != 200:
            error = str(data.get("error", "no error code"))[:100]
            description = str(data.get("error_description", ""))[:300]
            raise ExchangeFailed(
                f"the issuer refused the token exchange ({response.status_code} {error})"
                + (f": {description}" if description else "")
            )
        return data


def _client() -> httpx2.AsyncClient:
    """The HTTP client of one exchange (on a worker thread: the SSL context is built off the loop)."""
    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(_TIMEOUT), verify=default_ssl_context(), follow_redirects=False
    )


async def _get(client: httpx2.AsyncClient, url: str) -> tuple[int, bytes]:
    async with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > _MAX_BODY:
                raise ExchangeFailed(f"{url} answered more than {_MAX_BODY} bytes")
        return response.status_code, bytes(body)


def _json(document: bytes) -> Mapping[str, Any]:
    try:
        data = json.loads(document)
    except ValueError:
        data = None
    if not isinstance(data, Mapping):
        raise ExchangeFailed("the issuer answered something that is not a JSON object")
    return data


def _lifetime(answer: Mapping[str, Any], token: str) -> float:
    """Seconds the exchanged token lives: ``expires_in``, else its ``exp``, else a default."""
    expires_in = answer.get("expires_in")
    if isinstance(expires_in, int | float) and not isinstance(expires_in, bool) and expires_in > 0:
        return float(expires_in)
    try:
        # Read only for its expiry: the backend, not the gateway, is the token's audience.
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return _DEFAULT_LIFETIME
    exp = claims.get("exp")
    if isinstance(exp, int | float) and not isinstance(exp, bool):
        return max(0.0, float(exp) - time.time())
    return _DEFAULT_LIFETIME


def _cache_key(credential: str, keys: TokenExchangeKeys) -> str:
    """What an exchanged token is kept under: a digest (the caller's token is never a key)."""
    parts = (credential, keys.audience, keys.resource or "", keys.scope or "", keys.client_id)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _metadata_urls(issuer: str) -> list[str]:
    """The issuer's metadata documents: OpenID Connect's, then RFC 8414's (path inserted)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    return [
        urlunsplit((parts.scheme, parts.netloc, f"{path}/.well-known/openid-configuration", "", "")),
        urlunsplit((parts.scheme, parts.netloc, f"/.well-known/oauth-authorization-server{path}", "", "")),
    ]
