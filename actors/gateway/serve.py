"""Serving a `Gateway`: over stdio (what a host's ``command`` entry starts) or Streamable HTTP.

HTTP security: binding anything but loopback requires authentication (refused at start
otherwise): OAuth access tokens from an issuer (``access.auth``), or the static bearer token;
both go through the SDK's bearer middleware (`actors.gateway.access.guard`). On loopback the SDK's
DNS-rebinding protection checks ``Host`` and ``Origin`` on ``/mcp``, and the other routes refuse a
foreign ``Host`` too. ``/healthz`` reports each server's state as JSON without waking any; with
authentication, a probe without it (a load balancer's, a Kubernetes readiness check) learns only
that the gateway is up. ``/`` is the operator's page (``/operator.json`` its JSON twin), for
whom the policy makes an admin (`actors.gateway.operator`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any, cast

import anyio
import anyio.to_thread
import uvicorn
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route, request_response

from actors.gateway.access.asgi import ASGIApp, Scope
from actors.gateway.access.audit_http import HTTPAudit
from actors.gateway.access.guard import Guard
from actors.gateway.access.limits_http import limit_requests
from actors.gateway.first_reply import answer_first_replies_in_json
from actors.gateway.gateway import Gateway
from actors.gateway.operator.route import JSON_PATH, PAGE_PATH, OperatorPage
from actors.gateway.pipes import stdio_pipes

__all__ = [
    "HTTPRefused",
    "Metrics",
    "NotServed",
    "http_app",
    "is_loopback",
    "listen",
    "serve_http",
    "serve_stdio",
    "url_of",
]

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
"""Where the SDK's Streamable HTTP app serves MCP (its default path)."""
KEEP_ALIVE = 65
"""Seconds an idle client connection is kept open. Longer than the clients' own idle expiry
(httpx's pool: 5 s; load balancers: 60 s): a server that closes first races a client reusing
the connection, whose request then fails with a reset instead of an answer (seen under load
with uvicorn's 5 s default)."""


class HTTPRefused(ValueError):
    """The HTTP gateway cannot start as asked (say, off loopback without a token)."""


class NotServed(Exception):
    """The HTTP server stopped before it ever served (uvicorn's startup failed)."""


def listen(host: str, port: int) -> list[socket.socket]:
    """Sockets bound and listening on ``host:port``, one per address of ``host`` (all on the
    same port when ``port`` is 0), made before the gateway starts anything: a port taken or a
    host that does not resolve is an `OSError` here, not a log line of uvicorn's."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, found_address in dict.fromkeys(
            (f, k, p, "", a) for f, k, p, _, a in found
        ):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            address = found_address
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(2048)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def url_of(host: str, sockets: Sequence[socket.socket]) -> str:
    """The URL of MCP on ``host`` at the port ``sockets`` listen on."""
    name = f"[{host}]" if ":" in host else host
    return f"http://{name}:{sockets[0].getsockname()[1]}{MCP_PATH}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def serve_stdio(gateway: Gateway) -> None:
    """Serve one client on this process's stdin and stdout until it closes them (read and written
    on this loop when they are pipes: `actors.gateway.pipes`)."""
    gateway.bind(asyncio.get_running_loop())
    try:
        async with stdio_pipes() as pipes:
            stdin, stdout = pipes if pipes is not None else (None, None)
            # The SDK reads lines and writes and flushes text: all of ``anyio.AsyncFile`` it uses.
            async with stdio_server(cast(Any, stdin), cast(Any, stdout)) as (read_stream, write_stream):
                await gateway.server.run(read_stream, write_stream, gateway.initialization_options())
    except* (BrokenPipeError, ConnectionResetError):
        # The client went away while it was owed an answer: a host quitting, not an error.
        logger.info("gateway: the client closed its end of the pipes")


class _LoopbackHosts:
    """Refuses a request whose ``Host`` is not this loopback address (DNS rebinding) on the
    routes the SDK's own check does not cover (``/healthz``, ``/metrics``)."""

    def __init__(self, app: ASGIApp, allowed: list[str]) -> None:
        self._app = app
        self._allowed = frozenset(host.encode() for host in allowed)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not str(scope.get("path", "")).startswith("/mcp"):
            host = dict(scope.get("headers") or []).get(b"host", b"")
            if host not in self._allowed:
                response = JSONResponse({"error": "invalid Host header"}, status_code=421)
                await response(scope, receive, send)
                return
        await self._app(scope, receive, send)


class _MCPFirst:
    """Hands ``/mcp`` requests to the SDK's app directly: the outer app's middleware and router
    (for ``/healthz``, ``/metrics`` and the lifespan) cost every call some 0.1 ms for nothing."""

    def __init__(self, app: ASGIApp, mcp: ASGIApp) -> None:
        self._app = app
        self._mcp = mcp

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path") == MCP_PATH:
            await self._mcp(scope, receive, send)
        else:
            await self._app(scope, receive, send)


