"""Long-running calls as MCP tasks (the tasks extension, SEP-2663), from the host's side: a real
task-capable server on the SDK (tests/servers/task_server.py) over stdio and Streamable HTTP,
through `Runtime.start_task`, `Runtime.task`, the handles and `AsyncRuntime`.

Waits are on the task's own states (the handle asks at the server's ``pollIntervalMs``), never
on sleeps."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from actors import AsyncRuntime, ErrorType, Runtime, TaskState, TaskStatus, ToolError
from actors.runtime.clock import ManualClock
from tests.conftest import wait_until
from tests.runtime.conftest import advance_to, armed, config, stdio_server
from tests.servers.http_server import HTTPServer

WAIT = 30.0
MODERN = "2026-07-28"


def task_server(*args: str, protocol: str = MODERN, **keys: Any) -> dict[str, Any]:
    return stdio_server(
        "task_server", "--poll-ms", "50", *args, protocol=protocol, healthCheckInterval=0, **keys
    )


class Asked:
    """An elicitation handler that accepts, and remembers what it was asked."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.messages.append(f"{namespace}: {params.get('message')}")
        schema = params.get("requestedSchema", {}).get("properties", {})
        return {"action": "accept", "content": {name: True for name in schema}}


def counts(rt: Runtime, namespace: str = "t") -> dict[str, int]:
    result = rt.call_tool(f"{namespace}/counter", {}, timeout=WAIT)
    assert result.success, result
    structured = result.output["structuredContent"]
    assert isinstance(structured, dict)
    return structured


@pytest.fixture
def rt() -> Iterator[Runtime]:
    with Runtime.start(config({"t": task_server()}), elicitation=Asked()) as runtime:
        yield runtime


def test_a_call_started_as_a_task_is_a_handle_at_once_and_its_result_when_it_ends(rt: Runtime) -> None:
    handle = rt.start_task("t/slow_compute", {"seconds": 0.5, "label": "build"}, timeout=WAIT)
    assert handle.started.status == TaskStatus.WORKING
    assert handle.id is not None and handle.id.startswith("t/")
    assert handle.started.ttl_ms == 60_000 and handle.started.poll_interval_ms == 50
    seen: list[TaskState] = []
    result = handle.result(timeout=WAIT, on_status=seen.append)
    assert result.success, result
    assert result.output["content"][0]["text"] == "Computed build after 0.5s"
    assert seen and seen[-1].status == TaskStatus.COMPLETED
    assert any(state.status_message == "computing for 0.5s" for state in seen)  # its progress
    assert handle.status().status == TaskStatus.COMPLETED  # asked again: it stays ended
    assert counts(rt)["completed"] == 1


def test_a_plain_call_the_server_makes_a_task_of_ends_with_the_tools_result(rt: Runtime) -> None:
    # The server decides (server-directed): the host's call_tool waits the task out.
    result = rt.call_tool("t/slow_compute", {"seconds": 0.2, "label": "plain"}, timeout=WAIT)
    assert result.success and result.output["content"][0]["text"] == "Computed plain after 0.2s"
    # A tool that runs only as a task is no longer refused: the runtime speaks tasks.
    failing = rt.call_tool("t/failing_job", {"seconds": 0.1}, timeout=WAIT)
    assert failing.error_type == ErrorType.SERVER_ERROR and "failed, as it always does" in str(failing.error)
    assert counts(rt)["started"] == 2


def test_the_input_a_task_asks_for_reaches_the_hosts_handler(rt: Runtime) -> None:
    handle = rt.start_task("t/confirm_delete", {"filename": "notes.txt"}, timeout=WAIT)
    result = handle.result(timeout=WAIT)
    assert result.success, result
    assert result.output["content"][0]["text"] == "Deleted notes.txt"
    two = rt.start_task("t/multi_input", {}, timeout=WAIT).result(timeout=WAIT)
    assert two.success, two


def test_cancel_reaches_the_server_and_the_task_ends_cancelled(rt: Runtime) -> None:
    handle = rt.start_task("t/slow_compute", {"seconds": 60}, timeout=WAIT)
    state = handle.cancel()
    assert state.status == TaskStatus.CANCELLED
    result = handle.result(timeout=WAIT)
    assert result.error_type == ErrorType.CANCELLED
    assert counts(rt)["cancelled"] == 1  # the work itself stopped, at the server
    assert handle.cancel().status == TaskStatus.CANCELLED  # again: as it ended


def test_a_tool_error_and_a_protocol_error_end_a_task_as_the_extension_says(rt: Runtime) -> None:
    tool_error = rt.start_task("t/failing_job", {"seconds": 0.1}, timeout=WAIT).result(timeout=WAIT)
    assert tool_error.error_type == ErrorType.SERVER_ERROR
    assert tool_error.metadata["content"][0]["text"].endswith("failed, as it always does")
    broken = rt.start_task("t/protocol_error_job", {}, timeout=WAIT)
    result = broken.result(timeout=WAIT)
    assert result.error_type == ErrorType.SERVER_ERROR and "code -32603" in str(result.error)
    assert broken.status().status == TaskStatus.FAILED


