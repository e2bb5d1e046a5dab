"""One audit record per request a client sent, through a real gateway (``mcp-actors serve
--http`` with ``access.auth`` and ``access.audit``) and real HTTP: tokens from our own issuer
(tests/servers/oidc_issuer.py), a real `mcp.Client` in both eras whose every request is counted
as it leaves, and raw requests the gateway refuses before its MCP layer (401, 403, 404, 413,
421, 400), each recorded once, as who sent it.

One gateway serves the module; each test tells its records apart by their subject.
"""

from __future__ import annotations

import http.client
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from actors.gateway.access.audit import AuditEvent, Outcome, Who
from actors.gateway.access.audit_http import Exchange
from tests.conftest import wait_until
from tests.gateway.access.identity import SCOPE, auth_keys
from tests.gateway.conftest import WAIT, GatewayProcess, fixture, write_config
from tests.gateway.test_http_security import INITIALIZE, JSON_AND_SSE
from tests.servers.http_server import free_port
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def gateway(issuer: OIDCIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    folder = tmp_path_factory.mktemp("audit-http")
    port = free_port()
    access = {
        "auth": auth_keys(issuer, f"http://127.0.0.1:{port}/mcp"),
        "audit": {"file": str(folder / "audit.jsonl")},
    }
    config = write_config(folder, {"fx": fixture()}, access=access)
    with GatewayProcess(config, folder, port=port) as gateway:
        yield gateway


def records(gateway: GatewayProcess) -> list[dict[str, Any]]:
    path = gateway.folder / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def token(issuer: OIDCIssuer, gateway: GatewayProcess, subject: str, scope: str = SCOPE) -> str:
    return issuer.mint(sub=subject, aud=gateway.url, scope=scope)


def counted_client(gateway: GatewayProcess, bearer: str, mode: str, sent: list[str]) -> Client:
    """A real client of the gateway whose every JSON-RPC request is noted in ``sent`` as it
    leaves (its method): notifications and responses are not requests."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})

    async def note(request: httpx2.Request) -> None:
        if request.method == "POST":
            message = json.loads(request.content)
            if isinstance(message, dict) and "id" in message and "method" in message:
                sent.append(message["method"])

    http.event_hooks["request"].append(note)
    return Client(streamable_http_client(gateway.url, http_client=http), mode=mode)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_one_record_per_request_the_client_sent(
    issuer: OIDCIssuer, gateway: GatewayProcess, mode: str
) -> None:
    """Calls with arguments among them: in 2026-07-28 the SDK checks their ``Mcp-Param-*``
    headers against the gateway's own ``tools/list``, which no client sent."""
    subject = f"carol-{mode}"
    sent: list[str] = []

    async def scenario() -> None:
        async with counted_client(gateway, token(issuer, gateway, subject), mode, sent) as session:
            assert not (await session.call_tool("fx__echo", {"text": "one"})).is_error
            assert not (await session.call_tool("fx__add", {"a": 1, "b": 2})).is_error
            await session.list_tools()
            assert not (await session.call_tool("fx__echo", {"text": "last"})).is_error

    anyio.run(scenario)
    assert sent.count("tools/call") == 3, sent
    # The last call's record is written once its answer was given, after every earlier one's.
    mine = lambda: [r for r in records(gateway) if r["subject"] == subject]  # noqa: E731
    assert wait_until(lambda: Counter(r["method"] for r in mine())["tools/call"] >= 3, WAIT), mine()
    assert Counter(r["method"] for r in mine()) == Counter(sent), (sent, mine())


def refused(
    gateway: GatewayProcess,
    *,
    bearer: str | None = None,
    path: str = "/mcp",
    body: bytes = INITIALIZE,
    headers: dict[str, str] | None = None,
    declared: int | None = None,
) -> int:
    """Send one raw request; its status. ``declared``: a ``Content-Length`` to declare (and no
    body sent)."""
    sending = {**JSON_AND_SSE, **(headers or {})}
    if bearer is not None:
        sending["Authorization"] = f"Bearer {bearer}"
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=WAIT)
    try:
        if declared is None:
            connection.request("POST", path, body=body, headers=sending)
        else:
            connection.putrequest("POST", path, skip_host="Host" in sending)
            for name, value in {**sending, "Content-Length": str(declared)}.items():
                connection.putheader(name, value)
            connection.endheaders()
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def test_requests_refused_before_the_mcp_layer_are_recorded(
    issuer: OIDCIssuer, gateway: GatewayProcess
) -> None:
    dave = token(issuer, gateway, "dave")
    erin = token(issuer, gateway, "erin", scope="other")  # a valid token without the gateway's scope
    tools_list = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}).encode()
    cases: list[tuple[dict[str, Any], int, tuple[str, str, str, str | None, str]]] = [
        ({}, 401, ("anonymous", "POST /mcp", "denied", None, "http 401")),
        ({"bearer": erin}, 403, ("erin", "POST /mcp", "denied", None, "http 403")),
        (
            {"bearer": dave, "path": "/nowhere"},
            404,
            ("dave", "POST /nowhere", "error", "not_found", "http 404"),
        ),
        (
            {"bearer": dave, "body": tools_list, "headers": {"Mcp-Session-Id": "no-such-session"}},
            404,
            ("dave", "tools/list", "error", "not_found", "http 404"),
        ),
        (
            {"bearer": dave, "declared": 8 * 1024 * 1024},
            413,
            ("dave", "POST /mcp", "error", "validation", "http 413"),
        ),
        (
            {"bearer": dave, "headers": {"Host": "evil.example"}},
            421,
            ("dave", "initialize", "denied", None, "http 421"),
        ),
        (
            {"bearer": dave, "body": b"{not json"},
            400,
            ("dave", "POST /mcp", "error", "validation", "http 400"),
        ),
    ]
    for request, status, expected in cases:
        before = len(records(gateway))
        assert refused(gateway, **request) == status, request
        assert wait_until(lambda: len(records(gateway)) > before, WAIT), (status, records(gateway)[-3:])  # noqa: B023
        [record] = records(gateway)[before:]
        seen = (record["subject"], record["method"], record["outcome"], record["errorType"], record["reason"])
        assert seen == expected, record


def test_a_call_refused_after_the_sdk_s_own_listing_is_recorded_as_the_call() -> None:
    """The SDK lists the tools to check a call's ``Mcp-Param-*`` headers, then refuses the call
    (400) before the MCP layer serves it: the listing's record is not the client's request."""
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "fx__echo"}}
    listing = AuditEvent(who=Who("carol"), method="tools/list", outcome=Outcome.OK)
    served = AuditEvent(who=Who("carol"), method="tools/call", outcome=Outcome.OK, tool="echo")
    exchange = Exchange()
    body = json.dumps(call).encode()
    exchange.keep(body[:10], more=True)
    exchange.keep(body[10:], more=False)
    exchange.held.append(listing)
    assert exchange.recorded() is None  # HTTPAudit records the refusal, from the body
    exchange.held.append(served)
    assert exchange.recorded() is served
    alone = Exchange()
    alone.held.append(listing)
    alone.keep(json.dumps({**call, "method": "tools/list"}).encode(), more=False)
    assert alone.recorded() is listing  # a list the client asked for
