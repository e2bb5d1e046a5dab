"""What the identity tests share: a gateway (``mcp-actors serve --http``) that takes OAuth access
tokens from a real issuer of ours (tests/servers/oidc_issuer.py), raw HTTP with its headers, and
a real `mcp.Client` that sends a bearer token."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from tests.gateway.conftest import WAIT, GatewayProcess, fixture, write_config
from tests.servers.http_server import free_port
from tests.servers.oidc_issuer import OIDCIssuer

SCOPE = "mcp"
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
).encode()
JSON_AND_SSE = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def auth_keys(issuer: OIDCIssuer, resource: str, **more: Any) -> dict[str, Any]:
    """An ``access.auth`` section for ``issuer`` and the gateway at ``resource``."""
    return {"issuer": issuer.url, "resource": resource, "scopes": [SCOPE], **more}


@contextlib.contextmanager
def oauth_gateway(
    folder: Path, issuer: OIDCIssuer, *, servers: dict[str, Any] | None = None, **options: Any
) -> Iterator[GatewayProcess]:
    """``mcp-actors serve --http`` on loopback with ``access.auth`` for ``issuer`` (resource: its
    own ``/mcp``), in front of the fixture server ``fx`` (or ``servers``)."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    config = write_config(
        folder,
        servers or {"fx": fixture("--name", str(folder))},
        access={"auth": auth_keys(issuer, resource)},
    )
    with GatewayProcess(config, folder, port=port, **options) as gateway:
        yield gateway


def post(
    gateway: GatewayProcess, token: str | None = None, path: str = "/mcp", *, method: str = "POST"
) -> Any:
    """One raw request (an ``initialize`` for POST): status, headers (lower-cased names), body."""
    headers = dict(JSON_AND_SSE)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=WAIT)
    try:
        connection.request(method, path, body=INITIALIZE if method == "POST" else None, headers=headers)
        response = connection.getresponse()
        found = {name.lower(): value for name, value in response.getheaders()}
        return response.status, found, response.read()
    finally:
        connection.close()


def challenge(header: str) -> dict[str, str]:
    """The auth-params of a ``Bearer`` challenge (``WWW-Authenticate``)."""
    assert header.startswith("Bearer"), header
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


def client(gateway: GatewayProcess, token: str, mode: str = "legacy", **handlers: Any) -> Client:
    """A real client of the gateway that sends ``token`` (``handlers``: `mcp.Client`'s callbacks)."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(gateway.url, http_client=http), mode=mode, **handlers)  # type: ignore[arg-type]
