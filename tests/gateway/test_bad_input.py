"""Bad input from clients of one HTTP gateway: unknown names, malformed requests, bodies over the
SDK's limit, a client that cancels or vanishes mid-call. Each gets a protocol error (or its call
cancelled at the backend server), and the gateway goes on serving every other client.

One gateway serves the whole module (the fixture server behind it as ``fx``): whatever a test
does to it, the next test's clients must not notice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, TextContent

from tests.conftest import wait_until
from tests.gateway.conftest import (
    ROOT,
    WAIT,
    GatewayProcess,
    alive,
    fixture,
    gateway_env,
    http_gateway,
    serve_args,
    write_config,
)

ERAS = ("legacy", "2026-07-28")
JSON_AND_SSE = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
BODY_LIMIT = 4 * 1024 * 1024
"""The SDK's default largest request body (mcp.server.transport_security)."""

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    folder = tmp_path_factory.mktemp("bad-input")
    markers = folder / "markers"
    markers.mkdir()
    # A call timeout far beyond WAIT: only a cancellation can end a sleep call within a test.
    entry = fixture(env={"FIXTURE_MARKER_DIR": str(markers)}, callTimeout=3600)
    config = write_config(folder, {"fx": entry})
    with http_gateway(config, folder) as running:
        yield running


def marker(gateway: GatewayProcess, name: str) -> Path:
    return gateway.folder / "markers" / name


def text_of(result: object) -> str:
    assert not getattr(result, "is_error", True), result
    [content] = getattr(result, "content", [])
    assert isinstance(content, TextContent), content
    return content.text


def still_serves(gateway: GatewayProcess) -> None:
    """A new client, in each era, gets its echo back."""

    async def echo(era: str) -> None:
        text = f"still here {uuid.uuid4().hex}"
        async with Client(gateway.url, mode=era) as client:
            assert text_of(await client.call_tool("fx__echo", {"text": text})) == text

    for era in ERAS:
        anyio.run(echo, era)


@pytest.mark.parametrize("era", ERAS)
def test_unknown_names_get_invalid_params(gateway: GatewayProcess, era: str) -> None:
    async def session() -> None:
        async with Client(gateway.url, mode=era) as client:
            for name in ("nope__echo", "fx__nothing", "no namespace at all", "x" * 300):
                with pytest.raises(MCPError) as tool:
                    await client.call_tool(name, {})
                assert tool.value.code == INVALID_PARAMS, (name, tool.value)
            with pytest.raises(MCPError) as prompt:
                await client.get_prompt("fx__nothing")
            assert prompt.value.code == INVALID_PARAMS, prompt.value
            with pytest.raises(MCPError) as resource:
                await client.read_resource("fixture://nothing")
            assert resource.value.code == INVALID_PARAMS, resource.value
            # Bad arguments to a known tool are the tool's error result, not a protocol error.
            wrong = await client.call_tool("fx__add", {"a": "one", "b": 2})
            assert wrong.is_error and "validation" in str(wrong.content[0]), wrong
            # The session itself is unharmed.
            assert text_of(await client.call_tool("fx__echo", {"text": "ok"})) == "ok"

    anyio.run(session)
    still_serves(gateway)


def test_malformed_requests_get_http_and_json_rpc_errors(gateway: GatewayProcess) -> None:
    def post(body: bytes, headers: dict[str, str] = JSON_AND_SSE) -> tuple[int, bytes]:
        return gateway.request("POST", "/mcp", body, headers)

    def json_rpc_error(answer: tuple[int, bytes], status: int, code: int) -> None:
        assert answer[0] == status, answer
        error = json.loads(answer[1])["error"]
        assert error["code"] == code, answer

    json_rpc_error(post(b"{not json"), 400, PARSE_ERROR)
    json_rpc_error(post(b"\xff\xfe\x00garbage"), 400, PARSE_ERROR)
    json_rpc_error(post(b'{"foo": 1}'), 400, INVALID_PARAMS)
    json_rpc_error(post(b"[1, 2, 3]"), 400, INVALID_PARAMS)
    tools_list = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    json_rpc_error(post(tools_list), 400, INVALID_REQUEST)  # no session
    json_rpc_error(post(tools_list, {**JSON_AND_SSE, "mcp-session-id": "made-up"}), 404, INVALID_REQUEST)
    json_rpc_error(post(tools_list, {"Content-Type": "application/json"}), 406, INVALID_REQUEST)
    assert post(tools_list, {**JSON_AND_SSE, "Content-Type": "text/plain"})[0] == 400
    still_serves(gateway)


