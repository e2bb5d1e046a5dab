"""`Challenges`: the ``WWW-Authenticate`` of the HTTP gateway's 401 and 403 answers, as the MCP
authorization specification and RFC 6750 have them.

The SDK's bearer middleware answers 401 ``invalid_token`` (no token, or one its verifier refused)
and 403 ``insufficient_scope`` (a scope missing), with ``resource_metadata`` (RFC 9728). This
fills what it leaves out: the ``scope`` the gateway requires (the specification's scope
selection: a client asks its issuer for those), why a token was refused (its ``error_description``,
from `actors.gateway.access.verifiers.refusal`), and no error at all for a request that sent no
credentials (RFC 6750 3.1: it is asked to authenticate, not told it failed). Only answers that
already carry a ``Bearer`` challenge are touched; their bodies are left as they are.

An ASGI wrapper; it holds only immutable configuration (any thread's loop may run it).
"""

from __future__ import annotations

from typing import Any

from actors.gateway.access.asgi import ASGIApp, Scope
from actors.gateway.access.verifiers import refusal

__all__ = ["Challenges", "challenge"]


def _quoted(text: str) -> str:
    """``text`` as an auth-param value: no quote or backslash can end it early."""
    return '"' + "".join(c for c in text if c not in '"\\' and c.isprintable()) + '"'


def challenge(
    status: int,
    *,
    credentials: bool,
    reason: str | None,
    scopes: tuple[str, ...],
    resource_metadata: str | None,
) -> str:
    """The ``WWW-Authenticate`` value of a 401 (``credentials``: the request sent a token) or a
    403 (a scope missing)."""
    params: list[tuple[str, str]] = []
    if status == 403:
        params += [("error", "insufficient_scope"), ("error_description", reason or "a scope is missing")]
    elif credentials:
        params += [("error", "invalid_token"), ("error_description", reason or "the token was refused")]
    if scopes:
        params.append(("scope", " ".join(scopes)))
    if resource_metadata:
        params.append(("resource_metadata", resource_metadata))
    return "Bearer" + (" " + ", ".join(f"{k}={_quoted(v)}" for k, v in params) if params else "")


class Challenges:
    """Rewrites the ``Bearer`` challenge of ``app``'s 401 and 403 answers (see the module)."""

    def __init__(self, app: ASGIApp, *, scopes: tuple[str, ...], resource_metadata: str | None) -> None:
        self._app = app
        self._scopes = scopes
        self._resource_metadata = resource_metadata

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        credentials = any(name == b"authorization" for name, _ in scope.get("headers") or [])

        async def challenged(message: Any) -> None:
            if message.get("type") == "http.response.start" and message.get("status") in (401, 403):
                headers = list(message.get("headers") or [])
                found = [i for i, (name, value) in enumerate(headers) if name.lower() == b"www-authenticate"]
                if found and headers[found[0]][1][:6].lower() == b"bearer":
                    reason = refusal.get() if message["status"] == 401 else None
                    value = challenge(
                        message["status"],
                        credentials=credentials,
                        reason=reason,
                        scopes=self._scopes,
                        resource_metadata=self._resource_metadata,
                    )
                    headers[found[0]] = (b"www-authenticate", value.encode("latin-1", "replace"))
                    message = {**message, "headers": headers}
            await send(message)

        await self._app(scope, receive, challenged)
