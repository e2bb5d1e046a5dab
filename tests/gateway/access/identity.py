"""What the identity tests share: a gateway (``mcp-actors serve --http``) that takes OAuth access
tokens from a real issuer of ours (tests/servers/oidc_issuer.py), raw HTTP with its headers, and
a real `mcp.Client` that sends a bearer token."""

from __future__ import annotations

import contextlib
import http.client
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from tests.gateway.conftest import WAIT, GatewayProcess, fixture, write_config
from tests.gateway.test_http_security import INITIALIZE, JSON_AND_SSE
from tests.servers.http_server import HTTPServer, free_port
from tests.servers.oidc_issuer import OIDCIssuer

SCOPE = "mcp"


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


@dataclass(frozen=True)
class Planted:
    """Secrets planted in a gateway's config and environment, for tests that look for them."""

    env: str
    """In the fixture server ``fx``'s environment (``FX_API_TOKEN``)."""
    header: str
    """In the header ``X-Api-Key`` the gateway sends the remote server ``web``."""
    static_token: str
    """The gateway's static token (``MCP_ACTORS_TOKEN``)."""


@contextlib.contextmanager
def planted_gateway(
    folder: Path, issuer: OIDCIssuer, remote: HTTPServer, policy: str, planted: Planted, audit: dict[str, Any]
) -> Iterator[GatewayProcess]:
    """A gateway with ``access.auth`` for ``issuer``, the Cedar ``policy`` and ``audit`` (its
    ``file`` defaults to ``folder/audit.jsonl``), in front of ``fx`` and ``remote`` as ``web``,
    with the ``planted`` secrets."""
    (folder / "policy.cedar").write_text(policy)
    port = free_port()
    servers = {
        "fx": fixture(env={"FX_API_TOKEN": planted.env}),
        "web": {"url": remote.url, "headers": {"X-Api-Key": planted.header}},
    }
    access = {
        "auth": auth_keys(issuer, f"http://127.0.0.1:{port}/mcp"),
        "policy": "policy.cedar",
        "audit": {"file": str(folder / "audit.jsonl"), **audit},
    }
    config = write_config(folder, servers, access=access)
    with GatewayProcess(config, folder, port=port, env={"MCP_ACTORS_TOKEN": planted.static_token}) as gateway:
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