def test_a_body_over_the_sdk_limit_is_refused(gateway: GatewayProcess) -> None:
    text = "x" * (BODY_LIMIT + 1024)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    body = json.dumps({**call, "params": {"name": "fx__echo", "arguments": {"text": text}}}).encode()
    status, answer = gateway.request("POST", "/mcp", body, JSON_AND_SSE)
    assert status == 413, (status, answer[:200])

    async def through_a_session() -> None:
        async with Client(gateway.url, mode="legacy") as client:
            with pytest.raises(Exception) as refused:  # the SDK client's error for an HTTP 413
                await client.call_tool("fx__echo", {"text": text})
            assert "413" in str(refused.value) or isinstance(refused.value, MCPError), refused.value
            assert text_of(await client.call_tool("fx__echo", {"text": "after"})) == "after"

    anyio.run(through_a_session)
    still_serves(gateway)


@pytest.mark.parametrize("era", ERAS)
def test_a_client_that_vanishes_mid_call_has_its_backend_call_cancelled(
    gateway: GatewayProcess, era: str
) -> None:
    name = f"vanish-{era}-{uuid.uuid4().hex[:8]}"
    client = subprocess.Popen(
        [sys.executable, "-m", "tests.gateway.vanishing_client", gateway.url, era, name],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_until(lambda: marker(gateway, f"{name}.started").exists(), WAIT), client.poll()
        # While that call runs, other clients are served.
        still_serves(gateway)
        client.send_signal(signal.SIGKILL)
        client.wait(WAIT)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait(WAIT)
        assert client.stderr is not None
        client.stderr.close()
    assert wait_until(lambda: marker(gateway, f"{name}.cancelled").exists(), WAIT), gateway.log()
    still_serves(gateway)


@pytest.mark.parametrize("era", ERAS)
def test_a_call_the_client_cancels_is_cancelled_at_the_backend(gateway: GatewayProcess, era: str) -> None:
    name = f"cancel-{era}-{uuid.uuid4().hex[:8]}"

    async def session() -> None:
        async with Client(gateway.url, mode=era) as client:
            async with anyio.create_task_group() as group:

                async def sleep() -> None:
                    await client.call_tool("fx__sleep", {"seconds": 120, "marker": name})

                group.start_soon(sleep)
                with anyio.fail_after(WAIT):
                    while not marker(gateway, f"{name}.started").exists():
                        await anyio.sleep(0.05)
                group.cancel_scope.cancel()
            with anyio.fail_after(WAIT):
                while not marker(gateway, f"{name}.cancelled").exists():
                    await anyio.sleep(0.05)
            assert text_of(await client.call_tool("fx__echo", {"text": "next"})) == "next"

    anyio.run(session)
    still_serves(gateway)


def test_a_stdio_client_that_vanishes_mid_call_ends_the_gateway_and_its_server(tmp_path: Path) -> None:
    """Over stdio the gateway is the client's own process: when the client goes (its pipes
    close with no goodbye), the gateway exits by itself and takes the busy server with it."""
    markers = tmp_path / "markers"
    markers.mkdir()
    config = write_config(
        tmp_path, {"fx": fixture(env={"FIXTURE_MARKER_DIR": str(markers)}, callTimeout=3600)}
    )
    gateway = subprocess.Popen(
        serve_args(config),
        cwd=ROOT,
        env=gateway_env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "gateway.log").open("wb"),
    )
    assert gateway.stdin is not None and gateway.stdout is not None
    try:
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
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "fx__sleep", "arguments": {"seconds": 120, "marker": "stdio"}},
        }
        gateway.stdin.write((json.dumps(initialize) + "\n").encode())
        gateway.stdin.flush()
        assert json.loads(gateway.stdout.readline())["id"] == 1
        for message in ({"jsonrpc": "2.0", "method": "notifications/initialized"}, call):
            gateway.stdin.write((json.dumps(message) + "\n").encode())
        gateway.stdin.flush()
        started = markers / "stdio.started"
        assert wait_until(started.exists, WAIT)
        server = int(started.read_text())
        assert alive({server})
        gateway.stdin.close()
        gateway.stdout.close()
        assert gateway.wait(WAIT) == 0, (tmp_path / "gateway.log").read_text()[-3000:]
        assert not alive({server}), "the server outlived the gateway"
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait(WAIT)
