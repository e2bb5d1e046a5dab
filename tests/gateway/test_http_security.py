"""HTTP security of ``mcp-actors serve --http``: off loopback it refuses to start without a bearer
token; with a token (from ``$MCP_ACTORS_TOKEN`` or ``--token-file``) a request without it gets
401 and one with it is served; on loopback a foreign ``Host`` or ``Origin`` (DNS rebinding) is
refused; ``/healthz`` reports the servers' states without waking any; SIGTERM stops the gateway
and its servers.
"""

from __future__ import annotations

import http.client
import json
import subprocess
from pathlib import Path

import anyio
import fastmcp
import pytest
from mcp import Client

from tests.gateway.conftest import (
    ROOT,
    WAIT,
    GatewayProcess,
    alive,
    fixture,
    gateway_env,
    http_gateway,
    processes_mentioning,
    serve_args,
    write_config,
)
from tests.servers.http_server import free_port

TOKEN = "s3cret-token-for-tests"
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

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path, {"fx": fixture("--name", str(tmp_path))})


@pytest.mark.parametrize("host", ["0.0.0.0", "example.com"])
def test_a_non_loopback_address_without_a_token_is_refused_at_start(
    config: Path, tmp_path: Path, host: str
) -> None:
    env = gateway_env(tmp_path)
    env.pop("MCP_ACTORS_TOKEN", None)
    done = subprocess.run(
        serve_args(config, "--http", f"{host}:{free_port()}"),
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert f"serving on {host} (not loopback) needs a bearer token" in done.stderr, done.stderr
    assert "MCP_ACTORS_TOKEN" in done.stderr and "--token-file" in done.stderr, done.stderr
    assert not processes_mentioning(str(tmp_path)), "a server started although the gateway refused"


def test_with_a_token_from_the_environment_a_request_without_it_gets_401(
    config: Path, tmp_path: Path
) -> None:
    with http_gateway(config, tmp_path, token=TOKEN) as gateway:
        assert gateway.request("POST", "/mcp", INITIALIZE, JSON_AND_SSE)[0] == 401
        wrong = {**JSON_AND_SSE, "Authorization": "Bearer not-the-token"}
        assert gateway.request("POST", "/mcp", INITIALIZE, wrong)[0] == 401
        assert gateway.request("POST", "/mcp", INITIALIZE, {**JSON_AND_SSE, "Authorization": TOKEN})[0] == 401
        right = {**JSON_AND_SSE, "Authorization": f"Bearer {TOKEN}"}
        assert gateway.request("POST", "/mcp", INITIALIZE, right)[0] == 200

        async def without_token() -> None:
            async with Client(gateway.url, mode="legacy") as client:
                await client.list_tools()

        with pytest.raises(Exception, match="unhandled errors"):  # the SDK's group around its MCPError
            anyio.run(without_token)

        async def with_token() -> None:
            async with fastmcp.Client(gateway.url, auth=TOKEN, timeout=WAIT) as client:
                result = await client.call_tool("fx__echo", {"text": "authorized"})
                assert result.content[0].text == "authorized"  # type: ignore[union-attr]

        anyio.run(with_token)


def test_a_token_file_lets_the_gateway_serve_off_loopback(config: Path, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with http_gateway(
        config, tmp_path, host="0.0.0.0", extra_args=("--token-file", str(token_file))
    ) as gateway:
        assert gateway.request("POST", "/mcp", INITIALIZE, JSON_AND_SSE)[0] == 401
        right = {**JSON_AND_SSE, "Authorization": f"Bearer {TOKEN}"}
        assert gateway.request("POST", "/mcp", INITIALIZE, right)[0] == 200


def test_on_loopback_a_foreign_host_or_origin_is_refused(config: Path, tmp_path: Path) -> None:
    gateway = GatewayProcess(config, tmp_path).start()
    try:
        own = f"127.0.0.1:{gateway.port}"
        assert gateway.request("POST", "/mcp", INITIALIZE, {**JSON_AND_SSE, "Host": own})[0] == 200
        for host in ("evil.example.com", f"evil.example.com:{gateway.port}", "127.0.0.1:1"):
            status, body = gateway.request("POST", "/mcp", INITIALIZE, {**JSON_AND_SSE, "Host": host})
            assert 400 <= status < 500, (host, status, body)
        origin = {**JSON_AND_SSE, "Host": own, "Origin": "http://evil.example.com"}
        status, body = gateway.request("POST", "/mcp", INITIALIZE, origin)
        assert 400 <= status < 500, (status, body)
        same = {**JSON_AND_SSE, "Host": own, "Origin": f"http://localhost:{gateway.port}"}
        assert gateway.request("POST", "/mcp", INITIALIZE, same)[0] == 200

        # And it is still serving: a call starts the server; SIGTERM stops it, and the gateway.
        async def call() -> None:
            async with Client(gateway.url, mode="legacy") as client:
                await client.call_tool("fx__echo", {"text": "start it"})

        anyio.run(call)
        servers = gateway.servers()
        assert len(servers) == 1
        assert gateway.stop() == 0, gateway.log()
        # Stopped by the gateway before it exited (not left to their parent-death signal).
        assert not alive(servers), gateway.log()
    finally:
        gateway.kill()


def raw_call(
    gateway: GatewayProcess, headers: dict[str, str], name: str, arguments: dict[str, object]
) -> object:
    """Initialize a session and call one tool in plain HTTP (no client library lists first)."""
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=WAIT)
    try:
        connection.request("POST", "/mcp", INITIALIZE, headers)
        session = connection.getresponse()
        assert session.status == 200, (session.status, session.read())
        session.read()
        more = {**headers, "mcp-session-id": str(session.getheader("mcp-session-id"))}
    finally:
        connection.close()
    initialized = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    assert gateway.request("POST", "/mcp", initialized, more)[0] == 202
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    status, body = gateway.request("POST", "/mcp", json.dumps(call).encode(), more)
    assert status == 200, (status, body)
    # One JSON body, or an SSE stream when the call said something before its reply.
    data = [line[5:] for line in body.decode().splitlines() if line.startswith("data:")]
    return json.loads(data[-1] if data else body)["result"]


def test_healthz_reports_states_without_waking_a_server(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a": fixture(), "b": fixture()})
    with http_gateway(config, tmp_path, token=TOKEN) as gateway:
        # A probe without the token learns that the gateway is up, not what it serves.
        status, body = gateway.request("GET", "/healthz")
        assert (status, json.loads(body)) == (200, {"status": "ok"})
        wrong = gateway.request("GET", "/healthz", headers={"Authorization": "Bearer not-the-token"})
        assert (wrong[0], json.loads(wrong[1])) == (200, {"status": "ok"})
        # A foreign Host (DNS rebinding) is refused on every route of a loopback gateway.
        for path in ("/healthz", "/metrics"):
            foreign = {"Host": "evil.example.com", "Authorization": f"Bearer {TOKEN}"}
            status, body = gateway.request("GET", path, headers=foreign)
            assert status == 421, (path, status, body)
        for _ in range(3):
            health = gateway.healthz()
            assert health["status"] == "ok"
            assert {ns: s["state"] for ns, s in health["servers"].items()} == {"a": "idle", "b": "idle"}
            assert all(s["pid"] is None for s in health["servers"].values()), health
        assert gateway.servers() == set()

        # A call by name, never listed in this process (the schema cache is cold): only its
        # server starts (the gateway used to list every server to learn the name).
        authorized = {**JSON_AND_SSE, "Authorization": f"Bearer {TOKEN}"}
        result = raw_call(gateway, authorized, "a__echo", {"text": "wake a"})
        assert result["content"] == [{"type": "text", "text": "wake a"}], result  # type: ignore[index]
        health = gateway.healthz()["servers"]
        assert health["a"]["state"] == "running" and health["a"]["pid"] in gateway.servers(), health
        assert health["b"] == {"state": "idle", "pid": None, "restarts": 0, "last_error": None}, health
        assert len(gateway.servers()) == 1
