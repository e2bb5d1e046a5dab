"""The runtime's tasks (SEP-2663) against a task server it was not written with: FastMCP 4 with
``fastmcp-tasks`` (tests/servers/fastmcp_task_server.py), over stdio and Streamable HTTP.

That server runs in a virtual environment of its own, ``tests/servers/.venv-fastmcp-tasks``
(``make pytest`` makes it from tests/servers/fastmcp-tasks.txt), since ``fastmcp-tasks`` pins a
``fastmcp-slim`` the test extra cannot share: so it is never forked from the suite's fork server
but started as its own process, with that venv's python.

Waits are on the task's own states (the handle asks at the server's ``pollIntervalMs``) or on
the server's counters, never on sleeps."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from actors import AsyncRuntime, ErrorType, Runtime, TaskState, TaskStatus, ToolError
from tests.conftest import wait_until
from tests.runtime.conftest import config
from tests.servers.http_server import free_port

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / "tests" / "servers" / ".venv-fastmcp-tasks" / "bin" / "python"
MODULE = "tests.servers.fastmcp_task_server"
MODERN = "2026-07-28"
WAIT = 30.0
_READY_TIMEOUT = 30.0
_STOP_TIMEOUT = 5.0


def server_command(*args: str) -> list[str]:
    """The FastMCP task server's command line, in its own venv (``--poll-ms 50`` first)."""
    if not VENV_PYTHON.exists():
        pytest.fail(
            f"{VENV_PYTHON.parent.parent} is missing: make pytest makes it "
            "(make tests/servers/.venv-fastmcp-tasks alone)"
        )
    return [str(VENV_PYTHON), "-m", MODULE, "--poll-ms", "50", *args]


