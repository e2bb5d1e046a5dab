"""A handshake-era request over HTTP gets one JSON body when its reply is the first thing the
gateway has to say, and the SDK's SSE stream otherwise (actors/gateway/first_reply.py): raw
HTTP against ``mcp-actors serve --http`` in front of the real fixture server."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from actors.gateway.first_reply import STREAM_AFTER, FirstReplyTransport, answer_first_replies_in_json
from tests.gateway.conftest import WAIT, GatewayProcess, fixture, http_gateway, write_config

BASE = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    folder = tmp_path_factory.mktemp("first-reply")
    with http_gateway(write_config(folder, {"fx": fixture("--surface")}), folder) as running:
        yield running


def _post(gateway: GatewayProcess, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, str, str]:
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=WAIT)
    try:
        connection.request("POST", "/mcp", json.dumps(body).encode(), {**BASE, **headers})
        response = connection.getresponse()
        return response.status, str(response.getheader("content-type")), response.read().decode()
    finally:
        connection.close()


@pytest.fixture
def session(gateway: GatewayProcess) -> dict[str, str]:
    """The headers of a new 2025-11-25 session, initialized."""
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=WAIT)
    try:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
        connection.request("POST", "/mcp", json.dumps(body).encode(), BASE)
        response = connection.getresponse()
        response.read()
        assert response.status == 200
        headers = {
            "Mcp-Session-Id": str(response.getheader("mcp-session-id")),
            "MCP-Protocol-Version": "2025-11-25",
        }
    finally:
        connection.close()
    assert _post(gateway, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)[0] == 202
    return headers


def _call(
    gateway: GatewayProcess, session: dict[str, str], name: str, arguments: dict[str, Any], **meta: Any
):
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    status, kind, text = _post(
        gateway, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}, session
    )
    assert status == 200, text
    return kind, text


def _events(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()
    ]


def test_a_call_that_only_replies_is_answered_in_one_json_body(
    gateway: GatewayProcess, session: dict[str, str]
) -> None:
    # The server starts on its first call, which may take longer than the switch on a busy
    # machine (and is then rightly streamed): the call judged here is a call to a running server.
    _call(gateway, session, "fx__echo", {"text": "warm"})
    kind, text = _call(gateway, session, "fx__echo", {"text": "plain"})
    assert kind.startswith("application/json"), (kind, text)
    answer = json.loads(text)
    assert answer["id"] == 7
    assert answer["result"]["content"][0]["text"] == "plain"


def test_progress_before_the_reply_is_streamed_and_nothing_is_lost(
    gateway: GatewayProcess, session: dict[str, str]
) -> None:
    kind, text = _call(gateway, session, "fx__progress", {"steps": 3}, progressToken="p1")
    assert kind.startswith("text/event-stream"), (kind, text)
    events = _events(text)
    progress = [e["params"]["progress"] for e in events if e.get("method") == "notifications/progress"]
    assert progress == [1, 2, 3]
    assert events[-1]["id"] == 7 and events[-1]["result"]["content"][0]["text"] == "done 3"


def test_a_call_slower_than_the_switch_is_answered_as_a_stream(
    gateway: GatewayProcess, session: dict[str, str]
) -> None:
    kind, text = _call(gateway, session, "fx__sleep", {"seconds": STREAM_AFTER + 0.5})
    assert kind.startswith("text/event-stream"), (kind, text)
    [answer] = [e for e in _events(text) if e.get("id") == 7]
    assert answer["result"]["isError"] is False


def test_an_error_reply_is_json_too(gateway: GatewayProcess, session: dict[str, str]) -> None:
    status, kind, text = _post(
        gateway, {"jsonrpc": "2.0", "id": 9, "method": "no/such/method", "params": {}}, session
    )
    assert status == 200 and kind.startswith("application/json"), (status, kind, text)
    assert json.loads(text)["error"]["code"] == -32601


def test_the_sdk_hook_still_makes_each_new_session_a_first_reply_transport() -> None:
    """Pins the one SDK seam the gateway relies on: an SDK that builds sessions elsewhere fails
    here, not in use."""
    manager = StreamableHTTPSessionManager(app=Server("t"))
    answer_first_replies_in_json(manager)
    transport = manager._admit_session(None)
    assert isinstance(transport, FirstReplyTransport)
    assert manager._server_instances[str(transport.mcp_session_id)] is transport
