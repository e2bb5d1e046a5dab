"""The plain parts behind task handles: a task's state to JSON and back as the extension writes
it, how an ended task becomes a call's result, the pace of asking, and what a task id names.
No threads, no servers."""

from __future__ import annotations

import pytest

from actors import ErrorType, TaskState, TaskStatus, ToolError
from actors.mcp.tasks import TaskError, next_poll
from actors.mcp.transport import CallOutcome
from actors.runtime.task_handles import find_request, result_of_state

WIRE = {
    "taskId": "t-1",
    "status": "completed",
    "statusMessage": "done",
    "createdAt": "2026-12-04T00:00:00Z",
    "lastUpdatedAt": "2026-12-04T00:00:01Z",
    "ttlMs": 60000,
    "pollIntervalMs": 250,
    "result": {"content": [{"type": "text", "text": "ok"}], "isError": False, "structuredContent": {"n": 1}},
}


def test_a_task_reads_and_writes_as_the_extension_writes_it() -> None:
    state = TaskState.from_json(WIRE)
    assert state.status == TaskStatus.COMPLETED and state.status.terminal
    assert state.result == CallOutcome([{"type": "text", "text": "ok"}], {"n": 1}, False)
    assert state.to_json() == WIRE
    waiting = TaskState.from_json({"taskId": "t-2", "status": "input_required", "inputRequests": {"k": {}}})
    assert not waiting.status.terminal and waiting.input_requests == {"k": {}}
    failed = TaskState.from_json(
        {"taskId": "t-3", "status": "failed", "error": {"code": -32603, "message": "x"}}
    )
    assert failed.error == TaskError(-32603, "x")
    with pytest.raises(ValueError, match="not a task status"):
        TaskState.from_json({"taskId": "t-4", "status": "sleeping"})


def test_an_ended_task_is_a_calls_result() -> None:
    done = result_of_state(TaskState.from_json(WIRE), "ns")
    assert done.success and done.output == {
        "content": [{"type": "text", "text": "ok"}],
        "structuredContent": {"n": 1},
    }
    tool_error = TaskState(
        TaskStatus.COMPLETED, "t", result=CallOutcome([{"type": "text", "text": "bad"}], None, True)
    )
    assert result_of_state(tool_error, "ns").error_type == ErrorType.SERVER_ERROR
    failed = result_of_state(TaskState(TaskStatus.FAILED, "t", error=TaskError(-32603, "broke")), "ns")
    assert failed.error_type == ErrorType.SERVER_ERROR and "broke (code -32603)" in str(failed.error)
    assert result_of_state(TaskState(TaskStatus.CANCELLED, "t"), "ns").error_type == ErrorType.CANCELLED
    assert result_of_state(TaskState(TaskStatus.WORKING, "t"), "ns").error_type == ErrorType.EXECUTION


def test_asking_goes_at_the_servers_pace_or_backs_off_to_a_bound() -> None:
    assert next_poll(TaskState(TaskStatus.WORKING, "t", poll_interval_ms=250), 0.05) == (0.25, 0.1)
    assert next_poll(TaskState(TaskStatus.WORKING, "t", poll_interval_ms=600_000), 0.05)[0] == 2.0
    pause, delay = 0.05, 0.05
    seen = []
    for _ in range(8):
        pause, delay = next_poll(TaskState(TaskStatus.WORKING, "t"), delay)
        seen.append(pause)
    assert seen[:3] == [0.05, 0.1, 0.2] and seen[-1] == 2.0


def test_a_task_id_names_its_server() -> None:
    request = find_request("gh/abc/def", 5.0)
    assert (request.namespace, request.task_id, request.timeout) == ("gh", "abc/def", 5.0)
    for bad in ("abc", "/abc", "gh/", 42):
        with pytest.raises(ToolError) as refused:
            find_request(bad, None)  # type: ignore[arg-type]
        assert refused.value.error_type == ErrorType.VALIDATION