def stdio_entry(*args: str, protocol: str = MODERN, **lifecycle: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry that runs the FastMCP task server over stdio."""
    command, *argv = server_command(*args)
    return {
        "command": command,
        "args": argv,
        "cwd": str(ROOT),
        "env": {"PYTHONPATH": str(ROOT)},
        "protocol": protocol,
        "healthCheckInterval": 0,
        **lifecycle,
    }


class FastMCPHTTPServer:
    """The FastMCP task server over Streamable HTTP on a free port, in a process of its own.

    Entering waits until the port accepts connections (or the process exits: it says so);
    leaving terminates it and reaps it."""

    def __init__(self, *args: str) -> None:
        self.args = args
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def entry(self, protocol: str = MODERN) -> dict[str, Any]:
        return {"url": self.url, "protocol": protocol, "healthCheckInterval": 0}

    def __enter__(self) -> FastMCPHTTPServer:
        self.port = free_port()
        command = server_command("--transport", "streamable-http", "--port", str(self.port), *self.args)
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        ready = False

        def accepts() -> bool:
            nonlocal ready
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    ready = True
            except OSError:
                pass
            return ready or self.process is None or self.process.poll() is not None

        wait_until(accepts, _READY_TIMEOUT, interval=0.05)
        if not ready:
            status = self.process.poll()
            self.stop()
            raise RuntimeError(f"{MODULE} did not serve HTTP on {self.port} (exit status {status})")
        return self

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(_STOP_TIMEOUT)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class Asked:
    """An elicitation handler that accepts a deletion, except of a file named ``keep*``, and
    remembers what it was asked."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        message = str(params.get("message"))
        with self._lock:
            self.messages.append(f"{namespace}: {message}")
        if "keep" in message:
            return {"action": "decline"}
        schema = params.get("requestedSchema", {}).get("properties", {})
        return {"action": "accept", "content": {name: True for name in schema}}


def counts(rt: Runtime, namespace: str = "f") -> dict[str, int]:
    result = rt.call_tool(f"{namespace}/counter", {}, timeout=WAIT)
    assert result.success, result
    structured = result.output["structuredContent"]
    assert isinstance(structured, dict)
    return structured


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def asked() -> Asked:
    return Asked()


@pytest.fixture
def rt(transport: str, asked: Asked) -> Iterator[Runtime]:
    if transport == "stdio":
        with Runtime.start(config({"f": stdio_entry()}), elicitation=asked) as runtime:
            yield runtime
        return
    with (
        FastMCPHTTPServer() as server,
        Runtime.start(config({"f": server.entry()}), elicitation=asked) as runtime,
    ):
        yield runtime


def test_a_task_is_a_handle_at_once_its_progress_polled_and_its_result_when_it_ends(rt: Runtime) -> None:
    handle = rt.start_task("f/slow_compute", {"seconds": 0.5, "label": "build"}, timeout=WAIT)
    assert handle.started.status == TaskStatus.WORKING
    assert handle.id is not None and handle.id.startswith("f/")
    assert handle.started.poll_interval_ms == 50 and handle.started.ttl_ms == 60_000
    seen: list[TaskState] = []
    result = handle.result(timeout=WAIT, on_status=seen.append)
    assert result.success, result
    assert result.output["content"][0]["text"] == "Computed build after 0.5s"
    assert seen and seen[-1].status == TaskStatus.COMPLETED
    assert any(state.status_message == "computing for 0.5s" for state in seen)  # its progress
    assert handle.status().status == TaskStatus.COMPLETED  # asked again: it stays ended
    assert rt.task(handle.id, timeout=WAIT).status().status == TaskStatus.COMPLETED  # found again

    steps: list[TaskState] = []
    done = rt.start_task("f/progress_job", {"steps": 3, "interval": 0.3}, timeout=WAIT)
    assert done.result(timeout=WAIT, on_status=steps.append).output["content"][0]["text"] == "Done 3 steps"
    messages = [state.status_message for state in steps if state.status_message]
    assert messages and messages == sorted(messages), messages  # step 1/3, 2/3, 3/3 as they came
    assert set(messages) <= {"step 1/3", "step 2/3", "step 3/3"}, messages
    assert counts(rt) == {"started": 2, "completed": 2, "cancelled": 0, "asked": 0, "in_task": 1}


def test_a_plain_call_of_a_task_tool_waits_the_task_out(rt: Runtime) -> None:
    result = rt.call_tool("f/slow_compute", {"seconds": 0.2, "label": "plain"}, timeout=WAIT)
    assert result.success and result.output["content"][0]["text"] == "Computed plain after 0.2s"
    failing = rt.call_tool("f/failing_job", {"seconds": 0.1}, timeout=WAIT)  # runs only as a task
    assert failing.error_type == ErrorType.SERVER_ERROR and "failed, as it always does" in str(failing.error)
    assert counts(rt)["in_task"] == 1  # FastMCP made a task of the plain call: the runtime followed it
    greeted = rt.call_tool("f/greet", {"name": "Ada"}, timeout=WAIT)  # never a task
    assert greeted.success and greeted.output["content"][0]["text"] == "Hello, Ada!"
    handle = rt.start_task("f/greet", {"name": "Bo"}, timeout=WAIT)
    assert handle.id is None and handle.started.status == TaskStatus.COMPLETED  # answered at once
    assert handle.result(timeout=WAIT).output["content"][0]["text"] == "Hello, Bo!"


def test_the_input_a_task_asks_for_mid_run_reaches_the_hosts_handler(rt: Runtime, asked: Asked) -> None:
    seen: list[TaskState] = []
    handle = rt.start_task("f/confirm_delete", {"filename": "notes.txt"}, timeout=WAIT)
    result = handle.result(timeout=WAIT, on_status=seen.append)
    assert result.success, result
    assert result.output["content"][0]["text"] == "Deleted notes.txt"
    assert asked.messages == ["f: Delete notes.txt?"]
    # The runtime answers a task's question as it asks the task's state: no state it hands on
    # waits on input.
    assert seen and TaskStatus.INPUT_REQUIRED not in [state.status for state in seen]
    kept = rt.start_task("f/confirm_delete", {"filename": "keep.txt"}, timeout=WAIT).result(timeout=WAIT)
    assert kept.success and kept.output["content"][0]["text"] == "Kept keep.txt (decline)"
    # FastMCP ends the task's run at the question and runs it again with the answer.
    assert counts(rt) == {"started": 4, "completed": 2, "cancelled": 0, "asked": 2, "in_task": 0}


def test_cancel_reaches_the_servers_work_and_the_task_ends_cancelled(rt: Runtime) -> None:
    handle = rt.start_task("f/slow_compute", {"seconds": 60}, timeout=WAIT)
    assert wait_until(lambda: counts(rt)["started"] == 1, WAIT)  # its work is running
    state = handle.cancel()
    assert state.status == TaskStatus.CANCELLED
    result = handle.result(timeout=WAIT)
    assert result.error_type == ErrorType.CANCELLED
    assert wait_until(lambda: counts(rt)["cancelled"] == 1, WAIT), counts(rt)  # the sleep was stopped
    assert handle.cancel().status == TaskStatus.CANCELLED  # again: as it ended
    assert counts(rt)["completed"] == 0


def test_a_tool_error_completes_a_task_and_a_protocol_error_fails_it(rt: Runtime) -> None:
    failing = rt.start_task("f/failing_job", {"seconds": 0.1}, timeout=WAIT)
    tool_error = failing.result(timeout=WAIT)
    assert tool_error.error_type == ErrorType.SERVER_ERROR
    assert tool_error.metadata["content"][0]["text"] == "failing_job failed, as it always does"
    assert failing.status().status == TaskStatus.COMPLETED  # an isError result, not a failed task
    broken = rt.start_task("f/protocol_error_job", {}, timeout=WAIT)
    result = broken.result(timeout=WAIT)
    assert result.error_type == ErrorType.SERVER_ERROR and "code -32603" in str(result.error)
    assert "protocol_error_job broke" in str(result.error)
    assert broken.status().status == TaskStatus.FAILED


def test_a_wait_that_runs_out_leaves_the_task_running_and_unknown_ids_are_not_found(rt: Runtime) -> None:
    handle = rt.start_task("f/slow_compute", {"seconds": 60}, timeout=WAIT)
    result = handle.result(timeout=0.2)
    assert result.error_type == ErrorType.TIMEOUT and "still working" in str(result.error)
    assert handle.status().status == TaskStatus.WORKING
    assert handle.cancel().status == TaskStatus.CANCELLED
    with pytest.raises(ToolError) as unknown:
        rt.task("f/no-such-task", timeout=WAIT)
    assert unknown.value.error_type == ErrorType.NOT_FOUND


def test_a_handshake_era_client_gets_plain_calls_and_no_task() -> None:
    with Runtime.start(config({"f": stdio_entry(protocol="legacy")})) as rt:
        handle = rt.start_task("f/slow_compute", {"seconds": 0.1, "label": "old"}, timeout=WAIT)
        assert handle.id is None and handle.started.status == TaskStatus.COMPLETED
        assert handle.result(timeout=WAIT).output["content"][0]["text"] == "Computed old after 0.1s"
        # FastMCP lists failing_job with execution.taskSupport "required": refused before a call.
        refused = rt.call_tool("f/failing_job", {"seconds": 0.1}, timeout=WAIT)
        assert refused.error_type == ErrorType.VALIDATION and refused.metadata["refused"] == "task_only"
        assert counts(rt) == {"started": 1, "completed": 1, "cancelled": 0, "asked": 0, "in_task": 0}


def test_a_task_is_found_again_by_its_id_after_the_hosts_restart_and_expires() -> None:
    with FastMCPHTTPServer("--ttl-ms", "2000") as server:
        servers = {"f": server.entry()}
        with Runtime.start(config(servers)) as first:
            started = first.start_task("f/slow_compute", {"seconds": 0.3, "label": "kept"}, timeout=WAIT)
            assert started.started.ttl_ms == 2000
            task_id = started.id
        assert task_id is not None
        with Runtime.start(config(servers)) as second:  # the host came back: the id is enough
            found = second.task(task_id, timeout=WAIT)
            result = found.result(timeout=WAIT)
            assert result.success and result.output["content"][0]["text"] == "Computed kept after 0.3s"

            errors: list[ErrorType] = []

            def expired() -> bool:
                try:
                    second.task(task_id, timeout=WAIT)
                except ToolError as exc:
                    errors.append(exc.error_type)
                    return True
                return False

            assert wait_until(expired, WAIT, interval=0.2), "the finished task outlived its ttlMs"
            assert errors == [ErrorType.NOT_FOUND]


def test_the_async_runtime_has_the_same_handles(transport: str) -> None:
    async def exercise(servers: dict[str, dict[str, Any]]) -> None:
        async with AsyncRuntime.start(config(servers)) as rt:
            handles = [
                await rt.start_task("f/slow_compute", {"seconds": 0.3, "label": str(i)}) for i in range(4)
            ]
            results = await asyncio.gather(*(handle.result(timeout=WAIT) for handle in handles))
            assert [r.output["content"][0]["text"] for r in results] == [
                f"Computed {i} after 0.3s" for i in range(4)
            ]
            plain = await rt.call_tool("f/slow_compute", {"seconds": 0.1, "label": "plain"}, timeout=WAIT)
            assert plain.success and plain.output["content"][0]["text"] == "Computed plain after 0.1s"
            running = await rt.start_task("f/slow_compute", {"seconds": 60})
            assert (await running.cancel()).status == TaskStatus.CANCELLED
            again = await rt.task(str(running.id))
            assert (await again.result(timeout=WAIT)).error_type == ErrorType.CANCELLED

    if transport == "stdio":
        asyncio.run(exercise({"f": stdio_entry()}))
        return
    with FastMCPHTTPServer() as server:
        asyncio.run(exercise({"f": server.entry()}))
