"""A task's state as plain data: what a server says of a long-running call it runs as a task.

The 2026-07-28 revision's tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``): a
server may answer a ``tools/call`` with a task (``resultType: "task"``) instead of the result;
the client then asks ``tasks/get`` until the task ends (its result inlined), answers the input
it asks for with ``tasks/update``, and may ``tasks/cancel`` it. `TaskState` is one answer, as
JSON-ready immutable data (any thread); the SDK side is `actors.mcp.sdk_transport.tasks`.

A call the server answered at once (it offers no tasks, or finished within the request) is a
`TaskState` too, ``completed`` with its result and no ``task_id``: whoever holds a handle need
not care which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from actors.mcp.transport import CallOutcome, JSONObject

__all__ = [
    "FIRST_POLL",
    "TASKS_EXTENSION",
    "TaskError",
    "TaskState",
    "TaskStatus",
    "TaskTransport",
    "next_poll",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The extension's identifier, under ``capabilities.extensions`` on both sides."""

FIRST_POLL, _MAX_POLL = 0.05, 2.0
"""Seconds between two ``tasks/get`` when the server suggests no interval (doubling), and at most."""


class TaskStatus(StrEnum):
    """A task's status, as the extension names it."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        """Whether the task has ended (its status never changes again)."""
        return self in (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED)


@dataclass(frozen=True)
class TaskError:
    """The protocol error a ``failed`` task ended with (a JSON-RPC error's shape)."""

    code: int
    message: str
    data: Any = None


@dataclass(frozen=True)
class TaskState:
    """One answer about a task. ``result`` once ``completed`` (a tool error included:
    ``is_error``), ``error`` once ``failed``; ``input_requests`` while ``input_required``."""

    status: TaskStatus
    task_id: str | None = None
    """The server's id of the task; None for a call the server answered at once."""
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: CallOutcome | None = None
    error: TaskError | None = None
    input_requests: JSONObject = field(default_factory=dict)

    @classmethod
    def answered(cls, outcome: CallOutcome) -> TaskState:
        """A call the server answered at once: a task that ended before it began."""
        return cls(TaskStatus.COMPLETED, result=outcome)

    def to_json(self) -> JSONObject:
        """As the extension writes a task (camelCase, absent fields left out)."""
        data: JSONObject = {"status": self.status.value}
        for key, value in (
            ("taskId", self.task_id),
            ("statusMessage", self.status_message),
            ("createdAt", self.created_at),
            ("lastUpdatedAt", self.last_updated_at),
            ("ttlMs", self.ttl_ms),
            ("pollIntervalMs", self.poll_interval_ms),
        ):
            if value is not None:
                data[key] = value
        if self.result is not None:
            data["result"] = outcome_json(self.result)
        if self.error is not None:
            error: JSONObject = {"code": self.error.code, "message": self.error.message}
            if self.error.data is not None:
                error["data"] = self.error.data
            data["error"] = error
        if self.input_requests:
            data["inputRequests"] = dict(self.input_requests)
        return data

    @classmethod
    def from_json(cls, data: JSONObject) -> TaskState:
        """A task as the extension writes it (a ``CreateTaskResult`` or a ``tasks/get`` answer).
        Raises ``ValueError`` for one that is not a task."""
        try:
            status = TaskStatus(data["status"])
        except (KeyError, ValueError, TypeError):
            raise ValueError(f"not a task status: {data.get('status')!r}") from None
        result = data.get("result")
        error = data.get("error")
        requests = data.get("inputRequests")
        return cls(
            status=status,
            task_id=_text(data.get("taskId")),
            status_message=_text(data.get("statusMessage")),
            created_at=_text(data.get("createdAt")),
            last_updated_at=_text(data.get("lastUpdatedAt")),
            ttl_ms=_whole(data.get("ttlMs")),
            poll_interval_ms=_whole(data.get("pollIntervalMs")),
            result=outcome_of(result) if isinstance(result, dict) else None,
            error=(
                TaskError(int(error.get("code", -32603)), str(error.get("message", "")), error.get("data"))
                if isinstance(error, dict)
                else None
            ),
            input_requests=dict(requests) if isinstance(requests, dict) else {},
        )


def next_poll(state: TaskState, delay: float) -> tuple[float, float]:
    """How long to wait before asking after a task again (the server's ``pollIntervalMs`` if it
    gave one), and the delay after that when it gave none."""
    suggested = state.poll_interval_ms / 1000.0 if state.poll_interval_ms else delay
    return min(suggested, _MAX_POLL), min(delay * 2, _MAX_POLL)


def outcome_json(outcome: CallOutcome) -> JSONObject:
    """A ``CallToolResult`` as JSON."""
    data: JSONObject = {"content": list(outcome.content), "isError": outcome.is_error}
    if outcome.structured_content is not None:
        data["structuredContent"] = outcome.structured_content
    return data


def outcome_of(data: JSONObject) -> CallOutcome:
    """A ``CallToolResult`` from JSON."""
    content = data.get("content")
    blocks = (
        [dict(block) for block in content if isinstance(block, dict)] if isinstance(content, list) else []
    )
    structured = data.get("structuredContent")
    return CallOutcome(
        content=blocks,
        structured_content=structured if isinstance(structured, dict) else None,
        is_error=data.get("isError") is True,
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _whole(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@runtime_checkable
class TaskTransport(Protocol):
    """A transport (`actors.mcp.transport`) that keeps the tasks a server makes of calls.
    Requests raise as `Transport` documents; an unknown task is `ServerReplyError` ``-32602``."""

    async def start_task(self, name: str, arguments: dict[str, Any], timeout: float | None) -> TaskState:
        """Call one tool, keeping the task the server may make of it; a call the server
        answered itself comes back as a task that ended at once (`TaskState.answered`)."""
        ...

    async def get_task(self, task_id: str, timeout: float | None, *, answer: bool = True) -> TaskState:
        """The task's state; ``answer``: after answering the input it waits on with the host's
        handlers (else that input is reported, in ``input_requests``)."""
        ...

    async def update_task(self, task_id: str, responses: JSONObject, timeout: float | None) -> None:
        """Answer (some of) the input the task waits on, keyed as its ``input_requests``."""
        ...

    async def cancel_task(self, task_id: str, timeout: float | None) -> TaskState:
        """Ask the server to cancel the task; its state after the ask."""
        ...