Metrics = Callable[[], bytes]
"""Renders the metrics as Prometheus text."""


def http_app(
    gateway: Gateway,
    host: str,
    port: int,
    token: str | None = None,
    metrics: Metrics | None = None,
    guard: Guard | None = None,
) -> Any:
    """The gateway as an ASGI app: MCP on ``/mcp``, ``/healthz`` beside it, and ``/metrics``
    (Prometheus text) when ``metrics`` is given. ``guard`` authenticates every request (a
    ``token`` alone: the static token's guard)."""
    guard = guard or Guard.build(None, token)
    if not is_loopback(host) and guard is None:
        raise HTTPRefused(
            f"serving on {host} (not loopback) needs a bearer token: set MCP_ACTORS_TOKEN or --token-file"
        )
    security = None
    hosts = [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]
    if is_loopback(host):
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=hosts,
            allowed_origins=[f"http://{allowed}" for allowed in hosts],
        )
    mcp_app = gateway.server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        transport_security=security,
        **(guard.sdk_options() if guard is not None else {}),
    )
    answer_first_replies_in_json(gateway.server.session_manager)
    # Each principal's request rate (``access.limits.perUser``): 429 once over it.
    limit_requests(mcp_app, gateway.limits, gateway.audit, MCP_PATH)

    async def healthz(request: Request) -> JSONResponse:
        if guard is not None and not guard.authorized(request.scope):
            # Names and errors of servers are not for anyone who can reach the port.
            return JSONResponse({"status": "ok"})
        # The facade waits on the registry: off the loop, like every blocking call here.
        statuses = await anyio.to_thread.run_sync(gateway.runtime.status)
        servers = {
            s.namespace: {
                k: v for k, v in asdict(s).items() if k in ("state", "pid", "restarts", "last_error")
            }
            for s in statuses
        }
        return JSONResponse({"status": "ok", "servers": servers})

    routes: list[Route | Mount] = [Route("/healthz", healthz)]
    if metrics is not None:
        render = metrics

        async def exposition(request: Request) -> Response:
            body = await anyio.to_thread.run_sync(render)
            return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")

        # Behind the guard like /mcp: it must hold the same token (and scopes).
        guarded: Any = guard.require(request_response(exposition)) if guard is not None else exposition
        routes.append(Route("/metrics", guarded))
    # The operator's page: the guard answers 401 as for /mcp, then the page asks the policy.
    operator = OperatorPage(gateway, secrets=[token] if token else [])
    for path, endpoint in ((PAGE_PATH, operator.page), (JSON_PATH, operator.json)):
        page: Any = guard.require(request_response(endpoint)) if guard is not None else endpoint
        routes.append(Route(path, page, methods=["GET"]))
    routes.append(Mount("/", app=mcp_app))
    outer: Any = Starlette(routes=routes, lifespan=mcp_app.router.lifespan_context)
    app: Any = (
        _MCPFirst(guard.challenges(guard.authenticate(outer)), guard.protect(mcp_app))
        if guard is not None
        else _MCPFirst(outer, mcp_app)
    )
    if is_loopback(host):
        app = _LoopbackHosts(app, hosts)
    # Outermost: a request refused by any layer above is recorded too.
    return HTTPAudit(app, gateway.audit, authenticated=guard is not None)


async def serve_http(
    gateway: Gateway,
    host: str,
    port: int,
    token: str | None = None,
    metrics: Metrics | None = None,
    guard: Guard | None = None,
    sockets: Sequence[socket.socket] | None = None,
) -> None:
    """Serve Streamable HTTP on ``host:port`` (on ``sockets`` if given: `listen`'s, whose port
    counts) until cancelled; `NotServed` if uvicorn could not start."""
    guard = guard or Guard.build(None, token)
    if sockets:
        port = sockets[0].getsockname()[1]
    app = http_app(gateway, host, port, token, metrics, guard)
    gateway.bind(asyncio.get_running_loop())
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", timeout_keep_alive=KEEP_ALIVE
    )
    server = uvicorn.Server(config)
    logger.info("gateway: serving on http://%s:%d/mcp", host, port)
    # Not in a task group: the SystemExit of a SIGTERM must leave as it is, not in a group.
    loop = asyncio.get_running_loop()
    prefetch = loop.create_task(guard.prefetch(), name="issuer keys") if guard is not None else None
    try:
        try:
            await server.serve(sockets=list(sockets) if sockets else None)
        except SystemExit as exc:
            # uvicorn's own exit when its startup fails (not a signal's): said in one line.
            if server.started or server.should_exit:
                raise
            raise NotServed(f"the HTTP server did not start (status {exc.code})") from None
        if not server.started and not server.should_exit:
            raise NotServed("the HTTP server did not start")
    finally:
        if prefetch is not None:
            prefetch.cancel()
        if guard is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await guard.aclose()
