"""Tasks (SEP-2663) through the gateway to a task server the project did not write: ``mcp-actors
serve --http`` before FastMCP 4 with ``fastmcp-tasks`` (tests/servers/fastmcp_task_server.py, in
its own venv: tests/runtime/test_fastmcp_tasks.py says why), unprefixed, reached over stdio and
over Streamable HTTP, with the runtime as the gateway's client.

A task started through the gateway is polled with its progress, answered mid-run (the backend's
question reaches the host's handler through the gateway's ``tasks/update``), ends with its
result or its tool error, is cancelled at the backend's work and found again by id."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors import ErrorType, Runtime, TaskState, TaskStatus, ToolError
from tests.conftest import wait_until
from tests.gateway.conftest import GatewayProcess, http_gateway, write_config
from tests.runtime.test_fastmcp_tasks import ROOT, FastMCPHTTPServer, stdio_entry

WAIT = 30.0


@contextlib.contextmanager
def fastmcp_gateway(folder: Path, backend: str) -> Iterator[GatewayProcess]:
    """The gateway before the FastMCP task server, over ``http`` or ``stdio``, in 2026-07-28."""
    with contextlib.ExitStack() as stack:
        if backend == "http":
            entry: dict[str, Any] = stack.enter_context(FastMCPHTTPServer()).entry()
        else:
            entry = stdio_entry()
        entry |= {"cwd": str(ROOT), "prefix": False}
        yield stack.enter_context(http_gateway(write_config(folder, {"tasks": entry}), folder))


def counts(rt: Runtime) -> dict[str, int]:
    result = rt.call_tool("gw/counter", {}, timeout=WAIT)
    assert result.success, result
    structured = result.output["structuredContent"]
    assert isinstance(structured, dict)
    return structured


@pytest.mark.parametrize("backend", ["stdio", "http"])
def test_the_runtime_follows_a_fastmcp_task_through_the_gateway(tmp_path: Path, backend: str) -> None:
    asked: list[str] = []

    def elicitation(namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(str(params.get("message")))
        return {"action": "accept", "content": {"confirm": True}}

    with fastmcp_gateway(tmp_path, backend) as gateway:
        servers = {"gw": {"url": gateway.url, "protocol": "2026-07-28", "healthCheckInterval": 0}}
        config = {"mcpServers": servers, "builtin": {"enabled": False}}
        with Runtime.start(config, elicitation=elicitation) as rt:
            handle = rt.start_task("gw/slow_compute", {"seconds": 0.5, "label": "via"}, timeout=WAIT)
            assert handle.id is not None and handle.id.startswith("gw/tasks/")  # the gateway's id
            seen: list[TaskState] = []
            result = handle.result(timeout=WAIT, on_status=seen.append)
            assert result.output["content"][0]["text"] == "Computed via after 0.5s", result
            assert any(state.status_message == "computing for 0.5s" for state in seen), seen
            assert rt.task(handle.id, timeout=WAIT).status().status == TaskStatus.COMPLETED

            confirmed = rt.start_task("gw/confirm_delete", {"filename": "a.txt"}, timeout=WAIT)
            assert confirmed.result(timeout=WAIT).output["content"][0]["text"] == "Deleted a.txt"
            assert asked == ["Delete a.txt?"]  # the backend's question, through the gateway, to the host

            failing = rt.call_tool("gw/failing_job", {"seconds": 0.1}, timeout=WAIT)  # only a task
            assert failing.error_type == ErrorType.SERVER_ERROR, failing
            assert "failed, as it always does" in str(failing.error)
            plain = rt.call_tool("gw/slow_compute", {"seconds": 0.1, "label": "plain"}, timeout=WAIT)
            assert plain.success and plain.output["content"][0]["text"] == "Computed plain after 0.1s"

            running = rt.start_task("gw/slow_compute", {"seconds": 60}, timeout=WAIT)
            assert wait_until(lambda: counts(rt)["started"] == 6, WAIT), counts(rt)  # its work runs
            assert running.cancel().status == TaskStatus.CANCELLED
            assert rt.task(str(running.id), timeout=WAIT).status().status == TaskStatus.CANCELLED
            assert wait_until(lambda: counts(rt)["cancelled"] == 1, WAIT), counts(rt)  # the backend's work
            with pytest.raises(ToolError) as unknown:
                rt.task("gw/tasks/no-such-task", timeout=WAIT)
            assert unknown.value.error_type == ErrorType.NOT_FOUND
            # Every slow_compute ran as FastMCP's task: the plain call too.
            assert counts(rt) == {"started": 6, "completed": 3, "cancelled": 1, "asked": 1, "in_task": 3}
