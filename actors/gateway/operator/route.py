"""`OperatorPage`: who may see the operator's page, and its endpoints (``/``, ``/operator.json``).

Behind the same identity as ``/mcp``: with authentication, a request without a valid token (or
without the required scopes) is answered 401 (403) by the guard, with the ``WWW-Authenticate``
the MCP endpoint gives. Then the policy decides, as for everything else: the page is the
``admin`` action on ``Gateway::"gateway"``. Without a policy only the gateway's operator may see
it: the holder of the static token, or the local user of a loopback gateway without a token;
an OAuth user needs a policy that names them (a policy is how a team says who its admins are).
A replica's credential never opens it. Anyone else is answered 403.

Gathering asks the registry (which waits) and reads the audit's recent records, then renders:
all of it on a worker thread (`anyio.to_thread`), never on the gateway's loop. The decision is
made on the loop, as every request's is at the gate.

Holds immutable configuration and reads the gateway's current policy and config at each request:
any loop may run its endpoints.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response

from actors.gateway.access.principal import AuthMode, Principal, principal_of
from actors.gateway.access.use import Use
from actors.gateway.gateway import Gateway
from actors.gateway.operator.page import render
from actors.gateway.operator.snapshot import RECENT, snapshot
from actors.mcp.redaction import config_secrets
from actors.tools import ToolError

__all__ = ["JSON_PATH", "PAGE_PATH", "STATUS_TIMEOUT", "OperatorPage"]

logger = logging.getLogger(__name__)

PAGE_PATH = "/"
JSON_PATH = "/operator.json"
STATUS_TIMEOUT = 10.0
"""Seconds the page waits for the registry's status snapshots."""

_HEADERS = {
    # Operational data: kept by no cache; no script, frame or fetch; the page's own style only.
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_OPERATORS = frozenset({AuthMode.LOCAL, AuthMode.STATIC})
"""Who may see the page when no policy says: the gateway's own operator."""


@dataclass(frozen=True, slots=True)
class _RouteContext:
    """What `principal_of` reads of a request (the SDK's request context has the same)."""

    request: Request
    meta: Any = None


class OperatorPage:
    """The page's endpoints for ``gateway`` (``secrets``: values to withhold beyond the config's,
    the static token's). Immutable; see the module for who owns what."""

    def __init__(self, gateway: Gateway, secrets: Iterable[str] = ()) -> None:
        self._gateway = gateway
        self._secrets = tuple(secrets)

    def permits(self, principal: Principal) -> bool:
        """Whether ``principal`` may see the page (see the module)."""
        if principal.mode is AuthMode.REPLICA:
            return False  # a machine credential the replicas share: never an operator
        policy = self._gateway.gate.policy
        if policy is None:
            return principal.mode in _OPERATORS
        return policy.decide(principal, Use.admin()).allowed

    async def page(self, request: Request) -> Response:
        """``GET /``: HTML, or the JSON twin for a client that asks for JSON only."""
        accept = request.headers.get("accept", "")
        wants_json = "application/json" in accept and "text/html" not in accept
        return await self._answer(request, as_json=wants_json)

    async def json(self, request: Request) -> Response:
        """``GET /operator.json``."""
        return await self._answer(request, as_json=True)

    async def _answer(self, request: Request, *, as_json: bool) -> Response:
        principal = principal_of(_RouteContext(request))
        if not self.permits(principal):
            logger.info("operator page: refused to %s (%s)", principal.key, principal.mode.value)
            return _refused(as_json)
        try:
            body = await anyio.to_thread.run_sync(self._gather, as_json)
        except ToolError as exc:
            logger.warning("operator page: no status from the runtime: %s", exc.error_type)
            return _text(503, "The runtime did not answer in time; the page will try again.", as_json)
        media = "application/json" if as_json else "text/html; charset=utf-8"
        return Response(body, media_type=media, headers=_HEADERS)

    def _gather(self, as_json: bool) -> bytes:
        """On a worker thread: the registry's statuses, the audit's records, the page."""
        gateway = self._gateway
        statuses = gateway.runtime.status(timeout=STATUS_TIMEOUT)
        secrets = [s for server in gateway.config.servers.values() for s in config_secrets(server)]
        view = snapshot(
            statuses,
            gateway.audit.recent(RECENT),
            secrets=[*secrets, *self._secrets],
            dropped=gateway.audit.dropped,
            replica=gateway.audit.replica,
            held=gateway.runtime.pins.held(),
        )
        if as_json:
            return json.dumps(view.to_json(), ensure_ascii=False).encode()
        return render(view).encode()


def _refused(as_json: bool) -> Response:
    return _text(403, "Forbidden: the gateway's policy permits you no admin action.", as_json)


def _text(status: int, message: str, as_json: bool) -> Response:
    if as_json:
        return Response(
            json.dumps({"error": message}), status, headers=_HEADERS, media_type="application/json"
        )
    return Response(message + "\n", status, headers=_HEADERS, media_type="text/plain; charset=utf-8")
