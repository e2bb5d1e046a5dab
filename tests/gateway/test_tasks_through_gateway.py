"""Tasks through the gateway (SEP-2663): ``mcp-actors serve --http`` before the SDK task server
(tests/servers/task_server.py, unprefixed), reached over Streamable HTTP and over stdio.

The conformance suite's ``tasks-*`` scenarios judge the gateway as they judge the server
directly (tests/conformance/test_task_server.py): every check succeeds. Then the runtime itself
is the gateway's client: a task started through the gateway is polled, answered (its input
reaches the host's handler through the gateway's ``tasks/update``), cancelled at the backend and
found again by id; a client that does not follow tasks gets plain answers, and -32021 for a tool
that runs only as a task."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors import ErrorType, Runtime, TaskStatus, ToolError
from tests.conformance.requirements import node22, run_server_scenarios, suite_version
from tests.conformance.tasks_checks import assert_every_check_succeeded, tasks_scenarios
from tests.gateway.conftest import GatewayProcess, http_gateway, write_config
from tests.harness import forkserver
from tests.runtime.conftest import ROOT
from tests.servers.http_server import HTTPServer

SCENARIO_TIMEOUT = 90.0
WAIT = 30.0

pytestmark = pytest.mark.timeout(10 * SCENARIO_TIMEOUT + 120)


@contextlib.contextmanager
def task_gateway(folder: Path, backend: str) -> Iterator[GatewayProcess]:
    """The gateway before the task server, over ``http`` or ``stdio``, spoken to in 2026-07-28."""
    with contextlib.ExitStack() as stack:
        if backend == "http":
            remote = stack.enter_context(
                HTTPServer(module="tests.servers.task_server", extra_args=("--poll-ms", "50"))
            )
            entry: dict[str, Any] = {"url": remote.url}
        else:
            command, *args = forkserver.python_module("tests.servers.task_server", "--poll-ms", "50")
            entry = {"command": command, "args": args}
        entry |= {"cwd": str(ROOT), "prefix": False, "protocol": "2026-07-28", "healthCheckInterval": 0}
        yield stack.enter_context(http_gateway(write_config(folder, {"tasks": entry}), folder))


@pytest.mark.parametrize("backend", ["http", "stdio"])
def test_every_check_of_every_tasks_scenario_succeeds_through_the_gateway(
    tmp_path: Path, backend: str
) -> None:
    node = node22()
    names = tasks_scenarios(node)
    assert len(names) == 10, names
    with task_gateway(tmp_path, backend) as gateway:
        scenarios, output = run_server_scenarios(
            node, gateway.url, tuple(names), tmp_path / "results", SCENARIO_TIMEOUT
        )
        log = gateway.log()
    where = f"conformance {suite_version()}, tasks-* through the gateway, backend over {backend}"
    assert_every_check_succeeded(names, scenarios, where, output, log)


def counts(rt: Runtime) -> dict[str, int]:
    result = rt.call_tool("gw/counter", {}, timeout=WAIT)
    assert result.success, result
    structured = result.output["structuredContent"]
    assert isinstance(structured, dict)
    return structured


def test_the_runtime_follows_a_task_through_the_gateway(tmp_path: Path) -> None:
    asked: list[str] = []

    def elicitation(namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(str(params.get("message")))
        return {"action": "accept", "content": {"confirm": True}}

    with task_gateway(tmp_path, "stdio") as gateway:
        servers = {"gw": {"url": gateway.url, "protocol": "2026-07-28", "healthCheckInterval": 0}}
        config = {"mcpServers": servers, "builtin": {"enabled": False}}
        with Runtime.start(config, elicitation=elicitation) as rt:
            handle = rt.start_task("gw/slow_compute", {"seconds": 0.3, "label": "via"}, timeout=WAIT)
            assert handle.id is not None and handle.id.startswith("gw/tasks/")  # the gateway's id
            assert handle.result(timeout=WAIT).output["content"][0]["text"] == "Computed via after 0.3s"
            confirmed = rt.start_task("gw/confirm_delete", {"filename": "a.txt"}, timeout=WAIT)
            assert confirmed.result(timeout=WAIT).output["content"][0]["text"] == "Deleted a.txt"
            assert len(asked) == 1  # the backend's question, through the gateway, to the host
            running = rt.start_task("gw/slow_compute", {"seconds": 60}, timeout=WAIT)
            assert running.cancel().status == TaskStatus.CANCELLED
            assert rt.task(str(running.id), timeout=WAIT).status().status == TaskStatus.CANCELLED
            assert counts(rt)["cancelled"] == 1  # reached the backend's work
            with pytest.raises(ToolError) as unknown:
                rt.task("gw/tasks/no-such-task", timeout=WAIT)
            assert unknown.value.error_type == ErrorType.NOT_FOUND


def test_a_client_that_does_not_follow_tasks_gets_plain_answers(tmp_path: Path) -> None:
    with task_gateway(tmp_path, "http") as gateway:
        # The handshake era has no tasks extension: a client of the gateway that follows none.
        servers = {"gw": {"url": gateway.url, "protocol": "legacy", "healthCheckInterval": 0}}
        with Runtime.start({"mcpServers": servers, "builtin": {"enabled": False}}) as rt:
            plain = rt.call_tool("gw/slow_compute", {"seconds": 0.1, "label": "plain"}, timeout=WAIT)
            assert plain.success and plain.output["content"][0]["text"] == "Computed plain after 0.1s"
            handle = rt.start_task("gw/slow_compute", {"seconds": 0.1, "label": "sync"}, timeout=WAIT)
            assert handle.id is None and handle.result().success
            required = rt.call_tool("gw/failing_job", {"seconds": 0.1}, timeout=WAIT)
            assert required.error_type == ErrorType.SERVER_ERROR, required
            assert required.metadata["jsonrpc_error"]["code"] == -32021, required  # relayed as it was
            assert counts(rt)["started"] == 0  # the backend made no task for this client
