"""Calls the gateway holds as tasks (``"tasks": {"hold": true}``) for a backend that knows no
tasks (the fixture server over stdio, handshake era: it asks its questions as requests of its
own): the runtime, a client that follows tasks, gets a task at once and its result later; the
backend's question parks the task for the client's answer; a
cancel reaches the backend's work; the bounds (time to live, result size, tasks per caller)
hold; a client that follows no tasks gets plain answers."""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors import ErrorType, Runtime, TaskStatus, ToolError
from tests.conftest import wait_until
from tests.gateway.conftest import GatewayProcess, fixture, http_gateway, write_config
from tests.servers.http_server import free_port

WAIT = 30.0
HOLD = {"hold": True, "ttlMs": 4000, "maxResultBytes": 2000, "perCaller": 3}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    folder = tmp_path_factory.mktemp("held")
    (folder / "markers").mkdir()
    entry = fixture(
        tasks=HOLD,
        protocol="legacy",
        healthCheckInterval=0,
        env={"FIXTURE_MARKER_DIR": str(folder / "markers")},
    )
    # A server whose calls time out after 1 s: a call held as a task lives as long as its task.
    short = fixture(tasks=HOLD, protocol="legacy", healthCheckInterval=0, callTimeout=1)
    config = write_config(folder, {"fx": entry, "short": short})
    with http_gateway(config, folder) as served:
        yield served


def client(gateway: GatewayProcess, era: str = "2026-07-28") -> dict[str, Any]:
    entry = {"url": gateway.url, "protocol": era, "healthCheckInterval": 0}
    return {"mcpServers": {"gw": entry}, "builtin": {"enabled": False}}


def accept(namespace: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"ok": True}}


def markers(gateway: GatewayProcess) -> Path:
    return gateway.folder / "markers"


def test_a_held_call_is_a_task_at_once_and_its_result_later(gateway: GatewayProcess) -> None:
    with Runtime.start(client(gateway), elicitation=accept) as rt:
        handle = rt.start_task("gw/fx__sleep", {"seconds": 0.3, "marker": "held"}, timeout=WAIT)
        assert handle.id is not None and handle.id.startswith("gw/held:")
        assert handle.started.status == TaskStatus.WORKING and handle.started.ttl_ms == 4000
        assert wait_until((markers(gateway) / "held.started").exists, WAIT)
        result = handle.result(timeout=WAIT)
        assert result.success and result.output["content"][0]["text"] == "slept 0.3"
        # A plain call of the same client waits the task out: the same answer as ever.
        assert (
            rt.call_tool("gw/fx__echo", {"text": "plain"}, timeout=WAIT).output["content"][0]["text"]
            == "plain"
        )


def test_a_held_call_lives_as_long_as_its_task_not_the_servers_call_timeout(gateway: GatewayProcess) -> None:
    with Runtime.start(client(gateway), elicitation=accept) as rt:
        plain = rt.call_tool("gw/short__sleep", {"seconds": 2}, timeout=WAIT)
        assert plain.success, plain  # a plain call of a client that follows tasks is held too
        assert rt.start_task("gw/short__sleep", {"seconds": 2}, timeout=WAIT).result(timeout=WAIT).success


