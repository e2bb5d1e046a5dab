"""The ASGI vocabulary of the gateway's HTTP layers: `Scope`, `Receive`, `Send`, `ASGIApp`, and
`scope_context` (a request's scope as the handlers' context that `principal_of` reads)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ASGIApp", "Receive", "Scope", "ScopeContext", "Send", "scope_context"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class _ScopedRequest:
    scope: Scope


@dataclass(frozen=True)
class ScopeContext:
    """What `actors.gateway.access.principal.principal_of` reads of a handler's context: the
    request (its scope), and no ``meta``."""

    request: _ScopedRequest
    meta: None = None


def scope_context(scope: Scope) -> ScopeContext:
    """An HTTP layer's request as a handler's context, for `principal_of` and `access_token_of`."""
    return ScopeContext(_ScopedRequest(scope))
