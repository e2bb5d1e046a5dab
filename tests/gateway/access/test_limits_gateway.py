"""Rate limits through a real gateway (``mcp-actors serve --http`` with ``access.auth`` and
``access.limits``), users with tokens from our own issuer and real `mcp.Client`s:

- a tool's per-user limit under 100 concurrent clients of one user, who honour the retry hint:
  the configured rate held within 10 %, every request answered (served, or refused with the
  hint), and another user's calls meanwhile all served;
- a principal's whole request rate at the HTTP layer: 429 with ``Retry-After`` and the JSON-RPC
  error in the body, which the SDK's client reads; a notification still goes through;
- every refusal audited as ``limited``.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from actors.gateway.access.limits import RATE_LIMITED
from tests.conftest import wait_until
from tests.gateway.access.identity import SCOPE, auth_keys, client
from tests.gateway.conftest import WAIT, GatewayProcess, fixture, write_config
from tests.servers.http_server import free_port
from tests.servers.oidc_issuer import OIDCIssuer

pytestmark = pytest.mark.timeout(180)

RATE, BURST = 20.0, 40
"""alice's calls of fx/echo: 20 a second, 40 at once (two seconds' worth: clients that wait out
whole-second hints leave no gap that would spill tokens over a full bucket)."""
CLIENTS = 100
RUN = 6.0
"""Seconds the 100 clients call for."""


@contextlib.contextmanager
def limited_gateway(folder: Path, issuer: OIDCIssuer, limits: dict[str, Any]) -> Iterator[GatewayProcess]:
    port = free_port()
    access = {
        "auth": auth_keys(issuer, f"http://127.0.0.1:{port}/mcp"),
        "limits": limits,
        "audit": {"file": str(folder / "audit.jsonl")},
    }
    config = write_config(folder, {"fx": fixture()}, access=access)
    with GatewayProcess(config, folder, port=port) as gateway:
        yield gateway


def token(issuer: OIDCIssuer, gateway: GatewayProcess, user: str) -> str:
    return issuer.mint(sub=user, aud=gateway.url, scope=SCOPE)


def audited(gateway: GatewayProcess, outcome: str) -> list[dict[str, Any]]:
    path = gateway.folder / "audit.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r["outcome"] == outcome]


class Tally:
    """What the clients saw: when each served call was sent, the refusals, anything else."""

    def __init__(self) -> None:
        self.served: list[float] = []
        self.refused = 0
        self.hints: set[int] = set()
        self.other: list[BaseException] = []


async def hammer(session: Client, tally: Tally, until: float) -> None:
    """Call fx__echo until ``until``; a refusal waits the whole seconds its hint says, as the
    ``Retry-After`` of HTTP would have it."""
    while (sent := time.monotonic()) < until:
        try:
            result = await session.call_tool("fx__echo", {"text": "x"})
        except MCPError as exc:
            data = exc.error.data if isinstance(exc.error.data, dict) else {}
            if exc.error.code != RATE_LIMITED or not isinstance(data.get("retryAfter"), int):
                tally.other.append(exc)
                return
            tally.refused += 1
            tally.hints.add(data["retryAfter"])
            await asyncio.sleep(data["retryAfter"])
            continue
        if result.is_error:
            tally.other.append(AssertionError(f"served with an error: {result}"))
            return
        tally.served.append(sent)


def test_a_tool_limit_holds_under_100_concurrent_clients(issuer: OIDCIssuer, tmp_path: Path) -> None:
    limits = {"tools": {"fx/echo": {"perUser": {"rate": RATE, "burst": BURST}}}}
    with limited_gateway(tmp_path, issuer, limits) as gateway:
        alice, bob = token(issuer, gateway, "alice"), token(issuer, gateway, "bob")
        tally, bobs = Tally(), Tally()

        async def scenario() -> float:
            async with contextlib.AsyncExitStack() as stack:
                sessions = [await stack.enter_async_context(client(gateway, alice)) for _ in range(CLIENTS)]
                other = await stack.enter_async_context(client(gateway, bob))
                began = time.monotonic()
                until = began + RUN

                async def bob_calls() -> None:
                    # Another user, at his own pace (4 calls a second), all through the storm.
                    while (sent := time.monotonic()) < until:
                        try:
                            result = await other.call_tool("fx__echo", {"text": "bob"})
                        except MCPError as exc:
                            bobs.refused += exc.error.code == RATE_LIMITED
                            bobs.other.append(exc)
                            return
                        bobs.served.append(sent) if not result.is_error else bobs.other.append(
                            AssertionError(str(result))
                        )
                        await asyncio.sleep(0.25)

                with anyio.fail_after(RUN + WAIT):
                    await asyncio.gather(*(hammer(s, tally, until) for s in sessions), bob_calls())
                return began

        began = asyncio.run(scenario())
        assert tally.other == [] and bobs.other == []
        # Served within the run: the burst, then the rate (the last calls were sent by its end).
        expected = BURST + RATE * (max(tally.served) - began)
        # Held: never more than the rate allows (10 %). Fewer may be served where the machine
        # cannot carry the storm (one CPU for the 100 clients and the gateway: 12 % fewer seen
        # under the suite's CPU quota); far fewer would be a limiter that refuses what it owes.
        assert len(tally.served) <= 1.1 * expected, (len(tally.served), expected)
        assert len(tally.served) >= 0.75 * expected, (len(tally.served), expected)
        # The clients asked more than the limit: it refused some (how many more than it served
        # depends on how fast a busy machine lets 100 clients ask: 151 against 165 served was
        # seen with two CPU hogs running).
        assert tally.refused > 0
        assert tally.hints <= {1, 2}
        # Bob is slowed by the machine the storm keeps busy (2 calls in the 6 s were seen with
        # two CPU hogs running), never refused.
        assert bobs.refused == 0 and len(bobs.served) >= 1
        # Every refusal is in the audit, as alice's, with the bucket that refused it.
        assert wait_until(lambda: len(audited(gateway, "limited")) == tally.refused, WAIT)
        limited = audited(gateway, "limited")
        assert {(r["subject"], r["tool"], r["reason"]) for r in limited} == {("alice", "echo", "tool-user")}


def _post(gateway: GatewayProcess, token: str, body: dict[str, Any], session: str | None) -> Any:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": "2025-11-25",
    }
    if session is not None:
        headers["Mcp-Session-Id"] = session
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=WAIT)
    try:
        connection.request("POST", "/mcp", body=json.dumps(body).encode(), headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def test_a_user_over_their_request_rate_gets_429(issuer: OIDCIssuer, tmp_path: Path) -> None:
    limits = {"perUser": {"rate": 1, "per": "minute", "burst": 4}}
    with limited_gateway(tmp_path, issuer, limits) as gateway:
        alice, bob = token(issuer, gateway, "alice"), token(issuer, gateway, "bob")

        async def sdk_client() -> MCPError:
            # initialize, its notification and the calls take a token each: once the four are
            # gone a call is refused, and the SDK raises the error in the 429's body.
            async with client(gateway, alice) as session:
                for n in range(10):
                    try:
                        await session.call_tool("fx__echo", {"text": f"call {n}"})
                    except MCPError as exc:
                        return exc
                raise AssertionError("ten calls and no refusal")

        refused = asyncio.run(sdk_client())
        assert refused.error.code == RATE_LIMITED
        assert refused.error.data["scope"] == "user" and refused.error.data["retryAfter"] >= 1

        # Raw: the status, the header, the body with the request's own id.
        call = {"jsonrpc": "2.0", "id": 41, "method": "tools/list", "params": {}}
        status, headers, body = _post(gateway, alice, call, None)
        assert status == 429, body
        assert 1 <= int(headers["retry-after"]) <= 60
        answer = json.loads(body)
        assert answer["id"] == 41 and answer["error"]["code"] == RATE_LIMITED
        assert answer["error"]["data"]["retryAfter"] == int(headers["retry-after"])
        # A notification is not refused by the limit (this one, sessionless, the SDK refuses).
        status, _, _ = _post(gateway, alice, {"jsonrpc": "2.0", "method": "notifications/initialized"}, None)
        assert status != 429
        # Bob is another bucket.
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        status, _, body = _post(gateway, bob, initialize, None)
        assert status == 200, body
        assert wait_until(lambda: len(audited(gateway, "limited")) >= 2, WAIT)
        limited = audited(gateway, "limited")
        assert {(r["subject"], r["reason"]) for r in limited} == {("alice", "user")}
        assert "tools/list" in {r["method"] for r in limited}