def test_the_backends_question_parks_the_task_for_the_clients_answer(gateway: GatewayProcess) -> None:
    asked: list[dict[str, Any]] = []

    def elicitation(namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return accept(namespace, params)

    with Runtime.start(client(gateway), elicitation=elicitation) as rt:
        result = rt.start_task("gw/fx__ask_client", {}, timeout=WAIT).result(timeout=WAIT)
        assert result.success and result.output["content"][0]["text"] == "client answered: accept"
        assert [params.get("message") for params in asked] == ["Proceed?"]


def test_cancel_reaches_the_backends_work(gateway: GatewayProcess) -> None:
    with Runtime.start(client(gateway), elicitation=accept) as rt:
        handle = rt.start_task("gw/fx__sleep", {"seconds": 60, "marker": "stopped"}, timeout=WAIT)
        assert wait_until((markers(gateway) / "stopped.started").exists, WAIT)
        assert handle.cancel().status == TaskStatus.CANCELLED
        assert wait_until((markers(gateway) / "stopped.cancelled").exists, WAIT)
        assert handle.result(timeout=WAIT).error_type == ErrorType.CANCELLED


def test_the_bounds_hold(gateway: GatewayProcess) -> None:
    with Runtime.start(client(gateway), elicitation=accept) as rt:
        big = rt.start_task("gw/fx__echo", {"text": "x" * 5000}, timeout=WAIT).result(timeout=WAIT)
        assert big.error_type == ErrorType.SERVER_ERROR and "maxResultBytes" in str(big.error), big
        tool_error = rt.start_task("gw/fx__fail", {"message": "no"}, timeout=WAIT).result(timeout=WAIT)
        assert tool_error.error_type == ErrorType.SERVER_ERROR and "no" in str(tool_error.error)
        running = [rt.start_task("gw/fx__sleep", {"seconds": 60}, timeout=WAIT) for _ in range(3)]
        with pytest.raises(ToolError) as refused:
            rt.start_task("gw/fx__sleep", {"seconds": 60}, timeout=WAIT)
        assert "unfinished" in str(refused.value)
        for handle in running:
            handle.cancel()
        done = rt.start_task("gw/fx__echo", {"text": "kept"}, timeout=WAIT)
        assert done.result(timeout=WAIT).success
        assert done.id is not None

        def swept() -> bool:
            try:
                rt.task(str(done.id), timeout=WAIT)
            except ToolError:
                return True
            return False

        assert wait_until(swept, WAIT), "the record outlived its ttlMs"


def test_a_client_that_follows_no_tasks_gets_plain_answers(gateway: GatewayProcess) -> None:
    with Runtime.start(client(gateway, "legacy"), elicitation=accept) as rt:
        handle = rt.start_task("gw/fx__sleep", {"seconds": 0.1}, timeout=WAIT)
        assert handle.id is None and handle.result().success


def handshake_rpc(gateway: GatewayProcess, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """``method`` in a handshake-era session of its own over raw HTTP (``initialize`` declaring
    the tasks extension, then the request with the session's headers and no ``Mcp-Name``, which
    that era does not have): the JSON-RPC answer."""
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def post(body: dict[str, Any], headers: dict[str, str]) -> tuple[http.client.HTTPResponse, str]:
        connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=WAIT)
        connection.request("POST", "/mcp", json.dumps(body).encode(), {**base, **headers})
        response = connection.getresponse()
        text = response.read().decode()
        connection.close()
        return response, text

    capabilities = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "clientInfo": {"name": "t", "version": "0"},
    }
    response, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, {})
    assert response.status == 200
    session = {
        "Mcp-Session-Id": str(response.getheader("mcp-session-id")),
        "MCP-Protocol-Version": "2025-11-25",
    }
    assert post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0].status == 202
    response, text = post({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}, session)
    assert response.status == 200, text
    data = [line.removeprefix("data:").strip() for line in text.splitlines() if line.startswith("data:")]
    answer: dict[str, Any] = json.loads(data[-1] if data else text)
    return answer


def test_a_handshake_era_session_asks_after_a_task_without_an_mcp_name_header(
    gateway: GatewayProcess,
) -> None:
    with Runtime.start(client(gateway), elicitation=accept) as rt:
        handle = rt.start_task("gw/fx__sleep", {"seconds": 0.1}, timeout=WAIT)
        assert handle.id is not None and handle.result(timeout=WAIT).success
    # Mcp-Name is a header of 2026-07-28 requests alone: it is not asked of this era.
    answer = handshake_rpc(gateway, "tasks/get", {"taskId": handle.id.removeprefix("gw/")})
    assert answer.get("result", {}).get("status") == "completed", answer