def test_a_wait_that_runs_out_leaves_the_task_running(rt: Runtime) -> None:
    handle = rt.start_task("t/slow_compute", {"seconds": 60}, timeout=WAIT)
    result = handle.result(timeout=0.2)
    assert result.error_type == ErrorType.TIMEOUT and "still working" in str(result.error)
    assert handle.status().status == TaskStatus.WORKING
    handle.cancel()


def test_bad_input_is_refused_before_anything_starts(rt: Runtime) -> None:
    with pytest.raises(ToolError) as refused:
        rt.start_task("t/slow_compute", "not an object", timeout=WAIT)  # type: ignore[arg-type]
    assert refused.value.error_type == ErrorType.VALIDATION
    with pytest.raises(ToolError) as unnamed:
        rt.task("no-namespace")
    assert unnamed.value.error_type == ErrorType.VALIDATION
    with pytest.raises(ToolError) as unknown:
        rt.task("t/no-such-task", timeout=WAIT)
    assert unknown.value.error_type == ErrorType.NOT_FOUND
    with pytest.raises(ToolError) as nowhere:
        rt.start_task("nowhere/tool", {}, timeout=WAIT)
    assert nowhere.value.error_type == ErrorType.NOT_FOUND
    assert counts(rt)["started"] == 0


def test_a_tool_the_server_does_not_offer_is_refused_as_its_plain_call_is(rt: Runtime) -> None:
    """Not sent: the backend would answer it in words of its own (a tool error, say)."""
    with pytest.raises(ToolError) as first:
        rt.start_task("t/no_such_job", {}, timeout=WAIT)  # starts the server: checked once it ran
    with pytest.raises(ToolError) as again:
        rt.start_task("t/no_such_job", {}, timeout=WAIT)
    for refused in (first, again):
        assert refused.value.error_type == ErrorType.NOT_FOUND
    assert counts(rt)["started"] == 0


def test_a_server_without_tasks_answers_the_call_and_the_handle_holds_it() -> None:
    servers = {"t": task_server(protocol="legacy"), "f": stdio_server(healthCheckInterval=0)}
    with Runtime.start(config(servers)) as rt:
        for name, arguments in (
            ("t/slow_compute", {"seconds": 0.1, "label": "old"}),
            ("f/echo", {"text": "hi"}),
        ):
            handle = rt.start_task(name, arguments, timeout=WAIT)
            assert handle.id is None and handle.started.status == TaskStatus.COMPLETED
            result = handle.result(timeout=WAIT)
            assert result.success, result
            assert handle.cancel().status == TaskStatus.COMPLETED  # nothing left to cancel
        assert counts(rt)["started"] == 0  # the handshake era has no extension: a plain call


def test_a_task_is_found_again_by_its_id_after_the_hosts_restart_and_expires() -> None:
    with HTTPServer(
        module="tests.servers.task_server", extra_args=("--ttl-ms", "3000", "--poll-ms", "50")
    ) as server:
        servers = {"t": {"url": server.url, "protocol": MODERN, "healthCheckInterval": 0}}
        with Runtime.start(config(servers)) as first:
            task_id = first.start_task("t/slow_compute", {"seconds": 0.3, "label": "kept"}, timeout=WAIT).id
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

            assert wait_until(expired, WAIT), "the record outlived its ttlMs"
            assert errors == [ErrorType.NOT_FOUND]


def test_the_async_runtime_has_the_same_handles_and_parks_no_thread() -> None:
    async def exercise() -> None:
        async with AsyncRuntime.start(config({"t": task_server()})) as rt:
            handles = [
                await rt.start_task("t/slow_compute", {"seconds": 0.3, "label": str(i)}) for i in range(4)
            ]
            threads = threading.active_count()
            results = await asyncio.gather(*(handle.result(timeout=WAIT) for handle in handles))
            assert threading.active_count() <= threads  # the waits are the loop's, not threads
            assert [r.output["content"][0]["text"] for r in results] == [
                f"Computed {i} after 0.3s" for i in range(4)
            ]
            running = await rt.start_task("t/slow_compute", {"seconds": 60})
            assert (await running.cancel()).status == TaskStatus.CANCELLED
            again = await rt.task(str(running.id))
            assert (await again.result(timeout=WAIT)).error_type == ErrorType.CANCELLED

    asyncio.run(exercise())


def test_a_server_running_a_task_is_not_stopped_as_idle_until_the_task_ends() -> None:
    clock = ManualClock()
    with Runtime.start(config({"t": task_server("--ttl-ms", "3600000", idleTimeout=300)}), clock=clock) as rt:
        handle = rt.start_task("t/slow_compute", {"seconds": 60}, timeout=WAIT)
        first = armed(rt, "idle", "t")
        advance_to(clock, first)
        # The idle check came and found the task open: checked again later, the server kept.
        assert wait_until(lambda: (rt._timers.due(("idle", "t")) or 0) > first, WAIT)
        assert rt.status("t")[0].state == "running"
        assert handle.cancel().status == TaskStatus.CANCELLED  # the task ended: idle again
        advance_to(clock, armed(rt, "idle", "t") + 300)
        assert wait_until(lambda: rt.status("t")[0].state == "stopped", WAIT)
