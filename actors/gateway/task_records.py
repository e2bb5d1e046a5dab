"""The records of the tasks the gateway holds (`actors.gateway.held_tasks`), and where they live.

A `TaskRecord` is one task as any replica may answer for it: who made it, what it calls, which
replica runs it, its status, and once it ended its result or error; immutable, written whole.
`TaskRecords` is where they are kept: `MemoryTaskRecords` in the gateway's process (a lone
gateway), or Redis with ``--cluster`` (`actors.cluster.task_records`), so that ``tasks/get``
on any replica answers and a finished result outlives the replica that ran it. A record is
kept ``ttlMs`` from its creation, then swept; an unfinished one counts against its caller's
cap.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from actors.mcp.tasks import TaskStatus
from actors.mcp.transport import JSONObject
from actors.runtime.owner import OwnerCheck

__all__ = ["POLL_INTERVAL_MS", "MemoryTaskRecords", "TaskRecord", "TaskRecords", "now_text"]

POLL_INTERVAL_MS = 500
"""The ``pollIntervalMs`` the gateway asks of its clients for the tasks it holds."""


def now_text() -> str:
    """Now, as the extension writes times (ISO 8601, UTC, milliseconds)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class TaskRecord:
    """One held task. ``created`` is wall-clock seconds (records cross replicas); ``replica``
    the replica that runs it (None: a lone gateway)."""

    task_id: str
    caller: str
    namespace: str
    tool: str
    ttl_ms: int
    created: float = field(default_factory=time.time)
    created_at: str = field(default_factory=now_text)
    last_updated_at: str = ""
    replica: str | None = None
    status: TaskStatus = TaskStatus.WORKING
    status_message: str | None = None
    result: JSONObject | None = None
    error: JSONObject | None = None
    input_requests: JSONObject = field(default_factory=dict)
    answers: JSONObject = field(default_factory=dict)
    """Answers to ``input_requests`` given on another replica, for the one that runs the call
    to take (`actors.gateway.held_tasks`)."""

    def moved(self, status: TaskStatus, **changes: Any) -> TaskRecord:
        """This record with a new status (and other ``changes``), updated now."""
        return dataclasses.replace(self, status=status, last_updated_at=now_text(), **changes)

    def expires(self) -> float:
        """When the record goes (wall-clock seconds)."""
        return self.created + self.ttl_ms / 1000.0

    def answer(self, *, detailed: bool) -> JSONObject:
        """As the extension writes it: a ``CreateTaskResult``'s task, or (``detailed``) the
        ``tasks/get`` answer, with its result, error or input requests."""
        data: JSONObject = {
            "taskId": self.task_id,
            "status": self.status.value,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at or self.created_at,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if self.status_message is not None:
            data["statusMessage"] = self.status_message
        if detailed:
            if self.status == TaskStatus.COMPLETED and self.result is not None:
                data["result"] = self.result
            if self.status == TaskStatus.FAILED and self.error is not None:
                data["error"] = self.error
            if self.status == TaskStatus.INPUT_REQUIRED and self.input_requests:
                data["inputRequests"] = self.input_requests
        return data

    def to_json(self) -> JSONObject:
        return {**dataclasses.asdict(self), "status": self.status.value}

    @classmethod
    def from_json(cls, data: JSONObject) -> TaskRecord:
        return cls(**{**data, "status": TaskStatus(data["status"])})


class TaskRecords(Protocol):
    """Where held tasks' records live. Awaited on the gateway's loop; an implementation that
    does I/O does it off the loop."""

    async def put(self, record: TaskRecord) -> None:
        """Write ``record`` whole (a new one, or a new state of one)."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id``; None when there is none (never, or swept)."""
        ...

    async def unfinished(self, caller: str) -> int:
        """How many of ``caller``'s tasks have not ended."""
        ...


class MemoryTaskRecords:
    """`TaskRecords` in this process; swept as it is written. Owned by the gateway's loop."""

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._owner = OwnerCheck("the gateway's task records")

    async def put(self, record: TaskRecord) -> None:
        self._owner.touch()
        self._sweep(time.time())
        self._records[record.task_id] = record

    async def get(self, task_id: str) -> TaskRecord | None:
        self._owner.touch()
        record = self._records.get(task_id)
        if record is not None and record.expires() <= time.time():
            del self._records[task_id]
            return None
        return record

    async def unfinished(self, caller: str) -> int:
        self._owner.touch()
        self._sweep(time.time())
        return sum(1 for r in self._records.values() if r.caller == caller and not r.status.terminal)

    def _sweep(self, now: float) -> None:
        for task_id in [key for key, record in self._records.items() if record.expires() <= now]:
            del self._records[task_id]