def modern_rpc(
    gateway: GatewayProcess, method: str, params: dict[str, Any], name: str | None, *, tasks: bool = True
) -> tuple[int, dict[str, Any]]:
    """``method`` as a raw 2026-07-28 request (``Mcp-Name: name`` unless None; the tasks extension
    declared unless not ``tasks``): the HTTP status and the JSON-RPC answer."""
    extensions = {"io.modelcontextprotocol/tasks": {}} if tasks else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    status, text = gateway.request("POST", "/mcp", json.dumps(body).encode(), headers)
    data = [line[5:].strip() for line in text.decode().splitlines() if line.startswith("data:")]
    answer: dict[str, Any] = json.loads(data[-1] if data else text)
    return status, answer


def test_the_wire_is_as_the_tasks_page_says(gateway: GatewayProcess) -> None:
    """docs/tasks.md, "On the wire (2026-07-28)", request by request."""
    call = {"name": "fx__sleep", "arguments": {"seconds": 0.1}}
    created = modern_rpc(gateway, "tools/call", call, "fx__sleep")[1]["result"]
    created.pop("_meta", None)
    assert set(created) == {
        "resultType",
        "taskId",
        "status",
        "createdAt",
        "lastUpdatedAt",
        "ttlMs",
        "pollIntervalMs",
    }, created
    assert (created["resultType"], created["status"]) == ("task", "working")
    task_id = created["taskId"]
    assert re.fullmatch(r"held:[0-9a-f]{16}:\w+", task_id), task_id

    def answer() -> dict[str, Any]:
        result: dict[str, Any] = modern_rpc(gateway, "tasks/get", {"taskId": task_id}, task_id)[1]["result"]
        return result

    assert wait_until(lambda: answer()["status"] == "completed", WAIT)
    done = answer()
    assert done["resultType"] == "complete" and done["taskId"] == task_id
    assert done["result"]["content"] == [{"type": "text", "text": "slept 0.1"}]
    assert done["result"]["isError"] is False
    for header in (None, "held:another"):
        status, refused = modern_rpc(gateway, "tasks/get", {"taskId": task_id}, header)
        assert (status, refused["error"]["code"]) == (400, -32020), refused
    cancelled = modern_rpc(gateway, "tasks/cancel", {"taskId": task_id}, task_id)[1]["result"]
    cancelled.pop("_meta", None)
    assert cancelled == {"resultType": "complete"}
    unknown = modern_rpc(gateway, "tasks/get", {"taskId": "held:nope"}, "held:nope")[1]["error"]
    assert unknown == {"code": -32602, "message": "Task not found: held:nope"}
    undeclared = modern_rpc(gateway, "tasks/get", {"taskId": task_id}, task_id, tasks=False)[1]
    assert undeclared["error"]["code"] == -32021, undeclared


def test_a_lone_gateways_held_results_outlive_its_restart(tmp_path: Path) -> None:
    # The records are files in the gateway's cache folder: the same folder, a new process.
    config = write_config(tmp_path, {"fx": fixture(tasks={"hold": True}, protocol="legacy")})
    port = free_port()
    with GatewayProcess(config, tmp_path, port=port) as first, Runtime.start(client(first)) as rt:
        done = rt.start_task("gw/fx__echo", {"text": "kept"}, timeout=WAIT)
        assert done.result(timeout=WAIT).success
        running = rt.start_task("gw/fx__sleep", {"seconds": 600}, timeout=WAIT)
    with GatewayProcess(config, tmp_path, port=port) as second, Runtime.start(client(second)) as rt:
        kept = rt.task(str(done.id), timeout=WAIT).result(timeout=WAIT)
        assert kept.success and kept.output["content"][0]["text"] == "kept"
        lost = rt.task(str(running.id), timeout=WAIT).result(timeout=WAIT)
        assert lost.error_type == ErrorType.SERVER_ERROR and "stopped" in str(lost.error), lost
